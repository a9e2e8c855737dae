//! Proxy: the proxy variables as the Harness reads them: Node 24's fetch, which is undici 7's `EnvHttpProxyAgent`
//! (lower case names first, `https_proxy` falling back to the http proxy, undici's `no_proxy` matching; the rules are
//! [`ProxyEnv`]'s). The Custodian listens at `http://127.0.0.1:15001` and takes CONNECT only. The probe reads the
//! variables itself rather than letting reqwest do it, whose rules differ (upper case first, CIDR ranges, bare IPv6
//! entries) and which would silently go direct on a value it cannot parse: a malformed one is a warning line and every
//! connection fails with it ([`ProxyUnusable`]), since the Harness fails every request with it. A proxy's password and
//! its `Basic` token are held values ([`ProxyEnv::held_values`]) for the redactor.

use crate::sanitize;

/// A proxy variable that is set but cannot be used: a value that is not a URL, or not an `http`/`https` one.
///
/// The Harness (Node's fetch, undici's `EnvHttpProxyAgent` under `NODE_USE_ENV_PROXY`) builds its proxy agents from
/// both variables with `new URL()`, which throws on such a value: every request of a Turn fails. So the probe does
/// not go direct either: every connection it would make fails with this error, and the warning line says why.
#[derive(Clone, Debug)]
pub struct ProxyUnusable {
    /// The variable: `HTTPS_PROXY`, `http_proxy`...
    pub var: String,
    /// Its value as [`sanitize::display_url`] shows it (no userinfo, no query).
    pub shown: String,
    /// Why it cannot be used: the URL parser's words, or the scheme.
    pub reason: String,
    /// A SOCKS proxy: undici 7 can use it (a Turn goes through it), the probe cannot, so the check is no answer.
    pub socks: bool,
}

impl std::fmt::Display for ProxyUnusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.socks {
            write!(
                f,
                "{} is a SOCKS proxy, which this check cannot use (a Turn can)",
                self.var
            )
        } else {
            write!(
                f,
                "{} is not a proxy URL ({}): the Harness fails every request with it",
                self.var, self.reason
            )
        }
    }
}

impl std::error::Error for ProxyUnusable {}

impl ProxyUnusable {
    /// The warning line a run prints before its checks.
    pub fn warning_line(&self) -> String {
        if self.socks {
            return format!(
                "warning: provider: {} \"{}\" is a SOCKS proxy, which a Turn can use and this check cannot: every \
                 check fails though a Turn may pass; check through an HTTP proxy, or with the variable unset",
                self.var, self.shown
            );
        }
        format!(
            "warning: provider: {} \"{}\" is not a proxy URL ({}): the Harness fails every request with \
             it, so every check fails too instead of going direct; fix the variable or unset it",
            self.var, self.shown, self.reason
        )
    }
}

/// The proxy variables of a run, read once, and the choice of a request's proxy, as the Harness makes it.
///
/// Two sets of rules, by the client a Turn's API uses ([`ProxyRules`]): Bedrock's and Codex's follow pi-ai's own
/// resolver ([`PiProxy`]); every other API's go through Node 24's fetch, which reads the variables only when Node is
/// told to ([`node_reads_proxy_env`]; by hand always), through undici 7's `EnvHttpProxyAgent`, whose rules
/// (undici 7.30.2, the last 7.x) are these, which `probe/tests/fixtures/undici7-proxy-rules.json` lists one per
/// row and `tests/fidelity/proxy-rules.mjs` checks against undici itself:
/// - the http proxy is `http_proxy`, else `HTTP_PROXY`; the https proxy is `https_proxy`, else `HTTPS_PROXY`, else
///   the http proxy. The lower case name wins whenever it is set, even to an empty value, and an empty value is no
///   proxy. `ALL_PROXY` is not read.
/// - `no_proxy`, else `NO_PROXY`, is a list split at commas and white space. Exactly `*` sends everything direct. An
///   entry `host[:port]` (a leading `.` or `*.` dropped, case ignored) matches that host and its subdomains, on any
///   port or on that port (the scheme's default port when the URL names none). An IP address matches only as written
///   (an IPv6 one in brackets, `[::1]`: a bare `::1` reads as host `:` port 1 and matches nothing); a CIDR range is
///   no more than text that never matches a host.
#[derive(Clone, Debug, Default)]
pub struct ProxyEnv {
    /// The proxy of http targets.
    http: Option<url::Url>,
    /// The proxy of https targets.
    https: Option<url::Url>,
    /// The hosts that go direct.
    no_proxy: NoProxy,
    /// The variables that are set but unusable.
    unusable: Vec<ProxyUnusable>,
    /// The proxies' passwords (or user names without one), as given and percent-decoded, and their `Basic` tokens.
    held: Vec<String>,
    /// Node's fetch reads the variables above: by hand always (a command line tool honours its proxy variables); in
    /// a check pod only when the Harness env tells Node to ([`node_reads_proxy_env`]), as without it a Turn goes
    /// direct whatever `HTTPS_PROXY` says.
    fetch_reads_env: bool,
    /// The variables the http and https proxies came from (`HTTPS_PROXY`...), to name one Node's fetch does not read.
    vars: (Option<&'static str>, Option<&'static str>),
    /// The proxies of pi-ai's own resolver, which Bedrock's and Codex's clients use ([`ProxyRules::Pi`]).
    pi: PiProxy,
}

/// Whose rules choose a request's proxy in a Turn: the client its API uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyRules {
    /// Node's fetch (undici 7's `EnvHttpProxyAgent`): every API whose SDK sends through fetch.
    Fetch,
    /// pi-ai 0.82.1's `resolveHttpProxyUrlForTarget` (`utils/node-http-proxy.js`), whatever Node is told: Bedrock's
    /// client (the AWS SDK on `node:http`, given proxy agents) and Codex's.
    Pi,
}

impl ProxyRules {
    /// The rules a Turn of this API follows.
    pub fn of(api: crate::contract::ApiKind) -> Self {
        use crate::contract::ApiKind;
        match api {
            ApiKind::BedrockConverseStream | ApiKind::OpenAiCodexResponses => Self::Pi,
            _ => Self::Fetch,
        }
    }
}

/// Node 24's fetch reads `HTTP(S)_PROXY` and `NO_PROXY` only when told to: `NODE_USE_ENV_PROXY=1`, or
/// `--use-env-proxy` in `NODE_OPTIONS` (Node takes `_` for `-` in a flag's name). The Custodian's env sets the first.
pub fn node_reads_proxy_env(env: impl Fn(&str) -> Option<String>) -> bool {
    env("NODE_USE_ENV_PROXY").is_some_and(|v| v == "1")
        || env("NODE_OPTIONS").is_some_and(|options| {
            options
                .split_ascii_whitespace()
                .any(|flag| flag.replace('_', "-") == "--use-env-proxy")
        })
}

/// One scheme's proxy under pi's rules.
#[derive(Clone, Debug, Default)]
enum PiChoice {
    /// No variable gives one.
    #[default]
    None,
    /// This proxy.
    Proxy(url::Url),
    /// A value pi cannot use: every request it applies to throws.
    Unusable(ProxyUnusable),
}

/// The proxy variables as pi-ai 0.82.1's resolver reads them: for a target of scheme `s`, `s_proxy`, else `S_PROXY`,
/// else `all_proxy`, else `ALL_PROXY` (an empty value counts as unset, so it falls through); a value without `://`
/// gets `s://` in front; it must then be an http or https URL. `no_proxy` (else `NO_PROXY`, lower-cased) is split at
/// commas and white space; exactly `*` sends everything direct; an entry `host[:port]` matches only that host
/// (on that port, when given); one that starts with `.` or `*` matches hosts that end with it (`*` dropped).
#[derive(Clone, Debug, Default)]
struct PiProxy {
    http: PiChoice,
    https: PiChoice,
    no_proxy: String,
}

impl PiProxy {
    fn from_lookup(env: &impl Fn(&str) -> Option<String>, held: &mut Vec<String>) -> Self {
        let get = |key: &str| -> Option<(String, String)> {
            [key.to_lowercase(), key.to_uppercase()]
                .into_iter()
                .find_map(|name| env(&name).filter(|v| !v.is_empty()).map(|v| (name, v)))
        };
        let mut choice = |scheme: &str| -> PiChoice {
            let Some((var, mut value)) =
                get(&format!("{scheme}_proxy")).or_else(|| get("all_proxy"))
            else {
                return PiChoice::None;
            };
            if !value.contains("://") {
                value = format!("{scheme}://{value}");
            }
            let unusable = |reason: String| {
                PiChoice::Unusable(ProxyUnusable {
                    var: var.clone(),
                    shown: sanitize::display_url(&value),
                    reason,
                    socks: false,
                })
            };
            match url::Url::parse(&value) {
                Err(e) => unusable(e.to_string()),
                Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                    unusable("the scheme must be http or https".to_owned())
                }
                Ok(url) if url.host_str().is_none_or(str::is_empty) => {
                    unusable("it names no host".to_owned())
                }
                Ok(url) => {
                    held.extend(credentials(&url));
                    PiChoice::Proxy(url)
                }
            }
        };
        let http = choice("http");
        let https = choice("https");
        Self {
            http,
            https,
            no_proxy: get("no_proxy")
                .map(|(_, v)| v.to_lowercase())
                .unwrap_or_default(),
        }
    }

    fn choice(&self, url: &url::Url) -> &PiChoice {
        let choice = match url.scheme() {
            "https" => &self.https,
            "http" => &self.http,
            _ => return &PiChoice::None,
        };
        if matches!(choice, PiChoice::None) || !self.proxies(url) {
            return &PiChoice::None;
        }
        choice
    }

    /// pi's `shouldProxyHostname`.
    fn proxies(&self, url: &url::Url) -> bool {
        if self.no_proxy.is_empty() {
            return true;
        }
        if self.no_proxy == "*" {
            return false;
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_lowercase(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            None => return true,
        };
        let port = u64::from(url.port_or_known_default().unwrap_or(0));
        self.no_proxy
            .split(|c: char| c == ',' || js_space(c))
            .filter(|e| !e.is_empty())
            .all(|entry| {
                let (name, entry_port) = match entry.rsplit_once(':') {
                    Some((name, digits))
                        if !name.is_empty()
                            && !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        (name, digits.parse::<u64>().unwrap_or(u64::MAX))
                    }
                    _ => (entry, 0),
                };
                if entry_port != 0 && entry_port != port {
                    return true;
                }
                if !name.starts_with(['.', '*']) {
                    return host != name;
                }
                !host.ends_with(name.strip_prefix('*').unwrap_or(name))
            })
    }

    fn unusable(&self) -> impl Iterator<Item = &ProxyUnusable> {
        [&self.http, &self.https]
            .into_iter()
            .filter_map(|c| match c {
                PiChoice::Unusable(u) => Some(u),
                _ => None,
            })
    }
}

/// `no_proxy` as undici 7 reads it: see [`ProxyEnv`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NoProxy {
    /// Exactly `*`.
    everything: bool,
    /// (host, port): port 0 for any port.
    entries: Vec<(String, u64)>,
}

/// JavaScript's `\s`, which undici splits `no_proxy` at.
fn js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202f}'
                | '\u{205f}'
                | '\u{3000}'
                | '\u{feff}'
    )
}

impl NoProxy {
    fn parse(value: &str) -> Self {
        let entries = value
            .split(|c: char| c == ',' || js_space(c))
            .filter(|e| !e.is_empty())
            .map(|entry| {
                // `host:digits` at the end, the host as long as it can be: `::1` is host `:`, port 1.
                let (host, port) = match entry.rsplit_once(':') {
                    Some((host, digits))
                        if !host.is_empty()
                            && !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        (host, digits.parse::<u64>().unwrap_or(u64::MAX))
                    }
                    _ => (entry, 0),
                };
                let host = host
                    .strip_prefix("*.")
                    .or_else(|| host.strip_prefix('.'))
                    .unwrap_or(host);
                (host.to_lowercase(), port)
            })
            .collect();
        Self {
            everything: value == "*",
            entries,
        }
    }

    /// The request to `host` (lower case, IPv6 in brackets) on `port` goes direct.
    fn direct(&self, host: &str, port: u64) -> bool {
        if self.entries.is_empty() {
            return false;
        }
        if self.everything {
            return true;
        }
        self.entries.iter().any(|(entry, entry_port)| {
            (*entry_port == 0 || *entry_port == port)
                && (host == entry
                    || host
                        .strip_suffix(entry.as_str())
                        .is_some_and(|rest| rest.ends_with('.')))
        })
    }
}

impl ProxyEnv {
    /// The process environment's proxy variables, honoured as a command line tool honours them (by hand).
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The process environment's proxy variables as a Turn in this env reads them (a check pod): fetch's only when
    /// Node is told to read them ([`node_reads_proxy_env`]).
    pub fn from_env_as_node() -> Self {
        Self::from_lookup_as_node(|name| std::env::var(name).ok())
    }

    /// [`ProxyEnv::from_lookup`], fetch's variables read only when `env` tells Node to read them.
    pub fn from_lookup_as_node(env: impl Fn(&str) -> Option<String>) -> Self {
        let reads = node_reads_proxy_env(&env);
        let mut out = Self::from_lookup(env);
        out.fetch_reads_env = reads;
        out
    }

    /// The proxy variables `env` gives, read as undici 7 reads them ([`ProxyEnv`]). A value that is not an http or
    /// https URL (no scheme, a scheme of another kind, no host, a parse error) is unusable: undici cannot build its
    /// agent with it, so every request of a Turn fails ([`ProxyUnusable`]).
    pub fn from_lookup(env: impl Fn(&str) -> Option<String>) -> Self {
        let mut out = Self::default();
        let first = |names: [&'static str; 2]| {
            names
                .into_iter()
                .find_map(|name| env(name).map(|value| (name, value)))
        };
        let mut parse = |names: [&'static str; 2]| -> Option<url::Url> {
            let (var, value) = first(names)?;
            if value.is_empty() {
                return None;
            }
            let unusable = |reason: String| ProxyUnusable {
                var: var.to_owned(),
                shown: sanitize::display_url(&value),
                socks: value.to_ascii_lowercase().starts_with("socks"),
                reason,
            };
            let problem = match url::Url::parse(&value) {
                Err(e) => Some(e.to_string()),
                Ok(url) if !matches!(url.scheme(), "http" | "https") => {
                    Some(if value.contains("://") {
                        "the scheme must be http or https".to_owned()
                    } else {
                        "it names no scheme: write http://".to_owned()
                    })
                }
                Ok(url) if url.host_str().is_none_or(str::is_empty) => {
                    Some("it names no host".to_owned())
                }
                Ok(url) => {
                    out.held.extend(credentials(&url));
                    return Some(url);
                }
            };
            let reason = match problem.as_deref() {
                Some("relative URL without a base") => {
                    "it names no scheme: write http://".to_owned()
                }
                _ => problem.unwrap_or_default(),
            };
            out.unusable.push(unusable(reason));
            None
        };
        let http = parse(["http_proxy", "HTTP_PROXY"]);
        let https = parse(["https_proxy", "HTTPS_PROXY"]);
        let var =
            |names: [&'static str; 2]| first(names).filter(|(_, v)| !v.is_empty()).map(|(n, _)| n);
        let http_var = http
            .is_some()
            .then(|| var(["http_proxy", "HTTP_PROXY"]))
            .flatten();
        let https_var = https
            .is_some()
            .then(|| var(["https_proxy", "HTTPS_PROXY"]))
            .flatten();
        out.vars = (http_var, https_var.or(http_var));
        out.https = https.or_else(|| http.clone());
        out.http = http;
        out.no_proxy = NoProxy::parse(
            &first(["no_proxy", "NO_PROXY"])
                .map(|(_, v)| v)
                .unwrap_or_default(),
        );
        out.pi = PiProxy::from_lookup(&env, &mut out.held);
        out.fetch_reads_env = true;
        out
    }

    /// The proxy a Turn's request of `api` to `url` goes through, `None` for direct, by the rules its client
    /// follows ([`ProxyRules`]).
    pub fn proxy_for_api(
        &self,
        api: crate::contract::ApiKind,
        url: &url::Url,
    ) -> Option<&url::Url> {
        match ProxyRules::of(api) {
            ProxyRules::Fetch if self.fetch_reads_env => self.proxy_for(url),
            ProxyRules::Fetch => None,
            ProxyRules::Pi => match self.pi.choice(url) {
                PiChoice::Proxy(p) => Some(p),
                _ => None,
            },
        }
    }

    /// The proxy variable a Turn's request of `api` to `url` would go through if Node's fetch read it, and does not
    /// (a check pod whose Harness env sets no `NODE_USE_ENV_PROXY=1`): the request goes direct, around the proxy
    /// (issue 38, item 5). `None` when fetch reads the variables, the API's client is pi's, or no proxy applies.
    pub fn bypassed_for(
        &self,
        api: crate::contract::ApiKind,
        url: &url::Url,
    ) -> Option<&'static str> {
        if self.fetch_reads_env || ProxyRules::of(api) != ProxyRules::Fetch {
            return None;
        }
        self.proxy_for(url)?;
        match url.scheme() {
            "https" => self.vars.1,
            _ => self.vars.0,
        }
    }

    /// The unusable variable that makes a Turn's request of `api` to `url` fail, if any: for fetch, any unusable
    /// variable it reads (undici cannot build its agent); for pi, the one its resolver picks for `url`.
    pub fn refusal_for(
        &self,
        api: crate::contract::ApiKind,
        url: &url::Url,
    ) -> Option<&ProxyUnusable> {
        match ProxyRules::of(api) {
            ProxyRules::Fetch if self.fetch_reads_env => self.unusable.first(),
            ProxyRules::Fetch => None,
            ProxyRules::Pi => match self.pi.choice(url) {
                PiChoice::Unusable(u) => Some(u),
                _ => None,
            },
        }
    }

    /// The unusable variables that the rules of these APIs read, once each by variable.
    pub fn unusable_for(
        &self,
        apis: impl IntoIterator<Item = crate::contract::ApiKind>,
    ) -> Vec<ProxyUnusable> {
        let rules: Vec<ProxyRules> = apis.into_iter().map(ProxyRules::of).collect();
        let mut out: Vec<ProxyUnusable> = Vec::new();
        let fetch = self.fetch_reads_env && rules.contains(&ProxyRules::Fetch);
        let pi = rules.contains(&ProxyRules::Pi);
        let candidates = fetch
            .then_some(self.unusable.iter())
            .into_iter()
            .flatten()
            .chain(pi.then(|| self.pi.unusable()).into_iter().flatten());
        for u in candidates {
            if !out.iter().any(|o| o.var == u.var) {
                out.push(u.clone());
            }
        }
        out
    }

    /// The proxy a request to `url` goes through, `None` for direct, as undici 7 picks it.
    pub fn proxy_for(&self, url: &url::Url) -> Option<&url::Url> {
        let proxy = match url.scheme() {
            "https" => self.https.as_ref(),
            _ => self.http.as_ref(),
        }?;
        let host = match url.host()? {
            url::Host::Domain(d) => d.to_lowercase(),
            url::Host::Ipv4(ip) => ip.to_string(),
            url::Host::Ipv6(ip) => format!("[{ip}]"),
        };
        let port = match url.port() {
            Some(p) if p != 0 => u64::from(p),
            _ => match url.scheme() {
                "http" => 80,
                "https" => 443,
                _ => 0,
            },
        };
        (!self.no_proxy.direct(&host, port)).then_some(proxy)
    }

    /// Some request may go through a proxy, by either rules.
    pub(super) fn any(&self) -> bool {
        self.http.is_some()
            || self.https.is_some()
            || [&self.pi.http, &self.pi.https]
                .into_iter()
                .any(|c| matches!(c, PiChoice::Proxy(_)))
    }

    /// Some request may reach its proxy over TLS (an `https://` proxy URL).
    pub fn tls_to_a_proxy(&self) -> bool {
        let pi = [&self.pi.http, &self.pi.https]
            .into_iter()
            .filter_map(|c| match c {
                PiChoice::Proxy(u) => Some(u),
                _ => None,
            });
        [&self.http, &self.https]
            .into_iter()
            .flatten()
            .chain(pi)
            .any(|u| u.scheme() == "https")
    }

    /// The proxies' secrets, for the redactor: each password as given and percent-decoded (the user name instead
    /// when there is no password), and the base64 token of `Proxy-Authorization: Basic <token>`.
    pub fn held_values(&self) -> &[String] {
        &self.held
    }

    /// The variables that are set but unusable.
    pub fn unusable(&self) -> &[ProxyUnusable] {
        &self.unusable
    }
}

/// What a proxy URL's userinfo holds that must not be shown: see [`ProxyEnv::held_values`].
fn credentials(url: &url::Url) -> Vec<String> {
    if url.username().is_empty() && url.password().is_none() {
        return Vec::new();
    }
    let user = percent_decode(url.username());
    let mut held = Vec::new();
    match url.password() {
        Some(pass) => {
            held.push(pass.to_owned());
            held.push(percent_decode(pass));
        }
        None => {
            held.push(url.username().to_owned());
            held.push(user.clone());
        }
    }
    // As hyper-util encodes it: `user:` and the password, if any.
    let pair = format!(
        "{user}:{}",
        url.password().map(percent_decode).unwrap_or_default()
    );
    held.push(base64(pair.as_bytes()));
    held
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(hi), Some(lo)) = (
                bytes.get(i + 1).copied().and_then(hex),
                bytes.get(i + 2).copied().and_then(hex),
            )
        {
            out.push((hi * 16 + lo) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// RFC 4648 base64 with padding: the form of a `Basic` token.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = (b(0) << 16) | (b(1) << 8) | b(2);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> url::Url {
        url::Url::parse(s).unwrap()
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> ProxyEnv {
        ProxyEnv::from_lookup(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn proxy_variables_that_are_not_urls_are_unusable_and_say_why() {
        let e = env(&[
            ("HTTPS_PROXY", "http://u:x@[::1"),
            ("HTTP_PROXY", "proxy.lan:3128"),
        ]);
        assert_eq!(e.unusable().len(), 2);
        let u = &e.unusable()[1];
        assert_eq!(u.var, "HTTPS_PROXY");
        assert_eq!(u.reason, "invalid IPv6 address");
        assert_eq!(u.shown, "http://[redacted]@[::1");
        insta::assert_snapshot!("proxy_unusable_warning", u.warning_line());
        insta::assert_snapshot!("proxy_unusable_error", u.to_string());
        // Without a scheme, as undici 7 takes it (`new URL()` reads `proxy.lan:` as a scheme): unusable.
        assert_eq!(e.unusable()[0].var, "HTTP_PROXY");
        assert_eq!(e.unusable()[0].reason, "it names no scheme: write http://");
        let e = env(&[("HTTPS_PROXY", "127.0.0.1:3128")]);
        assert_eq!(e.unusable()[0].reason, "it names no scheme: write http://");
        let e = env(&[("http_proxy", "socks5://127.0.0.1:1080")]);
        assert_eq!(e.unusable()[0].var, "http_proxy");
        assert_eq!(e.unusable()[0].reason, "the scheme must be http or https");
        // An empty lower case value wins and is no proxy: the upper case one is not even parsed.
        let e = env(&[("https_proxy", ""), ("HTTPS_PROXY", "http://[")]);
        assert!(e.unusable().is_empty() && !e.any());
    }

    /// One row of `probe/tests/fixtures/undici7-proxy-rules.json`.
    #[derive(serde::Deserialize)]
    struct Row {
        rule: String,
        env: std::collections::BTreeMap<String, String>,
        url: String,
        via: String,
    }

    #[test]
    fn the_proxy_of_a_request_is_the_one_undici_7_picks() {
        #[derive(serde::Deserialize)]
        struct Table {
            undici: String,
            rows: Vec<Row>,
        }
        let table: Table = serde_json::from_str(include_str!(
            "../../tests/fixtures/undici7-proxy-rules.json"
        ))
        .unwrap();
        assert!(table.undici.starts_with("7."), "{}", table.undici);
        assert!(table.rows.len() >= 50, "one row per rule");
        assert_rows(&table.rows, "undici", |row| {
            let e = ProxyEnv::from_lookup(|name| row.env.get(name).cloned());
            if !e.unusable().is_empty() {
                return "unusable".to_owned();
            }
            match e.proxy_for(&url(&row.url)) {
                Some(proxy) => proxy.to_string(),
                None => "direct".to_owned(),
            }
        });
    }

    /// Each row's `via` is what `pick` gives for it; the ones that differ, all of them, in the failure.
    fn assert_rows(rows: &[Row], whose: &str, pick: impl Fn(&Row) -> String) {
        let wrong: Vec<String> = rows
            .iter()
            .filter_map(|row| {
                let got = pick(row);
                (got != row.via).then(|| {
                    format!(
                        "{}: {:?} {} -> {got}, {whose}: {}",
                        row.rule, row.env, row.url, row.via
                    )
                })
            })
            .collect();
        assert!(
            wrong.is_empty(),
            "{} rows differ:\n{}",
            wrong.len(),
            wrong.join("\n")
        );
    }

    /// Bedrock's and Codex's Turns pick their proxy by pi-ai's own resolver, not undici's: one row per rule of it,
    /// each checked against pi-ai itself by tests/fidelity/proxy-rules.mjs (issue 12 review).
    #[test]
    fn a_bedrock_request_s_proxy_is_the_one_pi_picks() {
        #[derive(serde::Deserialize)]
        struct Table {
            pi: String,
            rows: Vec<Row>,
        }
        let table: Table =
            serde_json::from_str(include_str!("../../tests/fixtures/pi-proxy-rules.json")).unwrap();
        assert_eq!(table.pi, "0.82.1");
        assert!(table.rows.len() >= 25, "one row per rule");
        assert_rows(&table.rows, "pi", |row| {
            // In a check pod, without NODE_USE_ENV_PROXY: pi's resolver reads the variables anyway.
            let e = ProxyEnv::from_lookup_as_node(|name| row.env.get(name).cloned());
            let target = url(&row.url);
            let api = crate::contract::ApiKind::BedrockConverseStream;
            match (e.refusal_for(api, &target), e.proxy_for_api(api, &target)) {
                (Some(_), _) => "unusable".to_owned(),
                (None, Some(proxy)) => proxy.to_string(),
                (None, None) => "direct".to_owned(),
            }
        });
    }

    /// Issue 38, item 5: in a check pod whose env sets HTTPS_PROXY without NODE_USE_ENV_PROXY=1, a fetch-based Turn
    /// goes around the proxy: the variable it skips is named; not when Node reads it, not for pi's own resolver, not
    /// for a host NO_PROXY sends direct, and the http one for an http URL.
    #[test]
    fn the_variable_a_turn_skips_is_named() {
        use crate::contract::ApiKind;
        let env = |vars: &[(&str, &str)]| {
            let vars: std::collections::HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            ProxyEnv::from_lookup_as_node(move |name| vars.get(name).cloned())
        };
        let https = url("https://api.anthropic.com/v1");
        let http = url("http://10.0.0.5:11434/v1");
        let e = env(&[("HTTPS_PROXY", "http://127.0.0.1:15001")]);
        assert_eq!(
            e.bypassed_for(ApiKind::AnthropicMessages, &https),
            Some("HTTPS_PROXY")
        );
        assert_eq!(e.bypassed_for(ApiKind::AnthropicMessages, &http), None);
        assert_eq!(e.bypassed_for(ApiKind::BedrockConverseStream, &https), None);
        let e = env(&[("http_proxy", "http://127.0.0.1:15001")]);
        assert_eq!(
            e.bypassed_for(ApiKind::OpenAiCompletions, &http),
            Some("http_proxy")
        );
        assert_eq!(
            e.bypassed_for(ApiKind::OpenAiCompletions, &https),
            Some("http_proxy"),
            "https falls back to the http proxy"
        );
        let e = env(&[
            ("HTTPS_PROXY", "http://127.0.0.1:15001"),
            ("NODE_USE_ENV_PROXY", "1"),
        ]);
        assert_eq!(e.bypassed_for(ApiKind::AnthropicMessages, &https), None);
        let e = env(&[
            ("HTTPS_PROXY", "http://127.0.0.1:15001"),
            ("NO_PROXY", "api.anthropic.com"),
        ]);
        assert_eq!(e.bypassed_for(ApiKind::AnthropicMessages, &https), None);
    }

    /// Node 24's fetch reads the proxy variables only when told to (NODE_USE_ENV_PROXY=1, --use-env-proxy): in a
    /// check pod without either, a fetch-based Turn goes direct, and so does the probe; by hand they are honoured.
    #[test]
    fn fetch_reads_the_proxy_variables_only_when_node_is_told_to() {
        use crate::contract::ApiKind;
        let target = url("https://api.anthropic.com/v1");
        let with = |extra: &[(&str, &str)]| {
            let mut vars: Vec<(&str, &str)> = vec![("HTTPS_PROXY", "http://127.0.0.1:3128")];
            vars.extend_from_slice(extra);
            let vars: std::collections::HashMap<String, String> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            ProxyEnv::from_lookup_as_node(move |name| vars.get(name).cloned())
        };
        let proxied = |e: &ProxyEnv, api| e.proxy_for_api(api, &target).map(|u| u.to_string());
        let via = Some("http://127.0.0.1:3128/".to_owned());
        assert_eq!(proxied(&with(&[]), ApiKind::AnthropicMessages), None);
        assert_eq!(
            proxied(
                &with(&[("NODE_USE_ENV_PROXY", "0")]),
                ApiKind::AnthropicMessages
            ),
            None
        );
        assert_eq!(
            proxied(
                &with(&[("NODE_USE_ENV_PROXY", "1")]),
                ApiKind::AnthropicMessages
            ),
            via
        );
        for options in [
            "--use-env-proxy",
            "--max-old-space-size=256 --use_env_proxy",
        ] {
            assert_eq!(
                proxied(
                    &with(&[("NODE_OPTIONS", options)]),
                    ApiKind::AnthropicMessages
                ),
                via,
                "{options}"
            );
        }
        // Bedrock's client asks pi's resolver, whatever Node is told.
        assert_eq!(proxied(&with(&[]), ApiKind::BedrockConverseStream), via);
        // A variable Node does not read is no warning either.
        let bad = ProxyEnv::from_lookup_as_node(|name| {
            (name == "HTTPS_PROXY").then(|| "not a url".to_owned())
        });
        assert!(bad.unusable_for([ApiKind::AnthropicMessages]).is_empty());
        // A SOCKS proxy: a Turn can use it (undici 7 can), the probe cannot, and its line says so.
        let socks = ProxyEnv::from_lookup(|name| {
            (name == "HTTPS_PROXY").then(|| "socks5://127.0.0.1:1080".to_owned())
        });
        let u = &socks.unusable_for([ApiKind::AnthropicMessages])[0];
        assert!(u.socks, "{u:?}");
        assert!(
            u.warning_line()
                .contains("is a SOCKS proxy, which a Turn can use and this check cannot"),
            "{}",
            u.warning_line()
        );
        // By hand the variables are honoured, as a command line tool honours them.
        let by_hand = ProxyEnv::from_lookup(|name| {
            (name == "HTTPS_PROXY").then(|| "http://127.0.0.1:3128".to_owned())
        });
        assert_eq!(proxied(&by_hand, ApiKind::AnthropicMessages), via);
    }

    #[test]
    fn a_proxy_s_password_and_basic_token_are_held() {
        let e = env(&[("HTTPS_PROXY", "http://user:p%40ss-w0rd@127.0.0.1:3128")]);
        assert!(e.unusable().is_empty());
        let held = e.held_values();
        assert!(held.contains(&"p%40ss-w0rd".to_owned()), "{held:?}");
        assert!(held.contains(&"p@ss-w0rd".to_owned()), "{held:?}");
        // base64("user:p@ss-w0rd")
        assert!(
            held.contains(&"dXNlcjpwQHNzLXcwcmQ=".to_owned()),
            "{held:?}"
        );
        // A token as the user name, no password.
        let e = env(&[("HTTP_PROXY", "http://tok-0123456789@127.0.0.1:3128")]);
        assert!(e.held_values().contains(&"tok-0123456789".to_owned()));
        assert!(e.held_values().contains(&base64(b"tok-0123456789:")));
        assert!(
            env(&[("HTTP_PROXY", "http://127.0.0.1:3128")])
                .held_values()
                .is_empty()
        );
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
    }
}
