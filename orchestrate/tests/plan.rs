//! The plan file, as the driver reads and validates it: the example plan, the JSON Schema that agrees with the
//! parser, the plan's errors each naming its field, the bounds of the file and the flags, and refused literal
//! secrets.

use std::path::Path;
use std::process::Command;

use jr2_preflight::plan::{PLAN_SCHEMA, PlanError, RawPlan};
use serde_json::{Value, json};

mod common;
use common::{example, example_json, full_json, parse, plan_of, variants_json};

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
