//! Untrusted text (a provider's error body, a pod's message, a URL) on its way to a terminal or a log.
//!
//! Provider bodies are written by someone else's server: they can carry escape sequences that repaint a terminal,
//! bidi controls that make a line read differently than it is, invisible characters (zero-width spaces, tag
//! characters that carry text a terminal does not show), newlines that forge an extra `error:` line, and, worst, the
//! key the probe just sent (several providers echo it in their 401 bodies). Everything that reaches a human line or
//! the JSON verdict passes through [`Redactor::clean`] first. A URL is shown through [`display_url`] (or
//! [`Redactor::display_url`]): its userinfo, query and fragment masked, held values redacted, escaped, bounded.

use std::ops::Range;

/// The longest `<error>` the contract allows, in characters.
pub const MAX_ERROR_CHARS: usize = 300;

/// The longest URL [`display_url`] shows, in characters.
pub const MAX_URL_CHARS: usize = 200;

/// What replaces a secret value.
pub const REDACTED: &str = "[redacted]";

/// Removes secret values from text and escapes what a terminal must not interpret.
///
/// A held value is found even when invisible characters (see [`is_invisible`]) were slipped into it, in the text or
/// in the value itself: both are compared with their invisible characters left out, and the match is replaced with
/// the invisible characters inside it. This only ever redacts more than an exact match would: it never lets an exact
/// match through, and a text that shows the value once its invisible characters are dropped (which is what a
/// terminal shows) is redacted.
#[derive(Clone, Debug, Default)]
pub struct Redactor {
    /// The held values without their invisible characters, longest first.
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor that knows the values the probe holds. Left out, as no secret:
    ///
    /// - values shorter than 4 characters (not counting invisible ones): redacting them would shred ordinary text,
    ///   and no real key is that short;
    /// - a placeholder ([`is_placeholder`]: `EMPTY`, `none`, `dummy`, ... as an endpoint without keys is given one):
    ///   it protects nothing, and redacting it would cut that word out of the provider's message. Any other value
    ///   is redacted, a short one made of letters too (a real key or password can be `qzxvbnm`): the message is
    ///   classified on its raw text, so redaction changes what is shown, never the outcome;
    /// - a Stand-in ([`is_stand_in`], `jr2-held-<NAME>`): it stands for a value the Custodian holds and is no secret,
    ///   and the Custodian's own messages name it (`needs the stand-in jr2-held-X`).
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let held: Vec<String> = secrets
            .into_iter()
            .map(|s| fold(&s.into()))
            .filter(|s| s.chars().count() >= 4 && !is_placeholder(s) && !is_stand_in(s))
            .collect();
        // A value echoed in base64 (an `Authorization: Basic` token, a header dumped encoded) is the value: its
        // encoding, without the padding, is held too (issue 25, item 10).
        let encoded = held
            .iter()
            .filter(|s| s.len() >= 8)
            .map(|s| base64_unpadded(s.as_bytes()));
        // Held as they are [`Reading::Joined`] read: without whitespace, so a value split over words or lines (a
        // wrapped header, a key echoed in groups) is found whole.
        let mut secrets: Vec<String> = held
            .iter()
            .cloned()
            .chain(encoded)
            .map(|s| s.chars().filter(|c| !c.is_whitespace()).collect::<String>())
            .filter(|s| !s.is_empty())
            .collect();
        // Longest first, so a key that contains another key is removed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// This redactor, holding `more` values too (a proxy's password and its `Basic` token).
    pub fn holding<I, S>(self, more: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(
            self.secrets
                .into_iter()
                .chain(more.into_iter().map(Into::into)),
        )
    }

    /// Redacts, escapes and truncates to [`MAX_ERROR_CHARS`]: the form of every `<error>`.
    pub fn clean(&self, text: &str) -> String {
        self.clean_to(text, MAX_ERROR_CHARS)
    }

    /// Redacts, escapes and truncates to `max` characters (an ellipsis marks a cut).
    pub fn clean_to(&self, text: &str, max: usize) -> String {
        escape_truncate(&self.redact(text), max)
    }

    /// Replaces every held secret, every token shaped like a provider's key ([`KEY_SHAPES`]: `sk-…`, `AIza…`,
    /// `gsk_…`...) and the credentials of every URL (`http://[redacted]@proxy`) with [`REDACTED`]. Nothing else
    /// changes.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            // Whatever the case of its ASCII letters (an upper-cased echo); ASCII case keeps every byte's place.
            let wanted = secret.to_ascii_lowercase();
            out = replace_folded(&out, Reading::Joined, |view| {
                view.to_ascii_lowercase()
                    .match_indices(wanted.as_str())
                    .map(|(at, s)| at..at + s.len())
                    .collect()
            });
        }
        let out = replace_folded(&out, Reading::Shown, key_tokens);
        mask_userinfo(&out)
    }

    /// [`Redactor::redact`], for a text that is the start of a longer one (cut where it ends): a trailing start of
    /// a held value, at least 4 characters long, is replaced with [`REDACTED`] too, since the rest of the value was
    /// cut off. The longest such start is masked.
    pub fn redact_cut(&self, text: &str) -> String {
        let out = self.redact(text);
        replace_folded(&out, Reading::Joined, |view| {
            let mut longest = 0usize;
            for secret in &self.secrets {
                for (at, c) in secret.char_indices().skip(3) {
                    let len = at + c.len_utf8();
                    if len > longest && len <= view.len() && view.ends_with(&secret[..len]) {
                        longest = len;
                    }
                }
            }
            if longest == 0 {
                Vec::new()
            } else {
                std::iter::once(view.len() - longest..view.len()).collect()
            }
        })
    }

    /// A text answer as the verdict shows it: redacted whole (with [`Redactor::redact_cut`] when `cut`, the text
    /// being the start of a longer answer), then escaped and cut to [`MAX_ERROR_CHARS`]: redaction comes before any
    /// cut, so a long held value split over many deltas is found whole.
    pub fn clean_answer(&self, text: &str, cut: bool) -> String {
        let redacted = if cut {
            self.redact_cut(text)
        } else {
            self.redact(text)
        };
        escape_truncate(&redacted, MAX_ERROR_CHARS)
    }

    /// `text`, a URL or what was meant to be one, as a line may show it: [`mask_url`], then the held values
    /// redacted, escaped, at most [`MAX_URL_CHARS`] characters.
    pub fn display_url(&self, text: &str) -> String {
        escape_truncate(&self.redact(&mask_url(text)), MAX_URL_CHARS)
    }
}

/// Standard base64 (RFC 4648), without its `=` padding.
fn base64_unpadded(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
        }
    }
    out
}

/// The values that stand in for a key where an endpoint wants none (vLLM's `EMPTY`, llama.cpp's
/// `sk-no-key-required`, and the usual placeholders), compared ignoring case: no secret, so never redacted.
pub const PLACEHOLDER_KEYS: &[&str] = &[
    "EMPTY",
    "none",
    "null",
    "dummy",
    "unused",
    "placeholder",
    "no-key",
    "nokey",
    "sk-no-key-required",
];

/// A key that is one of [`PLACEHOLDER_KEYS`].
pub fn is_placeholder(value: &str) -> bool {
    PLACEHOLDER_KEYS
        .iter()
        .any(|p| p.eq_ignore_ascii_case(value))
}

/// A Stand-in: `jr2-held-<NAME>`, `<NAME>` an environment variable's name. What a Custodian pod's env holds in place
/// of a key; the Custodian swaps the value in.
pub fn is_stand_in(value: &str) -> bool {
    value.strip_prefix("jr2-held-").is_some_and(|name| {
        let mut bytes = name.bytes();
        bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
            && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
    })
}

/// `text` as a line may show a URL, knowing no held value: [`Redactor::display_url`] with none (`sk-…` tokens are
/// still redacted).
pub fn display_url(text: &str) -> String {
    Redactor::default().display_url(text)
}

/// The schemes whose authority a URL parser (WHATWG, the `url` crate, Node's `new URL`) finds even without `//`.
const SPECIAL_SCHEMES: [&str; 6] = ["http", "https", "ws", "wss", "ftp", "file"];

/// `text` with its userinfo, query and fragment replaced by [`REDACTED`]; nothing escaped, nothing cut (that is
/// [`display_url`]'s part). It works on any text, a URL or not, so an unparseable one (`http://u:pw@host:80800`)
/// is masked as well as a good one, and it masks at least what a URL parser would read as userinfo:
///
/// - tabs and newlines are dropped and leading and trailing spaces and C0 controls trimmed, as a parser does;
/// - after a scheme (`http:`), every `/` and `\` is skipped; the authority runs to the first `/`, `?` or `#` (a
///   parser that also stops at `\` finds a shorter one, inside this); without a scheme, from the start;
/// - everything up to the authority's last `@` is the userinfo: `http://[redacted]@host/`;
/// - from the first `?` on, the query: `?[redacted]`, and from the first `#` after it, the fragment: `#[redacted]`.
///
/// Masking a masked URL changes nothing.
pub fn mask_url(text: &str) -> String {
    let trimmed = text.trim_matches(|c: char| c <= ' ');
    let s: String = trimmed
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let start = match scheme_end(&s) {
        Some(colon) => {
            let after = &s[colon + 1..];
            let scheme = &s[..colon];
            let special = SPECIAL_SCHEMES
                .iter()
                .any(|k| scheme.eq_ignore_ascii_case(k));
            // A backslash is a slash only in a special scheme's URL; in another's it is the authority's first
            // character (`x://\u:pw@h`: the user name is `\u`), so it is masked with the rest.
            let slashes = if special {
                after.len() - after.trim_start_matches(['/', '\\']).len()
            } else {
                after.len() - after.trim_start_matches('/').len()
            };
            let has_authority = slashes > 0 || special;
            if has_authority {
                colon + 1 + slashes
            } else {
                // `mailto:a@b`, `u:pw@host` (a user name read as a scheme): mask from the start, to be sure.
                0
            }
        }
        None => 0,
    };
    let rest = &s[start..];
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_len];
    let mut out = String::with_capacity(s.len());
    out.push_str(&s[..start]);
    // The last at sign, ASCII or one a parser may normalise to it (fullwidth `＠`).
    match authority.char_indices().rfind(|(_, c)| is_at_sign(*c)) {
        Some((at, _)) => {
            out.push_str(REDACTED);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let tail = &rest[authority_len..];
    let path_len = tail.find(['?', '#']).unwrap_or(tail.len());
    out.push_str(&tail[..path_len]);
    let tail = &tail[path_len..];
    if tail.starts_with('?') {
        out.push('?');
        out.push_str(REDACTED);
    }
    if tail.contains('#') {
        out.push('#');
        out.push_str(REDACTED);
    }
    out
}

/// Where a URL's scheme ends (the byte index of its `:`), as a parser reads one: an ASCII letter, then letters,
/// digits, `+`, `-` or `.`.
fn scheme_end(s: &str) -> Option<usize> {
    let colon = s.find(':')?;
    let scheme = &s[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(colon)
}

/// `text` without its invisible characters.
fn fold(text: &str) -> String {
    text.chars().filter(|c| !is_invisible(*c)).collect()
}

/// How a text is read when a value is looked for in it: as a reader would see the value, not byte for byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// Invisible characters ([`is_invisible`]) left out, and JSON's `\uXXXX` escapes read as the characters they
    /// stand for (`\u0073k-…` is `sk-…`; a body's raw text shows the escapes its JSON decodes).
    Shown,
    /// [`Reading::Shown`], and whitespace left out too: a held value split by spaces or line breaks is the value.
    Joined,
}

/// `text` as `reading` reads it, and for each byte of that view the range of `text` it came from (a decoded escape
/// comes from all of its 6 or 12 bytes); `None` when the view is `text` itself.
fn read_as(text: &str, reading: Reading) -> Option<(String, Vec<Range<usize>>)> {
    let skipped = |c: char| is_invisible(c) || (reading == Reading::Joined && c.is_whitespace());
    if !text.contains("\\u") && !text.chars().any(skipped) {
        return None;
    }
    let mut view = String::with_capacity(text.len());
    let mut from: Vec<Range<usize>> = Vec::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let (c, len) = json_escape(&text[at..]).unwrap_or_else(|| {
            let c = text[at..].chars().next().unwrap_or_default();
            (c, c.len_utf8())
        });
        if !skipped(c) {
            view.push(c);
            from.extend(std::iter::repeat_n(at..at + len, c.len_utf8()));
        }
        at += len;
    }
    Some((view, from))
}

/// The character a JSON `\uXXXX` escape (or a `\uD8xx\uDCxx` surrogate pair) at the start of `text` stands for,
/// and the escape's length in bytes; `None` when `text` does not start with one (a lone surrogate is not one).
fn json_escape(text: &str) -> Option<(char, usize)> {
    let unit = |s: &str| -> Option<u32> {
        let hex = s.strip_prefix("\\u")?.get(..4)?;
        if hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            u32::from_str_radix(hex, 16).ok()
        } else {
            None
        }
    };
    let first = unit(text)?;
    if (0xd800..0xdc00).contains(&first) {
        let second = unit(&text[6..])?;
        if !(0xdc00..0xe000).contains(&second) {
            return None;
        }
        let c = char::from_u32(0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00))?;
        Some((c, 12))
    } else {
        char::from_u32(first).map(|c| (c, 6))
    }
}

/// Replaces with [`REDACTED`] the ranges that `find` names in `text` as `reading` reads it (non-overlapping, in
/// order), mapped back onto `text`: a range covers the characters left out inside it and whole escapes.
fn replace_folded(
    text: &str,
    reading: Reading,
    find: impl Fn(&str) -> Vec<Range<usize>>,
) -> String {
    let Some((view, from)) = read_as(text, reading) else {
        return replace_ranges(text, &find(text));
    };
    let ranges: Vec<Range<usize>> = find(&view)
        .into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| from[r.start].start..from[r.end - 1].end)
        .collect();
    replace_ranges(text, &ranges)
}

fn replace_ranges(text: &str, ranges: &[Range<usize>]) -> String {
    if ranges.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for r in ranges {
        out.push_str(&text[at..r.start]);
        out.push_str(REDACTED);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// `sk-` followed by at least 8 token characters: the shape of OpenAI, Anthropic (`sk-ant-…`), LiteLLM and most
/// gateway keys. Providers echo such keys in 401 bodies, sometimes keys the probe never held.
fn key_tokens(text: &str) -> Vec<Range<usize>> {
    let is_token = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut found: Vec<Range<usize>> = Vec::new();
    for &(prefix, least) in KEY_SHAPES {
        // A JWT's three parts are joined by dots: the whole of it is the token.
        let is_token = |c: char| is_token(c) || (prefix == JWT_PREFIX && c == '.');
        let mut pos = 0;
        while let Some(rel) = text[pos..].find(prefix) {
            let at = pos + rel;
            let starts_word = text[..at].chars().next_back().is_none_or(|c| !is_token(c));
            let tail = &text[at + prefix.len()..];
            let len = tail.find(|c: char| !is_token(c)).unwrap_or(tail.len());
            // Count only the characters that carry entropy: a masked echo like `sk-...abcd` is left alone.
            if starts_word
                && tail[..len]
                    .chars()
                    .filter(char::is_ascii_alphanumeric)
                    .count()
                    >= least
            {
                found.push(at..at + prefix.len() + len);
                pos = at + prefix.len() + len;
            } else {
                pos = at + prefix.len();
            }
        }
    }
    // In text order, overlaps merged (`sk-ant-…` is found once).
    found.sort_by_key(|r| r.start);
    let mut merged: Vec<Range<usize>> = Vec::with_capacity(found.len());
    for r in found {
        match merged.last_mut() {
            Some(last) if r.start <= last.end => last.end = last.end.max(r.end),
            _ => merged.push(r),
        }
    }
    merged
}

/// The shapes of the keys of pi's catalog providers and of the tokens a pasted value often is: a prefix, and the
/// least number of letters and digits after it (a key carries entropy; `sk-no-key-required` or `sk-...abcd` do
/// not). One rule for what counts as a secret by its shape, wherever a value or a text is shown or written: the
/// driver refuses such a value in a plan whatever its name ([`secret_shape`]), and every text is redacted of them
/// ([`Redactor::redact`], [`redact_shapes`]).
pub const KEY_SHAPES: &[(&str, usize)] = &[
    // OpenAI (`sk-proj-`), Anthropic (`sk-ant-`), OpenRouter (`sk-or-`), DeepSeek, Moonshot...
    ("sk-", 8),
    // Google (Gemini, Vertex express): `AIza` and 35 more.
    ("AIza", 30),
    // Groq.
    ("gsk_", 16),
    // Hugging Face.
    ("hf_", 16),
    // xAI.
    ("xai-", 16),
    // Perplexity.
    ("pplx-", 16),
    // Cerebras.
    ("csk-", 16),
    // GitHub (Copilot's tokens), GitLab.
    ("ghp_", 16),
    ("gho_", 16),
    ("ghu_", 16),
    ("ghs_", 16),
    ("github_pat_", 16),
    ("glpat-", 16),
    // AWS access key ids (Bedrock).
    ("AKIA", 16),
    ("ASIA", 16),
    // Slack.
    ("xoxb-", 16),
    ("xoxp-", 16),
    // A JWT (a service account's, an OIDC id token, what an exec credential plugin prints): `{"` in base64url, its
    // three dot-joined parts taken whole (issue 40).
    (JWT_PREFIX, 16),
];

/// The start of every JWT: `{"` base64url-encoded.
const JWT_PREFIX: &str = "eyJ";

/// The value has the shape of a provider's key ([`KEY_SHAPES`]) somewhere in it, and is no placeholder
/// ([`is_placeholder`]: `sk-no-key-required`).
pub fn looks_like_key(value: &str) -> bool {
    !is_placeholder(value.trim()) && !key_tokens(&fold(value)).is_empty()
}

/// The text holds a URL with credentials: a user name or password before the host (`http://u:pw@proxy`,
/// `https://KEY@sentry.example`, `postgres://app:pw@db`), the at sign ASCII or fullwidth.
pub fn url_has_credentials(text: &str) -> bool {
    !userinfo_ranges(text).is_empty()
}

/// What makes a value a secret by its shape, whatever the name it goes by: `a key` ([`looks_like_key`]) or
/// `a URL with credentials` ([`url_has_credentials`]).
pub fn secret_shape(value: &str) -> Option<&'static str> {
    if looks_like_key(value) {
        Some("a key")
    } else if url_has_credentials(value) {
        Some("a URL with credentials")
    } else {
        None
    }
}

/// `text` with every key-shaped token and every URL's credentials replaced by [`REDACTED`], nothing else changed:
/// for what is written where no held value is known (the evidence bundle, an error about a plan).
pub fn redact_shapes(text: &str) -> String {
    Redactor::default().redact(text)
}

/// `text` with the userinfo of every URL in it replaced by [`REDACTED`].
fn mask_userinfo(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for r in userinfo_ranges(text) {
        out.push_str(&text[pos..r.start]);
        out.push_str(REDACTED);
        pos = r.end;
    }
    out.push_str(&text[pos..]);
    out
}

/// Where the userinfo of each `scheme://userinfo@host` in `text` is (ASCII or fullwidth `@`).
fn userinfo_ranges(text: &str) -> Vec<Range<usize>> {
    let mut found = Vec::new();
    let mut pos = 0;
    while let Some(rel) = text[pos..].find("://") {
        let start = pos + rel + 3;
        let rest = &text[start..];
        let end = rest
            .find(|c: char| {
                matches!(c, '/' | '?' | '#') || c.is_whitespace() || c == '"' || c == '\''
            })
            .unwrap_or(rest.len());
        let authority = &rest[..end];
        let at = authority
            .char_indices()
            .rfind(|(_, c)| is_at_sign(*c))
            .map(|(i, _)| i);
        if let Some(at) = at
            && at > 0
            && !authority[..at].starts_with(REDACTED)
        {
            found.push(start..start + at);
        }
        // Past the authority; past one character at least (a whole one: `text` is UTF-8).
        pos = start
            + if end > 0 {
                end
            } else {
                rest.chars().next().map_or(0, char::len_utf8)
            };
        if pos >= text.len() {
            break;
        }
    }
    found
}

/// `@`, or a character a URL parser may read as one (the fullwidth and small commercial at signs).
fn is_at_sign(c: char) -> bool {
    matches!(c, '@' | '\u{ff20}' | '\u{fe6b}')
}

/// True for the characters a terminal shows as nothing: Unicode's `Default_Ignorable_Code_Point` (zero-width space,
/// joiners, U+2060 word joiner and the invisible operators, U+FEFF, U+180E and the Mongolian selectors, the soft
/// hyphen U+00AD, variation selectors, the Hangul fillers, the tag characters U+E0000–E007F and the rest of that
/// plane's block), which includes the bidirectional formatting characters (Trojan Source, CVE-2021-42574).
pub fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{ad}'
        | '\u{34f}'
        | '\u{61c}'
        | '\u{115f}'..='\u{1160}'
        | '\u{17b4}'..='\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{3164}'
        | '\u{fe00}'..='\u{fe0f}'
        | '\u{feff}'
        | '\u{ffa0}'
        | '\u{fff0}'..='\u{fff8}'
        | '\u{1bca0}'..='\u{1bca3}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e0fff}')
}

/// True for characters that must not reach a terminal as they are: C0 and C1 controls (newlines included, since
/// an `<error>` is one line), DEL, the line and paragraph separators U+2028/2029, and every [`is_invisible`]
/// character.
pub fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

fn escape_char(c: char) -> String {
    match c {
        '\n' => "\\n".to_owned(),
        '\r' => "\\r".to_owned(),
        '\t' => "\\t".to_owned(),
        c => format!("\\u{{{:x}}}", c as u32),
    }
}

/// Escapes, then cuts at `max` characters without splitting an escape; a cut ends in `…`.
pub fn escape_truncate(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let piece = if needs_escape(c) {
            escape_char(c)
        } else {
            c.to_string()
        };
        let len = piece.chars().count();
        let room = if chars.peek().is_some() {
            max.saturating_sub(1)
        } else {
            max
        };
        if count + len > room {
            out.push('…');
            return out;
        }
        out.push_str(&piece);
        count += len;
    }
    out
}

/// Escapes without a length limit: for text the probe itself wrote around untrusted parts.
pub fn escape(text: &str) -> String {
    escape_truncate(text, usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_that_ends_in_the_start_of_a_held_value_masks_it() {
        let key = "abcdefghijklmnopqrstuvwxyz0123456789";
        let r = Redactor::new([key]);
        // Uncut, the whole value is redacted wherever it is; a trailing start of it stays (it is not the value).
        assert_eq!(
            r.redact(&format!("x {key} y abcdefgh")),
            "x [redacted] y abcdefgh"
        );
        // At a cut, a trailing start of at least 4 characters is masked too, invisible characters inside included.
        assert_eq!(r.redact_cut("answer: abcdefgh"), "answer: [redacted]");
        assert_eq!(
            r.redact_cut("answer: ab\u{200b}cdefgh"),
            "answer: [redacted]"
        );
        assert_eq!(
            r.redact_cut(&format!("{key} then abc")),
            "[redacted] then abc"
        );
        assert_eq!(r.redact_cut("no key here"), "no key here");
        assert_eq!(
            r.clean_answer(&format!("{key}{key}"), false),
            "[redacted][redacted]"
        );
        assert_eq!(
            r.clean_answer("the start: abcdefghijkl", true),
            "the start: [redacted]"
        );
    }

    /// Issue 40: a JWT is a secret by its shape, its three parts redacted whole; a word that starts the same is not.
    #[test]
    fn a_jwt_is_redacted_whole() {
        let jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJQVzQyNDIifQ.PW4242-signature_x";
        assert_eq!(
            redact_shapes(&format!("refresh failed for token {jwt}: expired")),
            "refresh failed for token [redacted]: expired"
        );
        assert_eq!(secret_shape(jwt), Some("a key"));
        assert_eq!(redact_shapes("eyJ short."), "eyJ short.");
    }

    #[test]
    fn escapes_controls_and_bidi() {
        let r = Redactor::default();
        assert_eq!(
            r.clean("a\nb\x1b[31mc\u{202e}d\te"),
            "a\\nb\\u{1b}[31mc\\u{202e}d\\te"
        );
    }

    #[test]
    fn truncates_to_the_limit_with_an_ellipsis() {
        let r = Redactor::default();
        let long = "x".repeat(1000);
        let out = r.clean(&long);
        assert_eq!(out.chars().count(), MAX_ERROR_CHARS);
        assert!(out.ends_with('…'));
        assert_eq!(r.clean("short"), "short");
        assert_eq!(r.clean(&"y".repeat(300)), "y".repeat(300));
    }

    #[test]
    fn never_splits_an_escape() {
        let text = format!("{}\u{1b}tail", "a".repeat(297));
        let out = escape_truncate(&text, 300);
        assert!(!out.contains("\\u{"), "{out}");
        assert!(out.ends_with('…'));
    }

    #[test]
    fn redacts_held_secrets_and_sk_tokens() {
        let r = Redactor::new(["hunter2-key-value"]);
        assert_eq!(
            r.clean("Incorrect API key provided: hunter2-key-value."),
            "Incorrect API key provided: [redacted]."
        );
        assert_eq!(
            r.clean("key sk-proj-abcdefgh12345678 refused"),
            "key [redacted] refused"
        );
        // A masked echo is not a key and stays readable.
        assert_eq!(
            r.clean("Received API Key = sk-...abcd"),
            "Received API Key = sk-...abcd"
        );
        // Not a key: part of a longer word.
        assert_eq!(r.clean("disk-abcdefghijkl"), "disk-abcdefghijkl");
    }

    #[test]
    fn redacts_a_secret_split_by_nothing_but_escapes_after() {
        // The secret is removed before escaping, so a control character inside it cannot hide it.
        let r = Redactor::new(["abcd\nefgh"]);
        assert_eq!(r.clean("x abcd\nefgh y"), "x [redacted] y");
    }

    #[test]
    fn a_held_value_echoed_split_or_escaped_is_redacted() {
        // Issue 25, item 10: a provider that echoes the held key in groups, wrapped, or JSON-escaped.
        let key = "gsk_live0123456789abcdefQRST";
        let r = Redactor::new([key]);
        assert_eq!(
            r.redact("key gsk_live 0123 4567 89ab cdef QRST refused"),
            "key [redacted] refused"
        );
        assert_eq!(
            r.redact("key gsk_live0123456789\n  abcdefQRST."),
            "key [redacted]."
        );
        // Every character of it as an escape, or one of them, in either case of hex digit.
        let escaped: String = key
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        assert_eq!(
            r.redact(&format!("{{\"key\":\"{escaped}\"}}")),
            "{\"key\":\"[redacted]\"}"
        );
        assert_eq!(
            r.redact("\"gsk\\u005Flive0123456789abcdef\\u0051RST\""),
            "\"[redacted]\""
        );
        // Upper-cased and split at once.
        assert_eq!(r.redact("GSK_LIVE0123 456789ABCDEFQRST"), "[redacted]");
        // Text around it is untouched, a lone or broken escape too.
        assert_eq!(
            r.redact("a \\ud800 b \\u12 c \\uzzzz"),
            "a \\ud800 b \\u12 c \\uzzzz"
        );
        assert_eq!(r.redact("gsk_live 0123"), "gsk_live 0123");
    }

    #[test]
    fn a_key_shape_behind_json_escapes_is_redacted() {
        // A key the probe never held (in Custodian mode it holds only the Stand-in), escaped in a raw body.
        let r = Redactor::default();
        assert_eq!(
            r.redact("{\"error\":\"key \\u0067sk_abcdefghijklmnopqrstuv is invalid\"}"),
            "{\"error\":\"key [redacted] is invalid\"}"
        );
        // A surrogate pair before it is read as one character and kept.
        assert_eq!(
            r.redact("\\ud83d\\ude00 sk-abcdefghijkl"),
            "\\ud83d\\ude00 [redacted]"
        );
    }

    #[test]
    fn short_values_are_not_secrets() {
        let r = Redactor::new(["ab", ""]);
        assert_eq!(r.clean("ab cd"), "ab cd");
    }

    /// Issue 12, item 14: a placeholder key (`EMPTY`, `dummy`) does not cut that word out of the provider's message;
    /// any other key is redacted, a short one of letters too.
    #[test]
    fn a_placeholder_is_not_a_secret_and_a_short_key_is() {
        let r = Redactor::new(["EMPTY", "dummy"]);
        assert_eq!(
            r.clean("HTTP 404: The model `dummy` does not exist. EMPTY"),
            "HTTP 404: The model `dummy` does not exist. EMPTY"
        );
        // A short key of letters is still a key (issue 12 review: `qzxvbnm` leaked through a 401's message).
        for key in [
            "sk-1234",
            "passw0rd",
            "hunter2",
            "lettersonly",
            "qzxvbnm",
            "model",
        ] {
            assert_eq!(
                Redactor::new([key]).clean(&format!("bad key {key}")),
                "bad key [redacted]",
                "{key}"
            );
        }
        assert!(is_placeholder("empty") && is_placeholder("EMPTY") && is_placeholder("None"));
        assert!(!is_placeholder("qzxvbnm") && !is_placeholder("hunter2"));
    }

    /// Issue 12, item 14: a Stand-in is no secret: the Custodian's message that names it reaches the line whole.
    #[test]
    fn a_stand_in_is_not_redacted() {
        let r = Redactor::new(["jr2-held-ANTHROPIC_API_KEY", "sk-ant-real-key-0123456789"]);
        assert_eq!(
            r.clean("jr2 custodian: this request needs the stand-in jr2-held-ANTHROPIC_API_KEY"),
            "jr2 custodian: this request needs the stand-in jr2-held-ANTHROPIC_API_KEY"
        );
        assert_eq!(r.clean("key sk-ant-real-key-0123456789"), "key [redacted]");
        assert!(is_stand_in("jr2-held-X") && is_stand_in("jr2-held-_A1"));
        for not in [
            "jr2-held-",
            "jr2-held-1A",
            "jr2-held-key-0123456789",
            "xjr2-held-A",
        ] {
            assert!(!is_stand_in(not), "{not}");
        }
    }

    #[test]
    fn escapes_invisible_characters() {
        for c in [
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{feff}',
            '\u{180e}',
            '\u{ad}',
            '\u{2028}',
            '\u{2029}',
            '\u{e0000}',
            '\u{e0041}',
            '\u{e007f}',
        ] {
            assert_eq!(
                escape(&format!("a{c}b")),
                format!("a\\u{{{:x}}}b", c as u32),
                "U+{:04X}",
                c as u32
            );
        }
        // Tag characters spell text a terminal does not show: each is escaped.
        let hidden: String = "hi"
            .chars()
            .map(|c| char::from_u32(0xe0000 + c as u32).unwrap())
            .collect();
        assert_eq!(escape(&format!("ok{hidden}")), "ok\\u{e0068}\\u{e0069}");
        // Ordinary text stays as it is.
        assert_eq!(escape("café 東京 ü — ok"), "café 東京 ü — ok");
    }

    #[test]
    fn a_held_key_with_invisible_characters_inside_is_still_the_key() {
        let r = Redactor::new(["jr2-held-key-0123456789"]);
        assert_eq!(
            r.clean("key jr2-held\u{200b}-key-0123\u{2060}456789 refused"),
            "key [redacted] refused"
        );
        assert_eq!(
            r.clean("key j\u{e0041}r2-held-key-0123456789\u{feff}."),
            "key [redacted]\\u{feff}."
        );
        // Invisible characters around the key are not part of it: they stay, escaped.
        assert_eq!(
            r.clean("\u{200b}jr2-held-key-0123456789\u{200b}"),
            "\\u{200b}[redacted]\\u{200b}"
        );
        // A key that holds one itself (pasted with it) is seen with it and without it.
        let r = Redactor::new(["abcd\u{200b}efgh"]);
        assert_eq!(r.clean("x abcdefgh y"), "x [redacted] y");
        assert_eq!(r.clean("x abcd\u{200b}efgh y"), "x [redacted] y");
        // An `sk-` token split by one is still a token.
        assert_eq!(
            Redactor::default().clean("key sk-proj\u{200b}-abcdefgh12345678 refused"),
            "key [redacted] refused"
        );
        // Invisible characters and whitespace are looked through (issue 25, item 10: a space-split echo), not text.
        let r = Redactor::new(["abcdefgh"]);
        assert_eq!(r.clean("abcd efgh"), "[redacted]");
        assert_eq!(r.clean("abcd-efgh"), "abcd-efgh");
    }

    #[test]
    fn a_url_is_shown_without_userinfo_query_fragment_or_held_values() {
        for (url, shown) in [
            ("https://api.example.com/v1", "https://api.example.com/v1"),
            ("http://vllm.lan:8000/v1/", "http://vllm.lan:8000/v1/"),
            (
                "http://u:SECRET@h.example:8080/v1?key=abc#frag",
                "http://[redacted]@h.example:8080/v1?[redacted]#[redacted]",
            ),
            ("https://h/v1#token=abc", "https://h/v1#[redacted]"),
            // Unparseable: a port out of range, an open IPv6 bracket.
            (
                "http://u:SECRET@host:80800/v1",
                "http://[redacted]@host:80800/v1",
            ),
            ("http://u:x@[::1", "http://[redacted]@[::1"),
            // No scheme, or one a URL parser reads past.
            ("u:SECRET@host:80800/v1", "[redacted]@host:80800/v1"),
            ("HTTP:\\\\u:SECRET@host/v1", "HTTP:\\\\[redacted]@host/v1"),
            ("http:u:SECRET@host/v1", "http:[redacted]@host/v1"),
            // The userinfo ends at the last `@` of the authority; an `@` in the path is not one.
            ("http://a@b:c@host/p@q", "http://[redacted]@host/p@q"),
            ("http://host/p@q?x", "http://host/p@q?[redacted]"),
            // Tabs and newlines are dropped, and leading spaces, as a URL parser drops them.
            (" ht\ttp://u:SEC\nRET@host/", "http://[redacted]@host/"),
            // Other controls escaped.
            ("http://h/\u{1b}[31m", "http://h/\\u{1b}[31m"),
            ("", ""),
        ] {
            assert_eq!(display_url(url), shown, "{url:?}");
        }
        let r = Redactor::new(["held-key-123456"]);
        assert_eq!(
            r.display_url("https://h/v1/held-key-123456/x"),
            "https://h/v1/[redacted]/x"
        );
        assert_eq!(
            r.display_url("https://held-key-123456.example/v1"),
            "https://[redacted].example/v1"
        );
        let long = format!("https://h/{}", "p".repeat(1000));
        let shown = display_url(&long);
        assert_eq!(shown.chars().count(), MAX_URL_CHARS);
        assert!(shown.ends_with('…'));
        // Masking twice changes nothing.
        let once = mask_url("http://a:b@h/x?q#f");
        assert_eq!(mask_url(&once), once);
    }

    /// The `url_display` fuzz target's invariants (`fuzz/src/lib.rs`), over text built from the pieces that matter,
    /// so that `cargo test` checks them too: the display holds no control or invisible character and no held value;
    /// masking twice changes nothing; read back by a URL parser, the display has no credentials and no query or
    /// fragment of its own; credentials the parser finds in the input are masked.
    #[test]
    fn display_url_never_shows_what_a_parser_reads_as_credentials() {
        const HELD: &str = "held-key-123456";
        const PIECES: &[&str] = &[
            "http",
            "https",
            "HTTP",
            "foo",
            "file",
            ":",
            "//",
            "/",
            "\\",
            "u",
            "pw",
            "@",
            "host",
            "[::1]",
            ":8080",
            "?",
            "q=1",
            "#",
            "f",
            "\t",
            "\n",
            " ",
            "\u{1}",
            "\u{200b}",
            "%40",
            "sk-abcdefgh12345678",
            HELD,
            ".",
            "ws",
        ];
        let r = Redactor::new([HELD]);
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as usize
        };
        let mut parsed_with_credentials = 0;
        for _ in 0..30_000 {
            let pick = |r: usize, pieces: &[&'static str]| pieces[r % pieces.len()];
            let text: String = if next() % 2 == 0 {
                let n = next() % 12 + 1;
                (0..n).map(|_| pick(next(), PIECES)).collect()
            } else {
                // A URL's slots, each with a few odd choices.
                [
                    pick(next(), &["", "", " ", "\t", "\u{1}"]),
                    pick(next(), &["http", "https", "HTTP", "ws", "foo", "file", ""]),
                    pick(next(), &[":", ":", ""]),
                    pick(next(), &["//", "//", "/", "\\\\", "/\\", "", "///"]),
                    pick(
                        next(),
                        &["u", "", "u:pw", "u:p\tw", "u:%40", "a@b:c", "\u{200b}u"],
                    ),
                    pick(next(), &["@", "@", "", "@@"]),
                    pick(
                        next(),
                        &["host", "[::1]", "h\\x", HELD, "sk-abcdefgh12345678"],
                    ),
                    pick(next(), &["", ":8080", ":99999", ":"]),
                    pick(next(), &["", "/", "/p@q", "/v1/", "\\p"]),
                    pick(next(), &["", "?q=1", "?", "?a@b"]),
                    pick(next(), &["", "#f", "#", "#x@y"]),
                ]
                .concat()
            };
            let shown = r.display_url(&text);
            assert!(shown.chars().count() <= MAX_URL_CHARS);
            assert!(!shown.chars().any(needs_escape), "{text:?} -> {shown:?}");
            assert!(!shown.contains(HELD), "{text:?} -> {shown:?}");
            let masked = mask_url(&text);
            assert_eq!(mask_url(&masked), masked, "{text:?}");
            let whole = escape(&r.redact(&masked));
            if let Ok(url) = url::Url::parse(&whole) {
                assert!(
                    matches!(url.username(), "" | "%5Bredacted%5D"),
                    "{text:?} -> {whole:?}"
                );
                assert_eq!(url.password(), None, "{text:?} -> {whole:?}");
                assert!(
                    matches!(url.query(), None | Some("[redacted]" | "%5Bredacted%5D")),
                    "{text:?} -> {whole:?}"
                );
                assert!(
                    matches!(url.fragment(), None | Some("[redacted]" | "%5Bredacted%5D")),
                    "{text:?} -> {whole:?}"
                );
            }
            if let Ok(url) = url::Url::parse(&text)
                && (!url.username().is_empty() || url.password().is_some())
            {
                parsed_with_credentials += 1;
                assert!(masked.contains("[redacted]@"), "{text:?} -> {masked:?}");
            }
        }
        assert!(parsed_with_credentials > 100, "{parsed_with_credentials}");
    }

    /// One rule for what is a secret by its shape (issue 25, items 7, 8, 10): the catalog providers' key shapes
    /// whatever the name, and credentials in any URL.
    #[test]
    fn secrets_by_their_shape() {
        for key in [
            "sk-proj-abcdefghijklmnop1234",
            "sk-ant-api03-ABCDEFGHIJKLMNOP",
            "AIzaSyD3kq8abcdefghijklmnopqrstuvwxyz12",
            "gsk_abcdefghijklmnop1234",
            "hf_abcdefghijklmnopqrstu",
            "ghp_abcdefghijklmnopqrstuvwx",
            "AKIAABCDEFGHIJKLMNOP",
        ] {
            assert!(looks_like_key(key), "{key}");
            assert_eq!(secret_shape(key), Some("a key"), "{key}");
            assert_eq!(redact_shapes(&format!("said: {key}.")), "said: [redacted].");
            assert_eq!(Redactor::default().redact(key), REDACTED, "{key}");
        }
        for not in [
            "sk-no-key-required",
            "sk-...abcd",
            "ANTHROPIC_API_KEY",
            "AIza",
            "https://api.openai.com/v1",
            "disk-ABCDEFGHIJKLMNOPQ",
        ] {
            assert_eq!(secret_shape(not), None, "{not}");
        }
        for url in [
            "http://corp:PW@proxy:3128",
            "postgres://app:PW@db",
            "https://KEY@o1.ingest.sentry.io/42",
            "http://u:PW\u{ff20}127.0.0.1:9/v1",
        ] {
            assert_eq!(secret_shape(url), Some("a URL with credentials"), "{url}");
            let shown = redact_shapes(&format!("proxy {url} failed"));
            assert!(!shown.contains("PW") && !shown.contains("KEY"), "{shown}");
        }
        assert_eq!(
            redact_shapes("dial http://corp:PW@proxy:3128/x and https://h/"),
            "dial http://[redacted]@proxy:3128/x and https://h/"
        );
        // The fullwidth at sign is masked as the ASCII one is (item 12).
        assert_eq!(
            mask_url("http://u:PW\u{ff20}127.0.0.1:9/v1"),
            "http://[redacted]\u{ff20}127.0.0.1:9/v1"
        );
    }

    /// Issue 25, item 10: a held key echoed upper-cased or in base64 is redacted as the key is.
    #[test]
    fn a_held_key_echoed_in_another_case_or_in_base64_is_redacted() {
        let key = "Sg7fQ2xLp9rT4vWk";
        let r = Redactor::new([key]);
        assert_eq!(r.redact("echo SG7FQ2XLP9RT4VWK."), "echo [redacted].");
        assert_eq!(base64_unpadded(b"Man"), "TWFu");
        assert_eq!(base64_unpadded(b"Ma"), "TWE");
        assert_eq!(base64_unpadded(b"M"), "TQ");
        let encoded = base64_unpadded(key.as_bytes());
        assert_eq!(
            r.redact(&format!("Basic {encoded}==")),
            "Basic [redacted]=="
        );
    }

    /// The invariants the fuzz target `secret_shape` holds the rule to, on the seeds and tricky cases.
    #[test]
    fn redacting_by_shape_leaves_no_shape_and_is_stable() {
        for text in [
            "HTTPS_PROXY=http://corp:PW@proxy:3128",
            "SENTRY_DSN=https://KEY@o1.ingest.sentry.io/42",
            "sk-proj-abcdefghijklmnop1234 AIzaSyD3kq8abcdefghijklmnopqrstuvwxyz12 gsk_abcdefghijklmnop1234",
            "http://u:PW\u{ff20}127.0.0.1:9/v1",
            "sk-ant-\u{200b}api03-ABCDEFGHIJKLMNOP",
            "x://a://b@c@d/ postgres://app:pw@db",
            "http://u@sk-abcdefghijkl.com",
            "://@://@",
            "a://\u{ff20}b@",
            "hf_aaaaAIzaSyD3kq8abcdefghijklmnopqrstuvwxyz12",
            // Found by the fuzz target.
            "x:hu_//:b@c@/hu;_://\u{2009}apt--Nc@/hu;_://OPb@",
        ] {
            let shown = redact_shapes(text);
            assert!(!looks_like_key(&shown), "{text:?} -> {shown:?}");
            assert!(!url_has_credentials(&shown), "{text:?} -> {shown:?}");
            assert_eq!(redact_shapes(&shown), shown, "{text:?}");
        }
    }
}
