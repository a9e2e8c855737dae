//! When to try again, and how long to wait: the contract's section 4.
//!
//! Retried: 429, 529 and 503, and the overload signals a stream carries after its 200. Never retried: quota
//! exhaustion. The wait is what the server asks for (`retry-after-ms`, then `retry-after` in seconds or as an HTTP
//! date), else an exponential backoff with jitter from [`backon`] (0.5 s, doubling, at most 8 s: the shape pi's own
//! retry loop uses when a caller turns it on). A server that asks for more than 60 s is not waited for: the probe
//! reports what it saw instead of holding the converge. At most 4 tries and 60 s of waiting per model.

use std::time::{Duration, SystemTime};

use backon::{BackoffBuilder, ExponentialBuilder};
use reqwest::header::HeaderMap;

/// The retry limits of one model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub max_tries: u32,
    /// The most time spent waiting between tries, in all.
    pub budget: Duration,
    /// A server-requested wait above this is not waited.
    pub max_requested_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_tries: 4,
            budget: Duration::from_secs(60),
            max_requested_wait: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The backoff for waits the server did not ask for.
    pub fn backoff(&self) -> impl Iterator<Item = Duration> + Send + use<> {
        ExponentialBuilder::default()
            .with_min_delay(Duration::from_millis(500))
            .with_max_delay(Duration::from_secs(8))
            .with_factor(2.0)
            .with_jitter()
            .with_max_times(self.max_tries.saturating_sub(1) as usize)
            .build()
    }
}

/// A status the contract retries.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 503 | 529)
}

/// The wait a response asks for: `retry-after-ms` first (OpenAI, Azure), then `retry-after` (seconds or an HTTP
/// date); each also as a LiteLLM gateway forwards its backend's header, `llm_provider-retry-after(-ms)` (issue 27,
/// item 10: a gateway's 60 s was ignored, and the 4 tries spent inside its window). A negative, garbage or past value
/// asks for nothing.
pub fn requested_wait(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |names: [&str; 2]| {
        names.into_iter().find_map(|name| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::trim)
        })
    };
    if let Some(ms) =
        text(["retry-after-ms", "llm_provider-retry-after-ms"]).and_then(|v| v.parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms.min(1e12) / 1000.0));
    }
    let value = text(["retry-after", "llm_provider-retry-after"])?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A Gemini `RetryInfo.retryDelay` (`"30s"`, `"1.5s"`) in an error body.
pub fn gemini_retry_delay(body: &serde_json::Value) -> Option<Duration> {
    let details = body.pointer("/error/details")?.as_array()?;
    details.iter().find_map(|d| {
        let delay = d.get("retryDelay")?.as_str()?.strip_suffix('s')?;
        let secs = delay.parse::<f64>().ok()?;
        (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn a_gateway_s_forwarded_retry_header_is_read() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            requested_wait(&headers(&[("llm_provider-retry-after", "60")]), now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            requested_wait(&headers(&[("llm_provider-retry-after-ms", "1500")]), now),
            Some(Duration::from_millis(1500))
        );
        // The gateway's own header first.
        assert_eq!(
            requested_wait(
                &headers(&[("retry-after", "2"), ("llm_provider-retry-after", "60")]),
                now
            ),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            requested_wait(&headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            requested_wait(&headers(&[("retry-after", "1.5")]), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            requested_wait(
                &headers(&[("retry-after-ms", "250"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(250))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(
            requested_wait(&headers(&[("retry-after", &date)]), now),
            Some(Duration::from_secs(7))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(
            requested_wait(&headers(&[("retry-after", &past)]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            requested_wait(&headers(&[("retry-after", "-3")]), now),
            None
        );
        assert_eq!(
            requested_wait(&headers(&[("retry-after", "soon")]), now),
            None
        );
        assert_eq!(
            requested_wait(&headers(&[("retry-after-ms", "NaN")]), now),
            None
        );
        assert_eq!(requested_wait(&headers(&[]), now), None);
        assert_eq!(
            requested_wait(&headers(&[("retry-after", "99999")]), now),
            Some(Duration::from_secs(99999))
        );
    }

    #[test]
    fn gemini_delay() {
        let body = serde_json::json!({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "30s"}]}});
        assert_eq!(gemini_retry_delay(&body), Some(Duration::from_secs(30)));
    }

    #[test]
    fn backoff_grows_with_jitter_and_stops() {
        let waits: Vec<_> = RetryPolicy::default().backoff().collect();
        assert_eq!(waits.len(), 3, "4 tries = 3 waits");
        for (i, w) in waits.iter().enumerate() {
            let base = Duration::from_millis(500) * 2u32.pow(i as u32);
            assert!(*w >= base && *w < base * 2, "wait {i} = {w:?}");
        }
    }

    #[test]
    fn retryable_statuses() {
        for s in [429, 503, 529] {
            assert!(is_retryable_status(s));
        }
        for s in [400, 401, 404, 500, 502, 504] {
            assert!(!is_retryable_status(s));
        }
    }
}
