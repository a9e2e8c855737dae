//! pi-ai's model catalog, as the pinned package has it: each model's API kind, base URL, token caps and the facts
//! that shape its request, and each provider's key env vars.
//!
//! The data is `probe/catalog/pi-ai-0.82.1.json`, generated from the npm package by `probe/catalog/generate.mjs`
//! and checked against it by `probe/catalog/check.sh` (a step of `tests/run.sh`). It is embedded in the binary and
//! parsed once, on first use.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use crate::contract::api_kind::ApiKind;
use crate::target::Facts;

/// The committed catalog file.
const PINNED_JSON: &str = include_str!("../catalog/pi-ai-0.82.1.json");

/// The catalog of the pi-ai version jr2 pins (0.82.1), parsed on first use.
pub fn pinned() -> &'static Catalog {
    static PINNED: OnceLock<Catalog> = OnceLock::new();
    PINNED.get_or_init(|| {
        // The file is generated and checked by the test suite: a parse failure is a build defect, not an input error.
        Catalog::from_json(PINNED_JSON).expect("the embedded pi-ai catalog parses")
    })
}

/// A pi-ai model catalog: its providers and models.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Catalog {
    package: String,
    version: String,
    model_data_generated_at: String,
    providers: BTreeMap<String, CatalogProvider>,
    /// Sorted by provider, then id (the generator writes them so; [`Catalog::from_json`] checks it).
    models: Vec<CatalogModel>,
}

/// Key variables a provider's own code reads that pi's catalog (`getApiKeyEnvVars`) does not list: Bedrock's
/// bearer token, which `amazon-bedrock.js` reads before any AWS credential (`research/providers.md`).
pub const OWN_KEY_ENV: [(&str, &str); 1] = [("amazon-bedrock", "AWS_BEARER_TOKEN_BEDROCK")];

/// The key variable to suggest for a provider whose first variable in pi's order is not the plain API key:
/// Anthropic's first is `ANTHROPIC_AUTH_TOKEN`, a bearer token for gateways, then the OAuth token.
pub const SUGGESTED_KEY_ENV: [(&str, &str); 1] = [("anthropic", "ANTHROPIC_API_KEY")];

/// A provider of the catalog.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogProvider {
    /// The env vars pi reads the provider's key from, in pi's order (first one set wins). Empty for providers that
    /// authenticate otherwise (`amazon-bedrock`: AWS credentials; `openai-codex`: an OAuth login file).
    pub key_env: Vec<String>,
    /// The API kinds of its models, sorted by pi's name.
    pub apis: Vec<ApiKind>,
}

/// A model of the catalog: what pi knows of it that shapes the request.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogModel {
    /// pi's provider id (`anthropic`, `openrouter`...).
    pub provider: String,
    /// The model id sent in requests (it may hold `/`: `anthropic/claude-sonnet-4.5` under openrouter).
    pub id: String,
    /// The API kind pi calls it with.
    pub api: ApiKind,
    /// The base URL, as the catalog has it: empty for Azure (it comes from env), with `{CLOUDFLARE_ACCOUNT_ID}` or
    /// `{location}` placeholders for Cloudflare and Vertex.
    pub base_url: String,
    /// The model reasons.
    pub reasoning: bool,
    /// pi's token cap for the model.
    pub max_tokens: u64,
    /// The context window.
    pub context_window: u64,
    /// pi's `thinkingLevelMap` (`off: null`: thinking cannot be turned off).
    #[serde(default)]
    pub thinking_level_map: Option<Value>,
    /// pi's `compat` overrides.
    #[serde(default)]
    pub compat: Option<Value>,
    /// Static headers pi sends for the model.
    #[serde(default)]
    pub headers: Option<Value>,
}

impl CatalogModel {
    /// The facts a [`crate::target::Target`] carries for this model.
    pub fn facts(&self) -> Facts {
        Facts {
            provider: Some(self.provider.clone()),
            reasoning: self.reasoning,
            thinking_level_map: self.thinking_level_map.clone(),
            compat: self.compat.clone(),
            headers: self.headers.clone(),
            context_window: None,
        }
    }
}

/// Why a catalog file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The file is not a catalog.
    #[error("the catalog does not parse: {0}")]
    Parse(#[from] serde_json::Error),
    /// The models are not in (provider, id) order, or one appears twice.
    #[error(
        "the catalog's models are not sorted by provider then id, or repeat one: {provider}/{id}"
    )]
    Unsorted {
        /// The provider of the first model out of order.
        provider: String,
        /// Its id.
        id: String,
    },
    /// A model names a provider the catalog does not list.
    #[error("the catalog's model {provider}/{id} names a provider it does not list")]
    UnknownProvider {
        /// The provider.
        provider: String,
        /// The model id.
        id: String,
    },
}

impl Catalog {
    /// Parses a catalog file (the format `probe/catalog/generate.mjs` writes).
    pub fn from_json(json: &str) -> Result<Self, CatalogError> {
        let catalog: Catalog = serde_json::from_str(json)?;
        for pair in catalog.models.windows(2) {
            if key(&pair[0]) >= key(&pair[1]) {
                return Err(CatalogError::Unsorted {
                    provider: pair[1].provider.clone(),
                    id: pair[1].id.clone(),
                });
            }
        }
        if let Some(m) = catalog
            .models
            .iter()
            .find(|m| !catalog.providers.contains_key(&m.provider))
        {
            return Err(CatalogError::UnknownProvider {
                provider: m.provider.clone(),
                id: m.id.clone(),
            });
        }
        Ok(catalog)
    }

    /// The npm package the catalog comes from (`@earendil-works/pi-ai`).
    pub fn package(&self) -> &str {
        &self.package
    }

    /// The package version (`0.82.1`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// When pi generated its model data (the package's `dist/providers/data/.manifest.json`).
    pub fn model_data_generated_at(&self) -> &str {
        &self.model_data_generated_at
    }

    /// A model by provider and id (`("openrouter", "anthropic/claude-sonnet-4.5")`).
    pub fn model(&self, provider: &str, id: &str) -> Option<&CatalogModel> {
        self.models
            .binary_search_by(|m| key(m).cmp(&(provider, id)))
            .ok()
            .map(|i| &self.models[i])
    }

    /// A provider by id.
    pub fn provider(&self, id: &str) -> Option<&CatalogProvider> {
        self.providers.get(id)
    }

    /// The env vars a Turn reads a key of `provider` from, in the order it reads them: the catalog's `keyEnv`,
    /// then the variables a provider's own code reads that the catalog does not list ([`OWN_KEY_ENV`]:
    /// `AWS_BEARER_TOKEN_BEDROCK` for `amazon-bedrock`).
    pub fn key_env(&self, provider: &str) -> Vec<&str> {
        let listed = self
            .provider(provider)
            .map(|p| p.key_env.iter().map(String::as_str).collect::<Vec<_>>())
            .unwrap_or_default();
        let own = OWN_KEY_ENV
            .iter()
            .filter(|(p, name)| *p == provider && !listed.contains(name))
            .map(|(_, name)| *name);
        listed.iter().copied().chain(own).collect()
    }

    /// The first of the key variables of `model`'s provider ([`Catalog::key_env`], in pi's order) that `held` says is
    /// set: the one a Turn would read its key from.
    pub fn held_key_env(&self, model: &str, held: impl Fn(&str) -> bool) -> Option<&str> {
        let provider = split_model_name(model).map_or("", |(p, _)| p);
        self.key_env(provider).into_iter().find(|name| held(name))
    }

    /// The env var to name when no Harness pod holds a key of `provider`: the one that holds a plain API key, as
    /// a user sets it ([`SUGGESTED_KEY_ENV`]: `ANTHROPIC_API_KEY`, not the bearer token `ANTHROPIC_AUTH_TOKEN` that
    /// pi reads first), else the first of [`Catalog::key_env`].
    pub fn suggested_key_env(&self, provider: &str) -> Option<&str> {
        SUGGESTED_KEY_ENV
            .iter()
            .find(|(p, _)| *p == provider)
            .map(|(_, name)| *name)
            .or_else(|| self.key_env(provider).first().copied())
    }

    /// Every key variable of every provider ([`Catalog::key_env`]), once each.
    pub fn all_key_env(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self
            .providers
            .keys()
            .flat_map(|p| self.key_env(p))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Every provider, by id.
    pub fn providers(&self) -> impl Iterator<Item = (&str, &CatalogProvider)> {
        self.providers.iter().map(|(id, p)| (id.as_str(), p))
    }

    /// Every model, sorted by provider then id.
    pub fn models(&self) -> &[CatalogModel] {
        &self.models
    }
}

fn key(m: &CatalogModel) -> (&str, &str) {
    (&m.provider, &m.id)
}

/// Why a model name is not `<provider>/<id>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelNameError {
    /// No `/` in the name.
    #[error("model \"{0}\" has no provider: write it as <provider>/<id>")]
    NoProvider(String),
    /// Nothing before the first `/`.
    #[error("model \"{0}\" has an empty provider: write it as <provider>/<id>")]
    EmptyProvider(String),
    /// Nothing after the first `/`.
    #[error("model \"{0}\" has an empty id: write it as <provider>/<id>")]
    EmptyId(String),
}

/// Splits a model name into provider and id at the **first** `/`: `vllm/Qwen/Qwen3-32B` is provider `vllm`, id
/// `Qwen/Qwen3-32B`.
pub fn split_model_name(name: &str) -> Result<(&str, &str), ModelNameError> {
    let (provider, id) = name
        .split_once('/')
        .ok_or_else(|| ModelNameError::NoProvider(name.to_owned()))?;
    if provider.is_empty() {
        return Err(ModelNameError::EmptyProvider(name.to_owned()));
    }
    if id.is_empty() {
        return Err(ModelNameError::EmptyId(name.to_owned()));
    }
    Ok((provider, id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_file_parses_with_the_research_totals() {
        let c = pinned();
        assert_eq!(c.package(), "@earendil-works/pi-ai");
        assert_eq!(c.version(), "0.82.1");
        assert_eq!(c.model_data_generated_at(), "2026-07-25T12:44:19.521Z");
        assert_eq!(c.providers().count(), 37);
        assert_eq!(c.models().len(), 1109);
        assert!(std::ptr::eq(c, pinned()), "parsed once");
    }

    #[test]
    fn every_model_api_parses_and_is_listed_by_its_provider() {
        let raw: Value = serde_json::from_str(PINNED_JSON).unwrap();
        let models = raw["models"].as_array().unwrap();
        assert_eq!(models.len(), 1109);
        for m in models {
            let name = m["api"].as_str().unwrap();
            let api: ApiKind = serde_json::from_value(m["api"].clone())
                .unwrap_or_else(|e| panic!("{}/{}: {e}", m["provider"], m["id"]));
            assert_eq!(api.as_str(), name);
        }
        let c = pinned();
        let mut kinds = std::collections::BTreeSet::new();
        for m in c.models() {
            assert!(
                c.provider(&m.provider).unwrap().apis.contains(&m.api),
                "{}/{}",
                m.provider,
                m.id
            );
            assert!(std::ptr::eq(c.model(&m.provider, &m.id).unwrap(), m));
            kinds.insert(m.api.as_str());
        }
        assert_eq!(kinds.len(), 9, "pi's nine kinds all appear: {kinds:?}");
    }

    #[test]
    fn known_models_resolve() {
        let c = pinned();
        let haiku = c.model("anthropic", "claude-haiku-4-5").unwrap();
        assert_eq!(haiku.api, ApiKind::AnthropicMessages);
        assert_eq!(haiku.base_url, "https://api.anthropic.com");
        assert_eq!(haiku.max_tokens, 64000);
        assert_eq!(haiku.context_window, 200000);
        assert!(haiku.reasoning);
        assert_eq!(
            c.model("openai", "gpt-5-mini").unwrap().api,
            ApiKind::OpenAiResponses
        );
        assert_eq!(
            c.model("google", "gemini-2.5-flash").unwrap().api,
            ApiKind::GoogleGenerativeAi
        );
        let sonnet = c
            .model("openrouter", "anthropic/claude-sonnet-4.5")
            .unwrap();
        assert_eq!(sonnet.api, ApiKind::OpenAiCompletions);
        assert_eq!(sonnet.base_url, "https://openrouter.ai/api/v1");
        assert!(c.model("anthropic", "no-such-model").is_none());
        assert!(c.model("no-such-provider", "claude-haiku-4-5").is_none());
        assert!(c.model("openrouter", "anthropic").is_none());
    }

    #[test]
    fn held_key_env_is_the_first_held_in_pis_order() {
        let c = pinned();
        let model = "anthropic/claude-haiku-4-5";
        assert_eq!(
            c.held_key_env(model, |n| n == "ANTHROPIC_API_KEY"),
            Some("ANTHROPIC_API_KEY")
        );
        assert_eq!(
            c.held_key_env(model, |n| n == "ANTHROPIC_API_KEY"
                || n == "ANTHROPIC_AUTH_TOKEN"),
            Some("ANTHROPIC_AUTH_TOKEN")
        );
        assert_eq!(c.held_key_env(model, |n| n == "OPENAI_API_KEY"), None);
        assert_eq!(c.held_key_env("no-slash", |_| true), None);
    }

    #[test]
    fn key_env_is_in_pis_order() {
        let c = pinned();
        // dist/env-api-keys.js getApiKeyEnvVars("anthropic"): AUTH_TOKEN (a bearer token), then OAUTH_TOKEN, then API_KEY.
        assert_eq!(
            c.provider("anthropic").unwrap().key_env,
            [
                "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_OAUTH_TOKEN",
                "ANTHROPIC_API_KEY"
            ]
        );
        assert_eq!(c.provider("google").unwrap().key_env, ["GEMINI_API_KEY"]);
        assert_eq!(
            c.provider("github-copilot").unwrap().key_env,
            ["COPILOT_GITHUB_TOKEN"]
        );
        assert_eq!(c.provider("huggingface").unwrap().key_env, ["HF_TOKEN"]);
        // Providers that authenticate otherwise: AWS credentials, an OAuth login file.
        let keyless: Vec<_> = c
            .providers()
            .filter(|(_, p)| p.key_env.is_empty())
            .map(|(id, _)| id)
            .collect();
        assert_eq!(keyless, ["amazon-bedrock", "openai-codex"]);
        assert!(
            c.provider("radius").is_none(),
            "radius has no static models"
        );
    }

    #[test]
    fn a_turn_s_key_variables_include_bedrock_s_bearer_token() {
        let c = pinned();
        assert_eq!(c.key_env("amazon-bedrock"), ["AWS_BEARER_TOKEN_BEDROCK"]);
        assert_eq!(
            c.key_env("anthropic"),
            [
                "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_OAUTH_TOKEN",
                "ANTHROPIC_API_KEY"
            ]
        );
        assert_eq!(c.suggested_key_env("anthropic"), Some("ANTHROPIC_API_KEY"));
        assert_eq!(
            c.suggested_key_env("amazon-bedrock"),
            Some("AWS_BEARER_TOKEN_BEDROCK")
        );
        assert_eq!(c.suggested_key_env("google"), Some("GEMINI_API_KEY"));
        assert_eq!(c.suggested_key_env("openai-codex"), None);
        let all = c.all_key_env();
        assert!(all.contains(&"AWS_BEARER_TOKEN_BEDROCK") && all.contains(&"GEMINI_API_KEY"));
    }

    #[test]
    fn facts_carry_the_request_shaping_values() {
        let c = pinned();
        let f = c.model("anthropic", "claude-haiku-4-5").unwrap().facts();
        assert_eq!(f.provider.as_deref(), Some("anthropic"));
        assert!(f.reasoning);
        assert_eq!(f.compat("supportsStrictTools"), Some(&Value::Bool(true)));
        assert!(f.headers.is_none());

        let fable = c.model("anthropic", "claude-fable-5").unwrap().facts();
        assert!(fable.thinking_off_is_null());

        let kimi = c.model("kimi-coding", "k3").unwrap().facts();
        assert_eq!(
            kimi.headers,
            Some(serde_json::json!({"User-Agent": "KimiCLI/1.5"}))
        );

        // 166 models cannot turn thinking off (research/pi-catalog-0.82.1.json), four of them non-reasoning.
        let off_null: Vec<_> = c
            .models()
            .iter()
            .filter(|m| m.facts().thinking_off_is_null())
            .collect();
        assert_eq!(off_null.len(), 166);
        assert_eq!(off_null.iter().filter(|m| !m.reasoning).count(), 4);
    }

    #[test]
    fn a_bad_file_is_an_error() {
        let json = |models: &str| {
            format!(
                r#"{{"package":"p","version":"1","modelDataGeneratedAt":"t","providers":{{"a":{{"keyEnv":[],"apis":["openai-completions"]}}}},"models":[{models}]}}"#
            )
        };
        let m = |p: &str, id: &str| {
            format!(
                r#"{{"provider":"{p}","id":"{id}","api":"openai-completions","baseUrl":"u","reasoning":false,"maxTokens":1,"contextWindow":2}}"#
            )
        };
        assert!(Catalog::from_json(&json(&m("a", "x"))).is_ok());
        let unsorted = json(&format!("{},{}", m("a", "y"), m("a", "x")));
        assert!(matches!(
            Catalog::from_json(&unsorted),
            Err(CatalogError::Unsorted { .. })
        ));
        let twice = json(&format!("{},{}", m("a", "x"), m("a", "x")));
        assert!(matches!(
            Catalog::from_json(&twice),
            Err(CatalogError::Unsorted { .. })
        ));
        assert!(matches!(
            Catalog::from_json(&json(&m("b", "x"))),
            Err(CatalogError::UnknownProvider { .. })
        ));
        let bad_api = json(&m("a", "x")).replace(
            "\"api\":\"openai-completions\",\"baseUrl\"",
            "\"api\":\"nope\",\"baseUrl\"",
        );
        assert!(matches!(
            Catalog::from_json(&bad_api),
            Err(CatalogError::Parse(_))
        ));
        let extra = json(&m("a", "x")).replace("\"reasoning\"", "\"cost\":1,\"reasoning\"");
        assert!(matches!(
            Catalog::from_json(&extra),
            Err(CatalogError::Parse(_))
        ));
    }

    #[test]
    fn model_names_split_at_the_first_slash() {
        assert_eq!(
            split_model_name("anthropic/claude-haiku-4-5"),
            Ok(("anthropic", "claude-haiku-4-5"))
        );
        assert_eq!(
            split_model_name("vllm/Qwen/Qwen3-32B"),
            Ok(("vllm", "Qwen/Qwen3-32B"))
        );
        assert_eq!(
            split_model_name("openrouter/anthropic/claude-sonnet-4.5"),
            Ok(("openrouter", "anthropic/claude-sonnet-4.5"))
        );
        assert_eq!(split_model_name("a//b"), Ok(("a", "/b")));

        assert_eq!(
            split_model_name("gpt-5-mini"),
            Err(ModelNameError::NoProvider("gpt-5-mini".into()))
        );
        assert_eq!(
            split_model_name(""),
            Err(ModelNameError::NoProvider(String::new()))
        );
        assert_eq!(
            split_model_name("/gpt-5-mini"),
            Err(ModelNameError::EmptyProvider("/gpt-5-mini".into()))
        );
        assert_eq!(
            split_model_name("openai/"),
            Err(ModelNameError::EmptyId("openai/".into()))
        );
        assert_eq!(
            split_model_name("/"),
            Err(ModelNameError::EmptyProvider("/".into()))
        );
        assert_eq!(
            split_model_name("gpt-5-mini").unwrap_err().to_string(),
            "model \"gpt-5-mini\" has no provider: write it as <provider>/<id>"
        );
        assert_eq!(
            split_model_name("openai/").unwrap_err().to_string(),
            "model \"openai/\" has an empty id: write it as <provider>/<id>"
        );
    }
}
