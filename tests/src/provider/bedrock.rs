//! A fake Bedrock runtime whose behaviour the model id in the path chooses.
//!
//! It answers `POST /model/<model id, percent-encoded>/converse-stream` as `bedrock-runtime.<region>.amazonaws.com`
//! does with a bearer token: a 200 whose body is AWS's binary event stream (`application/vnd.amazon.eventstream`,
//! real frames with both CRC32s, each event's JSON carrying Bedrock's `p` padding), and errors as
//! `{"message": "..."}` with the exception named by `x-amzn-errortype` (`ThrottlingException:http://...`). A request
//! whose `authorization` is not `Bearer` [`GOOD_TOKEN`] gets a 403 `UnrecognizedClientException`, whatever the model.
//! Serve it with [`super::FakeProvider::start_with`]; every request is recorded there, and tries are
//! counted per path.
//!
//! Models: [`HAIKU`] and `fake.ok-v1:0` (a `toolUse` block; the body is cut into 13-byte pieces, so frames straddle
//! chunks), otherwise `fake.<behaviour>-v1:0` with `<behaviour>`: `text` (`end_turn`), `max-tokens`,
//! `throttled-after-200` (a `throttlingException` message after `messageStart`), `denied` (403
//! `AccessDeniedException`), `throttled` (429 `ThrottlingException` always), `throttled-<n>` (on the first n tries,
//! then ok), `unavailable` (503 `ServiceUnavailableException`), `missing` (404 `ResourceNotFoundException`),
//! `bad-crc` (a frame with a broken checksum), `stall` (`messageStart`, then nothing); any other id is the 400
//! `ValidationException` "The provided model identifier is invalid."

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream_bytes};
use crate::http::{Body, Recorded, percent_decode};

/// The bearer token the fake accepts.
pub const GOOD_TOKEN: &str = "ABSKQmVkcm9ja0FQSUtleS1mYWtlLWdvb2QtdG9rZW4=";

/// The catalog model that answers with a tool call.
pub const HAIKU: &str = "anthropic.claude-haiku-4-5-20251001-v1:0";

/// The text the `text` model answers.
pub const TEXT_ANSWER: &str = "I would call the probe tool, but here is some text instead.";

/// The `x-amzn-requestid` of every answer.
pub const REQUEST_ID: &str = "5c1f0e2a-8d9b-4c3e-9f7a-6b5d4c3b2a10";

/// The content type of the event stream.
pub const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// The Bedrock behaviour, for [`super::FakeProvider::start_with`].
pub fn handler() -> Handler {
    Arc::new(|req: Recorded, try_n: u32| Box::pin(async move { respond(&req, try_n).await }))
}

/// CRC-32/ISO-HDLC, bit by bit (independent of the probe's table-driven one).
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// One event-stream message with string headers.
pub fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (name, value) in headers {
        h.push(u8::try_from(name.len()).expect("a short header name"));
        h.extend_from_slice(name.as_bytes());
        h.push(7);
        h.extend_from_slice(
            &u16::try_from(value.len())
                .expect("a short header value")
                .to_be_bytes(),
        );
        h.extend_from_slice(value.as_bytes());
    }
    let total = u32::try_from(16 + h.len() + payload.len()).expect("a small message");
    let mut m = Vec::with_capacity(total as usize);
    m.extend_from_slice(&total.to_be_bytes());
    m.extend_from_slice(&u32::try_from(h.len()).expect("small headers").to_be_bytes());
    let prelude = crc32(&m);
    m.extend_from_slice(&prelude.to_be_bytes());
    m.extend_from_slice(&h);
    m.extend_from_slice(payload);
    let crc = crc32(&m);
    m.extend_from_slice(&crc.to_be_bytes());
    m
}

/// An event message (`:message-type: event`), its JSON payload padded as Bedrock pads it.
pub fn event(kind: &str, mut payload: Value) -> Vec<u8> {
    payload["p"] = json!("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ");
    frame(
        &[
            (":event-type", kind),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        payload.to_string().as_bytes(),
    )
}

/// An exception message (`:message-type: exception`).
pub fn exception(kind: &str, message: &str) -> Vec<u8> {
    frame(
        &[
            (":exception-type", kind),
            (":content-type", "application/json"),
            (":message-type", "exception"),
        ],
        json!({"message": message}).to_string().as_bytes(),
    )
}

fn metadata() -> Vec<u8> {
    event(
        "metadata",
        json!({"metrics": {"latencyMs": 812}, "usage": {"inputTokens": 590, "outputTokens": 54, "totalTokens": 644}}),
    )
}

fn tool_use() -> Vec<u8> {
    [
        event("messageStart", json!({"role": "assistant"})),
        event(
            "contentBlockStart",
            json!({"contentBlockIndex": 0, "start": {"toolUse": {"name": "probe", "toolUseId": "tooluse_Fk3mQ9xYzT2bL8vR1wN5aA"}}}),
        ),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"toolUse": {"input": "{\"status\": \"ready\"}"}}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event("messageStop", json!({"stopReason": "tool_use"})),
        metadata(),
    ]
    .concat()
}

fn text(words: &str, stop: &str) -> Vec<u8> {
    [
        event("messageStart", json!({"role": "assistant"})),
        event(
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": words}}),
        ),
        event("contentBlockStop", json!({"contentBlockIndex": 0})),
        event("messageStop", json!({"stopReason": stop})),
        metadata(),
    ]
    .concat()
}

/// A 200 whose body is `bytes`, cut into `piece`-byte chunks.
fn ok_stream(bytes: Vec<u8>, piece: usize, stall_after: bool) -> Response<Body> {
    let mut resp = stream_bytes(
        EVENT_STREAM,
        bytes.chunks(piece).map(Bytes::copy_from_slice).collect(),
        Duration::ZERO,
        stall_after,
    );
    resp.headers_mut()
        .insert("x-amzn-requestid", HeaderValue::from_static(REQUEST_ID));
    resp
}

/// A Bedrock error: `{"message"}`, with the exception in `x-amzn-errortype`.
pub fn aws_error(status: u16, exception: &str, message: &str) -> Response<Body> {
    let mut resp = json_error(
        StatusCode::from_u16(status).expect("a status"),
        json!({"message": message}),
    );
    let headers = resp.headers_mut();
    headers.insert(
        "x-amzn-errortype",
        HeaderValue::from_str(&format!(
            "{exception}:http://internal.amazon.com/coral/com.amazon.bedrock/"
        ))
        .expect("a header value"),
    );
    headers.insert("x-amzn-requestid", HeaderValue::from_static(REQUEST_ID));
    resp
}

fn throttled() -> Response<Body> {
    aws_error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    )
}

async fn respond(req: &Recorded, try_n: u32) -> Response<Body> {
    let Some(id) = req
        .path
        .strip_prefix("/model/")
        .and_then(|p| p.strip_suffix("/converse-stream"))
        .filter(|_| req.method == "POST")
    else {
        return aws_error(404, "UnknownOperationException", "Unknown operation");
    };
    if req.header("authorization") != Some(&format!("Bearer {GOOD_TOKEN}")) {
        return aws_error(
            403,
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        );
    }
    let id = percent_decode(id);
    let behaviour = if id == HAIKU {
        "ok"
    } else {
        id.strip_prefix("fake.")
            .and_then(|b| b.strip_suffix("-v1:0"))
            .unwrap_or("")
    };
    if let Some(n) = behaviour
        .strip_prefix("throttled-")
        .and_then(|n| n.parse::<u32>().ok())
    {
        return if try_n <= n {
            throttled()
        } else {
            ok_stream(tool_use(), 13, false)
        };
    }
    match behaviour {
        "ok" => ok_stream(tool_use(), 13, false),
        "text" => ok_stream(text(TEXT_ANSWER, "end_turn"), 64, false),
        "max-tokens" => ok_stream(
            text("Let me think about which tool", "max_tokens"),
            64,
            false,
        ),
        "throttled-after-200" => ok_stream(
            [
                event("messageStart", json!({"role": "assistant"})),
                exception(
                    "throttlingException",
                    "Too many tokens, please wait before trying again.",
                ),
            ]
            .concat(),
            4096,
            false,
        ),
        "bad-crc" => {
            let mut bytes = event("messageStart", json!({"role": "assistant"}));
            let n = bytes.len();
            bytes[n - 1] ^= 0x55;
            ok_stream(bytes, 4096, false)
        }
        "stall" => ok_stream(
            event("messageStart", json!({"role": "assistant"})),
            4096,
            true,
        ),
        "denied" => aws_error(
            403,
            "AccessDeniedException",
            "You don't have access to the model with the specified model ID.",
        ),
        "throttled" => throttled(),
        "unavailable" => aws_error(
            503,
            "ServiceUnavailableException",
            "Bedrock is unable to process your request.",
        ),
        "missing" => aws_error(404, "ResourceNotFoundException", "Model not found."),
        _ => aws_error(
            400,
            "ValidationException",
            "The provided model identifier is invalid.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_match_the_aws_reference_vector() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            frame(&[], b"{'foo':'bar'}"),
            [
                0x00, 0x00, 0x00, 0x1D, 0x00, 0x00, 0x00, 0x00, 0xFD, 0x52, 0x8C, 0x5A, 0x7B, 0x27,
                0x66, 0x6F, 0x6F, 0x27, 0x3A, 0x27, 0x62, 0x61, 0x72, 0x27, 0x7D, 0xC3, 0x65, 0x39,
                0x36,
            ]
        );
        assert_eq!(
            percent_decode("anthropic.claude-haiku-4-5-20251001-v1%3A0"),
            HAIKU
        );
    }
}
