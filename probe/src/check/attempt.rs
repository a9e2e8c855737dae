//! One try: sends the request a Turn sends, reads what comes back (the status, an error body, the event stream up to
//! the message's stop reason) and says how the try ended ([`Attempt`]), with the outcome and code of an HTTP error
//! ([`classify_status`]).
//!
//! Returning drops the response, which closes the connection: nothing is read past the stop reason. What the bytes
//! of a 200 say is judged by [`super::stream::StreamJudge`], synchronously; this module does the I/O around it. The
//! deadline is the caller's ([`super::tries`]): a try never waits on its own.

use std::time::{Duration, Instant, SystemTime};

use reqwest::header::CONTENT_TYPE;

use super::endpoint;
use super::settings::WaitStage;
use super::stream::{StreamEnd, StreamJudge};
use crate::api::{self, ProviderError};
use crate::contract::outcome::{Code, Outcome};
use crate::contract::render;
use crate::retry;
use crate::sanitize::Redactor;
use crate::target::Target;
use crate::transport::ClientFactory;

/// The most of an error body the probe reads.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// How one try ended.
#[derive(Debug)]
pub(super) enum End {
    ToolCall {
        name: String,
    },
    Text {
        stop: Option<String>,
    },
    Length {
        stop: String,
    },
    Fail {
        outcome: Outcome,
        code: Code,
        error: String,
    },
}

/// What one try gave: how it ended, and what it saw on the way.
#[derive(Debug)]
pub(super) struct Attempt {
    pub(super) status: Option<u16>,
    pub(super) end: End,
    pub(super) retryable: bool,
    pub(super) wait_asked: Option<Duration>,
    pub(super) first_byte: Option<Duration>,
    pub(super) tool_call: Option<Duration>,
    pub(super) answer: String,
    pub(super) seen: endpoint::Seen,
    pub(super) reasoned: bool,
    pub(super) call_arguments: Option<String>,
    /// The first call's name, when the call was complete (its arguments parse): with a `length` end, a call in a
    /// message the cap stopped.
    pub(super) call_complete: Option<String>,
}

impl Attempt {
    pub(super) fn fail(status: Option<u16>, outcome: Outcome, code: Code, error: String) -> Self {
        Self {
            status,
            end: End::Fail {
                outcome,
                code,
                error,
            },
            retryable: false,
            wait_asked: None,
            first_byte: None,
            tool_call: None,
            answer: String::new(),
            seen: endpoint::Seen::default(),
            reasoned: false,
            call_arguments: None,
            call_complete: None,
        }
    }
}

/// What a try needs of the checker: the clients' factory (the connect timeout and the proxy, for the failure's
/// wording) and the redactor every error goes through.
pub(super) struct Sender<'a> {
    pub(super) factory: &'a ClientFactory,
    pub(super) redactor: &'a Redactor,
}

impl Sender<'_> {
    pub(super) async fn attempt(
        &self,
        client: &reqwest::Client,
        target: &Target,
        start: Instant,
        call_seen: &mut Option<Duration>,
    ) -> Attempt {
        let Some(wire) = api::wire(target.api) else {
            let why = target.api.unsupported_because().unwrap_or("unknown");
            return Attempt::fail(
                None,
                Outcome::Unsupported,
                Code::Unsupported,
                render::unsupported_error(why),
            );
        };
        let request = match wire.request(target) {
            Ok(r) => r,
            Err(e) => {
                return Attempt::fail(None, e.outcome, e.code, self.redactor.clean(&e.message));
            }
        };
        let url = request.url.clone();
        super::settings::mark(WaitStage::NoAnswer);
        let sent = client
            .post(request.url)
            .headers(request.headers)
            .body(request.body)
            .send()
            .await;
        let response = match sent {
            Ok(r) => r,
            Err(e) => {
                // Through the redactor: a server can put the key in a URL (a redirect's Location), which the
                // error's Debug form shows; the URL itself without userinfo or query.
                tracing::debug!(error = %self.redactor.redact(&crate::transport::log_text(&e)), "the request failed");
                let mut failure = crate::transport::describe(&e, self.factory.connect_timeout());
                if failure.outcome == Outcome::Unreachable
                    && e.is_connect()
                    && let Some(proxy) = self.factory.proxy().proxy_for_api(target.api, &url)
                {
                    // The connection that failed is the proxy's: the provider was never reached.
                    failure.text = render::hop_unreachable(
                        is_custodian(target, proxy),
                        &proxy_addr(proxy),
                        &failure.text,
                    );
                }
                return Attempt::fail(
                    failure.status,
                    failure.outcome,
                    failure.code,
                    self.redactor.clean(&failure.text),
                );
            }
        };
        let first_byte = Some(start.elapsed());
        super::settings::mark(WaitStage::Headers);
        // Headers that name the server (Ollama's name none): the waiting notes need not ask whether it is Ollama.
        let named = endpoint::Seen::from_headers(response.headers());
        if named.kind.is_some() || named.uvicorn {
            super::settings::mark_other_server();
        }
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let mut a = self.http_failure(wire, response, status).await;
            a.first_byte = first_byte;
            return a;
        }
        let seen = endpoint::Seen::from_headers(response.headers());
        let mut a = self.read_stream(wire, response, start, call_seen).await;
        a.status = Some(status);
        a.first_byte = first_byte;
        // The stream's own mark (Ollama's fingerprint) when the headers named nothing.
        a.seen = endpoint::Seen {
            kind: seen.kind.or(a.seen.kind),
            prompt_tokens: a.seen.prompt_tokens,
            trailing_repeats: a.seen.trailing_repeats,
            ..seen
        };
        a
    }

    async fn http_failure(
        &self,
        wire: &dyn api::Wire,
        response: reqwest::Response,
        status: u16,
    ) -> Attempt {
        let headers = response.headers().clone();
        let reason = response
            .status()
            .canonical_reason()
            .unwrap_or("")
            .to_owned();
        let body = read_bounded(response, MAX_ERROR_BODY).await;
        let wait_asked =
            retry::requested_wait(&headers, SystemTime::now()).or_else(|| wire.body_wait(&body));
        let perr = api::error_body::parse(&body);
        let message = perr
            .as_ref()
            .map(|e| e.message.clone())
            .filter(|m| !m.trim().is_empty())
            .unwrap_or(reason);
        let error = self.redactor.clean(&format!("HTTP {status}: {message}"));
        let (outcome, code) = wire
            .refine_error(status, &headers, perr.as_ref())
            .unwrap_or_else(|| classify_status(status, perr.as_ref()));
        let retryable = matches!(outcome, Outcome::Busy | Outcome::Unavailable);
        Attempt {
            status: Some(status),
            end: End::Fail {
                outcome,
                code,
                error,
            },
            retryable,
            wait_asked,
            first_byte: None,
            tool_call: None,
            answer: String::new(),
            seen: endpoint::Seen {
                not_found: status == 404,
                ..endpoint::Seen::from_headers(&headers).with_error(perr.as_ref())
            },
            reasoned: false,
            call_arguments: None,
            call_complete: None,
        }
    }

    async fn read_stream(
        &self,
        wire: &dyn api::Wire,
        mut response: reqwest::Response,
        start: Instant,
        call_seen: &mut Option<Duration>,
    ) -> Attempt {
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let sse = wire.framing() == api::Framing::Sse;
        if sse
            && (content_type.starts_with("application/json")
                || content_type.starts_with("text/html"))
        {
            let what = if content_type.starts_with("text/html") {
                "an HTML page"
            } else {
                "one JSON document"
            };
            let body = read_bounded(response, MAX_ERROR_BODY).await;
            // Some servers answer errors with a 200 and a JSON error body.
            if let Some(e) = api::error_body::parse(&body).filter(|_| body.contains("\"error\"")) {
                return Attempt::fail(
                    Some(200),
                    Outcome::Http,
                    Code::StreamError,
                    self.redactor
                        .clean(&format!("HTTP 200 with an error body: {}", e.message)),
                );
            }
            return Attempt::fail(
                Some(200),
                Outcome::Protocol,
                Code::ProtocolError,
                format!("HTTP 200, but the answer is {what}, not the event stream a Turn reads"),
            );
        }
        let mut judge = StreamJudge::new(wire);
        let mut marks = endpoint::Seen::default();
        let end = loop {
            let chunk = match response.chunk().await {
                Ok(chunk) => chunk,
                Err(e) => {
                    tracing::debug!(error = %self.redactor.redact(&crate::transport::log_text(&e)), "the stream broke off");
                    let failure = crate::transport::describe(&e, self.factory.connect_timeout());
                    return self.protocol(format!("the stream broke off: {}", failure.text));
                }
            };
            match chunk {
                Some(bytes) => {
                    marks.with_chunk(&bytes);
                    let end = judge.push(&bytes);
                    if judge.call_name().is_some() {
                        super::settings::mark(WaitStage::ToolCall);
                    } else if !judge.answer().is_empty() {
                        super::settings::mark(WaitStage::Text);
                    }
                    if call_seen.is_none() && judge.call_complete() {
                        *call_seen = Some(start.elapsed());
                    }
                    if let Some(end) = end {
                        break end;
                    }
                }
                None => break judge.finish(),
            }
        };
        // The stop reason came: the verdict; returning drops the response, which closes the connection. The tool
        // call's mark is when it was complete (or, for a call the stream ended, now).
        let tool_call = match end {
            StreamEnd::ToolCall { .. } => Some(call_seen.unwrap_or_else(|| start.elapsed())),
            StreamEnd::Length { .. } => *call_seen,
            _ => None,
        };
        let reasoned = judge.reasoned();
        marks.prompt_tokens = judge.prompt_tokens();
        marks.trailing_repeats = judge.trailing_repeats();
        let call_arguments = judge.call_arguments().map(str::to_owned);
        let call_complete = judge
            .call_complete()
            .then(|| judge.call_name().map(str::to_owned))
            .flatten();
        let answer = judge.into_answer();
        let end = match end {
            StreamEnd::ToolCall { name } => End::ToolCall { name },
            StreamEnd::Text { stop } => End::Text { stop },
            StreamEnd::Length { stop } => End::Length { stop },
            StreamEnd::Stopped { reason } => End::Fail {
                outcome: Outcome::Http,
                code: Code::StreamError,
                error: self.redactor.clean(&format!(
                    "HTTP 200, then the stream stopped with \"{reason}\" before any tool call"
                )),
            },
            StreamEnd::Error(e) => return self.stream_error(&e, answer),
            StreamEnd::Unreadable(why) => return self.protocol(why),
            StreamEnd::Cut => End::Fail {
                outcome: Outcome::Protocol,
                code: Code::ProtocolError,
                error: if answer.is_empty() {
                    "HTTP 200, but the stream ended without an answer event".to_owned()
                } else {
                    render::STREAM_CUT_ERROR.to_owned()
                },
            },
        };
        Attempt {
            status: None,
            end,
            retryable: false,
            wait_asked: None,
            first_byte: None,
            tool_call,
            answer,
            seen: marks,
            reasoned,
            call_arguments,
            call_complete,
        }
    }

    fn protocol(&self, why: String) -> Attempt {
        let error = self
            .redactor
            .clean(&format!("HTTP 200, but the stream cannot be read: {why}"));
        Attempt::fail(Some(200), Outcome::Protocol, Code::ProtocolError, error)
    }

    fn stream_error(&self, e: &ProviderError, answer: String) -> Attempt {
        let error = self.redactor.clean(&format!(
            "HTTP 200, then an error in the stream: {}",
            e.message
        ));
        let (outcome, code, retryable) = if e.is_quota_exhausted() {
            (Outcome::Http, Code::QuotaExhausted, false)
        } else if e.is_overload() {
            (Outcome::Busy, Code::Busy, true)
        } else {
            (Outcome::Http, Code::StreamError, false)
        };
        Attempt {
            status: Some(200),
            end: End::Fail {
                outcome,
                code,
                error,
            },
            retryable,
            wait_asked: None,
            first_byte: None,
            tool_call: None,
            answer,
            seen: endpoint::Seen::default(),
            reasoned: false,
            call_arguments: None,
            call_complete: None,
        }
    }
}

/// The proxy is the check pod's Custodian: the model's route goes through one, or the proxy is the loopback
/// listener the contract gives the Custodian (`127.0.0.1:15001`).
fn is_custodian(target: &Target, proxy: &url::Url) -> bool {
    matches!(
        target.route,
        crate::contract::verdict::Route::Catalog {
            via_custodian: true,
            ..
        }
    ) || (matches!(proxy.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
        && proxy.port_or_known_default() == Some(15001))
}

/// A proxy's `host:port`, without its credentials.
fn proxy_addr(proxy: &url::Url) -> String {
    let host = proxy.host_str().unwrap_or("");
    match proxy.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// The outcome and code of an HTTP error status and its body.
pub fn classify_status(status: u16, err: Option<&ProviderError>) -> (Outcome, Code) {
    let message = err.map(|e| e.message.as_str()).unwrap_or("");
    let code_is = |c: &str| err.and_then(|e| e.code.as_deref()) == Some(c);
    if message.trim_start().starts_with("jr2 custodian:") {
        return (Outcome::CustodianRefused, Code::CustodianRefused);
    }
    match status {
        401 | 403 => (Outcome::KeyRefused, Code::KeyRefused),
        400 if code_is("API_KEY_INVALID") => (Outcome::KeyRefused, Code::KeyRefused),
        // LiteLLM with a master key and no database answers a wrong or missing key with this 400: it cannot look
        // the key up, so the key is what to fix, not the request (issue 27, item 11).
        400 if message.trim() == "No connected db." => (Outcome::KeyRefused, Code::KeyRefused),
        429 if err.is_some_and(ProviderError::is_quota_exhausted) => {
            (Outcome::Http, Code::QuotaExhausted)
        }
        429 | 529 => (Outcome::Busy, Code::Busy),
        503 => (Outcome::Unavailable, Code::Unavailable),
        404 => (Outcome::Http, Code::ModelNotFound),
        400 if message.contains("Invalid model name") || message.contains("model not found") => {
            (Outcome::Http, Code::ModelNotFound)
        }
        400 | 500
            if message.contains("tool choice requires")
                || message.contains("requires --tool-call-parser")
                || message.contains("tools param requires --jinja")
                // Ollama: the model's TEMPLATE does not use `.Tools`.
                || message.trim_end().ends_with(" does not support tools") =>
        {
            (Outcome::Http, Code::ToolsNotEnabled)
        }
        _ => (Outcome::Http, Code::HttpError),
    }
}

/// Reads at most `limit` bytes of a body, as lossy UTF-8; a body that breaks off yields what came.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> String {
    let mut buf = Vec::new();
    while buf.len() < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - buf.len());
                buf.extend_from_slice(&chunk[..take]);
            }
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> ProviderError {
        api::error_body::parse(body).unwrap()
    }

    /// LiteLLM (a master key, no database) refuses a wrong or missing key with a 400 `No connected db.`: a key
    /// problem, with the key's lines, not an HTTP error with vLLM's hints.
    #[test]
    fn litellm_without_a_database_refuses_a_key_with_a_400() {
        let body = r#"{"error":{"message":"No connected db.","type":"no_db_connection","param":null,"code":"400"}}"#;
        assert_eq!(
            classify_status(400, Some(&err(body))),
            (Outcome::KeyRefused, Code::KeyRefused)
        );
        assert_eq!(
            classify_status(
                400,
                Some(&err(
                    r#"{"error":{"message":"No connected db. for model x"}}"#
                ))
            ),
            (Outcome::Http, Code::HttpError)
        );
    }

    #[test]
    fn statuses_classify_as_the_contract_says() {
        assert_eq!(
            classify_status(401, Some(&err(r#"{"error":"Unauthorized"}"#))),
            (Outcome::KeyRefused, Code::KeyRefused)
        );
        assert_eq!(
            classify_status(403, None),
            (Outcome::KeyRefused, Code::KeyRefused)
        );
        assert_eq!(classify_status(429, None), (Outcome::Busy, Code::Busy));
        assert_eq!(classify_status(529, None), (Outcome::Busy, Code::Busy));
        assert_eq!(
            classify_status(503, None),
            (Outcome::Unavailable, Code::Unavailable)
        );
        assert_eq!(
            classify_status(404, None),
            (Outcome::Http, Code::ModelNotFound)
        );
        assert_eq!(classify_status(500, None), (Outcome::Http, Code::HttpError));
        assert_eq!(classify_status(502, None), (Outcome::Http, Code::HttpError));
        assert_eq!(
            classify_status(
                429,
                Some(&err(
                    r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota"}}"#
                ))
            ),
            (Outcome::Http, Code::QuotaExhausted)
        );
        assert_eq!(
            classify_status(
                400,
                Some(&err(
                    r#"{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}}"#
                ))
            ),
            (Outcome::Http, Code::ToolsNotEnabled)
        );
        assert_eq!(
            classify_status(
                403,
                Some(&err(
                    "jr2 custodian: this request needs the stand-in jr2-held-X"
                ))
            ),
            (Outcome::CustodianRefused, Code::CustodianRefused)
        );
        assert_eq!(
            classify_status(
                400,
                Some(&err(
                    r#"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"reason":"API_KEY_INVALID"}]}}"#
                ))
            ),
            (Outcome::KeyRefused, Code::KeyRefused)
        );
    }
}
