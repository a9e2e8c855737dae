//! Knowing the server behind a custom endpoint: from the answer the check already has, and from one look at the
//! server's own metadata.
//!
//! The request a Turn sends is never changed for this. What the answer says comes free: llama-server answers with
//! `server: llama.cpp`, vLLM and LiteLLM with `server: uvicorn`, LiteLLM adds `x-litellm-*` headers and prefixes its
//! errors with `litellm.`, Ollama writes `"system_fingerprint":"fp_ollama"` in every chunk and names itself in its
//! errors (`does not support tools`, `model '...' not found`). The metadata costs requests, so it is asked only for a custom endpoint (pi's catalog
//! providers are not model servers) and only when it can change the verdict: after a failure (to name the cause),
//! or for the context check. It goes through the check's own client (the same trust, proxy and same-origin
//! redirect policy), with the check's own headers (the key goes only where the check sent it: every URL here is
//! the base URL with another path), under the model's deadline; every value kept is a number, a bool, or a short
//! sanitized string.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::Value;

use crate::api::{self, ApiKind, ProviderError};
use crate::contract::endpoint::{Cause, Endpoint, EndpointKind};
use crate::contract::verdict::Route;
use crate::sanitize::Redactor;
use crate::target::Target;

/// The most of a metadata body the probe reads (llama.cpp's `/props` holds the chat template: tens of KB).
const MAX_METADATA_BODY: usize = 256 * 1024;

/// The longest a metadata request may take, within the model's deadline.
pub const METADATA_TIMEOUT: Duration = Duration::from_secs(10);

/// What the answer of a try told about the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// The kind the headers or the error body named.
    pub kind: Option<EndpointKind>,
    /// `server: uvicorn`: vLLM or LiteLLM (or another Python server).
    pub uvicorn: bool,
    /// The try was answered 404.
    pub not_found: bool,
    /// The prompt's length as the server counted it (`usage.prompt_tokens`, when the stream gave it before the
    /// verdict): Ollama counts the prompt it kept after cutting it to its context (issue 38).
    pub prompt_tokens: Option<u64>,
    /// How many text pieces in a row, the same once trimmed, ended the answer's text: Ollama cuts a generation whose
    /// piece repeats more than 30 times and closes the stream with no stop reason (issue 38).
    pub trailing_repeats: u32,
}

/// What Ollama writes in every chunk of its `/v1` stream (it sends no `server:` header).
const OLLAMA_FINGERPRINT: &[u8] = b"\"fp_ollama\"";

impl Seen {
    /// What the headers of an answer say.
    pub fn from_headers(headers: &HeaderMap) -> Self {
        let server = headers
            .get("server")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let litellm = headers.keys().any(|k| k.as_str().starts_with("x-litellm-"));
        let kind = if litellm {
            Some(EndpointKind::Litellm)
        } else if server.starts_with("llama.cpp") {
            Some(EndpointKind::LlamaCpp)
        } else {
            None
        };
        Self {
            kind,
            uvicorn: server.starts_with("uvicorn"),
            not_found: false,
            prompt_tokens: None,
            trailing_repeats: 0,
        }
    }

    /// Adds what an error body says: LiteLLM names itself in its messages; Ollama's refusal of tools is its own
    /// (`<model> does not support tools`).
    pub fn with_error(mut self, error: Option<&ProviderError>) -> Self {
        if self.kind.is_none() {
            let message = error.map_or("", |e| e.message.trim());
            if message.starts_with("litellm.") {
                self.kind = Some(EndpointKind::Litellm);
            } else if message.ends_with(" does not support tools") {
                self.kind = Some(EndpointKind::Ollama);
            }
        }
        self
    }

    /// Adds what a chunk of the stream says: Ollama's fingerprint.
    pub fn with_chunk(&mut self, chunk: &[u8]) {
        if self.kind.is_none()
            && chunk
                .windows(OLLAMA_FINGERPRINT.len())
                .any(|w| w == OLLAMA_FINGERPRINT)
        {
            self.kind = Some(EndpointKind::Ollama);
        }
    }
}

/// The metadata is worth asking for this target: a custom endpoint on Chat Completions.
pub fn applies(target: &Target) -> bool {
    matches!(target.route, Route::Custom { .. }) && target.api == ApiKind::OpenAiCompletions
}

/// Whether the check's request reached the server itself, so that its metadata can say more: not after no
/// connection, a TLS failure, a timeout, the Custodian's refusal or a proxy's 407 (the GETs would meet the same), nor
/// after a redirect off the origin (not followed: the origin answered with nothing but it).
pub fn reached(r: &crate::contract::verdict::ModelResult) -> bool {
    use crate::contract::outcome::{Code, Outcome};
    !matches!(
        r.outcome,
        Outcome::Unreachable
            | Outcome::Tls
            | Outcome::Timeout
            | Outcome::CustodianRefused
            | Outcome::NotChecked
            | Outcome::Unsupported
    ) && r.code != Code::CrossOriginRedirect
        && r.http_status != Some(407)
}

/// The server's root: the base URL without its `/v1` (llama.cpp's `/props` and vLLM's `/version` live there).
fn root(base: &reqwest::Url) -> reqwest::Url {
    let mut url = base.clone();
    let path = base.path().trim_end_matches('/');
    url.set_path(path.strip_suffix("/v1").unwrap_or(path));
    url.set_query(None);
    url
}

/// Ollama's own API at the base URL's origin (`/api/ps`...): Ollama serves it at the root, whatever the base URL's path.
fn ollama_url(base: &reqwest::Url, path: &str) -> reqwest::Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url
}

/// Asks the server's metadata: `/v1/models` always, `/props` when it is (or may be) llama.cpp, `/version` after a
/// failure when it may be vLLM. `failed` is false for a pass (only the context is wanted then).
pub async fn learn(
    client: &reqwest::Client,
    target: &Target,
    seen: Seen,
    failed: bool,
    redactor: &Redactor,
) -> Endpoint {
    let mut endpoint = Endpoint::of(seen.kind.unwrap_or(EndpointKind::Unknown));
    let Some(headers) = api::wire(target.api)
        .and_then(|w| w.request(target).ok())
        .map(|r| r.headers)
    else {
        return endpoint;
    };
    let get = |url: reqwest::Url| fetch(client, url, headers.clone());
    if let Some(models) = get(api::endpoint(&target.base_url, "/models")).await {
        read_models(&models, &target.id, &mut endpoint);
    }
    let root = root(&target.base_url);
    // A LiteLLM gateway answers the GETs for its backend: its own `/model/info` names the context its config gives
    // the model (`model_info.max_input_tokens`), when `/v1/models` did not.
    if endpoint.kind == EndpointKind::Litellm
        && endpoint.context_length.is_none()
        && let Some(info) = get(api::endpoint(&root, "/model/info")).await
    {
        read_model_info(&info, &target.id, &mut endpoint);
    }
    // `/props` for llama.cpp whose context `/v1/models` did not give, or whose context fails the check (its slots
    // name the fix), or after a failure of a server that may be llama.cpp (an unknown one without uvicorn's header):
    // a pass against an unknown server costs one GET only.
    let llama = endpoint.kind == EndpointKind::LlamaCpp;
    let maybe_llama = endpoint.kind == EndpointKind::Unknown && !seen.uvicorn;
    let too_small = context_cause(&endpoint, target, seen.prompt_tokens).is_some();
    if ((llama && (failed || too_small || endpoint.context_length.is_none()))
        || (maybe_llama && failed))
        && let Some(props) = get(api::endpoint(&root, "/props")).await
    {
        read_props(&props, &mut endpoint, redactor);
    }
    // Ollama's `/api/ps` (at the server's origin: Ollama serves no path prefix): the models it has loaded, with the
    // context each is served with. Asked for Ollama, and after a 404 of an unknown server without uvicorn's header
    // (its `{"models": [...]}` names Ollama: a base URL without `/v1` gets Ollama's `404 page not found`, an unknown
    // model `model '...' not found`); Ollama's other refusals name it already, so no other failure costs the GET.
    let maybe_ollama = endpoint.kind == EndpointKind::Unknown && !seen.uvicorn && seen.not_found;
    if (endpoint.kind == EndpointKind::Ollama || maybe_ollama)
        && let Some(ps) = get(ollama_url(&target.base_url, "api/ps")).await
    {
        read_ps(&ps, &target.id, &mut endpoint);
    }
    let maybe_vllm = matches!(endpoint.kind, EndpointKind::Vllm | EndpointKind::Unknown)
        && (seen.uvicorn || endpoint.kind == EndpointKind::Vllm);
    if maybe_vllm
        && failed
        && let Some(version) = get(api::endpoint(&root, "/version")).await
        && let Some(v) = version.get("version").and_then(Value::as_str)
    {
        endpoint.kind = EndpointKind::Vllm;
        endpoint.version = Some(redactor.clean_to(v, 40));
    }
    endpoint
}

/// Ollama's `/api/ps`: it is Ollama (`models` is a list), and the context the model `id` is loaded with
/// (`context_length`; an id without a tag is Ollama's `:latest`). A model not loaded gives no context: Ollama loads
/// it with its `num_ctx` at the next request.
pub fn read_ps(ps: &Value, id: &str, endpoint: &mut Endpoint) {
    let Some(models) = ps.get("models").and_then(Value::as_array) else {
        return;
    };
    endpoint.kind = EndpointKind::Ollama;
    if let Some(m) = ollama_entry(models, id) {
        endpoint.context_length = m
            .get("context_length")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
            .or(endpoint.context_length);
    }
}

/// The entry of `/api/ps` for `id` (`name` or `model`; `x` is `x:latest`).
fn ollama_entry<'a>(models: &'a [Value], id: &str) -> Option<&'a Value> {
    let latest = format!("{id}:latest");
    models.iter().find(|m| {
        ["name", "model"].iter().any(|k| {
            m.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|n| n == id || (!id.contains(':') && n == latest))
        })
    })
}

/// What the look beside a custom endpoint's tries saw, before the deadline: every llama-server slot busy, or Ollama
/// with the model loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waited {
    /// llama-server's slots, every one processing.
    LlamaCppSlotsBusy(u64),
    /// Ollama's `/api/ps` listed the model as loaded.
    OllamaLoaded,
}

/// How long before the model's deadline the look at llama-server's slots is taken: the GET's own bound, so that it
/// ends by the deadline and the verdict comes no later.
pub const SLOTS_LOOK: Duration = Duration::from_secs(2);

/// Beside a custom endpoint's tries: at `at` ([`SLOTS_LOOK`] before `deadline`, and not before half the model's
/// timeout), llama-server's `GET /slots`, and how many slots it has when every one is busy (`is_processing`): a request that
/// times out then waited in its queue (issue 27, item 8). `None` when it is not llama-server, does not answer by the
/// deadline, or has a slot free. Read only after a timeout.
pub async fn slots_busy_before(
    client: reqwest::Client,
    target: Target,
    at: tokio::time::Instant,
    deadline: tokio::time::Instant,
) -> Option<Waited> {
    tokio::time::sleep_until(at).await;
    let headers = api::wire(target.api)?.request(&target).ok()?.headers;
    let url = api::endpoint(&root(&target.base_url), "/slots");
    // Ollama's `/api/ps` beside it (issue 38): the model loaded, and still no answer, is no load.
    let ps_url = ollama_url(&target.base_url, "api/ps");
    // One after the other, on one connection where the server keeps it: `/api/ps` only when `/slots` gave nothing
    // (Ollama answers it 404; a llama-server that answers has a slot free).
    let look = async {
        let slots = fetch(&client, url, headers.clone()).await;
        if let Some(slots) = slots {
            return all_busy(&slots).map(Waited::LlamaCppSlotsBusy);
        }
        let ps = fetch(&client, ps_url, headers).await?;
        let models = ps.get("models")?.as_array()?;
        ollama_entry(models, &target.id).map(|_| Waited::OllamaLoaded)
    };
    tokio::time::timeout_at(deadline, look).await.ok()?
}

/// The longest the waiting note's look at Ollama's `/api/ps` may take: the note waits for it.
pub const NOTE_LOOK: Duration = Duration::from_secs(2);

/// What Ollama's `GET /api/ps` said to the waiting note's look ([`ollama_lists`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsSaid {
    /// It lists the model: loaded, so a request with no answer waits for a slot.
    Listed,
    /// It does not: Ollama loads the model first.
    NotListed,
    /// Not Ollama: an error status, a body that is not `{"models": [...]}`, no connection. No more looks.
    NotOllama,
    /// No answer within the look's bound: nothing learned.
    Silent,
}

/// The waiting note's look (issue 38, item 4): when no byte of an answer has come, Ollama's `GET /api/ps` at the base
/// URL's origin, and whether it lists the model, within `bound`.
pub async fn ollama_lists(client: reqwest::Client, target: Target, bound: Duration) -> PsSaid {
    let Some(headers) = api::wire(target.api)
        .and_then(|w| w.request(&target).ok())
        .map(|r| r.headers)
    else {
        return PsSaid::NotOllama;
    };
    let url = ollama_url(&target.base_url, "api/ps");
    match tokio::time::timeout(bound, fetch(&client, url, headers)).await {
        Err(_) => PsSaid::Silent,
        Ok(ps) => match ps.as_ref().and_then(|p| p.get("models")?.as_array()) {
            Some(models) if ollama_entry(models, &target.id).is_some() => PsSaid::Listed,
            Some(_) => PsSaid::NotListed,
            None => PsSaid::NotOllama,
        },
    }
}

/// `/slots`: the number of slots when each is processing.
pub fn all_busy(slots: &Value) -> Option<u64> {
    let slots = slots.as_array().filter(|s| !s.is_empty())?;
    slots
        .iter()
        .all(|s| s.get("is_processing").and_then(Value::as_bool) == Some(true))
        .then_some(slots.len() as u64)
}

/// One metadata `GET`, its JSON body, or `None` (any failure: the metadata is a bonus, never a verdict).
async fn fetch(
    client: &reqwest::Client,
    url: reqwest::Url,
    mut headers: HeaderMap,
) -> Option<Value> {
    headers.remove(CONTENT_TYPE);
    let send = async {
        let mut response = client.get(url).headers(headers).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let mut buf = Vec::new();
        while let Some(chunk) = response.chunk().await.ok()? {
            if buf.len() + chunk.len() > MAX_METADATA_BODY {
                return None;
            }
            buf.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&buf).ok()
    };
    tokio::time::timeout(METADATA_TIMEOUT, send)
        .await
        .ok()
        .flatten()
}

/// `/v1/models`: the served model's context (llama.cpp's `meta.n_ctx`, vLLM's `max_model_len`) and who serves it
/// (`owned_by`: `llamacpp`, `vllm`).
pub fn read_models(models: &Value, id: &str, endpoint: &mut Endpoint) {
    let Some(data) = models.get("data").and_then(Value::as_array) else {
        return;
    };
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(id))
        .or_else(|| (data.len() == 1).then(|| &data[0]));
    let Some(entry) = entry else {
        return;
    };
    match entry.get("owned_by").and_then(Value::as_str) {
        Some("llamacpp") if endpoint.kind == EndpointKind::Unknown => {
            endpoint.kind = EndpointKind::LlamaCpp;
        }
        Some("vllm") if endpoint.kind == EndpointKind::Unknown => {
            endpoint.kind = EndpointKind::Vllm;
        }
        _ => {}
    }
    // LiteLLM lists `max_input_tokens` for a model whose config gives `model_info`.
    let context = entry
        .pointer("/meta/n_ctx")
        .or_else(|| entry.get("max_model_len"))
        .or_else(|| entry.get("max_input_tokens"))
        .and_then(Value::as_u64);
    if context.is_some() {
        endpoint.context_length = context;
    }
}

/// LiteLLM's `/model/info`: the `model_info.max_input_tokens` its config gives the model named `id`
/// (`model_name`; several deployments of one name: the smallest, which a Turn may be routed to).
pub fn read_model_info(info: &Value, id: &str, endpoint: &mut Endpoint) {
    let Some(data) = info.get("data").and_then(Value::as_array) else {
        return;
    };
    endpoint.context_length = data
        .iter()
        .filter(|m| m.get("model_name").and_then(Value::as_str) == Some(id))
        .filter_map(|m| {
            m.pointer("/model_info/max_input_tokens")
                .and_then(Value::as_u64)
        })
        .filter(|n| *n > 0)
        .min()
        .or(endpoint.context_length);
}

/// llama.cpp's `/props`: the context (`default_generation_settings.n_ctx`), whether the template renders tools
/// (`chat_template_caps.supports_tools`), and the build (`build_info`).
pub fn read_props(props: &Value, endpoint: &mut Endpoint, redactor: &Redactor) {
    let tools = props
        .pointer("/chat_template_caps/supports_tools")
        .and_then(Value::as_bool);
    let context = props
        .pointer("/default_generation_settings/n_ctx")
        .and_then(Value::as_u64);
    if tools.is_none() && context.is_none() {
        return;
    }
    endpoint.kind = EndpointKind::LlamaCpp;
    endpoint.slots = props
        .get("total_slots")
        .and_then(Value::as_u64)
        .or(endpoint.slots);
    endpoint.supports_tools = tools.or(endpoint.supports_tools);
    endpoint.context_length = endpoint.context_length.or(context);
    if let Some(build) = props.get("build_info").and_then(Value::as_str) {
        endpoint.version = Some(redactor.clean_to(build, 40));
    }
}

/// The context check: the served context against the plan's `contextWindow` (a Turn's prompt can be as long as the
/// window, and a server refuses a prompt longer than its context). With no window the Turn's prompt is unknown (pi
/// clamps nothing), so only what surely fails is an error, by the server's own rule: llama-server refuses only a
/// prompt longer than its context (one slot's share of `-c` under `-np`), and ends a generation that reaches it
/// with `length`, so the probe's own prompt; vLLM (and any other) refuses a prompt plus `max_tokens` over its
/// length, so the cap plus that prompt (issue 27, item 7; held against the real llama-server in `real_peers.rs`).
///
/// Ollama cuts a prompt longer than its `num_ctx` silently, keeps the rest, and counts what it kept: a
/// `usage.prompt_tokens` (`counted`) that fills the served context says the probe's own prompt was cut, however short
/// the probe's estimate of it (the model's TEMPLATE adds to it: SmolLM2's tool TEMPLATE makes the 81 estimated tokens
/// 182). Only without a window: a window above the served context says more already.
pub fn context_cause(endpoint: &Endpoint, target: &Target, counted: Option<u64>) -> Option<Cause> {
    let served = endpoint.context_length.filter(|n| *n > 0)?;
    let prompt = crate::prompt::estimated_tokens();
    let window = target.facts.context_window.filter(|w| *w > 0);
    let ollama = endpoint.kind == EndpointKind::Ollama;
    let prompt_cut = ollama && window.is_none() && counted.is_some_and(|n| n >= served);
    let (needed, from_window) = match window {
        Some(window) => (window, true),
        None if prompt_cut => (prompt.max(served + 1), false),
        // Ollama cuts a prompt longer than its `num_ctx` silently and shifts the context past it (issue 38).
        None if endpoint.kind == EndpointKind::LlamaCpp || ollama => (prompt, false),
        None => (target.max_tokens + prompt, false),
    };
    (served < needed).then_some(Cause::ContextTooSmall {
        served,
        needed,
        from_window,
        server: endpoint.kind,
        slots: endpoint.slots.filter(|n| *n > 1),
        prompt_cut,
    })
}

/// Why the served context is not known, when that matters: a custom endpoint whose metadata gave none, with a window
/// to check it against or behind a gateway (whose `/v1/models` answers for itself, not for its backend).
pub fn context_unchecked(
    endpoint: Option<&Endpoint>,
    target: &Target,
) -> Option<crate::contract::endpoint::ContextUnchecked> {
    use crate::contract::endpoint::ContextUnchecked;
    if endpoint.and_then(|e| e.context_length).is_some() {
        return None;
    }
    let gateway = endpoint.is_some_and(|e| e.kind == EndpointKind::Litellm);
    if gateway {
        Some(ContextUnchecked::GatewayWithoutContext)
    } else if target.facts.context_window.is_some_and(|w| w > 0) {
        Some(ContextUnchecked::ServerWithoutContext)
    } else {
        None
    }
}

/// The backend error a LiteLLM gateway names (`litellm.APIConnectionError: ...`), when its message says one.
pub fn gateway_backend_error(message: &str) -> Option<String> {
    let rest = message.trim_start().strip_prefix("litellm.")?;
    let class: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    const BACKEND: [&str; 6] = [
        "APIConnectionError",
        "ServiceUnavailableError",
        "InternalServerError",
        "Timeout",
        "APIError",
        "BadGatewayError",
    ];
    BACKEND.contains(&class.as_str()).then_some(class)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn headers_name_the_server() {
        let mut h = HeaderMap::new();
        h.insert("server", "llama.cpp".parse().unwrap());
        assert_eq!(Seen::from_headers(&h).kind, Some(EndpointKind::LlamaCpp));
        let mut h = HeaderMap::new();
        h.insert("server", "uvicorn".parse().unwrap());
        let seen = Seen::from_headers(&h);
        assert_eq!((seen.kind, seen.uvicorn), (None, true));
        h.insert("x-litellm-version", "1.50.0".parse().unwrap());
        assert_eq!(Seen::from_headers(&h).kind, Some(EndpointKind::Litellm));
        let e = ProviderError {
            message: "litellm.APIConnectionError: connection refused".into(),
            ..ProviderError::default()
        };
        assert_eq!(
            Seen::default().with_error(Some(&e)).kind,
            Some(EndpointKind::Litellm)
        );
    }

    #[test]
    fn models_and_props_give_the_context() {
        let mut e = Endpoint::of(EndpointKind::Unknown);
        read_models(
            &json!({"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm","max_model_len":4096}]}),
            "m",
            &mut e,
        );
        assert_eq!((e.kind, e.context_length), (EndpointKind::Vllm, Some(4096)));
        let mut e = Endpoint::of(EndpointKind::Unknown);
        read_models(
            &json!({"data":[{"id":"other.gguf","owned_by":"llamacpp","meta":{"n_ctx":2048}}]}),
            "any-id",
            &mut e,
        );
        assert_eq!(
            (e.kind, e.context_length),
            (EndpointKind::LlamaCpp, Some(2048))
        );
        let mut e = Endpoint::of(EndpointKind::Unknown);
        read_props(
            &json!({"default_generation_settings":{"n_ctx":256},"chat_template_caps":{"supports_tools":false},"build_info":"b1-0c1e570"}),
            &mut e,
            &Redactor::new(Vec::<String>::new()),
        );
        assert_eq!(e.supports_tools, Some(false));
        assert_eq!(e.context_length, Some(256));
        assert_eq!(e.version.as_deref(), Some("b1-0c1e570"));
    }

    #[test]
    fn the_root_drops_v1() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(root(&u("http://h:8080/v1")).as_str(), "http://h:8080/");
        assert_eq!(root(&u("http://h:8080/x/v1/")).as_str(), "http://h:8080/x");
    }

    #[test]
    fn litellm_backend_errors_are_named() {
        assert_eq!(
            gateway_backend_error(
                "litellm.APIConnectionError: OpenAIException - Connection error."
            ),
            Some("APIConnectionError".into())
        );
        assert_eq!(
            gateway_backend_error("litellm.BadRequestError: bad model"),
            None
        );
        assert_eq!(gateway_backend_error("plain"), None);
    }

    fn target(max_tokens: u64, window: Option<u64>) -> Target {
        Target::test(ApiKind::OpenAiCompletions)
            .max_tokens(max_tokens)
            .facts(crate::target::Facts {
                context_window: window,
                ..Default::default()
            })
    }

    /// Issue 27, item 7: without a window llama-server fails only a prompt longer than its context (a cap beyond it
    /// is served and stopped with `length`); vLLM fails the cap plus the prompt over its length. With a window, both
    /// fail a served context below it, and llama.cpp's slots are named.
    #[test]
    fn the_context_rule_is_the_server_s() {
        let served = |kind, n, slots| Endpoint {
            context_length: Some(n),
            slots,
            ..Endpoint::of(kind)
        };
        let prompt = crate::prompt::estimated_tokens();
        assert_eq!(
            context_cause(
                &served(EndpointKind::LlamaCpp, 2048, None),
                &target(2048, None),
                None
            ),
            None
        );
        assert_eq!(
            context_cause(
                &served(EndpointKind::LlamaCpp, prompt - 1, None),
                &target(16, None),
                None
            ),
            Some(Cause::ContextTooSmall {
                served: prompt - 1,
                needed: prompt,
                from_window: false,
                server: EndpointKind::LlamaCpp,
                slots: None,
                prompt_cut: false,
            })
        );
        assert!(
            context_cause(
                &served(EndpointKind::Vllm, 2048, None),
                &target(2048, None),
                None
            )
            .is_some()
        );
        assert_eq!(
            context_cause(
                &served(EndpointKind::LlamaCpp, 1024, Some(4)),
                &target(1024, Some(8192)),
                None
            ),
            Some(Cause::ContextTooSmall {
                served: 1024,
                needed: 8192,
                from_window: true,
                server: EndpointKind::LlamaCpp,
                slots: Some(4),
                prompt_cut: false,
            })
        );
        // Ollama (issue 38): its count of the prompt filling the served context is a cut prompt, however short the
        // estimate; a count below it, or a window, is the usual rule.
        let ollama = served(EndpointKind::Ollama, 128, None);
        assert_eq!(
            context_cause(&ollama, &target(256, None), Some(128)),
            Some(Cause::ContextTooSmall {
                served: 128,
                needed: prompt.max(129),
                from_window: false,
                server: EndpointKind::Ollama,
                slots: None,
                prompt_cut: true,
            })
        );
        assert_eq!(context_cause(&ollama, &target(256, None), Some(127)), None);
        assert_eq!(context_cause(&ollama, &target(256, None), None), None);
        assert!(matches!(
            context_cause(&ollama, &target(256, Some(8192)), Some(128)),
            Some(Cause::ContextTooSmall {
                from_window: true,
                prompt_cut: false,
                ..
            })
        ));
        // Only Ollama's count says so: llama-server refuses a prompt over its context instead.
        assert_eq!(
            context_cause(
                &served(EndpointKind::LlamaCpp, 128, None),
                &target(256, None),
                Some(128)
            ),
            None
        );
    }

    /// Issue 27, item 6: a LiteLLM gateway's context is its config's `max_input_tokens`, in `/v1/models` or
    /// `/model/info`; without one it is not checked, and that is said.
    #[test]
    fn a_gateway_names_its_context_or_says_it_cannot() {
        let mut e = Endpoint::of(EndpointKind::Litellm);
        read_models(
            &json!({"data":[{"id":"a","object":"model","owned_by":"openai","max_input_tokens":2048},{"id":"b","object":"model","owned_by":"openai"}]}),
            "b",
            &mut e,
        );
        assert_eq!(e.context_length, None);
        read_model_info(
            &json!({"data":[
                {"model_name":"b","model_info":{"max_input_tokens":8192}},
                {"model_name":"b","model_info":{"max_input_tokens":4096}},
                {"model_name":"c","model_info":{"max_input_tokens":100}}]}),
            "b",
            &mut e,
        );
        assert_eq!(
            e.context_length,
            Some(4096),
            "the smallest deployment of the name"
        );
        let unknown = Endpoint::of(EndpointKind::Litellm);
        assert_eq!(
            context_unchecked(Some(&unknown), &target(1024, None)),
            Some(crate::contract::endpoint::ContextUnchecked::GatewayWithoutContext)
        );
        assert_eq!(context_unchecked(Some(&e), &target(1024, None)), None);
        let llama = Endpoint::of(EndpointKind::LlamaCpp);
        assert_eq!(context_unchecked(Some(&llama), &target(1024, None)), None);
        assert_eq!(
            context_unchecked(Some(&llama), &target(1024, Some(32768))),
            Some(crate::contract::endpoint::ContextUnchecked::ServerWithoutContext)
        );
    }

    /// Issue 27, item 8: `/slots` all processing is a full queue; a free slot, or no slots at all, is not.
    #[test]
    fn busy_slots_are_every_slot_processing() {
        assert_eq!(
            all_busy(&json!([{"id":0,"is_processing":true},{"id":1,"is_processing":true}])),
            Some(2)
        );
        assert_eq!(
            all_busy(&json!([{"id":0,"is_processing":true},{"id":1,"is_processing":false}])),
            None
        );
        assert_eq!(all_busy(&json!([])), None);
        assert_eq!(all_busy(&json!({"error":"not found"})), None);
    }
}
