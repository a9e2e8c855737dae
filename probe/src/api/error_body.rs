//! Error bodies, in every shape the providers and servers of pi's catalog send, reduced to one [`ProviderError`].
//!
//! The shapes (`research/providers.md`, section 6.2): OpenAI, current vLLM, llama.cpp and LiteLLM put an object
//! under `error`; Anthropic wraps the same in `{"type":"error"}`; Google adds `status` and `details[].reason`;
//! old vLLM sends `{"object":"error","message"}`; vLLM's auth middleware sends `{"error":"Unauthorized"}`; Mistral
//! and FastAPI servers (llama-cpp-python) send `{"message"}` or `{"detail"}`. A body that is not JSON (a proxy's HTML
//! 502 page, a plain-text error) is read as text, HTML reduced to its title.

use serde_json::Value;

use super::ProviderError;

/// Parses a body. `None` when it says nothing usable (empty).
pub fn parse(body: &str) -> Option<ProviderError> {
    let trimmed = body.trim();
    if trimmed.is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(value) => Some(from_value(&value)),
        Err(_) => Some(ProviderError {
            message: text_of(trimmed),
            ..ProviderError::default()
        }),
    }
}

/// Reads a JSON error value (a whole body, or the `error` member of a stream chunk).
pub fn from_value(value: &Value) -> ProviderError {
    // Gemini sometimes wraps its error in a one-element list.
    if let Some(first) = value.as_array().and_then(|a| a.first()) {
        return from_value(first);
    }
    let Some(obj) = value.as_object() else {
        return ProviderError {
            message: scalar(value).unwrap_or_default(),
            ..ProviderError::default()
        };
    };
    match obj.get("error") {
        Some(inner @ Value::Object(_)) => return from_value(inner),
        Some(Value::String(s)) => {
            return ProviderError {
                message: s.clone(),
                kind: obj.get("type").and_then(scalar),
                code: obj.get("code").and_then(scalar),
            };
        }
        _ => {}
    }
    let message = ["message", "detail", "Message", "error_description"]
        .iter()
        .find_map(|k| obj.get(*k))
        .map(|v| scalar(v).unwrap_or_else(|| v.to_string()))
        .unwrap_or_else(|| value.to_string());
    // Google lists `details[].reason`; Anthropic puts an object there with `error_code` (its spend limit).
    let reason = match obj.get("details") {
        Some(Value::Array(details)) => details
            .iter()
            .find_map(|d| d.get("reason").and_then(Value::as_str)),
        Some(Value::Object(details)) => details.get("error_code").and_then(Value::as_str),
        _ => None,
    }
    .map(str::to_owned);
    ProviderError {
        message,
        kind: obj
            .get("type")
            .or_else(|| obj.get("status"))
            .or_else(|| obj.get("__type"))
            .and_then(scalar),
        code: reason.or_else(|| obj.get("code").and_then(scalar)),
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// A non-JSON body as one readable phrase: an HTML page's `<title>`, or the text itself.
fn text_of(body: &str) -> String {
    let lower = body.to_ascii_lowercase();
    if lower.starts_with("<!doctype html")
        || lower.starts_with("<html")
        || lower.contains("<title>")
    {
        if let (Some(start), Some(end)) = (lower.find("<title>"), lower.find("</title>"))
            && start + 7 <= end
        {
            return body[start + 7..end].trim().to_owned();
        }
        return "an HTML page".to_owned();
    }
    body.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(body: &str) -> ProviderError {
        parse(body).unwrap()
    }

    #[test]
    fn vllm_current_and_old_and_auth() {
        let e = p(
            r#"{"error":{"message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}}"#,
        );
        assert!(e.message.starts_with("\"auto\" tool choice requires"));
        assert_eq!(e.kind.as_deref(), Some("BadRequestError"));
        assert_eq!(e.code.as_deref(), Some("400"));
        let e = p(
            r#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":"model","code":404}"#,
        );
        assert_eq!(e.message, "The model `x` does not exist.");
        assert_eq!(e.kind.as_deref(), Some("NotFoundError"));
        let e = p(r#"{"error":"Unauthorized"}"#);
        assert_eq!(e.message, "Unauthorized");
    }

    #[test]
    fn anthropic_google_litellm_fastapi() {
        let e = p(r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(
            (e.message.as_str(), e.kind.as_deref()),
            ("Overloaded", Some("overloaded_error"))
        );
        let e = p(
            r#"{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}"#,
        );
        assert_eq!(e.code.as_deref(), Some("API_KEY_INVALID"));
        assert_eq!(e.kind.as_deref(), Some("INVALID_ARGUMENT"));
        let e = p(
            r#"[{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}]"#,
        );
        assert_eq!(e.kind.as_deref(), Some("RESOURCE_EXHAUSTED"));
        let e = p(
            r#"{"error":{"message":"litellm.RateLimitError: x","type":"throttling_error","param":null,"code":"429"}}"#,
        );
        assert_eq!(e.code.as_deref(), Some("429"));
        assert_eq!(
            p(r#"{"detail":"Invalid API key"}"#).message,
            "Invalid API key"
        );
    }

    #[test]
    fn html_and_text() {
        assert_eq!(
            p("<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>").message,
            "502 Bad Gateway"
        );
        assert_eq!(p("<!DOCTYPE html><p>x</p>").message, "an HTML page");
        assert_eq!(
            p("jr2 custodian: CONNECT to evil.example is not bound").message,
            "jr2 custodian: CONNECT to evil.example is not bound"
        );
        assert!(parse("  ").is_none());
    }

    #[test]
    fn anthropic_spend_limit_is_quota() {
        let e = p(
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits.","details":{"error_code":"enforced_spend_limit_reached"}}}"#,
        );
        assert_eq!(e.code.as_deref(), Some("enforced_spend_limit_reached"));
        assert!(e.is_quota_exhausted());
    }

    #[test]
    fn quota_is_recognised() {
        let e = p(
            r#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}"#,
        );
        assert!(e.is_quota_exhausted());
        assert!(!e.is_overload());
    }
}
