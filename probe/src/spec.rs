//! What to check, as the driver (or an operator) says it, and how it becomes a [`Target`].
//!
//! A [`ModelSpec`] names a model the way jr2 does (`<provider>/<id>`, split at the first `/`) and says where it comes
//! from: pi's catalog, a `harness.catalog` gateway that serves a catalog provider, or the one custom provider
//! (`harness.provider`). [`resolve`] looks the catalog up (the data file generated from the pinned pi-ai package),
//! reads the key from the env var the Harness reads (in a Custodian pod, the Stand-in `jr2-held-<NAME>`), clamps the
//! token cap as pi does, and yields the [`Target`] a check runs. A [`RunSpec`] is the list `jr2-probe run` reads in
//! the check pod; its JSON Schema is `schemas/run-spec.v1.schema.json`.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::catalog;
use crate::contract::api_kind::{ApiKind, ToolChoice};
use crate::contract::verdict::Route;
use crate::target::{Facts, Key, Secret, Target};

/// The run spec's schema identifier.
pub const RUN_SPEC_SCHEMA: &str = "jr2.dev/provider-preflight-run/v1";

/// Where a model comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Source {
    /// A model of pi's catalog, reached at the catalog's base URL.
    Catalog,
    /// A catalog model whose provider a `harness.catalog` gateway serves (`baseUrl` is the gateway's).
    Gateway,
    /// The custom provider (`harness.provider`).
    Custom,
}

/// One model to check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelSpec {
    /// `<provider>/<id>`, as the Agent names it.
    pub model: String,
    /// Where it comes from.
    pub source: Source,
    /// The base URL: required for `custom` and `gateway`, the catalog's when absent for `catalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The API kind: required for `custom` (`openai-completions`, the one the Harness speaks); the catalog's otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiKind>,
    /// The env var that holds the key (custom: `JR2_PROVIDER_API_KEY`; catalog: the provider's, e.g.
    /// `ANTHROPIC_API_KEY`). Absent: no key (a custom provider then sends `Bearer unused`, as pi does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    /// A Harness pod holds that key (catalog: decides the held-secret line; custom: `harness.provider.apiKey` is set).
    #[serde(default)]
    pub key_held: bool,
    /// The pods hold a secret, so the call goes through a Custodian (`through a Custodian` in the lines).
    #[serde(default)]
    pub via_custodian: bool,
    /// The model's `maxTokens` as jr2 resolves it (custom: per model, then per provider, else 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The model's context window as jr2 resolves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The `tool_choice` to send; absent: none, as a Turn sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// The list `jr2-probe run` reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunSpec {
    /// [`RUN_SPEC_SCHEMA`].
    pub schema: String,
    /// Seconds per model before a timeout.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: f64,
    /// Tries per model on 429, 529 and 503.
    #[serde(default = "default_tries")]
    pub max_tries: u32,
    /// Models checked at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// The models, in plan order.
    pub models: Vec<ModelSpec>,
}

fn default_timeout() -> f64 {
    120.0
}
fn default_tries() -> u32 {
    4
}
fn default_concurrency() -> usize {
    8
}

/// A spec that cannot be checked: bad input, named by its field.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SpecError {
    /// The model name is not `<provider>/<id>`.
    #[error("{field}: {source}")]
    Name {
        /// The field.
        field: String,
        /// Why.
        #[source]
        source: catalog::ModelNameError,
    },
    /// A catalog model that is not in the catalog.
    #[error(
        "{field}: model \"{model}\" is not in pi's catalog (@earendil-works/pi-ai {version}); name its endpoint with --base-url and --api to check it anyway"
    )]
    NotInCatalog {
        /// The field.
        field: String,
        /// The model.
        model: String,
        /// The catalog's version.
        version: String,
    },
    /// A required field is missing, or a value is invalid.
    #[error("{field}: {message}")]
    Invalid {
        /// The field.
        field: String,
        /// Why.
        message: String,
    },
}

fn invalid(field: &str, message: impl Into<String>) -> SpecError {
    SpecError::Invalid {
        field: field.to_owned(),
        message: message.into(),
    }
}

/// Parses and checks a base URL: http or https, a host, no credentials, no query.
pub fn parse_base_url(field: &str, text: &str) -> Result<reqwest::Url, SpecError> {
    let shown = crate::sanitize::escape_truncate(text, 200);
    let url = reqwest::Url::parse(text)
        .map_err(|e| invalid(field, format!("\"{shown}\" is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(invalid(
            field,
            format!("\"{shown}\": the scheme must be http or https"),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(invalid(field, format!("\"{shown}\" names no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid(
            field,
            "must not carry credentials; put the key in an environment variable and name it with --api-key-env",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(invalid(
            field,
            format!("\"{shown}\" must not have a query or a fragment"),
        ));
    }
    Ok(url)
}

/// Turns a spec into a target. `field` names the spec in errors (`--model`, `models[3]`); `env` reads the
/// environment (the key's value).
pub fn resolve(
    spec: &ModelSpec,
    field: &str,
    env: &dyn Fn(&str) -> Option<String>,
    session_id: &str,
) -> Result<Target, SpecError> {
    let (provider, id) =
        catalog::split_model_name(&spec.model).map_err(|source| SpecError::Name {
            field: format!("{field}.model"),
            source,
        })?;
    let key = match &spec.key_env {
        Some(name) => env(name).filter(|v| !v.is_empty()).map(|v| Key {
            env: name.clone(),
            value: Secret::new(v),
        }),
        None => None,
    };
    let (api, base_url, facts, catalog_max, catalog_window) = match spec.source {
        Source::Custom => {
            let api = spec.api.unwrap_or(ApiKind::OpenAiCompletions);
            let base = spec.base_url.as_deref().ok_or_else(|| {
                invalid(
                    &format!("{field}.baseUrl"),
                    "required for a custom provider",
                )
            })?;
            let url = parse_base_url(&format!("{field}.baseUrl"), base)?;
            // pi builds a custom provider's model with `reasoning: true` and no compat of its own.
            let facts = Facts {
                provider: Some(provider.to_owned()),
                reasoning: true,
                ..Facts::default()
            };
            (api, url, facts, 1024, 0)
        }
        Source::Catalog | Source::Gateway => {
            let cat = catalog::pinned();
            let model = cat
                .model(provider, id)
                .ok_or_else(|| SpecError::NotInCatalog {
                    field: format!("{field}.model"),
                    model: spec.model.clone(),
                    version: cat.version().to_owned(),
                })?;
            let base = match (&spec.base_url, spec.source) {
                (Some(b), _) => parse_base_url(&format!("{field}.baseUrl"), b)?,
                (None, Source::Gateway) => {
                    return Err(invalid(
                        &format!("{field}.baseUrl"),
                        "required for a gateway (harness.catalog.<provider>.baseUrl)",
                    ));
                }
                (None, _) => {
                    catalog_base_url(&format!("{field}.model"), &model.base_url, model.api, env)?
                }
            };
            (
                spec.api.unwrap_or(model.api),
                base,
                model.facts(),
                model.max_tokens,
                model.context_window,
            )
        }
    };
    let max_tokens = crate::prompt::token_cap(
        spec.max_tokens.unwrap_or(catalog_max),
        spec.context_window.unwrap_or(catalog_window),
    );
    let route = match spec.source {
        Source::Custom => Route::Custom {
            api_key_set: spec.key_held,
        },
        Source::Catalog | Source::Gateway => Route::Catalog {
            provider: provider.to_owned(),
            via_custodian: spec.via_custodian,
            key_env: spec
                .key_env
                .clone()
                .or_else(|| {
                    catalog::pinned()
                        .provider(provider)
                        .and_then(|p| p.key_env.first().cloned())
                })
                .unwrap_or_else(|| format!("the key of {provider}")),
            key_held: spec.key_held,
            gateway: spec.source == Source::Gateway,
        },
    };
    let mut target = Target {
        model: spec.model.clone(),
        id: id.to_owned(),
        api,
        base_url,
        route,
        key,
        max_tokens,
        tool_choice: spec.tool_choice.unwrap_or_default(),
        facts,
        session_id: session_id.to_owned(),
    };
    // Azure's catalog base URL is empty: pi takes it from the environment. Resolve it now, so the lines name the host
    // the request goes to (the API module resolves it again, from the same environment, when it sends).
    if target.api == ApiKind::AzureOpenAiResponses
        && let Ok(azure) = crate::api::openai_responses::azure_config(&target, env)
    {
        target.base_url = azure.base_url;
    }
    Ok(target)
}

/// A catalog base URL. Some are templates: `{CLOUDFLARE_ACCOUNT_ID}` is filled from the environment, as pi fills it;
/// Vertex's `{location}` and Azure's empty URL are resolved by their API modules from the environment, as pi does, so
/// a stand-in URL takes their place here.
fn catalog_base_url(
    field: &str,
    base: &str,
    api: ApiKind,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<reqwest::Url, SpecError> {
    match api {
        ApiKind::GoogleVertex if base.contains('{') => {
            return reqwest::Url::parse("https://aiplatform.googleapis.com")
                .map_err(|e| invalid(field, e.to_string()));
        }
        ApiKind::AzureOpenAiResponses if base.is_empty() => {
            return reqwest::Url::parse("https://azure-openai.invalid/openai/v1")
                .map_err(|e| invalid(field, e.to_string()));
        }
        _ => {}
    }
    let mut filled = base.to_owned();
    while let Some(start) = filled.find('{') {
        let Some(len) = filled[start..].find('}') else {
            break;
        };
        let name = filled[start + 1..start + len].to_owned();
        let value = env(&name).filter(|v| !v.is_empty()).ok_or_else(|| {
            invalid(
                field,
                format!(
                    "the catalog's base URL {base} needs {name} in the environment, as pi does"
                ),
            )
        })?;
        filled.replace_range(start..=start + len, &value);
    }
    parse_base_url(field, &filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(model: &str, source: Source) -> ModelSpec {
        ModelSpec {
            model: model.to_owned(),
            source,
            base_url: None,
            api: None,
            key_env: Some("ANTHROPIC_API_KEY".to_owned()),
            key_held: true,
            via_custodian: true,
            max_tokens: None,
            context_window: None,
            tool_choice: None,
        }
    }

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn a_catalog_model_takes_the_catalog_facts_and_the_stand_in() {
        let t = resolve(
            &spec("anthropic/claude-haiku-4-5", Source::Catalog),
            "models[0]",
            &env(&[("ANTHROPIC_API_KEY", "jr2-held-ANTHROPIC_API_KEY")]),
            "s",
        )
        .unwrap();
        assert_eq!(
            (t.api, t.base_url.as_str(), t.id.as_str()),
            (
                ApiKind::AnthropicMessages,
                "https://api.anthropic.com/",
                "claude-haiku-4-5"
            )
        );
        assert_eq!(t.max_tokens, 64000);
        assert_eq!(t.key_value(), Some("jr2-held-ANTHROPIC_API_KEY"));
        assert!(matches!(
            t.route,
            Route::Catalog {
                via_custodian: true,
                key_held: true,
                gateway: false,
                ..
            }
        ));
    }

    #[test]
    fn a_gateway_replaces_the_base_url_and_keeps_the_catalog_id() {
        let mut s = spec("anthropic/claude-haiku-4-5", Source::Gateway);
        assert!(
            matches!(
                resolve(&s, "m", &env(&[]), "s"),
                Err(SpecError::Invalid { .. })
            ),
            "a gateway needs its URL"
        );
        s.base_url = Some("https://litellm.corp.example".to_owned());
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert_eq!(
            (t.base_url.host_str(), t.id.as_str()),
            (Some("litellm.corp.example"), "claude-haiku-4-5")
        );
        assert!(t.key.is_none(), "the key variable is not set");
        assert!(matches!(t.route, Route::Catalog { gateway: true, .. }));
    }

    #[test]
    fn a_custom_model_splits_at_the_first_slash_and_clamps_like_pi() {
        let mut s = spec("vllm/Qwen/Qwen3-32B", Source::Custom);
        s.base_url = Some("http://vllm.lan:8000/v1".to_owned());
        s.max_tokens = Some(0);
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert_eq!(
            (t.id.as_str(), t.max_tokens, t.api),
            ("Qwen/Qwen3-32B", 1, ApiKind::OpenAiCompletions)
        );
        assert!(
            t.facts.reasoning,
            "pi builds custom models with reasoning: true"
        );
    }

    #[test]
    fn templated_base_urls_fill_from_the_environment() {
        let cat = catalog::pinned();
        let Some(m) = cat
            .models()
            .iter()
            .find(|m| m.base_url.contains("{CLOUDFLARE_ACCOUNT_ID}"))
        else {
            panic!("the catalog has Cloudflare templates");
        };
        let name = format!("{}/{}", m.provider, m.id);
        let s = ModelSpec {
            key_env: None,
            ..spec(&name, Source::Catalog)
        };
        let err = resolve(&s, "models[1]", &env(&[]), "s").unwrap_err();
        assert!(
            err.to_string()
                .contains("needs CLOUDFLARE_ACCOUNT_ID in the environment"),
            "{err}"
        );
        let t = resolve(
            &s,
            "models[1]",
            &env(&[
                ("CLOUDFLARE_ACCOUNT_ID", "acct123"),
                ("CLOUDFLARE_GATEWAY_ID", "gw1"),
            ]),
            "s",
        )
        .unwrap();
        assert!(t.base_url.as_str().contains("acct123"), "{}", t.base_url);
    }

    #[test]
    fn unknown_models_and_names_are_bad_input() {
        let e = resolve(
            &spec("anthropic/claude-none", Source::Catalog),
            "models[3]",
            &env(&[]),
            "s",
        )
        .unwrap_err();
        assert!(
            e.to_string().starts_with(
                "models[3].model: model \"anthropic/claude-none\" is not in pi's catalog"
            ),
            "{e}"
        );
        let e = resolve(
            &spec("claude", Source::Catalog),
            "models[0]",
            &env(&[]),
            "s",
        )
        .unwrap_err();
        assert!(e.to_string().starts_with("models[0].model: "), "{e}");
    }
}
