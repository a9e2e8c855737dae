//! The fuzz targets' bodies: each takes the raw bytes libFuzzer made and drives one of the probe's parsers the way
//! the probe drives it (a 200's body through the same stream judge `check` calls), asserting what must hold whatever
//! a server sends (no panic, bounded output, a chunking that does not change the result, no control character and no
//! held key in a cleaned line).

use std::time::{Duration, SystemTime};

use jr2_probe::api::{self, ApiKind, StreamEvent};
use jr2_probe::check::stream::{StreamEnd, StreamJudge};
use jr2_probe::framing::{self, Framing, aws_event_stream, sse};
use jr2_probe::sanitize::{MAX_ERROR_CHARS, MAX_URL_CHARS, Redactor};
use reqwest::header::{HeaderMap, HeaderValue};

/// A key the redactor holds; the seeds echo it in their bodies and streams.
pub const HELD_KEY: &str = "fuzzheldkey0123456789";

/// How the network cuts a body, as the first byte of the input says: bits 1 to 6 the size of the pieces (1 to 64
/// bytes), bit 0 whether an empty chunk comes between them (a chunked body may deliver one), bit 7 (AWS framing only)
/// whether the harness rewrites the frames' checksums so that mutated frames get past them.
#[derive(Clone, Copy, Debug)]
pub struct Cuts {
    /// Bytes per piece.
    pub piece: usize,
    /// An empty chunk between pieces.
    pub empties: bool,
    /// Rewrite AWS event stream checksums.
    pub fix_crcs: bool,
}

impl Cuts {
    /// The body in pieces, as `push` calls would get it.
    pub fn pieces<'a>(&self, body: &'a [u8]) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        for chunk in body.chunks(self.piece.max(1)) {
            out.push(chunk);
            if self.empties {
                out.push(&[][..]);
            }
        }
        out
    }
}

/// The cuts the first byte asks for, and the rest of the input.
pub fn cuts(data: &[u8]) -> (Cuts, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (
            Cuts {
                piece: usize::from((*first >> 1) & 0x3f) + 1,
                empties: first & 1 == 1,
                fix_crcs: first & 0x80 != 0,
            },
            rest,
        ),
        None => (
            Cuts {
                piece: 1,
                empties: false,
                fix_crcs: false,
            },
            data,
        ),
    }
}

/// Walks `body` as AWS event stream frames and writes each one's prelude and message checksums, as far as the
/// lengths it announces fit.
pub fn fix_crcs(body: &mut [u8]) {
    use aws_event_stream::crc32;
    let mut pos = 0;
    while body.len() - pos >= 16 {
        let total =
            u32::from_be_bytes([body[pos], body[pos + 1], body[pos + 2], body[pos + 3]]) as usize;
        if total < 16 || total > body.len() - pos {
            return;
        }
        let prelude = crc32(&body[pos..pos + 8]);
        body[pos + 8..pos + 12].copy_from_slice(&prelude.to_be_bytes());
        let message = crc32(&body[pos..pos + total - 4]);
        body[pos + total - 4..pos + total].copy_from_slice(&message.to_be_bytes());
        pos += total;
    }
}

const WHOLE: Cuts = Cuts {
    piece: usize::MAX,
    empties: false,
    fix_crcs: false,
};

fn decode_sse(
    body: &[u8],
    cuts: Cuts,
    max_line: usize,
) -> (Vec<sse::Event>, Result<(), sse::SseError>) {
    let mut d = sse::Decoder::new(max_line);
    let mut out = Vec::new();
    for chunk in cuts.pieces(body) {
        if let Err(e) = d.push(chunk, &mut out) {
            return (out, Err(e));
        }
    }
    let end = d.finish(&mut out);
    (out, end)
}

/// The SSE decoder: the same events and the same error whether the body comes whole or in pieces, with the default
/// line limit and a small one; no event holds more than the limit.
pub fn sse(data: &[u8]) {
    let (cuts, body) = cuts(data);
    for max_line in [sse::DEFAULT_MAX_LINE, 64] {
        let whole = decode_sse(body, WHOLE, max_line);
        let cut = decode_sse(body, cuts, max_line);
        assert_eq!(whole, cut, "{cuts:?} changed the events");
        for e in &whole.0 {
            assert!(e.data.len() <= max_line, "an event's data past the limit");
        }
    }
}

fn decode_aws(body: &[u8], cuts: Cuts) -> (Vec<sse::Event>, Result<(), String>) {
    let mut d = framing::decoder(Framing::AwsEventStream);
    let mut out = Vec::new();
    for chunk in cuts.pieces(body) {
        if let Err(e) = d.push(chunk, &mut out) {
            return (out, Err(e));
        }
    }
    let end = d.finish(&mut out);
    (out, end)
}

/// AWS's event stream: messages and errors do not depend on where the body is cut; a message never exceeds the
/// decoder's limit.
pub fn aws_event_stream(data: &[u8]) {
    let (cuts, body) = cuts(data);
    let mut body = body.to_vec();
    if cuts.fix_crcs {
        fix_crcs(&mut body);
    }
    let body = &body[..];
    let whole = decode_aws(body, WHOLE);
    let cut = decode_aws(body, cuts);
    assert_eq!(whole, cut, "{cuts:?} changed the messages");
    let mut raw = aws_event_stream::Decoder::with_limit(256);
    let mut messages = Vec::new();
    for chunk in cuts.pieces(body) {
        if raw.push(chunk, &mut messages).is_err() {
            break;
        }
    }
    for m in &messages {
        assert!(m.payload.len() <= 256, "a message past the limit");
    }
}

/// One 200's body through the stream judge of `kind`, the one `check.rs` calls: every event the reader yields is
/// classified (stop kinds, overloads, quotas), and what the stream ended with is cleaned as the lines would clean it.
pub fn replay(kind: ApiKind, data: &[u8]) {
    let wire = api::wire(kind).expect("a wire the probe speaks");
    let (cuts, body) = cuts(data);
    let mut body = body.to_vec();
    if cuts.fix_crcs && wire.framing() == Framing::AwsEventStream {
        fix_crcs(&mut body);
    }
    let redactor = Redactor::new([HELD_KEY]);
    let mut observe = |ev: &StreamEvent| match ev {
        StreamEvent::Text(t) | StreamEvent::Reasoning(t) => {
            assert!(!t.is_empty(), "an empty text event")
        }
        StreamEvent::Stop(reason) => {
            let _ = wire.stop_kind(reason);
        }
        StreamEvent::Error(e) => {
            let _ = (e.is_overload(), e.is_quota_exhausted());
        }
        StreamEvent::ToolCall { .. }
        | StreamEvent::ToolArguments(_)
        | StreamEvent::ToolCallEnd
        | StreamEvent::PromptTokens(_)
        | StreamEvent::Done => {}
    };
    let mut judge = StreamJudge::new(wire);
    let end = cuts
        .pieces(&body)
        .into_iter()
        .find_map(|chunk| judge.push_observed(chunk, &mut observe))
        .unwrap_or_else(|| judge.finish_observed(&mut observe));
    match end {
        StreamEnd::ToolCall { name } => {
            assert!(!name.is_empty(), "a tool call without a name");
            check_clean(&redactor.clean_to(&name, 100), 100);
        }
        StreamEnd::Text { stop: Some(reason) }
        | StreamEnd::Length { stop: reason }
        | StreamEnd::Stopped { reason } => {
            check_clean(&redactor.clean_to(&reason, 100), 100);
        }
        StreamEnd::Error(e) => check_clean(
            &redactor.clean(&format!(
                "HTTP 200, then an error in the stream: {}",
                e.message
            )),
            MAX_ERROR_CHARS,
        ),
        StreamEnd::Unreadable(why) => check_clean(
            &redactor.clean(&format!("HTTP 200, but the stream cannot be read: {why}")),
            MAX_ERROR_CHARS,
        ),
        StreamEnd::Text { stop: None } | StreamEnd::Cut => {}
    }
}

/// A character no cleaned line may hold as it is: controls, bidi formatting, the line and paragraph separators, and
/// the invisible ones (zero-width space and joiners, word joiner, BOM, Mongolian vowel separator, soft hyphen, tag
/// characters). Written out here, not taken from the probe, so the target checks the sanitizer against the list.
pub fn unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{200b}'..='\u{200f}'
            | '\u{061c}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{2028}' | '\u{2029}'
            | '\u{feff}' | '\u{180e}' | '\u{ad}'
            | '\u{e0000}'..='\u{e007f}')
}

/// A cleaned line: at most `max` characters, no control, bidi or invisible character, never the held key.
pub fn check_clean(line: &str, max: usize) {
    check_escaped(line, max);
    assert!(
        !line.contains(HELD_KEY),
        "the held key in a cleaned line: {line:?}"
    );
}

/// An escaped, bounded line: at most `max` characters, no control, bidi or invisible character. What a display
/// without a redactor promises: it cannot know a held value that sits where a URL's host or path does.
pub fn check_escaped(line: &str, max: usize) {
    assert!(
        line.chars().count() <= max,
        "a cleaned line past {max} chars: {line:?}"
    );
    assert!(
        !line.chars().any(unsafe_char),
        "a control or invisible character in a cleaned line: {line:?}"
    );
}

/// An error response: two bytes of status (100 to 599), a line of `retry-after` (and `retry-after-ms`), the body.
/// The body is parsed as every provider's error shape, classified generically and by every wire, and cleaned.
pub fn error_response(data: &[u8]) {
    if data.len() < 2 {
        return;
    }
    let status = 100 + u16::from_be_bytes([data[0], data[1]]) % 500;
    let rest = &data[2..];
    let (header, body) = match rest.iter().position(|&b| b == b'\n') {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (&[][..], rest),
    };
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(header) {
        headers.insert("retry-after", v.clone());
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let _ = jr2_probe::retry::requested_wait(&headers, now);
        let mut ms = HeaderMap::new();
        ms.insert("retry-after-ms", v.clone());
        let _ = jr2_probe::retry::requested_wait(&ms, now);
        headers.insert("x-amzn-errortype", v);
    }
    let body = String::from_utf8_lossy(body);
    let parsed = api::error_body::parse(&body);
    let _ = jr2_probe::check::classify_status(status, parsed.as_ref());
    for kind in ApiKind::ALL {
        if let Some(wire) = api::wire(kind) {
            let _ = wire.refine_error(status, &headers, parsed.as_ref());
            let _ = wire.body_wait(&body);
        }
    }
    if let Some(e) = &parsed {
        let _ = (e.is_overload(), e.is_quota_exhausted());
        let redactor = Redactor::new([HELD_KEY]);
        check_clean(
            &redactor.clean(&format!("HTTP {status}: {}", e.message)),
            MAX_ERROR_CHARS,
        );
    }
}

/// A run spec as `jr2-probe run` reads it, resolved against a fixed environment, and each target's request built.
pub fn run_spec(data: &[u8]) {
    let Ok(spec) = serde_json::from_slice::<jr2_probe::spec::RunSpec>(data) else {
        return;
    };
    let env = |name: &str| match name {
        "JR2_PROVIDER_API_KEY" | "ANTHROPIC_API_KEY" | "OPENAI_API_KEY" | "GEMINI_API_KEY" => {
            Some(format!("jr2-held-{name}"))
        }
        "CLOUDFLARE_ACCOUNT_ID" => Some("acct0123".to_owned()),
        _ => None,
    };
    for (i, model) in spec.models.iter().enumerate() {
        let Ok(target) =
            jr2_probe::spec::resolve(model, &format!("models[{i}]"), &env, "fuzz-session")
        else {
            continue;
        };
        let _ = target.host();
        if let Some(wire) = api::wire(target.api)
            && let Ok(request) = wire.request(&target)
        {
            assert!(
                matches!(request.url.scheme(), "http" | "https"),
                "a request to {}",
                request.url
            );
            let _: serde_json::Value =
                serde_json::from_slice(&request.body).expect("a request body is JSON");
        }
    }
}

/// The driver's plan, as `jr2 up` hands it over: whatever arrives, `RawPlan::parse` and `validate` answer without panicking, a refusal
/// is one line of bounded length, and a plan it accepts builds its check pods, whose `--dry-run` YAML (our own
/// writer, which quotes what a YAML 1.1 reader could take for something else) reads back as the same objects, with no
/// env literal holding anything but what the plan's own env gave.
pub fn plan(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let plan = match jr2_preflight::plan::RawPlan::parse(text)
        .and_then(jr2_preflight::plan::RawPlan::validate)
    {
        Ok(plan) => plan,
        Err(e) => {
            // What `jr2-preflight run` prints: `error: ` and this, escaped.
            let line = jr2_probe::sanitize::escape(&e.to_string());
            assert!(!line.contains('\n'), "one line: {line}");
            assert!(
                line.chars().count() <= 1200,
                "a bounded line ({} chars): {line}",
                line.chars().count()
            );
            return;
        }
    };
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let pods: Vec<_> = jr2_preflight::pod::check_pods(&plan, "fuzz0001", now)
        .into_iter()
        .map(|c| c.pod)
        .collect();
    assert_eq!(pods.len(), plan.placements_with_models().count());
    let yaml = jr2_preflight::pod::to_yaml(&pods);
    let back: Vec<serde_json::Value> = serde_yaml::Deserializer::from_str(&yaml)
        .map(|doc| {
            let v: serde_yaml::Value =
                serde::Deserialize::deserialize(doc).expect("the YAML reads");
            serde_json::to_value(v).expect("as JSON")
        })
        .collect();
    let sent: Vec<serde_json::Value> = pods
        .iter()
        .map(|p| serde_json::to_value(p).expect("a Pod serializes"))
        .collect();
    assert_eq!(back, sent, "the YAML reads back as the pods:\n{yaml}");
}

/// A URL, or what was meant to be one, as the probe shows it (`sanitize::display_url`): whatever the text, the line
/// is bounded, holds no control or invisible character and never the held key; read back as a URL (by the `url`
/// crate, the WHATWG parser Node's `new URL` also follows) it carries no credentials and no query or fragment of its
/// own; a URL the parser finds credentials in shows them masked; and masking twice changes nothing.
pub fn url_display(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let redactor = Redactor::new([HELD_KEY]);
    check_clean(&redactor.display_url(text), MAX_URL_CHARS);
    // Without a redactor the display still drops userinfo, query and fragment (asserted below), but a held value
    // in the host or path is only the redactor's to know (seed-11: the key as a host name).
    check_escaped(&jr2_probe::sanitize::display_url(text), MAX_URL_CHARS);
    let masked = jr2_probe::sanitize::mask_url(text);
    assert_eq!(
        jr2_probe::sanitize::mask_url(&masked),
        masked,
        "masking twice changes nothing: {text:?}"
    );
    // The whole display, uncut: what a reader would take for the URL.
    let shown = jr2_probe::sanitize::escape(&redactor.redact(&masked));
    if let Ok(url) = reqwest::Url::parse(&shown) {
        assert!(
            matches!(url.username(), "" | "%5Bredacted%5D" | "[redacted]"),
            "a user name shown: {text:?} -> {shown:?}"
        );
        assert!(
            url.password().is_none(),
            "a password shown: {text:?} -> {shown:?}"
        );
        assert!(
            matches!(url.query(), None | Some("[redacted]" | "%5Bredacted%5D")),
            "a query shown: {text:?} -> {shown:?}"
        );
        assert!(
            matches!(url.fragment(), None | Some("[redacted]" | "%5Bredacted%5D")),
            "a fragment shown: {text:?} -> {shown:?}"
        );
    }
    if let Ok(url) = reqwest::Url::parse(text)
        && (!url.username().is_empty() || url.password().is_some())
    {
        assert!(
            masked.contains("[redacted]@"),
            "credentials the parser finds are masked: {text:?} -> {masked:?}"
        );
    }
}

/// A model id as every front end takes it (`spec::check_model_id`, then `spec::resolve` as a custom model): an id it
/// accepts shows as it is (escaping changes nothing, so no line can be forged or repainted by it); an id it refuses
/// is refused by `resolve` too, and the message shows it escaped and bounded.
pub fn model_id(data: &[u8]) {
    use jr2_probe::spec::{self, ModelSpec, Source, SpecProblem};
    let Ok(id) = std::str::from_utf8(data) else {
        return;
    };
    let checked = spec::check_model_id(id);
    let model = ModelSpec {
        model: format!("vllm/{id}"),
        source: Source::Custom,
        base_url: Some("http://127.0.0.1:9/v1".to_owned()),
        api: None,
        key_env: None,
        key_held: false,
        via_custodian: false,
        max_tokens: None,
        context_window: None,
        tool_choice: None,
    };
    let resolved = spec::resolve(&model, "models[0]", &|_| None, "fuzz");
    match checked {
        Ok(()) => {
            assert_eq!(
                jr2_probe::sanitize::escape(id),
                id,
                "an accepted id needs no escape: {id:?}"
            );
            if let Err(e) = &resolved {
                assert!(
                    !matches!(e.problem, SpecProblem::ModelChars { .. }),
                    "resolve refuses what check_model_id accepts: {id:?}"
                );
            }
        }
        Err(problem) => {
            assert!(
                matches!(problem, SpecProblem::ModelChars { .. }),
                "{problem:?}"
            );
            let e = resolved.expect_err("resolve refuses what check_model_id refuses");
            let line = e.to_string();
            assert!(
                !line.chars().any(unsafe_char),
                "a control or invisible character in the message: {line:?}"
            );
            assert!(
                line.chars().count() <= 400,
                "an unbounded message: {line:?}"
            );
        }
    }
}

/// The driver's reader of a probe's log line (issue 25): a line in, a typed event or a protocol error out, never a
/// panic; an event names only the run spec's models (by index, with the plan's names), and its strings are clean.
pub fn probe_line(data: &[u8]) {
    let Ok(line) = std::str::from_utf8(data) else {
        return;
    };
    let models = vec!["vllm/a".to_owned(), "vllm/b".to_owned()];
    let event = match jr2_preflight::run::read_probe_line(line, &models) {
        Ok(Some(e)) => e,
        Ok(None) | Err(_) => return,
    };
    use jr2_probe::contract::ProbeEvent;
    if let Some(index) = event.index() {
        assert!(index < models.len(), "an index past the run spec: {line:?}");
    }
    match &event {
        ProbeEvent::ModelStarted { index, model }
        | ProbeEvent::Try { index, model, .. }
        | ProbeEvent::Waiting { index, model, .. } => {
            assert_eq!(model, &models[*index], "the plan names the model: {line:?}");
        }
        ProbeEvent::Result { index, result } => {
            assert_eq!(
                result.model, models[*index],
                "the plan names the model: {line:?}"
            );
            // Escaped and bounded (the driver holds no key: a held key is the probe's to redact).
            if let Some(e) = &result.error {
                check_escaped(e, MAX_ERROR_CHARS);
            }
        }
        ProbeEvent::Summary { verdict } => {
            assert!(verdict.models.len() <= models.len(), "{line:?}");
            for (r, m) in verdict.models.iter().zip(&models) {
                assert_eq!(&r.model, m, "{line:?}");
            }
        }
        ProbeEvent::Warning { line: w } => check_escaped(w, 1000),
        ProbeEvent::Start { .. } => {}
    }
}

/// The one rule for a secret by its shape (issue 25): redacting by shape leaves no key shape and no URL credentials
/// behind, changes nothing a second time, and never panics.
pub fn secret_shape(data: &[u8]) {
    use jr2_probe::sanitize::{looks_like_key, redact_shapes, secret_shape, url_has_credentials};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = secret_shape(text);
    let shown = redact_shapes(text);
    assert!(
        !looks_like_key(&shown),
        "a key shape left: {text:?} -> {shown:?}"
    );
    assert!(
        !url_has_credentials(&shown),
        "URL credentials left: {text:?} -> {shown:?}"
    );
    assert_eq!(
        redact_shapes(&shown),
        shown,
        "twice changes nothing: {text:?}"
    );
}
