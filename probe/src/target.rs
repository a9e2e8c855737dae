//! What one check is about: a model, where it lives, how a Turn reaches it, and the key it holds.
//!
//! A [`Target`] is everything an API module needs to build the request pi sends for that model: the id, the base URL,
//! the token cap, the `tool_choice`, and the catalog facts that change the request's shape (reasoning, how thinking is
//! turned off, pi's `compat` flags, static headers).

use serde_json::Value;

use crate::contract::api_kind::{ApiKind, ToolChoice};
use crate::contract::verdict::Route;

/// A key value. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key value, normalized as fetch normalizes a header value: its leading and trailing HTTP whitespace
    /// (tab, LF, CR, space) removed. A Secret made from a file with a final newline works in a Turn, whose fetch
    /// strips it, so it works here; what is left inside is refused only where a header cannot carry it
    /// ([`crate::api::secret_header`]).
    pub fn new(value: String) -> Self {
        let trimmed = value.trim_matches(['\t', '\n', '\r', ' ']);
        if trimmed.len() == value.len() {
            Self(value)
        } else {
            Self(trimmed.to_owned())
        }
    }

    /// The value, for the one header that carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

/// The key a Turn sends, and the env var it came from (some providers pick the auth header by it:
/// `ANTHROPIC_AUTH_TOKEN` is a bearer token, `ANTHROPIC_API_KEY` an `x-api-key`).
#[derive(Clone, Debug)]
pub struct Key {
    /// The env var.
    pub env: String,
    /// Its value (in a Custodian pod: the Stand-in `jr2-held-<NAME>`).
    pub value: Secret,
}

/// The catalog facts of a model that shape its request. Empty for a custom endpoint.
#[derive(Clone, Debug, Default)]
pub struct Facts {
    /// pi's catalog provider (`anthropic`, `groq`...); for a custom endpoint, the provider id the plan gives, if any.
    pub provider: Option<String>,
    /// The model reasons (pi sends `developer` messages, thinking fields).
    pub reasoning: bool,
    /// pi's `thinkingLevelMap`, as the catalog has it (`off: null` means thinking cannot be turned off).
    pub thinking_level_map: Option<Value>,
    /// pi's `compat` overrides for the model.
    pub compat: Option<Value>,
    /// Static headers the catalog sends for the model.
    pub headers: Option<Value>,
    /// The model's context window as the plan (or `--context-window`) gives it: the context check compares the
    /// served context with it. `None` when not given (a custom endpoint's window is unknown by default).
    pub context_window: Option<u64>,
}

impl Facts {
    /// Thinking cannot be turned off for this model (`thinkingLevelMap.off === null`).
    pub fn thinking_off_is_null(&self) -> bool {
        self.thinking_level_map
            .as_ref()
            .and_then(|m| m.get("off"))
            .is_some_and(Value::is_null)
    }

    /// The value the catalog maps thinking "off" to, when it maps it to a string.
    pub fn thinking_off_value(&self) -> Option<&str> {
        self.thinking_level_map.as_ref()?.get("off")?.as_str()
    }

    /// A `compat` field, when the catalog sets it.
    pub fn compat(&self, field: &str) -> Option<&Value> {
        self.compat.as_ref()?.get(field)
    }
}

/// What to check: one model, where it lives and how to reach it.
#[derive(Clone, Debug)]
pub struct Target {
    /// The model as the user names it (the lines' `<model>`).
    pub model: String,
    /// The id sent in the request (the catalog id; for a custom endpoint, the id after the provider prefix).
    pub id: String,
    /// The API kind.
    pub api: ApiKind,
    /// The base URL the API appends its path to.
    pub base_url: reqwest::Url,
    /// The port the base URL's text names when it is the scheme's default (`https://h:443`): a parsed URL drops
    /// it, and `<host>` keeps what the URL names ([`named_default_port`]).
    pub named_port: Option<u16>,
    /// How the model is reached (the lines' form).
    pub route: Route,
    /// The key, when one is held or configured.
    pub key: Option<Key>,
    /// The token cap to send (already clamped as pi clamps it).
    pub max_tokens: u64,
    /// The `tool_choice` to send (a Turn sends none).
    pub tool_choice: ToolChoice,
    /// Catalog facts.
    pub facts: Facts,
    /// The conversation id a Turn's requests carry (affinity headers, cache keys): one per run.
    pub session_id: String,
}

impl Target {
    /// `<host>` of the lines: the host, with `:port` when the URL names one.
    pub fn host(&self) -> String {
        match (self.base_url.port(), self.named_port) {
            (None, Some(port)) => {
                format!("{}:{port}", self.base_url.host_str().unwrap_or_default())
            }
            _ => host_of(&self.base_url),
        }
    }

    /// The key's value, if any.
    pub fn key_value(&self) -> Option<&str> {
        self.key.as_ref().map(|k| k.value.expose())
    }
}

/// The base URL's host as the lines write it.
pub fn host_of(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// The port `text` (a URL, as given) names in its authority when that port is its scheme's default (`443` for
/// https, `80` for http), which a parsed URL drops; `None` when it names none, or another one (the parsed URL keeps
/// that).
pub fn named_default_port(text: &str) -> Option<u16> {
    let (scheme, rest) = text.trim().split_once("://")?;
    let authority = &rest[..rest.find(['/', '?', '#', '\\']).unwrap_or(rest.len())];
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let (_, port) = host_port.rsplit_once(':')?;
    if port.contains(']') {
        return None; // an IPv6 literal without a port
    }
    let port: u16 = port.parse().ok()?;
    let default = match scheme.to_ascii_lowercase().as_str() {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    (port == default).then_some(port)
}

/// A conversation id in the shape pi uses (a UUIDv7: time-ordered, random tail), without a UUID dependency.
pub fn new_session_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let ms = now.as_millis() as u64 & 0xFFFF_FFFF_FFFF;
    // Randomness from the std hasher's per-process keys; an id, not a secret.
    let mut random = [0u64; 2];
    for (i, r) in random.iter_mut().enumerate() {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now.as_nanos());
        h.write_usize(i);
        *r = h.finish();
    }
    let a = (ms >> 16) as u32;
    let b = (ms & 0xFFFF) as u16;
    let c = 0x7000 | (random[0] as u16 & 0x0FFF);
    let d = 0x8000 | ((random[0] >> 16) as u16 & 0x3FFF);
    let e = random[1] & 0xFFFF_FFFF_FFFF;
    format!("{a:08x}-{b:04x}-{c:04x}-{d:04x}-{e:012x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_look_like_uuid_v7_and_differ() {
        let a = new_session_id();
        let b = new_session_id();
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "7");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
        assert_ne!(a, b);
    }

    #[test]
    fn a_named_default_port_is_found_and_others_are_left_to_the_url() {
        assert_eq!(
            named_default_port("https://api.example.com:443/v1"),
            Some(443)
        );
        assert_eq!(named_default_port("HTTP://10.0.0.5:80"), Some(80));
        assert_eq!(named_default_port("https://[::1]:443/v1"), Some(443));
        assert_eq!(named_default_port("https://[::1]/v1"), None);
        assert_eq!(named_default_port("https://api.example.com/v1"), None);
        assert_eq!(named_default_port("https://api.example.com:8443/v1"), None);
        assert_eq!(named_default_port("http://h:443/v1"), None);
        assert_eq!(named_default_port("https://h/v1?x=:443"), None);
    }

    #[test]
    fn thinking_off_null() {
        let f = Facts {
            thinking_level_map: Some(serde_json::json!({"off": null, "high": "high"})),
            ..Facts::default()
        };
        assert!(f.thinking_off_is_null());
        let f = Facts {
            thinking_level_map: Some(serde_json::json!({"off": "none"})),
            ..Facts::default()
        };
        assert!(!f.thinking_off_is_null());
        assert_eq!(f.thinking_off_value(), Some("none"));
        assert!(!Facts::default().thinking_off_is_null());
    }
}
