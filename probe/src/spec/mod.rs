//! What to check, as the driver (or an operator) says it, and how it becomes a [`Target`].
//!
//! A [`ModelSpec`] names a model the way jr2 does (`<provider>/<id>`, split at the first `/`) and says where it comes
//! from: pi's catalog, a `harness.catalog` gateway that serves a catalog provider, or the one custom provider
//! (`harness.provider`). [`resolve`] looks the catalog up (the data file generated from the pinned pi-ai package),
//! reads the key from the env var the Harness reads (in a Custodian pod, the Stand-in `jr2-held-<NAME>`), clamps the
//! token cap as pi does, and yields the [`Target`] a check runs. A [`RunSpec`] is the list `jr2-probe run` reads in
//! the check pod; its JSON Schema is `probe/schemas/run-spec.v1.schema.json`.

use serde::{Deserialize, Serialize};

pub mod input;

use crate::api::azure;
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
    /// The model's `maxTokens` as jr2 resolves it (custom: per model, then per provider, else 0; absent: 0 for
    /// custom, which a Turn sends as 1, the catalog's otherwise).
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
    #[serde(default = "RunSpec::default_timeout_seconds")]
    pub timeout_seconds: f64,
    /// Tries per model on 429, 529 and 503.
    #[serde(default = "RunSpec::default_max_tries")]
    pub max_tries: u32,
    /// Models checked at once, in all.
    #[serde(default = "RunSpec::default_concurrency")]
    pub concurrency: usize,
    /// Models checked at once against one endpoint; absent: [`crate::check::Settings::DEFAULT_PER_HOST`]. The
    /// driver leaves it out, so a spec it writes is one an older probe reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_per_host: Option<usize>,
    /// Seconds a model waits before its first progress line, and between the next ones; absent:
    /// [`crate::check::Settings::DEFAULT_WAITING_NOTE`]. The driver leaves it out unless its plan sets one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_note_seconds: Option<f64>,
    /// The models, in plan order.
    pub models: Vec<ModelSpec>,
}

impl RunSpec {
    /// Seconds per model when the spec says nothing.
    pub const DEFAULT_TIMEOUT_SECONDS: f64 = 120.0;
    /// Tries per model when the spec says nothing.
    pub const DEFAULT_MAX_TRIES: u32 = 4;
    /// Models at once when the spec says nothing.
    pub const DEFAULT_CONCURRENCY: usize = 32;

    /// A spec of these models with every default: what a JSON spec that names only its models reads as.
    pub fn new(models: Vec<ModelSpec>) -> Self {
        Self {
            schema: RUN_SPEC_SCHEMA.to_owned(),
            timeout_seconds: Self::DEFAULT_TIMEOUT_SECONDS,
            max_tries: Self::DEFAULT_MAX_TRIES,
            concurrency: Self::DEFAULT_CONCURRENCY,
            concurrency_per_host: None,
            waiting_note_seconds: None,
            models,
        }
    }

    fn default_timeout_seconds() -> f64 {
        Self::DEFAULT_TIMEOUT_SECONDS
    }

    fn default_max_tries() -> u32 {
        Self::DEFAULT_MAX_TRIES
    }

    fn default_concurrency() -> usize {
        Self::DEFAULT_CONCURRENCY
    }
}

/// Which input of a [`ModelSpec`] an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpecInput {
    /// `model`: the name, or the catalog entry it names (including the catalog's base URL).
    Model,
    /// `baseUrl`.
    BaseUrl,
}

impl SpecInput {
    /// The input's key in a run spec and a plan (`model`, `baseUrl`).
    pub fn key(self) -> &'static str {
        match self {
            SpecInput::Model => "model",
            SpecInput::BaseUrl => "baseUrl",
        }
    }
}

/// What a front end tells its user to do instead. Each front end words it in its own terms: `jr2-probe check`
/// names its flags, a plan its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Remedy {
    /// A model pi's catalog does not hold can still be checked, as a custom endpoint with its base URL and API kind.
    CheckAsCustom,
    /// A key belongs in an environment variable that the spec names.
    KeyInEnv,
}

/// What is wrong with one input of a [`ModelSpec`], as data: [`SpecProblem::message`] words it, with the front
/// end's words for the [`Remedy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecProblem {
    /// The model name is not `<provider>/<id>`.
    Name(catalog::ModelNameError),
    /// A catalog model that is not in the catalog.
    NotInCatalog {
        /// The model.
        model: String,
        /// The catalog's version.
        version: String,
    },
    /// The base URL is required for this source and missing.
    BaseUrlRequired(Source),
    /// The base URL does not parse (`shown`: the text as given, escaped and cut to 200 characters).
    NotAUrl {
        /// The text, as shown.
        shown: String,
        /// The parser's reason.
        reason: String,
    },
    /// The base URL's scheme is not http or https.
    Scheme {
        /// The text, as shown.
        shown: String,
    },
    /// The base URL names no host.
    NoHost {
        /// The text, as shown.
        shown: String,
    },
    /// The base URL carries a user name or password.
    Credentials,
    /// The base URL has a query or a fragment.
    QueryOrFragment {
        /// The text, as shown.
        shown: String,
    },
    /// The model id holds a character no line may show as it is: a control (ESC, a newline), a bidi control or an
    /// invisible one ([`crate::sanitize::needs_escape`]). The id is printed in every line, so it is refused.
    ModelChars {
        /// The id, escaped and cut to 100 characters.
        shown: String,
        /// The first such character.
        found: char,
    },
    /// A model id longer than [`MAX_MODEL_ID_CHARS`].
    ModelTooLong {
        /// The id, escaped and cut to 60 characters.
        shown: String,
        /// Its length in characters.
        chars: usize,
    },
    /// A URL the environment names (`AZURE_OPENAI_BASE_URL`) is wrong.
    InEnv {
        /// The variable.
        name: &'static str,
        /// What is wrong with its URL.
        problem: Box<SpecProblem>,
    },
    /// The catalog's base URL is a template that needs a variable the environment does not set.
    NeedsEnv {
        /// The catalog's base URL.
        base: String,
        /// The variable.
        name: String,
    },
}

impl SpecProblem {
    /// The remedy the message ends with, when it has one.
    pub fn remedy(&self) -> Option<Remedy> {
        match self {
            SpecProblem::NotInCatalog { .. } => Some(Remedy::CheckAsCustom),
            SpecProblem::Credentials => Some(Remedy::KeyInEnv),
            SpecProblem::InEnv { problem, .. } => problem.remedy(),
            _ => None,
        }
    }

    /// The message, with `remedy` wording the [`Remedy`] in the front end's terms.
    pub fn message(&self, remedy: impl Fn(Remedy) -> &'static str) -> String {
        match self {
            SpecProblem::Name(e) => e.to_string(),
            SpecProblem::NotInCatalog { model, version } => format!(
                "model \"{model}\" is not in pi's catalog (@earendil-works/pi-ai {version}); {}",
                remedy(Remedy::CheckAsCustom)
            ),
            SpecProblem::BaseUrlRequired(Source::Gateway) => {
                "required for a gateway (harness.catalog.<provider>.baseUrl)".to_owned()
            }
            SpecProblem::BaseUrlRequired(_) => "required for a custom provider".to_owned(),
            SpecProblem::NotAUrl { shown, reason } => {
                format!("\"{shown}\" is not a URL ({reason})")
            }
            SpecProblem::Scheme { shown } => {
                format!("\"{shown}\": the scheme must be http or https")
            }
            SpecProblem::NoHost { shown } => format!("\"{shown}\" names no host"),
            SpecProblem::Credentials => {
                format!("must not carry credentials; {}", remedy(Remedy::KeyInEnv))
            }
            SpecProblem::QueryOrFragment { shown } => {
                format!("\"{shown}\" must not have a query or a fragment")
            }
            SpecProblem::ModelChars { shown, found } => format!(
                "model \"{shown}\" has {} (U+{:04X}); a model id is printed in every line, so control, bidi and \
                 invisible characters are refused",
                char_kind(*found),
                u32::from(*found)
            ),
            SpecProblem::ModelTooLong { shown, chars } => format!(
                "model \"{shown}\" is {chars} characters long; a model id is at most {MAX_MODEL_ID_CHARS}"
            ),
            SpecProblem::InEnv { name, problem } => {
                format!("the environment's {name}: {}", problem.message(remedy))
            }
            SpecProblem::NeedsEnv { base, name } => {
                format!("the catalog's base URL {base} needs {name} in the environment, as pi does")
            }
        }
    }

    /// The remedies in no front end's terms: for logs, and for callers that word nothing themselves.
    pub fn plain_remedy(remedy: Remedy) -> &'static str {
        match remedy {
            Remedy::CheckAsCustom => {
                "to check it anyway, check it as a custom endpoint with its base URL and API kind"
            }
            Remedy::KeyInEnv => "put the key in an environment variable and name that instead",
        }
    }
}

/// A spec that cannot be checked: where it is, which input, and what is wrong, as data. Each front end words it
/// (`jr2-probe` with its flags, a plan with its field paths); `Display` uses [`SpecProblem::plain_remedy`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    /// The spec, as the caller named it to [`resolve`] (`models[3]`, `plan.models[0]`).
    pub at: String,
    /// The input that is wrong.
    pub input: SpecInput,
    /// What is wrong with it.
    pub problem: SpecProblem,
}

impl SpecError {
    /// `<at>.<input>`: the field, as a run spec or a plan path names it.
    pub fn field(&self) -> String {
        format!("{}.{}", self.at, self.input.key())
    }
}

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            self.field(),
            self.problem.message(SpecProblem::plain_remedy)
        )
    }
}

impl std::error::Error for SpecError {}

/// What kind of character [`check_model_id`] refused, in words.
fn char_kind(c: char) -> &'static str {
    match c {
        '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
            "a bidi control"
        }
        c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') => "a control character",
        _ => "an invisible character",
    }
}

/// The longest model id taken, in characters: far above any provider's ids (a Bedrock inference-profile ARN is
/// about 100, a vLLM model path rarely 200), far below what would swell every line and the probe's argument.
pub const MAX_MODEL_ID_CHARS: usize = 512;

/// Checks a model id (`<provider>/<id>` or an endpoint's own id) as every front end takes it: at most
/// [`MAX_MODEL_ID_CHARS`], no control, bidi or invisible character, since the id is printed in every line
/// ([`SpecProblem::ModelChars`]).
pub fn check_model_id(model: &str) -> Result<(), SpecProblem> {
    let chars = model.chars().count();
    if chars > MAX_MODEL_ID_CHARS {
        return Err(SpecProblem::ModelTooLong {
            shown: crate::sanitize::escape_truncate(model, 60),
            chars,
        });
    }
    match model.chars().find(|c| crate::sanitize::needs_escape(*c)) {
        Some(found) => Err(SpecProblem::ModelChars {
            shown: crate::sanitize::escape_truncate(model, 100),
            found,
        }),
        None => Ok(()),
    }
}

/// Parses and checks a base URL: http or https, a host, no credentials, no query. The one parser of base URLs:
/// `jr2-probe check --base-url` and every spec go through it.
pub fn parse_base_url(text: &str) -> Result<reqwest::Url, SpecProblem> {
    // Shown masked: a URL that is refused may still hold a password or a key (in its userinfo or query).
    let shown = || crate::sanitize::display_url(text);
    let url = reqwest::Url::parse(text).map_err(|e| SpecProblem::NotAUrl {
        shown: shown(),
        reason: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(SpecProblem::Scheme { shown: shown() });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(SpecProblem::NoHost { shown: shown() });
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(SpecProblem::Credentials);
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(SpecProblem::QueryOrFragment { shown: shown() });
    }
    Ok(url)
}

/// Turns a spec into a target. `at` names the spec in errors (`models[3]`, `plan.models[0]`); `env` reads the
/// environment (the key's value).
pub fn resolve(
    spec: &ModelSpec,
    at: &str,
    env: &dyn Fn(&str) -> Option<String>,
    session_id: &str,
) -> Result<Target, SpecError> {
    let error = |input: SpecInput| {
        move |problem: SpecProblem| SpecError {
            at: at.to_owned(),
            input,
            problem,
        }
    };
    check_model_id(&spec.model).map_err(error(SpecInput::Model))?;
    let (provider, id) = catalog::split_model_name(&spec.model)
        .map_err(|e| error(SpecInput::Model)(SpecProblem::Name(e)))?;
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
                error(SpecInput::BaseUrl)(SpecProblem::BaseUrlRequired(Source::Custom))
            })?;
            let url = parse_base_url(base).map_err(error(SpecInput::BaseUrl))?;
            // pi builds a custom provider's model with `reasoning: true` and no compat of its own.
            let facts = Facts {
                provider: Some(provider.to_owned()),
                reasoning: true,
                ..Facts::default()
            };
            // What jr2 builds the model with when harness.provider sets no maxTokens for it: 0, which pi's clamp
            // sends as 1 (`research/pi-requests.md`, section 2).
            (api, url, facts, 0, 0)
        }
        Source::Catalog | Source::Gateway => {
            let cat = catalog::pinned();
            let model = cat.model(provider, id).ok_or_else(|| {
                error(SpecInput::Model)(SpecProblem::NotInCatalog {
                    model: spec.model.clone(),
                    version: cat.version().to_owned(),
                })
            })?;
            let base = match (&spec.base_url, spec.source) {
                (Some(b), _) => parse_base_url(b).map_err(error(SpecInput::BaseUrl))?,
                (None, Source::Gateway) => {
                    return Err(error(SpecInput::BaseUrl)(SpecProblem::BaseUrlRequired(
                        Source::Gateway,
                    )));
                }
                (None, _) => catalog_base_url(&model.base_url, model.api, env)
                    .map_err(error(SpecInput::Model))?,
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
    let mut facts = facts;
    facts.context_window = spec.context_window.filter(|w| *w > 0);
    let max_tokens = crate::prompt::token_cap(
        spec.max_tokens.unwrap_or(catalog_max),
        spec.context_window.unwrap_or(catalog_window),
    );
    let route = match spec.source {
        Source::Custom => Route::Custom {
            api_key_set: spec.key_held,
            max_tokens_set: spec.max_tokens.unwrap_or(0) > 0,
        },
        Source::Catalog | Source::Gateway => Route::Catalog {
            provider: provider.to_owned(),
            via_custodian: spec.via_custodian,
            key_env: spec
                .key_env
                .clone()
                .or_else(|| {
                    catalog::pinned()
                        .suggested_key_env(provider)
                        .map(str::to_owned)
                })
                .unwrap_or_else(|| format!("the key of {provider}")),
            key_held: spec.key_held,
            gateway: spec.source == Source::Gateway,
        },
    };
    let mut target = Target {
        named_port: spec
            .base_url
            .as_deref()
            .and_then(crate::target::named_default_port),
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
    if target.api == ApiKind::AzureOpenAiResponses {
        check_env_url(env, "AZURE_OPENAI_BASE_URL").map_err(error(SpecInput::Model))?;
    }
    // Azure's catalog base URL is empty: pi takes it from the environment. Resolve it here, once, so the lines name
    // the host the request goes to; unresolved, the target keeps the placeholder and the wire says why.
    if target.api == ApiKind::AzureOpenAiResponses
        && let Ok(base) = azure::base_url(&target.base_url, env)
    {
        target.base_url = base;
        target.named_port = None;
    }
    Ok(target)
}

/// One endpoint checked by hand (`jr2-probe check --base-url`): the models are its ids as given, whole (no
/// `<provider>/` to split off), as a custom provider's models.
#[derive(Clone, Debug)]
pub struct Endpoint<'a> {
    /// `--base-url`, as typed.
    pub base_url: &'a str,
    /// `--api`, else `openai-completions`.
    pub api: ApiKind,
    /// The key `--api-key-env` names, read.
    pub key: Option<Key>,
    /// The cap asked for.
    pub max_tokens: u64,
    /// The cap was given (a cap of 0 is jr2's unset one).
    pub max_tokens_set: bool,
    /// `--context-window`.
    pub context_window: Option<u64>,
    /// `--tool-choice`.
    pub tool_choice: ToolChoice,
}

/// The targets of `models` at one endpoint by hand: a custom provider's models as pi builds them (`reasoning: true`,
/// no compat of their own), the cap clamped as pi clamps it, Azure's base URL from the environment first (as
/// [`resolve`] takes it for a spec).
pub fn endpoint_targets(
    endpoint: &Endpoint<'_>,
    models: &[String],
    session_id: &str,
) -> Result<Vec<Target>, SpecProblem> {
    let mut base_url = parse_base_url(endpoint.base_url)?;
    let mut named_port = crate::target::named_default_port(endpoint.base_url);
    if endpoint.api == ApiKind::AzureOpenAiResponses
        && let Ok(resolved) = azure::base_url(&base_url, &crate::api::openai_responses::process_env)
    {
        base_url = resolved;
        named_port = None;
    }
    let max_tokens =
        crate::prompt::token_cap(endpoint.max_tokens, endpoint.context_window.unwrap_or(0));
    Ok(models
        .iter()
        .map(|model| Target {
            named_port,
            model: model.clone(),
            id: model.clone(),
            api: endpoint.api,
            base_url: base_url.clone(),
            route: Route::Custom {
                api_key_set: endpoint.key.is_some(),
                max_tokens_set: endpoint.max_tokens_set,
            },
            key: endpoint.key.clone(),
            max_tokens,
            tool_choice: endpoint.tool_choice,
            facts: Facts {
                reasoning: true,
                context_window: endpoint.context_window.filter(|w| *w > 0),
                ..Facts::default()
            },
            session_id: session_id.to_owned(),
        })
        .collect())
}

/// A base URL the environment names (`AZURE_OPENAI_BASE_URL`), when set: it parses, and carries no credentials.
fn check_env_url(
    env: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
) -> Result<(), SpecProblem> {
    let Some(text) = env(name)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
    else {
        return Ok(());
    };
    let inner = match reqwest::Url::parse(&text) {
        Err(e) => SpecProblem::NotAUrl {
            shown: crate::sanitize::display_url(&text),
            reason: e.to_string(),
        },
        Ok(url) if !url.username().is_empty() || url.password().is_some() => {
            SpecProblem::Credentials
        }
        Ok(_) => return Ok(()),
    };
    Err(SpecProblem::InEnv {
        name,
        problem: Box::new(inner),
    })
}

/// An environment variable's name, as a shell and Kubernetes take one: a letter or `_`, then letters, digits, `_`.
pub fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A catalog base URL. Some are templates: `{CLOUDFLARE_ACCOUNT_ID}` is filled from the environment, as pi fills it;
/// Vertex's `{location}` and Azure's empty URL are resolved by their API modules from the environment, as pi does, so
/// a stand-in URL takes their place here.
fn catalog_base_url(
    base: &str,
    api: ApiKind,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<reqwest::Url, SpecProblem> {
    match api {
        ApiKind::GoogleVertex if base.contains('{') => {
            return parse_base_url("https://aiplatform.googleapis.com");
        }
        ApiKind::AzureOpenAiResponses if base.is_empty() => {
            return parse_base_url(azure::PLACEHOLDER);
        }
        _ => {}
    }
    let mut filled = base.to_owned();
    while let Some(start) = filled.find('{') {
        let Some(len) = filled[start..].find('}') else {
            break;
        };
        let name = filled[start + 1..start + len].to_owned();
        let value = env(&name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| SpecProblem::NeedsEnv {
                base: base.to_owned(),
                name: name.clone(),
            })?;
        filled.replace_range(start..=start + len, &value);
    }
    parse_base_url(&filled)
}

/// An environment of fixed pairs, as [`resolve`] reads one: for the tests of `spec` and `api::azure`.
#[cfg(test)]
pub(crate) fn fixed_env(
    pairs: &'static [(&'static str, &'static str)],
) -> impl Fn(&str) -> Option<String> {
    move |name| {
        pairs
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    }
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

    use super::fixed_env as env;

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
                Err(SpecError {
                    input: SpecInput::BaseUrl,
                    problem: SpecProblem::BaseUrlRequired(Source::Gateway),
                    ..
                })
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
    fn a_custom_model_without_max_tokens_is_sent_as_jr2_sends_it() {
        let mut s = spec("vllm/Qwen/Qwen3-32B", Source::Custom);
        s.base_url = Some("http://vllm.lan:8000/v1".to_owned());
        s.max_tokens = None;
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert_eq!(
            t.max_tokens, 1,
            "jr2 builds it with maxTokens 0, which pi sends as 1"
        );
        assert!(matches!(
            t.route,
            Route::Custom {
                max_tokens_set: false,
                ..
            }
        ));
        s.max_tokens = Some(4096);
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert_eq!(t.max_tokens, 4096);
        assert!(matches!(
            t.route,
            Route::Custom {
                max_tokens_set: true,
                ..
            }
        ));
    }

    #[test]
    fn with_no_key_held_the_route_names_the_key_a_user_sets() {
        let mut s = spec("anthropic/claude-haiku-4-5", Source::Catalog);
        s.key_env = None;
        s.key_held = false;
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert!(
            matches!(&t.route, Route::Catalog { key_env, .. } if key_env == "ANTHROPIC_API_KEY"),
            "{:?}",
            t.route
        );
        let mut s = spec(
            "amazon-bedrock/anthropic.claude-haiku-4-5-20251001-v1:0",
            Source::Catalog,
        );
        s.key_env = None;
        s.key_held = false;
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert!(
            matches!(&t.route, Route::Catalog { key_env, .. } if key_env == "AWS_BEARER_TOKEN_BEDROCK"),
            "{:?}",
            t.route
        );
    }

    #[test]
    fn an_explicit_default_port_stays_in_the_host() {
        let mut s = spec("anthropic/claude-haiku-4-5", Source::Gateway);
        s.base_url = Some("https://litellm.corp.example:443".to_owned());
        let t = resolve(&s, "m", &env(&[]), "s").unwrap();
        assert_eq!(t.host(), "litellm.corp.example:443");
        s.base_url = Some("https://litellm.corp.example".to_owned());
        assert_eq!(
            resolve(&s, "m", &env(&[]), "s").unwrap().host(),
            "litellm.corp.example"
        );
        s.base_url = Some("https://litellm.corp.example:8443".to_owned());
        assert_eq!(
            resolve(&s, "m", &env(&[]), "s").unwrap().host(),
            "litellm.corp.example:8443"
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

    /// The one base-URL parser: what `jr2-probe check --base-url` and every spec accept and refuse.
    #[test]
    fn base_urls() {
        assert!(parse_base_url("http://vllm.lan:8000/v1").is_ok());
        let cases = [
            (
                "ftp://x/v1",
                SpecProblem::Scheme {
                    shown: "ftp://x/v1".into(),
                },
            ),
            ("http://user:pw@h/v1", SpecProblem::Credentials),
            (
                "http://h/v1?x=1",
                SpecProblem::QueryOrFragment {
                    shown: "http://h/v1?[redacted]".into(),
                },
            ),
        ];
        for (bad, problem) in cases {
            assert_eq!(parse_base_url(bad).unwrap_err(), problem, "{bad}");
        }
        assert!(matches!(
            parse_base_url("not a url"),
            Err(SpecProblem::NotAUrl { .. })
        ));
        // The password never appears in the message, whatever the front end's words.
        let e = parse_base_url("http://user:hunter2@h/v1").unwrap_err();
        assert!(!e.message(SpecProblem::plain_remedy).contains("hunter2"));
        assert_eq!(e.remedy(), Some(Remedy::KeyInEnv));
    }

    #[test]
    fn model_ids_with_controls_bidi_or_invisible_characters_are_refused() {
        for (model, source, found, kind) in [
            (
                "vllm/m\u{1b}[31m\nerror: forged",
                Source::Custom,
                '\u{1b}',
                "a control character",
            ),
            (
                "anthropic/claude-haiku-4-5\u{202e}",
                Source::Catalog,
                '\u{202e}',
                "a bidi control",
            ),
            (
                "vllm/a\u{200b}b",
                Source::Custom,
                '\u{200b}',
                "an invisible character",
            ),
            (
                "vllm/a\u{2028}b",
                Source::Custom,
                '\u{2028}',
                "a control character",
            ),
        ] {
            let mut s = spec(model, source);
            s.base_url = Some("http://h/v1".into());
            let e = resolve(&s, "models[0]", &env(&[]), "s").unwrap_err();
            assert_eq!(e.field(), "models[0].model", "{model:?}");
            assert!(
                matches!(e.problem, SpecProblem::ModelChars { found: f, .. } if f == found),
                "{model:?}: {e}"
            );
            let line = e.to_string();
            assert!(line.contains(kind), "{line}");
            assert!(
                !line.chars().any(crate::sanitize::needs_escape),
                "the message shows the id escaped: {line:?}"
            );
        }
        assert!(check_model_id("vllm/Qwen/Qwen3-32B:Q4_K_M \u{e9}").is_ok());
    }

    #[test]
    fn a_model_id_past_the_limit_is_refused_with_its_length() {
        let at_limit = format!("vllm/{}", "\u{e9}".repeat(MAX_MODEL_ID_CHARS - 5));
        assert!(check_model_id(&at_limit).is_ok());
        let long = format!("vllm/{}", "m".repeat(100_000));
        let mut s = spec(&long, Source::Custom);
        s.base_url = Some("http://h/v1".into());
        let e = resolve(&s, "models[0]", &env(&[]), "s").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "models[0].model: model \"vllm/{}…\" is 100005 characters long; a model id is at most 512",
                "m".repeat(54)
            )
        );
    }

    #[test]
    fn a_front_end_words_the_remedy() {
        let e = resolve(
            &spec("anthropic/claude-none", Source::Catalog),
            "plan.models[3]",
            &env(&[]),
            "s",
        )
        .unwrap_err();
        assert_eq!(e.field(), "plan.models[3].model");
        assert_eq!(e.input, SpecInput::Model);
        let words = |r: Remedy| match r {
            Remedy::CheckAsCustom => "CUSTOM",
            Remedy::KeyInEnv => "KEY",
        };
        assert!(e.problem.message(words).ends_with("); CUSTOM"), "{e}");
        let mut s = spec("vllm/x", Source::Custom);
        s.base_url = Some("http://u:p@h/v1".into());
        let e = resolve(&s, "models[0]", &env(&[]), "s").unwrap_err();
        assert_eq!(
            (e.field().as_str(), e.problem.message(words).as_str()),
            ("models[0].baseUrl", "must not carry credentials; KEY")
        );
    }

    #[test]
    fn a_built_spec_is_the_json_spec_with_its_defaults() {
        let models = vec![spec("anthropic/claude-haiku-4-5", Source::Catalog)];
        let read: RunSpec = serde_json::from_value(serde_json::json!({
            "schema": RUN_SPEC_SCHEMA,
            "models": models,
        }))
        .unwrap();
        assert_eq!(RunSpec::new(models), read);
    }
}
