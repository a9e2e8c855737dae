//! The driver verdict's JSON Schema agrees with what `jr2-preflight run --output json` prints, and its copy of the
//! probe's per-model definitions stays equal to the probe's schema.

use serde_json::Value;

fn load(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn the_model_definitions_are_the_probes() {
    let driver = load(include_str!("../schemas/driver-verdict.v1.schema.json"));
    let probe = load(include_str!("../../probe/schemas/verdict.v1.schema.json"));
    for (name, def) in probe["$defs"].as_object().unwrap() {
        assert_eq!(
            &driver["$defs"][name], def,
            "$defs/{name} differs from the probe's schema"
        );
    }
}

#[test]
fn verdicts_the_driver_prints_validate() {
    let schema = load(include_str!("../schemas/driver-verdict.v1.schema.json"));
    let validator = jsonschema::draft202012::new(&schema).expect("a valid schema");
    let plan = jr2_preflight::plan::RawPlan::parse(include_str!("../examples/plan.json"))
        .and_then(jr2_preflight::plan::RawPlan::validate)
        .unwrap();
    let skipped = serde_json::to_value(jr2_preflight::verdict::skipped(&plan, "run0001")).unwrap();
    assert!(
        validator.is_valid(&skipped),
        "{:?}",
        validator
            .iter_errors(&skipped)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    // The binary's own output, skipped and contacting nothing.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args([
            "run",
            "--plan",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plan.json"),
            "--skip-provider-preflight",
            "-o",
            "json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(validator.is_valid(&printed));
    assert_eq!(
        printed["lines"][0],
        String::from_utf8_lossy(&out.stderr).trim_end()
    );
    // It could fail: an unknown field and a wrong outcome are refused.
    let mut bad = printed.clone();
    bad["extra"] = Value::Bool(true);
    assert!(!validator.is_valid(&bad));
    let mut bad = printed;
    bad["pods"] = serde_json::json!([{"name": "p", "placement": "x", "node": null, "outcome": "gone", "failure": [], "kept": false}]);
    assert!(!validator.is_valid(&bad));
}

/// The driver verdict's pod codes are the contract's `PodCode`, in documentation order.
#[test]
fn the_pod_codes_are_the_contracts() {
    let driver = load(include_str!("../schemas/driver-verdict.v1.schema.json"));
    let codes: Vec<Value> = jr2_probe::contract::outcome::PodCode::ALL
        .iter()
        .map(|c| Value::String(c.as_str().to_owned()))
        .collect();
    assert_eq!(driver["$defs"]["PodCode"]["enum"], Value::Array(codes));
}

/// The skip lists its models, each marked skipped (issue 27, item 14), and every verdict carries the troubleshooting
/// envelope (item 15): the release, the kube context, the cluster's server from the kubeconfig (read, not
/// contacted: no Kubernetes version then) and a UTC start.
#[test]
fn the_skip_verdict_lists_its_models_with_the_envelope() {
    let dir = std::env::temp_dir().join(format!("jr2-skip-envelope-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://kube.example.com:6443/prefix\n- name: other\n  cluster:\n    server: https://other.example.com\ncontexts:\n- name: mine\n  context:\n    cluster: c\n    user: u\n- name: theirs\n  context:\n    cluster: other\n    user: u\ncurrent-context: theirs\nusers:\n- name: u\n  user:\n    token: not-a-secret\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
        .args([
            "run",
            "--plan",
            concat!(env!("CARGO_MANIFEST_DIR"), "/examples/plan.json"),
            "--skip-provider-preflight",
            "--context",
            "mine",
            "-o",
            "json",
        ])
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let schema = load(include_str!("../schemas/driver-verdict.v1.schema.json"));
    let validator = jsonschema::draft202012::new(&schema).expect("a valid schema");
    assert!(validator.is_valid(&v), "{v}");
    let plan = jr2_preflight::plan::RawPlan::parse(include_str!("../examples/plan.json"))
        .and_then(jr2_preflight::plan::RawPlan::validate)
        .unwrap();
    let models = v["models"].as_array().unwrap();
    assert_eq!(models.len(), plan.models.len(), "{v}");
    for (m, p) in models.iter().zip(&plan.models) {
        assert_eq!(m["model"], p.model.as_str());
        assert_eq!(m["outcome"], "skipped", "{m}");
        assert_eq!(m["level"], "warning", "{m}");
        assert_eq!(m["code"], "PROVIDER_SKIPPED", "{m}");
        assert!(
            m["nextAction"]
                .as_str()
                .unwrap()
                .starts_with("none required"),
            "{m}"
        );
        assert_eq!(m["tries"], serde_json::json!([]));
        // The line names it.
        assert!(v["lines"][0].as_str().unwrap().contains(p.model.as_str()));
    }
    assert_eq!(v["release"]["driver"], env!("CARGO_PKG_VERSION"));
    assert_eq!(v["release"]["probe"], Value::Null);
    assert_eq!(v["release"]["probeImage"], plan.probe_image.as_str());
    assert_eq!(v["kubeContext"], "mine");
    assert_eq!(
        v["cluster"],
        serde_json::json!({"server": "kube.example.com:6443", "kubernetesVersion": null})
    );
    assert!(v["startedAt"].as_str().unwrap().ends_with('Z'), "{v}");
}
