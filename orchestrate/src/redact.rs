//! What the evidence bundle keeps of a cluster object: every value that is a secret by its NAME replaced by
//! `[redacted]` (issue 40, item 4).
//!
//! The pods the driver creates hold no secret value (the plan refuses one), but the pod the cluster shows back is
//! what admission made of it: a mutating webhook or policy can inject `DB_PASSWORD`, `VAULT_TOKEN` or an annotation
//! `vault.example.com/token` with their values. Those are judged as the plan judges names
//! (`plan::secret_env::is_secret_name`, `is_secret_key`), wherever they are in the object: an `env` entry's `value`
//! (of any container, init or ephemeral, injected or ours), an annotation's or a label's value. A Stand-in
//! (`jr2-held-<NAME>`) is no secret and is kept. The values that are secrets by their SHAPE whatever their name (a
//! key, a URL's credentials, a JWT) are the evidence's scrub's to redact, on every file (`evidence::scrub`).

use serde::Serialize;
use serde_json::Value;

use crate::plan::secret_env::{is_secret_key, is_secret_name};

/// `value` as JSON, with every value that is a secret by its name redacted (see the module's doc).
pub fn by_name<T: Serialize + ?Sized>(value: &T) -> Value {
    let mut v = serde_json::to_value(value).unwrap_or(Value::Null);
    walk(&mut v);
    v
}

fn walk(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                match (key.as_str(), item) {
                    ("env", Value::Array(entries)) => {
                        for e in entries.iter_mut() {
                            env_entry(e);
                        }
                    }
                    ("annotations" | "labels", Value::Object(pairs)) => {
                        for (k, value) in pairs.iter_mut() {
                            if is_secret_key(k) {
                                redact(value);
                            }
                        }
                    }
                    (_, item) => walk(item),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(walk),
        _ => {}
    }
}

/// An env entry `{name, value}`: its value redacted when the name is a secret's.
fn env_entry(e: &mut Value) {
    let Some(map) = e.as_object_mut() else {
        return;
    };
    let secret = map
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(is_secret_name);
    if secret && let Some(value) = map.get_mut("value") {
        redact(value);
    }
    // `valueFrom` is a reference, and anything else in the entry is walked as usual.
    for (k, item) in map.iter_mut() {
        if k != "value" {
            walk(item);
        }
    }
}

/// A secret's value, replaced; an empty value and a Stand-in are no secret and are kept.
fn redact(value: &mut Value) {
    if let Value::String(s) = value
        && !s.is_empty()
        && !jr2_probe::sanitize::is_stand_in(s)
    {
        *s = jr2_probe::sanitize::REDACTED.to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The pod as the API server shows it after a mutating admission policy injected secrets (issue 40, item 4).
    #[test]
    fn what_admission_injected_is_redacted_by_name() {
        let pod = json!({
            "metadata": {
                "name": "jr2-preflight-demo-harness-run0001",
                "annotations": {"vault.example.com/token": "hvs.PW4242abc", "vault.example.com/role": "harness"},
                "labels": {"app.kubernetes.io/name": "jr2-provider-preflight"}
            },
            "spec": {
                "initContainers": [{"name": "mesh-init", "env": [
                    {"name": "MESH_BOOTSTRAP", "value": "plain"},
                    {"name": "VAULT_TOKEN", "value": "PW4242vault"}
                ]}],
                "containers": [{"name": "probe", "env": [
                    {"name": "DB_PASSWORD", "value": "PW4242db"},
                    {"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"},
                    {"name": "EMPTY_TOKEN", "value": ""},
                    {"name": "EXTRA_TOKEN", "valueFrom": {"secretKeyRef": {"name": "extra", "key": "token"}}},
                    {"name": "LOG_LEVEL", "value": "debug"}
                ]}],
                "ephemeralContainers": [{"name": "debug", "env": [{"name": "GH_PAT", "value": "PW4242gh"}]}]
            }
        });
        let out = by_name(&pod);
        let text = serde_json::to_string(&out).unwrap();
        assert!(!text.contains("PW4242"), "{text}");
        let env = &out["spec"]["containers"][0]["env"];
        assert_eq!(env[0]["value"], "[redacted]");
        assert_eq!(
            env[1]["value"], "jr2-held-ANTHROPIC_API_KEY",
            "a Stand-in is kept"
        );
        assert_eq!(env[2]["value"], "");
        assert_eq!(env[3]["valueFrom"]["secretKeyRef"]["key"], "token");
        assert_eq!(env[4]["value"], "debug");
        assert_eq!(out["spec"]["initContainers"][0]["env"][0]["value"], "plain");
        let annotations = &out["metadata"]["annotations"];
        assert_eq!(annotations["vault.example.com/token"], "[redacted]");
        assert_eq!(annotations["vault.example.com/role"], "harness");
    }
}
