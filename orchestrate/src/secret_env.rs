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

use k8s_openapi::api::core::v1::Container;

use crate::plan::{Placement, PlanError, stand_in};

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
    let shaped = ["_KEY", "_TOKEN", "_SECRET"]
        .iter()
        .any(|end| upper.ends_with(end))
        || ["PASSWORD", "PASSWD", "CREDENTIAL"]
            .iter()
            .any(|part| upper.contains(part));
    shaped.then_some(Why::Shape)
}

/// Refuses a literal secret in the env of `p`'s Harness or Custodian container (see the module's doc). `at` is the
/// placement's field (`plan.placements[0]`); `key_envs` are the `keyEnv`s of the plan's models.
pub fn check(at: &str, p: &Placement, key_envs: &[&str]) -> Result<(), PlanError> {
    for (field, c) in p.copied_containers() {
        container(&format!("{at}.podSpec.{field}"), c, key_envs)?;
    }
    Ok(())
}

fn container(at: &str, c: &Container, key_envs: &[&str]) -> Result<(), PlanError> {
    for (k, e) in c.env.iter().flatten().enumerate() {
        let Some(value) = e.value.as_deref().filter(|v| !v.is_empty()) else {
            continue;
        };
        let Some(why) = why_secret(&e.name, key_envs) else {
            continue;
        };
        let held = stand_in(&e.name);
        if value == held {
            continue;
        }
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
        return Err(PlanError::Invalid {
            field: format!("{at}.env[{k}].value"),
            message,
        });
    }
    Ok(())
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
    fn bedrock_s_bearer_token_is_a_key_though_pi_s_catalog_lists_none() {
        // Not shaped like a secret (`*_BEDROCK`), and not in the catalog's keyEnv: a key all the same.
        assert_eq!(why_secret("AWS_BEARER_TOKEN_BEDROCK", &[]), Some(Why::Key));
    }
}
