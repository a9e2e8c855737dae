//! Every generated pod validates against the Kubernetes 1.35 schema (`kubernetes-validate --strict`), and PyYAML
//! reads the dry-run YAML as the driver meant it.

use std::path::Path;
use std::process::Command;

use jr2_preflight::pod::to_yaml;
use jr2_testkit::peers::{kubernetes_validate, validate_1_35};
use k8s_openapi::api::core::v1::EnvVar;
use serde_json::{Value, json};

mod common;
use common::{RUN_ID, check_pods, example, example_json, full_json, now, plan_of, variants_json};

/// The documents of a YAML file as PyYAML (YAML 1.1, the kv-venv's) reads them.
fn python_reads(file: &Path) -> Vec<Value> {
    let python = kubernetes_validate().with_file_name("python");
    let out = Command::new(python)
        .args(["-c", "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"])
        .arg(file)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn every_generated_pod_validates_against_kubernetes_1_35() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("jr2-preflight-k8s-1.35");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    let mut long = example_json();
    long["instance"] = json!("an-instance-with-a-rather-long-name-for-a-namespace");
    let mut unrestricted = example_json();
    unrestricted["placements"][1]["podSpec"]["securityContext"] =
        json!({"runAsUser": 0, "seccompProfile": {"type": "Unconfined"}});
    let plans = [
        ("example", example_json()),
        ("full", full_json()),
        ("variants", variants_json()),
        ("long", long),
        ("unrestricted", unrestricted),
    ];
    for (name, v) in plans {
        let plan = plan_of(v).unwrap();
        let pods = check_pods(&plan, RUN_ID, now());
        for pod in &pods {
            let f = dir.join(format!(
                "{name}-{}.yaml",
                pod.metadata.name.as_deref().unwrap()
            ));
            std::fs::write(&f, to_yaml(std::slice::from_ref(pod))).unwrap();
            files.push(f);
        }
        // And the dry-run output, all pods in one multi-document file.
        let f = dir.join(format!("{name}-dry-run.yaml"));
        std::fs::write(&f, to_yaml(&pods)).unwrap();
        files.push(f);
    }
    // A pod with env values a YAML 1.1 reader would take for something else, unless quoted.
    let mut odd = check_pods(&example(), RUN_ID, now()).remove(0);
    let env = odd
        .spec
        .as_mut()
        .unwrap()
        .containers
        .last_mut()
        .unwrap()
        .env
        .as_mut()
        .unwrap();
    for (i, v) in [
        "on",
        "no",
        "~",
        "2026-01-01",
        "0x1F",
        "1:20",
        "it's",
        "a: b",
        "tab\tnew\nline",
        "",
    ]
    .iter()
    .enumerate()
    {
        env.push(EnvVar {
            name: format!("ODD_{i}"),
            value: Some((*v).to_owned()),
            value_from: None,
        });
    }
    let f = dir.join("odd-values.yaml");
    std::fs::write(&f, to_yaml(std::slice::from_ref(&odd))).unwrap();
    files.push(f.clone());
    assert_eq!(python_reads(&f), vec![serde_json::to_value(&odd).unwrap()]);

    validate_1_35(&files);
    // A YAML 1.1 reader (PyYAML, as kubectl's go-yaml) reads each file as the pods it was written from.
    for (name, v) in [
        ("example", example_json()),
        ("full", full_json()),
        ("variants", variants_json()),
    ] {
        let pods = check_pods(&plan_of(v).unwrap(), RUN_ID, now());
        let want: Vec<Value> = pods
            .iter()
            .map(|p| serde_json::to_value(p).unwrap())
            .collect();
        assert_eq!(
            python_reads(&dir.join(format!("{name}-dry-run.yaml"))),
            want
        );
    }

    // The validator does refuse what 1.35 does not have: the test can fail.
    let pod = check_pods(&example(), RUN_ID, now()).remove(0);
    let mut v = serde_json::to_value(&pod).unwrap();
    v["spec"]["containers"][0]["restartPolicyy"] = json!("Never");
    let f = dir.join("refused.yaml");
    std::fs::write(&f, serde_yaml::to_string(&v).unwrap()).unwrap();
    let out = Command::new(kubernetes_validate())
        .args(["--strict", "-k", "1.35.0"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(!out.status.success(), "an unknown field passes");
}
