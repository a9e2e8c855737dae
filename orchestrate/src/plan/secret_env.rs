//! Which env entries of the Harness and Custodian containers may only hold a Stand-in, never a value.
//!
//! A plan never holds a secret value (contract, section 3): jr2 writes the Stand-in `jr2-held-<NAME>` where a
//! Turn's env would hold a key, and the Custodian holds the key itself through a `valueFrom` reference. The check pod
//! copies both containers' env, so a literal there would reach the dry-run YAML, the create request, the evidence
//! bundle and the cluster's etcd. An entry is a secret's when its name is a key variable of pi's catalog
//! (`ANTHROPIC_API_KEY`..., and `AWS_BEARER_TOKEN_BEDROCK`, which Bedrock's own code reads), `JR2_PROVIDER_API_KEY`, a model's `keyEnv`, or shaped like a secret (`*_KEY`,
//! `*_TOKEN`, `*_SECRET`, `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`, any case). Such an entry with a literal
//! `value` that is neither empty nor its Stand-in is bad input: one `error:` line naming the field, the value never
//! repeated. `valueFrom` references stay references and are accepted. The same holds for `--from-deployment`,
//! which validates the Deployment's pod spec through the same plan.
//!
//! A value is a secret by its shape too, whatever its name (issue 25, item 7): shaped like a catalog provider's key
//! (`sk-proj-…`, `AIza…`, `gsk_…`) or a URL with credentials (`http://corp:PW@proxy:3128`, `postgres://app:PW@db`,
//! `https://KEY@sentry`), by `jr2_probe::sanitize::secret_shape`, the one rule the redaction of every text uses.
//! Such a literal anywhere in a copied container (its env, `args`, `command`, `lifecycle`, probes) is refused the
//! same way, and so is a literal header named `authorization`, `x-api-key` or `api-key` in a probe's
//! `httpHeaders`. This is the one place the dry-run YAML, the create request and the evidence bundle's pods go
//! through: a plan that passes holds no secret value.

use k8s_openapi::api::core::v1::Container;

use super::{Field, Placement, PlanError, SpecPath, Step, stand_in};

/// The custom provider's key variable (`harness.provider.apiKey`).
pub const PROVIDER_KEY_ENV: &str = "JR2_PROVIDER_API_KEY";

/// Why a name is a secret's: the first rule it meets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    /// A key variable of pi's catalog, `JR2_PROVIDER_API_KEY` or a model's `keyEnv`.
    Key,
    /// Its shape (`*_TOKEN`...).
    Shape,
}

fn why_secret(name: &str, key_envs: &[&str]) -> Option<Why> {
    // Every key variable of the catalog, sorted: gathered once, not per env entry.
    static CATALOG_KEYS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    let catalog_keys = CATALOG_KEYS.get_or_init(|| jr2_probe::catalog::pinned().all_key_env());
    if name == PROVIDER_KEY_ENV
        || key_envs.contains(&name)
        || catalog_keys.binary_search(&name).is_ok()
    {
        return Some(Why::Key);
    }
    let upper = name.to_ascii_uppercase();
    let shaped = ["_KEY", "_TOKEN", "_SECRET", "_PWD", "_PAT"]
        .iter()
        .any(|end| upper.ends_with(end))
        || [
            "PASSWORD",
            "PASSWD",
            "CREDENTIAL",
            "APIKEY",
            "API_KEY",
            "SECRET_KEY",
        ]
        .iter()
        .any(|part| upper.contains(part));
    shaped.then_some(Why::Shape)
}

/// Whether an env variable of this name holds a secret, as the plan judges it (any model's `keyEnv` aside): what
/// the evidence bundle redacts by name, whoever set the value (admission included; issue 40, item 4).
pub fn is_secret_name(name: &str) -> bool {
    why_secret(name, &[]).is_some()
}

/// Whether an annotation or label of this key holds a secret, by the same rule as [`is_secret_name`]: its name
/// (after any `prefix/`) read as an env name, words joined by `_` (`vault.example.com/token` is `_TOKEN`,
/// `vault.hashicorp.com/agent-inject-token` is `_AGENT_INJECT_TOKEN`, `db-password` is `_DB_PASSWORD`).
pub fn is_secret_key(key: &str) -> bool {
    let name = key.rsplit('/').next().unwrap_or(key);
    let as_env: String = std::iter::once('_')
        .chain(name.chars().map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        }))
        .collect();
    why_secret(&as_env, &[]).is_some()
}

/// Refuses a literal secret in the env of `p`'s Harness or Custodian container (see the module's doc). `placement`
/// is its index in the plan; `key_envs` are the `keyEnv`s of the plan's models.
pub fn check(placement: usize, p: &Placement, key_envs: &[&str]) -> Result<(), PlanError> {
    for (path, c) in p.copied_containers() {
        container(&path, c, key_envs).map_err(|(path, message)| PlanError::Invalid {
            field: Field::PodSpec(placement, path),
            message,
        })?;
    }
    Ok(())
}

/// What is refused: the field under the pod spec, and why.
type Refused = (SpecPath, String);

/// A literal that is a secret by its shape: the field and the words, the value never repeated.
fn shaped(field: SpecPath, value: &str) -> Option<Refused> {
    let shape = jr2_probe::sanitize::secret_shape(value)?;
    Some((
        field,
        format!(
            "is shaped like {shape} ({} characters, not repeated); a plan carries a Stand-in or a valueFrom \
             reference, never a secret value",
            value.chars().count()
        ),
    ))
}

/// Headers that carry a credential whatever their value looks like.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "x-api-key", "api-key"];

/// Every string of the container but its env (checked by name and shape in [`container`]): `args`, `command`,
/// `lifecycle`, the probes, and a credential header of a probe's `httpGet`.
fn other_fields(at: &SpecPath, c: &Container) -> Result<(), Refused> {
    let mut value = serde_json::to_value(c).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.remove("env");
    }
    walk(at, &value)
}

fn walk(at: &SpecPath, v: &serde_json::Value) -> Result<(), Refused> {
    use serde_json::Value;
    match v {
        Value::String(s) => match shaped(at.clone(), s) {
            Some(e) => Err(e),
            None => Ok(()),
        },
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(&at.index(i), item)?;
            }
            Ok(())
        }
        Value::Object(map) => {
            // An httpHeaders entry: {name, value}, an item of a list under a field `httpHeaders`.
            let steps = at.steps();
            let header =
                matches!(steps, [.., Step::Key(list), Step::Index(_)] if list == "httpHeaders");
            if let (Some(Value::String(name)), Some(Value::String(value))) =
                (map.get("name"), map.get("value"))
                && header
                && CREDENTIAL_HEADERS
                    .iter()
                    .any(|h| h.eq_ignore_ascii_case(name.trim()))
                && !value.is_empty()
            {
                return Err((
                    at.key("value"),
                    format!(
                        "is a literal {} header ({} characters, not repeated); a plan carries no credential",
                        jr2_probe::sanitize::escape_truncate(&name.to_ascii_lowercase(), 40),
                        value.chars().count()
                    ),
                ));
            }
            for (k, item) in map {
                walk(&at.key(k.as_str()), item)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn container(at: &SpecPath, c: &Container, key_envs: &[&str]) -> Result<(), Refused> {
    for (k, e) in c.env.iter().flatten().enumerate() {
        let Some(value) = e.value.as_deref().filter(|v| !v.is_empty()) else {
            continue;
        };
        let held = stand_in(&e.name);
        if value == held {
            continue;
        }
        let Some(why) = why_secret(&e.name, key_envs) else {
            // Not a secret's name: a secret by its shape all the same.
            if let Some(e) = shaped(at.key("env").index(k).key("value"), value) {
                return Err(e);
            }
            continue;
        };
        // The name is shown (it passed the name check of the types, and it is not the value); the value never.
        let name = jr2_probe::sanitize::escape_truncate(&e.name, 100);
        let message = match why {
            Why::Key => format!(
                "{name} is a literal; a plan carries the Stand-in \"{held}\" or a valueFrom reference, never a key"
            ),
            Why::Shape => format!(
                "{name} looks like a secret and is a literal ({} characters, not repeated); a plan carries the \
                 Stand-in \"{held}\" or a valueFrom reference, never a secret value",
                value.chars().count()
            ),
        };
        return Err((at.key("env").index(k).key("value"), message));
    }
    other_fields(at, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_secrets() {
        for name in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "JR2_PROVIDER_API_KEY",
            "MY_GATEWAY",
            "GITHUB_TOKEN",
            "db_password",
            "DATABASE_PASSWORD",
            "AWS_SECRET",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "SMTP_PASSWD",
            "signing_key",
            "OPENAI_APIKEY",
            "API_KEY_2",
            "MYSQL_PWD",
            "GH_PAT",
        ] {
            assert!(why_secret(name, &["MY_GATEWAY"]).is_some(), "{name}");
        }
        for name in [
            "NODE_EXTRA_CA_CERTS",
            "HTTPS_PROXY",
            "LOG_LEVEL",
            "KEY_FILE_PATH",
            "TOKEN_AUDIENCE",
            "MONKEY",
        ] {
            assert_eq!(why_secret(name, &["MY_GATEWAY"]), None, "{name}");
        }
    }

    #[test]
    fn keys_of_annotations_read_as_env_names() {
        for key in [
            "vault.example.com/token",
            "vault.hashicorp.com/agent-inject-token",
            "db-password",
            "example.com/api-key",
            "example.com/client_secret",
        ] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in [
            "app.kubernetes.io/name",
            "vault.hashicorp.com/role",
            "token-audience",
            "kubectl.kubernetes.io/default-container",
        ] {
            assert!(!is_secret_key(key), "{key}");
        }
        assert!(is_secret_name("DB_PASSWORD") && is_secret_name("VAULT_TOKEN"));
        assert!(!is_secret_name("MESH_BOOTSTRAP"));
    }

    #[test]
    fn bedrock_s_bearer_token_is_a_key_though_pi_s_catalog_lists_none() {
        // Not shaped like a secret (`*_BEDROCK`), and not in the catalog's keyEnv: a key all the same.
        assert_eq!(why_secret("AWS_BEARER_TOKEN_BEDROCK", &[]), Some(Why::Key));
    }

    fn container_of(v: serde_json::Value) -> Container {
        serde_json::from_value(v).unwrap()
    }

    /// Issue 25, item 7: a secret by its shape, whatever its name or field, is refused and never repeated.
    #[test]
    fn secrets_by_their_shape_whatever_the_name_or_field() {
        let cases = [
            (
                serde_json::json!({"name": "h", "env": [{"name": "HTTPS_PROXY", "value": "http://corp:PW4242@proxy:3128"}]}),
                "x.env[0].value",
            ),
            (
                serde_json::json!({"name": "h", "env": [{"name": "DATABASE_URL", "value": "postgres://app:PW4242@db"}]}),
                "x.env[0].value",
            ),
            (
                serde_json::json!({"name": "h", "env": [{"name": "SENTRY_DSN", "value": "https://PW4242abcdef@o1.ingest.sentry.io/4"}]}),
                "x.env[0].value",
            ),
            (
                serde_json::json!({"name": "h", "env": [{"name": "FOO", "value": "sk-proj-PW4242abcdefghijklmnop"}]}),
                "x.env[0].value",
            ),
            (
                serde_json::json!({"name": "h", "env": [{"name": "MYSQL_PWD", "value": "PW4242"}]}),
                "x.env[0].value",
            ),
            (
                serde_json::json!({"name": "h", "args": ["--api-key", "sk-ant-api03-PW4242abcdefghij"]}),
                "x.args[1]",
            ),
            (
                serde_json::json!({"name": "h", "command": ["sh", "-c", "curl -H x https://u:PW4242@h/"]}),
                "x.command[2]",
            ),
            (
                serde_json::json!({"name": "h", "lifecycle": {"postStart": {"exec": {"command": ["AIzaSyPW4242abcdefghijklmnopqrstuvwxyz1"]}}}}),
                "x.lifecycle.postStart.exec.command[0]",
            ),
            (
                serde_json::json!({"name": "h", "readinessProbe": {"httpGet": {"port": 80, "httpHeaders": [{"name": "Authorization", "value": "Bearer PW4242"}]}}}),
                "x.readinessProbe.httpGet.httpHeaders[0].value",
            ),
        ];
        for (c, field) in cases {
            let (f, message) =
                container(&SpecPath::default(), &container_of(c.clone()), &[]).unwrap_err();
            assert_eq!(format!("x{f}"), field, "{c}");
            assert!(!message.contains("PW4242"), "{message}");
            let e = PlanError::Invalid {
                field: Field::PodSpec(0, f),
                message,
            };
            assert!(!e.to_string().contains("PW4242"), "{e}");
        }
        // Stand-ins, references, ordinary values and URLs pass.
        let fine = serde_json::json!({"name": "h",
            "env": [{"name": "OPENAI_API_KEY", "value": "jr2-held-OPENAI_API_KEY"},
                    {"name": "HTTPS_PROXY", "value": "http://proxy:3128"},
                    {"name": "LOG_LEVEL", "value": "debug"}],
            "args": ["--port", "8080", "https://api.openai.com/v1"],
            "readinessProbe": {"httpGet": {"port": 80, "httpHeaders": [{"name": "Accept", "value": "text/plain"}]}}});
        container(&SpecPath::default(), &container_of(fine), &[]).unwrap();
    }
}
