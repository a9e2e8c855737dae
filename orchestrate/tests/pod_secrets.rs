//! No secret value in any generated pod: every literal env value has an allowed shape, and no string of the pod
//! looks like a key.

use jr2_preflight::plan::stand_in;
use jr2_preflight::pod::{self};
use k8s_openapi::api::core::v1::{EnvVar, Pod};
use serde_json::Value;

mod common;
use common::{NOW, RUN_ID, check_pods, example, full, now, plan_of, probe, spec, variants_json};

/// The shapes a literal env value of a generated container may have: a Stand-in of its own name, the Custodian's
/// loopback addresses, the no-proxy list, the CA paths, NODE_USE_ENV_PROXY, the deadline, the Custodian's readiness.
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
        || (name == "JR2_CUSTODIAN_READY" && custodian_readiness(value))
}

/// Where the probe asks the Custodian's readiness: its own loopback, a port, a plain path (the readiness probe's,
/// which the pod spec already holds).
fn custodian_readiness(value: &str) -> bool {
    fn port_then(rest: &str) -> Option<&str> {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then(|| &rest[digits..])
    }
    let plain_path = |p: &str| {
        p.starts_with('/')
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_.~-".contains(&b))
    };
    match (
        value.strip_prefix("http://127.0.0.1:"),
        value.strip_prefix("tcp://127.0.0.1:"),
    ) {
        (Some(rest), _) => port_then(rest).is_some_and(plain_path),
        (_, Some(rest)) => port_then(rest) == Some(""),
        _ => false,
    }
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
    pod.spec
        .as_mut()
        .unwrap()
        .containers
        .last_mut()
        .unwrap()
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
