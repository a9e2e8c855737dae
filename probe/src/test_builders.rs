//! Builders of a [`Target`] and a [`ModelResult`] for tests, so that a test names only the fields it is about.
//!
//! Behind the `test-builders` feature (and in the crate's own unit tests): no build that ships has them. A test
//! starts from [`Target::test`] or [`ModelResult::test`] and changes what it is about, with the setters for a
//! target, with struct update syntax (`ModelResult { error, ..ModelResult::test(..) }`) for a result.

use crate::contract::api_kind::{ApiKind, ToolChoice};
use crate::contract::outcome::Outcome;
use crate::contract::verdict::{ModelResult, Route};
use crate::target::{Facts, Key, Secret, Target};

/// The base URL of [`Target::test`]: a custom endpoint on loopback.
const BASE_URL: &str = "http://127.0.0.1:8080/v1";

impl Target {
    /// A model of `api` on a custom endpoint at `http://127.0.0.1:8080/v1`, its cap given (`maxTokens` set): model
    /// and id `m`, no key, a cap of 16 tokens, no `tool_choice`, no catalog facts, the session `s`.
    pub fn test(api: ApiKind) -> Self {
        Self {
            model: "m".to_owned(),
            id: "m".to_owned(),
            api,
            base_url: reqwest::Url::parse(BASE_URL).expect("a URL"),
            named_port: None,
            route: Route::Custom {
                api_key_set: false,
                max_tokens_set: true,
            },
            key: None,
            max_tokens: 16,
            tool_choice: ToolChoice::Unset,
            facts: Facts::default(),
            session_id: "s".to_owned(),
        }
    }

    /// The model as the lines name it, and the id sent: what follows its first `/` (all of it without one), as for
    /// a catalog model. [`Target::id`] after it sends another id.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self.id = self
            .model
            .split_once('/')
            .map_or(self.model.as_str(), |(_, id)| id)
            .to_owned();
        self
    }

    /// The id sent in the request.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The base URL (a test's own: it panics on one that does not parse).
    pub fn base_url(mut self, url: impl AsRef<str>) -> Self {
        self.base_url = reqwest::Url::parse(url.as_ref()).expect("the test's base URL parses");
        self
    }

    /// The catalog route of `provider`, its key in `key_env`, held by a Harness pod or not; no Custodian, no gateway.
    pub fn catalog(mut self, provider: &str, key_env: &str, key_held: bool) -> Self {
        self.route = Route::Catalog {
            provider: provider.to_owned(),
            via_custodian: false,
            key_env: key_env.to_owned(),
            key_held,
            gateway: false,
        };
        self
    }

    /// The key `value`, read from `env`; no key for `None`.
    pub fn key<'v>(mut self, env: &str, value: impl Into<Option<&'v str>>) -> Self {
        self.key = value.into().map(|value| Key {
            env: env.to_owned(),
            value: Secret::new(value.to_owned()),
        });
        self
    }

    /// The token cap sent.
    pub fn max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The catalog facts.
    pub fn facts(mut self, facts: Facts) -> Self {
        self.facts = facts;
        self
    }

    /// The conversation id the requests carry.
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = session_id.into();
        self
    }
}

impl ModelResult {
    /// The result of `model` (its id: what follows its first `/`, all of it without one) of `api` that ended with
    /// `outcome`, reached as [`Target::test`] reaches its endpoint: the outcome's level and default code, the code's
    /// next action; no `<error>`, status, stop reason, tool, answer, tries or findings; a cap of 16 tokens, 0 ms.
    pub fn test(model: &str, api: ApiKind, outcome: Outcome) -> Self {
        let code = outcome.default_code();
        Self {
            model: model.to_owned(),
            id: model.split_once('/').map_or(model, |(_, id)| id).to_owned(),
            api,
            base_url: BASE_URL.to_owned(),
            host: "127.0.0.1:8080".to_owned(),
            route: Route::Custom {
                api_key_set: false,
                max_tokens_set: true,
            },
            outcome,
            level: outcome.level(api),
            code,
            next_action: code.next_action().to_owned(),
            error: None,
            http_status: None,
            stop_reason: None,
            tool_name: None,
            answer: None,
            max_tokens: 16,
            elapsed_ms: 0,
            tries: Vec::new(),
            findings: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The builders give what they say: a result of the test target's check names its model, id, endpoint and cap.
    #[test]
    fn a_result_matches_its_target() {
        let t = Target::test(ApiKind::OpenAiCompletions).model("vllm/Qwen/Qwen3-32B");
        assert_eq!(
            (t.model.as_str(), t.id.as_str()),
            ("vllm/Qwen/Qwen3-32B", "Qwen/Qwen3-32B")
        );
        let r = ModelResult::test(&t.model, t.api, Outcome::Ok);
        assert_eq!((r.model, r.id), (t.model.clone(), t.id.clone()));
        assert_eq!(r.base_url, t.base_url.as_str());
        assert_eq!(r.host, t.host());
        assert_eq!(r.route, t.route);
        assert_eq!(r.max_tokens, t.max_tokens);
        let t = t.id("other").key("K", None).key("K", "v");
        assert_eq!(t.id, "other");
        assert_eq!(t.key_value(), Some("v"));
    }
}
