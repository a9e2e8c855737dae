//! The plan and the check pod: the example plan, every field of contract section 6 (copied and own), no secret value
//! anywhere, the restricted Pod Security profile, the Kubernetes 1.35 schema (`kubernetes-validate --strict`), the
//! dry-run YAML, and the plan's errors, each naming its field.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jr2_preflight::plan::{PLAN_SCHEMA, PlanError, RawPlan, ValidPlan, stand_in};
use jr2_preflight::pod::{self, check_pod, to_yaml};
use jr2_probe::spec::RunSpec;
use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, PodSpec, SecurityContext};
use serde_json::{Value, json};

/// 2026-01-01T00:00:00Z.
const NOW: u64 = 1_767_225_600;
const RUN_ID: &str = "k3x9q2m7pa";

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NOW)
}

fn example_json() -> Value {
    serde_json::from_str(include_str!("../examples/plan.json")).expect("the example is JSON")
}

/// A plan as the driver takes it: read, then validated.
fn plan_of(v: Value) -> Result<ValidPlan, PlanError> {
    RawPlan::from_value(v).and_then(RawPlan::validate)
}

/// A plan's text as the driver takes it: parsed, then validated.
fn parse(text: &str) -> Result<ValidPlan, PlanError> {
    RawPlan::parse(text).and_then(RawPlan::validate)
}

fn example() -> ValidPlan {
    plan_of(example_json()).expect("the example plan is valid")
}

/// The check pods of a plan, as created.
fn check_pods(plan: &ValidPlan, run_id: &str, now: SystemTime) -> Vec<Pod> {
    pod::check_pods(plan, run_id, now)
        .into_iter()
        .map(|c| c.pod)
        .collect()
}

fn spec(pod: &Pod) -> &PodSpec {
    pod.spec.as_ref().expect("a spec")
}

fn probe(pod: &Pod) -> &Container {
    let s = spec(pod);
    assert_eq!(s.containers.len(), 1, "the probe is the only container");
    &s.containers[0]
}

fn env_of<'a>(c: &'a Container, name: &str) -> Option<&'a EnvVar> {
    c.env.iter().flatten().find(|e| e.name == name)
}

fn names<T>(items: Option<&Vec<T>>, name: impl Fn(&T) -> &str) -> Vec<String> {
    items
        .into_iter()
        .flatten()
        .map(|i| name(i).to_owned())
        .collect()
}

/// The example with what it does not exercise: a runtime class, host aliases, a resource env of the Harness, a CA
/// mount outside /etc/jr2/ca that NODE_EXTRA_CA_CERTS points into, and the env the probe sets itself.
fn full_json() -> Value {
    let mut v = example_json();
    let s = &mut v["placements"][0]["podSpec"];
    s["runtimeClassName"] = json!("gvisor");
    s["schedulerName"] = json!("jr2-sandbox-scheduler");
    s["hostAliases"] = json!([{"ip": "10.0.0.5", "hostnames": ["vllm.lan.example"]}]);
    s["volumes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "corp-ca", "configMap": {"name": "corp-ca"}}));
    let h = &mut s["containers"][0];
    h["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "corp-ca", "mountPath": "/opt/corp-ca"}));
    let env = h["env"].as_array_mut().unwrap();
    for e in env.iter_mut() {
        if e["name"] == "NODE_EXTRA_CA_CERTS" {
            e["value"] = json!("/opt/corp-ca/ca.crt");
        }
    }
    env.push(json!({"name": "GOMAXPROCS", "valueFrom": {"resourceFieldRef": {"containerName": "harness", "resource": "limits.cpu"}}}));
    env.push(json!({"name": "ENVOY_MEM", "valueFrom": {"resourceFieldRef": {"containerName": "custodian", "resource": "limits.memory"}}}));
    env.push(json!({"name": "OTHER_MEM", "valueFrom": {"resourceFieldRef": {"containerName": "cache-warmer", "resource": "limits.memory"}}}));
    env.push(json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}));
    env.push(json!({"name": "NODE_NAME", "value": "from-the-harness"}));
    env.push(json!({"name": "JR2_PROBE_DEADLINE", "value": "1"}));
    v
}

fn full() -> ValidPlan {
    plan_of(full_json()).expect("the full variant is valid")
}

/// A placement without a Custodian (nothing held), and one whose Custodian is already a native sidecar.
fn variants_json() -> Value {
    let mut v = example_json();
    let p0 = v["placements"][0].as_object_mut().unwrap();
    p0.remove("custodianContainer");
    let s0 = &mut v["placements"][0]["podSpec"];
    s0["containers"].as_array_mut().unwrap().truncate(1);
    s0["volumes"]
        .as_array_mut()
        .unwrap()
        .retain(|vol| !vol["name"].as_str().unwrap().starts_with("custodian-"));
    let s1 = &mut v["placements"][1]["podSpec"];
    let mut custodian = s1["containers"].as_array_mut().unwrap().remove(1);
    custodian["restartPolicy"] = json!("Always");
    custodian["startupProbe"] =
        json!({"tcpSocket": {"port": 15001}, "periodSeconds": 1, "failureThreshold": 30});
    s1["initContainers"] = json!([custodian]);
    v
}

// --- The plan ------------------------------------------------------------------------------------------------------

#[test]
fn the_example_plan_parses_and_validates() {
    let plan = example();
    assert_eq!(plan.schema, PLAN_SCHEMA);
    assert_eq!(plan.namespace, "demo");
    assert_eq!(plan.instance, "demo");
    assert_eq!(plan.deadline_seconds, 300);
    assert_eq!(plan.timeout_seconds, 120);
    assert_eq!(
        plan.placements
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>(),
        ["sandbox", "instance-harness"]
    );
    assert!(plan.placements.iter().all(|p| p.via_custodian()));
    let sandbox = &plan.placements[0].pod_spec;
    assert!(sandbox.node_selector.is_some() && sandbox.tolerations.is_some());
    assert_eq!(sandbox.priority_class_name.as_deref(), Some("jr2-sandbox"));
    assert_eq!(
        sandbox.security_context.as_ref().unwrap().fs_group,
        Some(2000)
    );
    assert!(plan.placements[1].pod_spec.node_selector.is_none());
    assert_eq!(
        plan.models
            .iter()
            .map(|m| (m.model.as_str(), m.placement.as_str()))
            .collect::<Vec<_>>(),
        [
            ("anthropic/claude-haiku-4-5", "sandbox"),
            ("vllm/Qwen/Qwen3-32B", "instance-harness"),
            ("google/gemini-2.5-flash", "instance-harness"),
        ]
    );
    assert_eq!(
        plan.harness_pod_labels("sandbox").unwrap()["app.kubernetes.io/name"],
        "jr2-sandbox"
    );
    // Read from a file as the driver does.
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan.json");
    assert_eq!(
        RawPlan::read(&file).and_then(RawPlan::validate).unwrap(),
        plan
    );
    let e = RawPlan::read(Path::new("/nonexistent/plan.json")).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("--plan: cannot read /nonexistent/plan.json: "),
        "{e}"
    );
}

fn plan_schema() -> jsonschema::Validator {
    let s: Value = serde_json::from_str(include_str!("../schemas/plan.v1.schema.json")).unwrap();
    jsonschema::draft202012::meta::validate(&s).expect("valid against the 2020-12 meta-schema");
    assert_eq!(s["properties"]["schema"]["const"], PLAN_SCHEMA);
    jsonschema::draft202012::new(&s).expect("the schema compiles")
}

fn schema_errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

#[test]
fn the_json_schema_agrees_with_the_parser() {
    let v = plan_schema();
    for doc in [example_json(), full_json(), variants_json()] {
        assert_eq!(schema_errors(&v, &doc), Vec::<String>::new());
        plan_of(doc.clone()).unwrap();
        // What the driver writes back validates too (defaults filled in).
        let again = serde_json::to_value(plan_of(doc).unwrap()).unwrap();
        assert_eq!(schema_errors(&v, &again), Vec::<String>::new());
    }
    // The minimum: defaults for deadline, timeout and harnessContainer.
    let mut min = example_json();
    let o = min.as_object_mut().unwrap();
    o.remove("deadlineSeconds");
    o.remove("timeoutSeconds");
    o.remove("networkPolicyCheck");
    for p in o["placements"].as_array_mut().unwrap() {
        p.as_object_mut().unwrap().remove("harnessContainer");
    }
    assert_eq!(schema_errors(&v, &min), Vec::<String>::new());
    plan_of(min).unwrap();
    // Both refuse what is not a plan.
    let bad: Vec<Value> = vec![
        {
            let mut d = example_json();
            d["deadline"] = json!(300);
            d
        },
        {
            let mut d = example_json();
            d["models"][0]["keyHel"] = json!(true);
            d
        },
        {
            let mut d = example_json();
            d["models"][0]["api"] = json!("openai-chat");
            d
        },
        {
            let mut d = example_json();
            d["models"][0].as_object_mut().unwrap().remove("keyHeld");
            d
        },
        {
            let mut d = example_json();
            d["models"][0]["model"] = json!("claude-haiku-4-5");
            d
        },
        {
            let mut d = example_json();
            d["placements"][0]["name"] = json!("Sandbox");
            d
        },
        {
            let mut d = example_json();
            d["schema"] = json!("jr2.dev/provider-preflight-plan/v2");
            d
        },
        {
            let mut d = example_json();
            d["placements"][0]["podSpec"]
                .as_object_mut()
                .unwrap()
                .remove("containers");
            d
        },
        {
            let mut d = example_json();
            d["networkPolicyCheck"]["labels"] = json!({});
            d
        },
    ];
    for doc in bad {
        assert!(!v.is_valid(&doc), "the schema takes {doc}");
        assert!(plan_of(doc).is_err());
    }
}

/// Each bad plan gets one error that names its field, and says no secret value.
#[test]
fn plan_errors_name_their_field() {
    type Edit = fn(&mut Value);
    let cases: Vec<(&str, Edit)> = vec![
        ("no schema", |v| {
            v.as_object_mut().unwrap().remove("schema");
        }),
        ("another schema", |v| {
            v["schema"] = json!("jr2.dev/provider-preflight-plan/v2")
        }),
        ("schema not a string", |v| v["schema"] = json!(1)),
        ("unknown field", |v| v["deadline"] = json!(300)),
        ("no namespace", |v| {
            v.as_object_mut().unwrap().remove("namespace");
        }),
        ("bad namespace", |v| v["namespace"] = json!("Demo_NS")),
        ("bad instance", |v| v["instance"] = json!("")),
        ("bad probe image", |v| v["probeImage"] = json!("jr2 probe")),
        ("deadline as text", |v| v["deadlineSeconds"] = json!("300")),
        ("deadline under the timeout", |v| {
            v["deadlineSeconds"] = json!(60)
        }),
        ("deadline in ms", |v| v["deadlineSeconds"] = json!(300_000)),
        ("zero timeout", |v| v["timeoutSeconds"] = json!(0)),
        ("placements not a list", |v| v["placements"] = json!({})),
        ("no placement", |v| v["placements"] = json!([])),
        ("placement not an object", |v| {
            v["placements"][1] = json!("sandbox")
        }),
        ("bad placement name", |v| {
            v["placements"][0]["name"] = json!("Sandbox")
        }),
        ("same placement twice", |v| {
            v["placements"][1]["name"] = json!("sandbox")
        }),
        ("no pod spec", |v| {
            v["placements"][0]
                .as_object_mut()
                .unwrap()
                .remove("podSpec");
        }),
        ("pod spec without containers", |v| {
            v["placements"][0]["podSpec"]
                .as_object_mut()
                .unwrap()
                .remove("containers");
        }),
        ("no such harness container", |v| {
            v["placements"][1]["harnessContainer"] = json!("agent")
        }),
        ("no such custodian container", |v| {
            v["placements"][1]["custodianContainer"] = json!("envoy")
        }),
        ("custodian is the harness", |v| {
            v["placements"][1]["custodianContainer"] = json!("harness")
        }),
        ("mount without a volume", |v| {
            v["placements"][0]["podSpec"]["volumes"]
                .as_array_mut()
                .unwrap()
                .remove(3);
        }),
        ("unknown model field", |v| {
            v["models"][0]["keyHel"] = json!(true)
        }),
        ("no keyHeld", |v| {
            v["models"][0].as_object_mut().unwrap().remove("keyHeld");
        }),
        ("no such placement", |v| {
            v["models"][2]["placement"] = json!("sandbox-gpu")
        }),
        ("unknown api", |v| {
            v["models"][1]["api"] = json!("openai-chat")
        }),
        ("api not a string", |v| v["models"][1]["api"] = json!(3)),
        ("unknown source", |v| {
            v["models"][0]["source"] = json!("hub")
        }),
        ("bad tool choice", |v| {
            v["models"][0]["toolChoice"] = json!("always")
        }),
        ("max tokens as text", |v| {
            v["models"][1]["maxTokens"] = json!("many")
        }),
        ("model without a provider", |v| {
            v["models"][0]["model"] = json!("claude-haiku-4-5")
        }),
        ("model with an empty id", |v| {
            v["models"][0]["model"] = json!("anthropic/")
        }),
        ("not in the catalog", |v| {
            v["models"][0]["model"] = json!("anthropic/claude-nope-9")
        }),
        ("custom without a base URL", |v| {
            v["models"][1].as_object_mut().unwrap().remove("baseUrl");
        }),
        ("gateway without a base URL", |v| {
            v["models"][0]["source"] = json!("gateway")
        }),
        ("base URL not http", |v| {
            v["models"][1]["baseUrl"] = json!("ftp://vllm.lan.example/v1")
        }),
        ("base URL with credentials", |v| {
            v["models"][1]["baseUrl"] = json!("https://user:pw@vllm.lan.example/v1")
        }),
        ("base URL not a URL", |v| {
            v["models"][1]["baseUrl"] = json!("vllm.lan.example")
        }),
        ("bad key env", |v| {
            v["models"][0]["keyEnv"] = json!("ANTHROPIC-KEY")
        }),
        ("same model twice on a placement", |v| {
            let dup = v["models"][2].clone();
            v["models"].as_array_mut().unwrap().push(dup);
        }),
        ("a literal key in the Harness env", |v| {
            v["placements"][0]["podSpec"]["containers"][0]["env"][3]["value"] =
                json!("sk-ant-api03-THISISNOTAREALKEYBUTLOOKSLIKEONE0000000000");
        }),
        ("model id with an escape and a forged line", |v| {
            v["models"][1]["model"] = json!("vllm/m\u{1b}[31m\nerror: forged")
        }),
        ("model id with a bidi control", |v| {
            v["models"][0]["model"] = json!("anthropic/claude-haiku-4-5\u{202e}")
        }),
        ("network policy check of an unknown placement", |v| {
            v["networkPolicyCheck"]["harnessPodLabels"]["gpu"] = json!({"a": "b"});
        }),
        ("network policy check misspelt", |v| {
            v["networkPolicyCheck"] = json!({"labels": {}})
        }),
        // Issue 11, items 9 and 14: the inner field of a pod spec, image references, env names, sizes.
        ("env value not a string, inside the pod spec", |v| {
            v["placements"][0]["podSpec"]["containers"][0]["env"][1]["value"] = json!(8081)
        }),
        ("toleration seconds as text, inside the pod spec", |v| {
            v["placements"][0]["podSpec"]["tolerations"][0]["tolerationSeconds"] = json!("60")
        }),
        ("probe image with upper case", |v| {
            v["probeImage"] = json!("registry.example.com/JR2/probe:0.1.0")
        }),
        ("probe image with a bad tag", |v| {
            v["probeImage"] = json!("registry.example.com/jr2/probe:-0.1")
        }),
        ("probe image with a short digest", |v| {
            v["probeImage"] = json!("registry.example.com/jr2/probe@sha256:abc")
        }),
        ("probe image with a bad registry port", |v| {
            v["probeImage"] = json!("registry.example.com:80a/jr2/probe")
        }),
        ("custodian image with a space", |v| {
            v["placements"][1]["podSpec"]["containers"][1]["image"] = json!("envoy proxy")
        }),
        ("custodian without an image", |v| {
            v["placements"][1]["podSpec"]["containers"][1]
                .as_object_mut()
                .unwrap()
                .remove("image");
        }),
        ("env name with '='", |v| {
            v["placements"][0]["podSpec"]["containers"][0]["env"][1]["name"] = json!("A=B")
        }),
        ("empty env name", |v| {
            v["placements"][1]["podSpec"]["containers"][0]["env"][0]["name"] = json!("")
        }),
        ("a model id of 100,000 characters", |v| {
            v["models"][1]["model"] = json!(format!("vllm/{}", "m".repeat(100_000)))
        }),
        ("10,000 models on one placement", |v| {
            let one = v["models"][1].clone();
            v["models"] = (0..10_000)
                .map(|i| {
                    let mut m = one.clone();
                    m["model"] = json!(format!("vllm/qwen3-{i}"));
                    m
                })
                .collect();
        }),
    ];
    let mut out = String::new();
    for (name, edit) in cases {
        let mut v = example_json();
        edit(&mut v);
        let e = plan_of(v).expect_err(name);
        let field = e
            .field()
            .unwrap_or_else(|| panic!("{name}: {e} names no field"))
            .to_string();
        let text = e.to_string();
        assert!(text.starts_with(&format!("{field}: ")), "{name}: {text}");
        assert!(field.starts_with("plan"), "{name}: {text}");
        assert!(
            !text.contains("sk-ant"),
            "{name}: the error shows the key: {text}"
        );
        out.push_str(&format!("{name}\n  {text}\n"));
    }
    for (name, text) in [
        ("not JSON", "{"),
        ("not an object", "[]"),
        (
            "a key twice",
            "{\"namespace\": \"demo\",\n \"namespace\": \"kube-system\"}",
        ),
        (
            "a key twice, deeper",
            "{\"placements\": [{\"name\": \"a\", \"name\": \"b\"}]}",
        ),
    ] {
        let e = parse(text).expect_err(name);
        out.push_str(&format!("{name}\n  {e}\n"));
    }
    assert_eq!(PlanError::EXIT_CODE, 2);
    insta::assert_snapshot!("plan_errors", out);
}

/// A model id with an escape and a forged line is bad input before anything is printed: `--skip-provider-preflight`
/// and `--dry-run` included (issue 11, item 5).
#[test]
fn a_forged_model_id_is_refused_even_when_the_preflight_is_skipped() {
    let dir = std::env::temp_dir().join(format!("jr2-model-id-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut v = example_json();
    v["models"][1]["model"] = json!("vllm/m\u{1b}[31m\nerror: forged");
    let path = dir.join("plan.json");
    std::fs::write(&path, v.to_string()).unwrap();
    for flag in ["--skip-provider-preflight", "--dry-run"] {
        let out = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
            .args(["run", "--plan"])
            .arg(&path)
            .arg(flag)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{flag}: {stderr}");
        assert!(
            stderr.starts_with("error: plan.models[1].model: "),
            "{flag}: {stderr}"
        );
        assert!(!stderr.contains('\u{1b}'), "{flag}: a raw ESC: {stderr:?}");
        assert!(out.stdout.is_empty(), "{flag}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// A plan without models is nothing to check, not bad input: exit 0, an ok verdict, no line, and nothing contacted
/// (the kubeconfig points nowhere), skipped or not. A skipped model on two placements is named once (issue 12,
/// item 15).
#[test]
fn a_plan_without_models_checks_nothing_and_a_skip_names_each_model_once() {
    let dir = std::env::temp_dir().join(format!("jr2-no-models-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |plan: &Value, flags: &[&str]| {
        let path = dir.join("plan.json");
        std::fs::write(&path, plan.to_string()).unwrap();
        Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
            .args(["run", "-o", "json", "--plan"])
            .arg(&path)
            .args(flags)
            .env("KUBECONFIG", dir.join("no-such-kubeconfig"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .unwrap()
    };
    let mut empty = example_json();
    empty["models"] = json!([]);
    for flags in [&[][..], &["--skip-provider-preflight"][..]] {
        let out = run(&empty, flags);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{flags:?}: {stderr}");
        assert_eq!(stderr, "", "{flags:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["ok"], true, "{flags:?}");
        assert_eq!(v["skipped"], !flags.is_empty(), "{flags:?}");
        assert_eq!(v["models"], json!([]), "{flags:?}");
        assert_eq!(v["pods"], json!([]), "{flags:?}");
        assert_eq!(v["lines"], json!([]), "{flags:?}");
    }
    // Still checked as a plan: a bad placement is exit 2.
    let mut bad = empty.clone();
    bad["placements"][0]["name"] = json!("Not A Label");
    assert_eq!(run(&bad, &[]).status.code(), Some(2));

    let mut twice = example_json();
    let mut haiku_there = twice["models"][0].clone();
    haiku_there["placement"] = json!("instance-harness");
    twice["models"][1] = haiku_there;
    let out = run(&twice, &["--skip-provider-preflight"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: provider: preflight skipped (--skip-provider-preflight) — these models were not checked: anthropic/claude-haiku-4-5, google/gemini-2.5-flash\n"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// What the command line and the file bring (issue 11, items 9 and 14): a BOM is skipped; a plan past 1 MiB
/// (`/dev/zero` too) is one line, not a machine out of memory; the flags' values are refused under the flags' names.
#[test]
fn the_plan_file_and_the_flags_are_bounded_and_named() {
    let example = include_str!("../examples/plan.json");
    parse(&format!("\u{feff}{example}")).expect("a BOM is skipped");
    let dir = std::env::temp_dir().join(format!("jr2-plan-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.json");
    std::fs::write(&big, format!("{example}{}", " ".repeat(1024 * 1024))).unwrap();
    let plan = dir.join("plan.json");
    std::fs::write(&plan, example).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
            .arg("run")
            .args(args)
            .arg("--dry-run")
            .output()
            .unwrap();
        assert_eq!(
            out.stdout.is_empty(),
            out.status.code() != Some(0),
            "{args:?}: the pods on stdout, or nothing"
        );
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    let cases: Vec<(Vec<&std::ffi::OsStr>, String)> = vec![
        (
            vec![os("--plan"), os("/dev/zero")],
            "error: --plan: /dev/zero is larger than 1 MiB; a plan's check pods must fit the API server's limit on one object (1.5 MiB)\n".to_owned(),
        ),
        (
            vec![os("--plan"), big.as_os_str()],
            format!("error: --plan: {} is larger than 1 MiB; a plan's check pods must fit the API server's limit on one object (1.5 MiB)\n", big.display()),
        ),
        (
            vec![os("--plan"), plan.as_os_str(), os("-n"), os("Kube_System")],
            "error: --namespace: \"Kube_System\" is not a DNS-1123 label (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)\n".to_owned(),
        ),
        (
            vec![os("--plan"), plan.as_os_str(), os("--probe-image"), os("jr2/Probe:1")],
            "error: --probe-image: \"jr2/Probe:1\" is not an image reference (the path's components are lower-case letters and digits joined by '.', '_', '__' or '-')\n".to_owned(),
        ),
    ];
    for (args, want) in cases {
        let (code, stderr) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr, want, "{args:?}");
    }
    // Good flag values pass.
    let (code, stderr) = run(&[
        os("--plan"),
        plan.as_os_str(),
        os("-n"),
        os("other-ns"),
        os("--probe-image"),
        os(
            "localhost:5000/jr2/jr2-probe:0.1.0@sha256:eb2c01c13125d1629637cb4e4cce7207009fb7cc2c8027f9742758549d15b6f4",
        ),
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A literal secret in the Harness or the Custodian env, named like a key of pi's catalog or shaped like a secret,
/// is bad input: the field named, the value never repeated, nothing printed on stdout (issue 11, item 2). The
/// Stand-ins and `valueFrom` references of the example stay accepted.
#[test]
fn a_literal_secret_in_either_container_is_refused_without_repeating_it() {
    let dir = std::env::temp_dir().join(format!("jr2-literal-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let literal = "sk-proj-Zq0123456789abcdefghijklmnopqrstuvwxyzAB";
    assert_eq!(literal.len(), 48);
    // (placement, container, env entry, the field's start, the message's start)
    let cases = [
        (
            0,
            0,
            json!({"name": "OPENAI_API_KEY", "value": literal}),
            "plan.placements[0].podSpec.containers[0].env[13].value",
            "OPENAI_API_KEY is a literal; a plan carries the Stand-in \"jr2-held-OPENAI_API_KEY\"",
        ),
        (
            0,
            0,
            json!({"name": "DATABASE_PASSWORD", "value": literal}),
            "plan.placements[0].podSpec.containers[0].env[13].value",
            "DATABASE_PASSWORD looks like a secret and is a literal (48 characters, not repeated)",
        ),
        (
            1,
            1,
            json!({"name": "GEMINI_API_KEY", "value": literal}),
            "plan.placements[1].podSpec.containers[1].env[0].value",
            "GEMINI_API_KEY is a literal",
        ),
        (
            1,
            1,
            json!({"name": "upstream_token", "value": literal}),
            "plan.placements[1].podSpec.containers[1].env[0].value",
            "upstream_token looks like a secret",
        ),
    ];
    for (pi, ci, entry, field, message) in cases {
        let mut v = example_json();
        let container = &mut v["placements"][pi]["podSpec"]["containers"][ci];
        if container.get("env").is_none() {
            container["env"] = json!([]);
        }
        container["env"].as_array_mut().unwrap().push(entry.clone());
        let err = plan_of(v.clone()).expect_err(&entry.to_string());
        let line = format!("error: {err}");
        assert!(
            line.starts_with(&format!("error: {field}: {message}")),
            "{line}"
        );
        assert!(!line.contains(literal), "the value is repeated: {line}");
        let path = dir.join("plan.json");
        std::fs::write(&path, v.to_string()).unwrap();
        for flag in ["--dry-run", "--skip-provider-preflight"] {
            let out = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
                .args(["run", "--plan"])
                .arg(&path)
                .arg(flag)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
            assert_eq!(
                stderr.lines().collect::<Vec<_>>(),
                [line.as_str()],
                "{flag}"
            );
            assert!(out.stdout.is_empty(), "{flag}: nothing is printed");
        }
        // The Stand-in and an empty value are what a plan may hold.
        for value in [
            format!("jr2-held-{}", entry["name"].as_str().unwrap()),
            String::new(),
        ] {
            let mut ok = example_json();
            let container = &mut ok["placements"][pi]["podSpec"]["containers"][ci];
            if container.get("env").is_none() {
                container["env"] = json!([]);
            }
            let mut e = entry.clone();
            e["value"] = json!(value);
            container["env"].as_array_mut().unwrap().push(e);
            plan_of(ok).unwrap_or_else(|e| panic!("{value:?}: {e}"));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Issue 25, item 7: a secret by its shape, whatever its name or field, never reaches the dry-run YAML or the
/// create: the run is refused (exit 2), the value never repeated.
#[test]
fn a_secret_by_its_shape_is_refused_whatever_its_name_or_field() {
    let dir = std::env::temp_dir().join(format!("jr2-shaped-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pw = "PW4242secret";
    // (container, what is added to it)
    let cases: [(usize, Value); 6] = [
        (
            0,
            json!({"env": [{"name": "HTTPS_PROXY", "value": format!("http://corp:{pw}@proxy:3128")}]}),
        ),
        (
            0,
            json!({"env": [{"name": "DATABASE_URL", "value": format!("postgres://app:{pw}@db")}]}),
        ),
        (
            0,
            json!({"env": [{"name": "SENTRY_DSN", "value": format!("https://{pw}@o1.ingest.sentry.io/4")}]}),
        ),
        (
            0,
            json!({"env": [{"name": "FOO", "value": format!("sk-proj-{pw}abcdefgh")}]}),
        ),
        (
            1,
            json!({"args": ["--api-key", format!("sk-ant-api03-{pw}abcdef")]}),
        ),
        (
            1,
            json!({"readinessProbe": {"httpGet": {"path": "/", "port": 1, "httpHeaders": [{"name": "Authorization", "value": format!("Bearer {pw}")}]}}}),
        ),
    ];
    for (ci, add) in cases {
        let mut v = example_json();
        let container = &mut v["placements"][0]["podSpec"]["containers"][ci];
        for (k, val) in add.as_object().unwrap() {
            match (container.get_mut(k), val) {
                (Some(Value::Array(have)), Value::Array(more)) => have.extend(more.iter().cloned()),
                _ => container[k] = val.clone(),
            }
        }
        let path = dir.join("plan.json");
        std::fs::write(&path, v.to_string()).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_jr2-preflight"))
            .args(["run", "--plan"])
            .arg(&path)
            .arg("--dry-run")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{add}: {stderr}");
        assert!(out.stdout.is_empty(), "{add}: no dry-run YAML");
        assert!(
            !stderr.contains(pw),
            "{add}: the value is repeated: {stderr}"
        );
        assert!(
            stderr.starts_with("error: plan.placements[0].podSpec.containers["),
            "{stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

// --- The pods ------------------------------------------------------------------------------------------------------

#[test]
fn one_pod_per_distinct_placement_with_models() {
    let plan = example();
    let pods = check_pods(&plan, RUN_ID, now());
    assert_eq!(pods.len(), 2);
    assert_eq!(
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect::<Vec<_>>(),
        [
            "jr2-preflight-demo-sandbox-k3x9q2m7",
            "jr2-preflight-demo-instance-harness-k3x9q2m7"
        ]
    );
    // The two models of the Instance Harness run in one pod, in plan order.
    let spec: RunSpec = run_spec_of(&pods[1]);
    assert_eq!(
        spec.models
            .iter()
            .map(|m| m.model.as_str())
            .collect::<Vec<_>>(),
        ["vllm/Qwen/Qwen3-32B", "google/gemini-2.5-flash"]
    );
    // A placement without a model gets no pod.
    let mut v = example_json();
    v["models"][0]["placement"] = json!("instance-harness");
    let plan = plan_of(v).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    assert_eq!(pods.len(), 1);
    assert_eq!(labels(&pods[0])["jr2.dev/placement"], "instance-harness");
    assert_eq!(run_spec_of(&pods[0]).models.len(), 3);
}

#[test]
fn a_check_pod_carries_its_placement_and_plan_models() {
    let plan = example();
    let checks = pod::check_pods(&plan, RUN_ID, now());
    let facts: Vec<(&str, &[usize])> = checks
        .iter()
        .map(|c| (c.placement.as_str(), c.models.as_slice()))
        .collect();
    assert_eq!(
        facts,
        [("sandbox", &[0][..]), ("instance-harness", &[1, 2][..])]
    );
    for c in &checks {
        // The same facts as the pod's label and run spec say.
        assert_eq!(labels(&c.pod)["jr2.dev/placement"], c.placement);
        let names: Vec<String> = run_spec_of(&c.pod)
            .models
            .into_iter()
            .map(|m| m.model)
            .collect();
        let planned: Vec<String> = c
            .models
            .iter()
            .map(|&i| plan.models[i].model.clone())
            .collect();
        assert_eq!(names, planned);
        assert_eq!(
            c.pod,
            check_pod(&plan, plan.placement(&c.placement).unwrap(), RUN_ID, now())
        );
    }
    // Each model kept what its resolution gave when the plan was validated.
    let r = plan.resolved(0);
    assert_eq!(r.id, "claude-haiku-4-5");
    assert_eq!(r.host, "api.anthropic.com");
}

fn labels(pod: &Pod) -> &BTreeMap<String, String> {
    pod.metadata.labels.as_ref().unwrap()
}

fn run_spec_of(pod: &Pod) -> RunSpec {
    let args = probe(pod).args.as_ref().unwrap();
    let i = args.iter().position(|a| a == "--spec-json").unwrap();
    serde_json::from_str(&args[i + 1]).expect("the probe reads the spec")
}

/// Contract section 6, field by field, on both placements of the full variant.
#[test]
fn every_field_of_contract_section_6() {
    let plan = full();
    let pods = check_pods(&plan, RUN_ID, now());
    assert_eq!(pods.len(), 2);
    for (pod, placement) in pods.iter().zip(&plan.placements) {
        let h = &placement.pod_spec;
        let s = spec(pod);
        let harness = placement.harness().unwrap();
        let custodian = placement.custodian().unwrap();

        // Own metadata.
        let name = pod.metadata.name.as_deref().unwrap();
        assert_eq!(
            name,
            format!("jr2-preflight-demo-{}-k3x9q2m7", placement.name)
        );
        assert!(name.len() <= 63);
        assert_eq!(pod.metadata.namespace.as_deref(), Some("demo"));
        assert_eq!(
            labels(pod),
            &BTreeMap::from([
                (
                    "app.kubernetes.io/name".to_owned(),
                    "jr2-provider-preflight".to_owned()
                ),
                (
                    "app.kubernetes.io/managed-by".to_owned(),
                    "jr2-preflight".to_owned()
                ),
                ("jr2.dev/instance".to_owned(), "demo".to_owned()),
                ("jr2.dev/preflight-run".to_owned(), RUN_ID.to_owned()),
                ("jr2.dev/placement".to_owned(), placement.name.clone()),
            ]),
            "the Harness's labels are not copied"
        );
        assert_eq!(
            pod.metadata.annotations.as_ref().unwrap(),
            &BTreeMap::from([(
                "jr2.dev/preflight-deadline".to_owned(),
                "2026-01-01T00:05:00.000Z".to_owned()
            )])
        );
        assert_eq!(
            pod::deadline_of(pod),
            Some(now() + Duration::from_secs(300))
        );
        assert!(pod.status.is_none());

        // Copied from the Harness pod spec.
        assert_eq!(s.node_selector, h.node_selector);
        assert_eq!(s.affinity, h.affinity);
        assert_eq!(s.tolerations, h.tolerations);
        assert_eq!(s.priority_class_name, h.priority_class_name);
        assert_eq!(s.runtime_class_name, h.runtime_class_name);
        assert_eq!(s.scheduler_name, h.scheduler_name);
        assert_eq!(s.image_pull_secrets, h.image_pull_secrets);
        assert_eq!(s.dns_policy, h.dns_policy);
        assert_eq!(s.dns_config, h.dns_config);
        assert_eq!(s.host_aliases, h.host_aliases);
        // The pod security context: the Harness's, made restricted (it already is in the example).
        let hsc = h.security_context.as_ref().unwrap();
        let sc = s.security_context.as_ref().unwrap();
        assert_eq!(sc, hsc);
        assert_eq!(
            sc.fs_group,
            Some(2000),
            "the Custodian reads its values through fsGroup"
        );
        assert_eq!(sc.run_as_non_root, Some(true));
        assert_eq!(sc.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");

        // Not copied: the service account, resources, other containers, anything else of the pod.
        assert_eq!(s.service_account_name, None);
        assert_eq!(s.service_account, None);
        assert_eq!(s.termination_grace_period_seconds, None);
        assert_eq!(s.resources, None);
        assert_eq!(s.priority, None);
        assert_eq!(s.host_network, None);
        assert_eq!(s.share_process_namespace, None);

        // Own pod fields.
        assert_eq!(s.restart_policy.as_deref(), Some("Never"));
        assert_eq!(s.active_deadline_seconds, Some(300));
        assert_eq!(s.automount_service_account_token, Some(false));
        assert_eq!(s.enable_service_links, Some(false));

        // The Custodian: a native sidecar, otherwise as in the Harness spec.
        let init = s.init_containers.as_ref().unwrap();
        assert_eq!(
            init.len(),
            1,
            "only the Custodian: other init containers are not copied"
        );
        let sidecar = &init[0];
        assert_eq!(sidecar.restart_policy.as_deref(), Some("Always"));
        assert_eq!(sidecar.name, custodian.name);
        assert_eq!(sidecar.image, custodian.image);
        assert_eq!(sidecar.image_pull_policy, custodian.image_pull_policy);
        assert_eq!(sidecar.args, custodian.args);
        assert_eq!(sidecar.env, custodian.env);
        assert_eq!(sidecar.volume_mounts, custodian.volume_mounts);
        assert_eq!(sidecar.resources, custodian.resources);
        assert_eq!(sidecar.security_context, custodian.security_context);
        assert_eq!(sidecar.readiness_probe, custodian.readiness_probe);
        assert_eq!(sidecar.ports, custodian.ports);
        // Its readiness probe doubles as a startup probe: the probe starts once the Custodian listens.
        let ready = custodian.readiness_probe.as_ref().unwrap();
        let startup = sidecar.startup_probe.as_ref().unwrap();
        assert_eq!(startup.http_get, ready.http_get);
        assert_eq!(startup.period_seconds, Some(1));
        assert_eq!(startup.failure_threshold, Some(60));
        assert_eq!(startup.success_threshold, None);
        assert_eq!(
            Container {
                restart_policy: None,
                startup_probe: None,
                ..sidecar.clone()
            },
            custodian.clone()
        );

        // The volumes those containers mount, and only those, in the Harness spec's order.
        let mut mounted: Vec<&str> = custodian
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| m.name.as_str())
            .collect();
        mounted.push("jr2-ca");
        if placement.name == "sandbox" {
            mounted.push("corp-ca");
        }
        let want: Vec<String> = names(h.volumes.as_ref(), |v| &v.name)
            .into_iter()
            .filter(|n| mounted.contains(&n.as_str()))
            .collect();
        assert_eq!(names(s.volumes.as_ref(), |v| &v.name), want);
        for v in s.volumes.iter().flatten() {
            let orig = h
                .volumes
                .iter()
                .flatten()
                .find(|o| o.name == v.name)
                .unwrap();
            assert_eq!(v, orig, "volume {} is copied as is", v.name);
        }
        assert!(
            !names(s.volumes.as_ref(), |v| &v.name)
                .iter()
                .any(|n| ["workspace", "tmp", "state"].contains(&n.as_str()))
        );

        // The probe container.
        let p = probe(pod);
        assert_eq!(p.name, "probe");
        assert_eq!(
            p.image.as_deref(),
            Some("registry.example.com/jr2/jr2-probe:0.1.0")
        );
        assert_eq!(p.image_pull_policy.as_deref(), Some("IfNotPresent"));
        assert_eq!(p.command, None, "the image's entrypoint is jr2-probe");
        let args = p.args.as_ref().unwrap();
        assert_eq!(
            args[..4],
            [
                "run",
                "--termination-log",
                "/dev/termination-log",
                "--spec-json"
            ]
        );
        assert_eq!(args.len(), 5);
        assert_eq!(run_spec_of(pod), plan.run_spec_for(&placement.name));
        assert_eq!(
            p.termination_message_path.as_deref(),
            Some("/dev/termination-log")
        );
        assert_eq!(
            p.termination_message_policy.as_deref(),
            Some("FallbackToLogsOnError")
        );
        assert_eq!(p.env_from, harness.env_from, "envFrom is copied");
        assert!(p.env_from.is_some());
        // Env: the Harness env in order (valueFrom kept as references), then NODE_NAME and the deadline.
        let env = p.env.as_ref().unwrap();
        let (copied, own) = env.split_at(env.len() - 2);
        let mut expected: Vec<EnvVar> = harness
            .env
            .iter()
            .flatten()
            .filter(|e| {
                e.name != "NODE_NAME" && e.name != "JR2_PROBE_DEADLINE" && e.name != "OTHER_MEM"
            })
            .cloned()
            .collect();
        for e in &mut expected {
            if e.name == "GOMAXPROCS" {
                e.value_from
                    .as_mut()
                    .unwrap()
                    .resource_field_ref
                    .as_mut()
                    .unwrap()
                    .container_name = Some("probe".to_owned());
            }
        }
        assert_eq!(copied, expected.as_slice());
        assert_eq!(own[0].name, "NODE_NAME");
        assert_eq!(own[0].value, None);
        let field_ref = own[0]
            .value_from
            .as_ref()
            .unwrap()
            .field_ref
            .as_ref()
            .unwrap();
        assert_eq!(field_ref.field_path, "spec.nodeName");
        assert_eq!(own[1].name, "JR2_PROBE_DEADLINE");
        assert_eq!(
            own[1].value.as_deref(),
            Some((NOW + 300).to_string().as_str())
        );
        for key in [
            "JR2_SANDBOX_TOKEN",
            "HTTPS_PROXY",
            "https_proxy",
            "NO_PROXY",
            "no_proxy",
            "NODE_EXTRA_CA_CERTS",
            "SSL_CERT_FILE",
            "SENTRY_DSN",
        ] {
            assert!(env_of(p, key).is_some(), "{key} is copied");
        }
        let dsn = env_of(p, "SENTRY_DSN").unwrap();
        assert_eq!(dsn.value, None);
        let r = dsn
            .value_from
            .as_ref()
            .unwrap()
            .secret_key_ref
            .as_ref()
            .unwrap();
        assert_eq!(
            (r.name.as_str(), r.key.as_str()),
            ("jr2-app", "sentry-dsn"),
            "a reference stays a reference"
        );
        for m in &plan.models {
            if m.placement == placement.name {
                let k = m.key_env.as_deref().unwrap();
                assert_eq!(
                    env_of(p, k).unwrap().value,
                    Some(stand_in(k)),
                    "the Stand-in of {k}"
                );
            }
        }
        // CA mounts: under /etc/jr2/ca, or where a CA variable points (sandbox: /opt/corp-ca); read-only.
        let mounts: Vec<(String, String, Option<bool>)> = p
            .volume_mounts
            .iter()
            .flatten()
            .map(|m| (m.name.clone(), m.mount_path.clone(), m.read_only))
            .collect();
        let mut want = vec![("jr2-ca".to_owned(), "/etc/jr2/ca".to_owned(), Some(true))];
        if placement.name == "sandbox" {
            want.push(("corp-ca".to_owned(), "/opt/corp-ca".to_owned(), Some(true)));
        }
        assert_eq!(mounts, want);
        // Small requests and a memory limit, not the Harness's.
        let res = p.resources.as_ref().unwrap();
        assert_ne!(p.resources, harness.resources);
        assert_eq!(
            res.requests
                .as_ref()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect::<Vec<_>>(),
            [("cpu", "10m"), ("memory", "32Mi")]
        );
        assert_eq!(
            res.limits
                .as_ref()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.as_str(), v.0.as_str()))
                .collect::<Vec<_>>(),
            [("memory", "64Mi")]
        );
        // The restricted security context, field by field.
        assert_probe_security_context(p.security_context.as_ref().unwrap());
        // Nothing else on the probe.
        assert_eq!(
            Container {
                name: p.name.clone(),
                image: p.image.clone(),
                image_pull_policy: p.image_pull_policy.clone(),
                args: p.args.clone(),
                env: p.env.clone(),
                env_from: p.env_from.clone(),
                volume_mounts: p.volume_mounts.clone(),
                termination_message_path: p.termination_message_path.clone(),
                termination_message_policy: p.termination_message_policy.clone(),
                resources: p.resources.clone(),
                security_context: p.security_context.clone(),
                ..Container::default()
            },
            p.clone()
        );
    }
}

fn assert_probe_security_context(sc: &SecurityContext) {
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(sc.run_as_user, Some(65532));
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    let caps = sc.capabilities.as_ref().unwrap();
    assert_eq!(caps.drop.as_deref(), Some(&["ALL".to_owned()][..]));
    assert_eq!(caps.add, None);
    assert_eq!(sc.seccomp_profile.as_ref().unwrap().type_, "RuntimeDefault");
    assert_eq!(sc.privileged, None);
    assert_eq!(sc.proc_mount, None);
    assert_eq!(sc.se_linux_options, None);
    assert_eq!(sc.app_armor_profile, None);
    assert_eq!(sc.windows_options, None);
    assert_eq!(sc.run_as_group, None);
}

#[test]
fn a_placement_without_a_custodian_and_one_already_a_sidecar() {
    let plan = plan_of(variants_json()).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    // No Custodian: no sidecar, no Custodian volume, direct calls.
    let s = spec(&pods[0]);
    assert_eq!(s.init_containers, None);
    assert_eq!(names(s.volumes.as_ref(), |v| &v.name), ["jr2-ca"]);
    assert!(
        run_spec_of(&pods[0])
            .models
            .iter()
            .all(|m| !m.via_custodian)
    );
    // Already a sidecar: copied once, its own startup probe kept.
    let s = spec(&pods[1]);
    let init = s.init_containers.as_ref().unwrap();
    assert_eq!(init.len(), 1);
    assert_eq!(init[0].restart_policy.as_deref(), Some("Always"));
    assert_eq!(init[0], plan.placements[1].custodian().unwrap().clone());
    assert!(run_spec_of(&pods[1]).models.iter().all(|m| m.via_custodian));
}

/// Issue 25, item 12: the Custodian's `procMount: Unmasked` is not copied into the check pod.
#[test]
fn an_unmasked_proc_mount_is_not_copied() {
    let mut v = example_json();
    for c in v["placements"][0]["podSpec"]["containers"]
        .as_array_mut()
        .unwrap()
    {
        if c["name"] == "custodian" {
            c["securityContext"]["procMount"] = json!("Unmasked");
        }
    }
    let plan = plan_of(v).unwrap();
    let pods = check_pods(&plan, RUN_ID, now());
    let custodian = &spec(&pods[0]).init_containers.as_ref().unwrap()[0];
    let sc = custodian
        .security_context
        .as_ref()
        .expect("its security context");
    assert_eq!(sc.proc_mount, None);
}

#[test]
fn a_long_instance_and_placement_still_make_a_valid_name() {
    let mut v = example_json();
    let long_i = "an-instance-with-a-rather-long-name-for-a-namespace";
    let long_p = "sandbox-gpu-nodes-in-the-second-zone";
    v["instance"] = json!(long_i);
    v["placements"][0]["name"] = json!(long_p);
    v["models"][0]["placement"] = json!(long_p);
    v["networkPolicyCheck"]["harnessPodLabels"]
        .as_object_mut()
        .unwrap()
        .remove("sandbox");
    let plan = plan_of(v).unwrap();
    let pod = &check_pods(&plan, RUN_ID, now())[0];
    let name = pod.metadata.name.as_deref().unwrap();
    assert!(name.len() <= 63, "{name}");
    assert!(name.starts_with("jr2-preflight-an-instance"));
    assert!(name.ends_with("-k3x9q2m7"));
    assert_eq!(labels(pod)["jr2.dev/placement"], long_p);
    assert_eq!(labels(pod)["jr2.dev/instance"], long_i);
}

// --- No secret value ----------------------------------------------------------------------------------------------

/// The shapes a literal env value of a generated container may have: a Stand-in of its own name, the Custodian's
/// loopback addresses, the no-proxy list, the CA paths, NODE_USE_ENV_PROXY, the deadline.
fn allowed_literal(name: &str, value: &str) -> bool {
    let loopback_url = |v: &str| {
        v.strip_prefix("http://127.0.0.1:")
            .is_some_and(|port| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()))
    };
    value == stand_in(name)
        || (["HTTPS_PROXY", "https_proxy", "JR2_CUSTODIAN_URL"].contains(&name)
            && loopback_url(value))
        || (["NO_PROXY", "no_proxy"].contains(&name) && value == "localhost,127.0.0.1,::1")
        || (name == "NODE_USE_ENV_PROXY" && value == "1")
        || (pod::CA_ENV.contains(&name)
            && (value.starts_with("/etc/jr2/ca/") || value.starts_with("/opt/corp-ca/"))
            && value.ends_with(".crt")
            && !value.contains(".."))
        || (name == "JR2_PROBE_DEADLINE" && value == (NOW + 300).to_string())
}

/// Anything that looks like a key: provider prefixes, or a long run of base64/hex.
fn key_like(text: &str) -> Option<String> {
    for prefix in ["sk-", "sk_", "AIza", "xoxb-", "ghp_", "AKIA", "-----BEGIN"] {
        if text.contains(prefix) {
            return Some(prefix.to_owned());
        }
    }
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '+' || c == '=' || c == '_'))
        .find(|t| t.len() >= 32)
        .map(str::to_owned)
}

fn literal_env_problems(pod: &Pod) -> Vec<String> {
    let s = spec(pod);
    s.containers
        .iter()
        .chain(s.init_containers.iter().flatten())
        .flat_map(|c| {
            c.env.iter().flatten().filter_map(move |e| {
                let v = e.value.as_deref()?;
                (!allowed_literal(&e.name, v)).then(|| format!("{}: {}={v}", c.name, e.name))
            })
        })
        .collect()
}

/// Every string of the pod but image references (a digest is a long hex run).
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o
            .iter()
            .filter(|(k, _)| k.as_str() != "image")
            .for_each(|(_, x)| strings(x, out)),
        _ => {}
    }
}

#[test]
fn no_secret_value_in_any_generated_pod() {
    for plan in [example(), full(), plan_of(variants_json()).unwrap()] {
        for pod in check_pods(&plan, RUN_ID, now()) {
            // Every literal env value has an allowed shape; everything else is a reference.
            assert_eq!(literal_env_problems(&pod), Vec::<String>::new());
            for c in spec(&pod)
                .containers
                .iter()
                .chain(spec(&pod).init_containers.iter().flatten())
            {
                for e in c.env.iter().flatten() {
                    assert!(
                        e.value.is_some() != e.value_from.is_some(),
                        "{}: one of value, valueFrom",
                        e.name
                    );
                }
            }
            // Nothing key-like anywhere in the pod: args (the run spec), annotations, volumes...
            let mut all = Vec::new();
            strings(&serde_json::to_value(&pod).unwrap(), &mut all);
            for s in &all {
                assert_eq!(key_like(s), None, "key-like text in {s}");
            }
            // The run spec names env vars, never a value.
            let spec_json = &probe(&pod).args.as_ref().unwrap()[4];
            let spec: Value = serde_json::from_str(spec_json).unwrap();
            for m in spec["models"].as_array().unwrap() {
                let keys: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
                for k in keys {
                    assert!(
                        [
                            "model",
                            "source",
                            "baseUrl",
                            "api",
                            "keyEnv",
                            "keyHeld",
                            "viaCustodian",
                            "maxTokens",
                            "contextWindow",
                            "toolChoice"
                        ]
                        .contains(&k),
                        "unexpected run-spec field {k}"
                    );
                }
            }
        }
    }
    // The checks themselves catch a key.
    let mut pod = check_pods(&example(), RUN_ID, now()).remove(0);
    pod.spec.as_mut().unwrap().containers[0]
        .env
        .as_mut()
        .unwrap()
        .push(EnvVar {
            name: "ANTHROPIC_API_KEY".to_owned(),
            value: Some("sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345".to_owned()),
            value_from: None,
        });
    assert_eq!(literal_env_problems(&pod).len(), 1);
    assert!(key_like("sk-ant-api03-abc").is_some());
    assert!(key_like("dGhpcyBpcyBhIGxvbmcgYmFzZTY0IHNlY3JldCB2YWx1ZQ==").is_some());
    assert!(!allowed_literal("HTTPS_PROXY", "http://evil.example:15001"));
    assert!(!allowed_literal(
        "ANTHROPIC_API_KEY",
        "jr2-held-GEMINI_API_KEY"
    ));
}

// --- Pod Security: restricted --------------------------------------------------------------------------------------

/// The restricted Pod Security Standard (baseline included), field by field, on the whole pod: an empty list means
/// the pod is admitted in a namespace labelled `pod-security.kubernetes.io/enforce: restricted`.
fn restricted_violations(pod: &Pod) -> Vec<String> {
    let s = spec(pod);
    let mut v = Vec::new();
    let mut bad = |cond: bool, what: String| {
        if cond {
            v.push(what);
        }
    };
    bad(s.host_network == Some(true), "hostNetwork".into());
    bad(s.host_pid == Some(true), "hostPID".into());
    bad(s.host_ipc == Some(true), "hostIPC".into());
    let psc = s.security_context.clone().unwrap_or_default();
    bad(psc.run_as_user == Some(0), "pod runAsUser 0".into());
    let safe_sysctls = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    ];
    for sysctl in psc.sysctls.iter().flatten() {
        bad(
            !safe_sysctls.contains(&sysctl.name.as_str()),
            format!("sysctl {}", sysctl.name),
        );
    }
    let seccomp_ok = |p: Option<&k8s_openapi::api::core::v1::SeccompProfile>| {
        p.map(|p| matches!(p.type_.as_str(), "RuntimeDefault" | "Localhost"))
    };
    for vol in s.volumes.iter().flatten() {
        let allowed = vol.config_map.is_some()
            || vol.csi.is_some()
            || vol.downward_api.is_some()
            || vol.empty_dir.is_some()
            || vol.ephemeral.is_some()
            || vol.persistent_volume_claim.is_some()
            || vol.projected.is_some()
            || vol.secret.is_some();
        bad(
            !allowed,
            format!("volume {} of a type restricted forbids", vol.name),
        );
    }
    for c in s
        .containers
        .iter()
        .chain(s.init_containers.iter().flatten())
    {
        let sc = c.security_context.clone().unwrap_or_default();
        let n = &c.name;
        bad(sc.privileged == Some(true), format!("{n}: privileged"));
        bad(
            sc.allow_privilege_escalation != Some(false),
            format!("{n}: allowPrivilegeEscalation is not false"),
        );
        let non_root = sc.run_as_non_root.or(psc.run_as_non_root);
        bad(
            non_root != Some(true),
            format!("{n}: runAsNonRoot is not true"),
        );
        bad(sc.run_as_user == Some(0), format!("{n}: runAsUser 0"));
        let seccomp =
            seccomp_ok(sc.seccomp_profile.as_ref()).or(seccomp_ok(psc.seccomp_profile.as_ref()));
        bad(
            seccomp != Some(true),
            format!("{n}: seccomp is not RuntimeDefault or Localhost"),
        );
        let caps = sc.capabilities.clone().unwrap_or_default();
        bad(
            !caps.drop.iter().flatten().any(|d| d == "ALL"),
            format!("{n}: does not drop ALL"),
        );
        bad(
            caps.add.iter().flatten().any(|a| a != "NET_BIND_SERVICE"),
            format!("{n}: adds a capability"),
        );
        bad(
            sc.proc_mount.as_deref().is_some_and(|m| m != "Default"),
            format!("{n}: procMount"),
        );
        bad(
            c.ports
                .iter()
                .flatten()
                .any(|p| p.host_port.is_some_and(|h| h != 0)),
            format!("{n}: hostPort"),
        );
        if let Some(se) = &sc.se_linux_options {
            bad(
                se.user.is_some() || se.role.is_some(),
                format!("{n}: SELinux user or role"),
            );
        }
        if let Some(a) = &sc.app_armor_profile {
            bad(a.type_ == "Unconfined", format!("{n}: AppArmor Unconfined"));
        }
    }
    v
}

#[test]
fn the_restricted_pod_security_profile() {
    for plan in [example(), full(), plan_of(variants_json()).unwrap()] {
        for pod in check_pods(&plan, RUN_ID, now()) {
            assert_eq!(
                restricted_violations(&pod),
                Vec::<String>::new(),
                "{:?}",
                pod.metadata.name
            );
            assert_probe_security_context(probe(&pod).security_context.as_ref().unwrap());
        }
    }
    // A Harness pod security context that is not restricted is made so at the pod level.
    let mut v = example_json();
    v["placements"][1]["podSpec"]["securityContext"] =
        json!({"runAsUser": 0, "seccompProfile": {"type": "Unconfined"}, "fsGroup": 2000});
    let plan = plan_of(v).unwrap();
    let pod = check_pod(&plan, &plan.placements[1], RUN_ID, now());
    let sc = spec(&pod).security_context.clone().unwrap();
    assert_eq!(sc.run_as_user, None);
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(sc.seccomp_profile.unwrap().type_, "RuntimeDefault");
    assert_eq!(sc.fs_group, Some(2000));
    assert_eq!(restricted_violations(&pod), Vec::<String>::new());
    // And the check catches a pod that is not.
    let mut pod = pod;
    pod.spec.as_mut().unwrap().containers[0].security_context = None;
    pod.spec.as_mut().unwrap().host_network = Some(true);
    assert_eq!(
        restricted_violations(&pod),
        [
            "hostNetwork",
            "probe: allowPrivilegeEscalation is not false",
            "probe: does not drop ALL"
        ]
    );
}

// --- The Kubernetes 1.35 schema ----------------------------------------------------------------------------------

use jr2_testkit::peers::{kubernetes_validate, validate_1_35};

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
    let env = odd.spec.as_mut().unwrap().containers[0]
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

// --- The dry run ---------------------------------------------------------------------------------------------------

#[test]
fn dry_run_yaml_of_the_example() {
    let pods = check_pods(&example(), RUN_ID, now());
    let yaml = to_yaml(&pods);
    assert_eq!(
        yaml.matches("\n---\n").count() + usize::from(yaml.starts_with("---\n")),
        2
    );
    // It reads back as the same pods.
    let back: Vec<Pod> = yaml
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml::from_str(d).unwrap())
        .collect();
    assert_eq!(back, pods);
    insta::assert_snapshot!("dry_run_example", yaml);
}

/// `jr2-preflight images` (issue 15, item 4): each image the dry-run pods reference, once, read back from the dry-run
/// YAML (not through `pod::images`); the probe image follows `--probe-image`; without a plan, the probe image alone;
/// a bad `--probe-image` is one `error:` line naming the flag, exit 2, nothing on stdout.
#[test]
fn images_lists_what_the_dry_run_pods_reference() {
    let driver = env!("CARGO_BIN_EXE_jr2-preflight");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan.json");
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(driver).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let os = std::ffi::OsStr::new;
    let dry_run = |probe_image: &str| {
        let (code, yaml, stderr) = run(&[
            os("run"),
            os("--plan"),
            example.as_os_str(),
            os("--probe-image"),
            os(probe_image),
            os("--dry-run"),
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        let mut images: Vec<String> = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(&yaml) {
            let pod: Value = serde::Deserialize::deserialize(doc).unwrap();
            for key in ["initContainers", "containers"] {
                for c in pod["spec"][key].as_array().into_iter().flatten() {
                    let image = c["image"]
                        .as_str()
                        .expect("every container names its image");
                    if !images.iter().any(|i| i == image) {
                        images.push(image.to_owned());
                    }
                }
            }
        }
        images
    };
    let plan_image = example_json()["probeImage"].as_str().unwrap().to_owned();
    let want = dry_run(&plan_image);
    assert!(want.contains(&plan_image), "{want:?}");
    assert!(want.len() >= 2, "the probe and the Custodians: {want:?}");
    let (code, stdout, stderr) = run(&[os("images"), os("--plan"), example.as_os_str()]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    assert_eq!(
        stdout,
        want.iter().map(|i| format!("{i}\n")).collect::<String>()
    );

    // A mirror's probe image replaces the plan's, as in the pods.
    let mirrored = "mirror.example.com:5000/jr2/jr2-probe:0.1.0";
    let (code, stdout, stderr) = run(&[
        os("images"),
        os("--plan"),
        example.as_os_str(),
        os("--probe-image"),
        os(mirrored),
    ]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    assert_eq!(
        stdout,
        dry_run(mirrored)
            .iter()
            .map(|i| format!("{i}\n"))
            .collect::<String>()
    );
    assert!(stdout.lines().any(|l| l == mirrored) && !stdout.lines().any(|l| l == plan_image));

    let (code, stdout, _) = run(&[os("images")]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        format!("{}\n", jr2_preflight::plan::DEFAULT_PROBE_IMAGE)
    );

    let (code, stdout, stderr) = run(&[os("images"), os("--probe-image"), os("jr2/Probe:1")]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: --probe-image: \"jr2/Probe:1\" is not an image reference (the path's components are lower-case letters and digits joined by '.', '_', '__' or '-')\n"
    );
    assert_eq!(stdout, "");
    let (code, stdout, stderr) = run(&[os("images"), os("--plan-file"), example.as_os_str()]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(
        stderr.starts_with("error: ") && stderr.ends_with(" (see jr2-preflight images --help)\n"),
        "{stderr}"
    );
}

/// Both binaries end a clap error in one place (`jr2_probe::cli::usage_error`, issue 26, move 3): with no subcommand,
/// clap's help and exit 2 (the driver used to join the help into one garbled `error:` line).
#[test]
fn usage_errors_end_in_one_place() {
    jr2_testkit::cli::assert_usage_errors(
        env!("CARGO_BIN_EXE_jr2-preflight"),
        "jr2-preflight",
        "run",
    );
}
