//! The API server's clock (issue 40, items 3 and 6): the check pod's deadline and the stale sweep are measured on
//! it, never on the clock of the machine that runs the driver. Another machine's clock may be minutes off (a laptop
//! without NTP, a CI runner): a deadline written on one clock and read on another either passes before the probe
//! starts, or sweeps a live pod of another run. The API server writes every pod's `creationTimestamp`, and says its
//! time in the `Date` header of each answer (HTTP requires it of a server with a clock); the nodes' kubelets are
//! kept to it, or the cluster's leases and certificates fail too.

use std::time::{Duration, SystemTime};

use http_body_util::BodyExt;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::jiff::fmt::rfc2822::DateTimeParser;

/// How long reading the API server's clock may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// The API server's clock, as far ahead of this machine's as it was when read (to the second: the `Date` header's
/// resolution).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerClock {
    /// The API server's clock minus this machine's, in milliseconds.
    ahead_ms: i64,
}

impl ServerClock {
    /// The clock `ahead_ms` milliseconds ahead of this machine's (behind when negative).
    pub fn ahead_by(ahead_ms: i64) -> Self {
        Self { ahead_ms }
    }

    /// From a `Date` header read at `local` on this machine (the middle of the request); `None` when it is no
    /// HTTP date. The header has whole seconds: a `local` within its second is a clock in agreement (no
    /// correction, so that clocks that agree change nothing), any other is taken to the middle of its second.
    pub fn from_date(date: &str, local: SystemTime) -> Option<Self> {
        let server = DateTimeParser::new().parse_timestamp(date.trim()).ok()?;
        let local = Timestamp::try_from(local).ok()?;
        let ahead_ms = i64::try_from(server.duration_since(local).as_millis()).ok()?;
        let ahead_ms = if (-1000..=0).contains(&ahead_ms) {
            0
        } else {
            ahead_ms + 500
        };
        Some(Self { ahead_ms })
    }

    /// The API server's time when this machine's clock says `local`.
    pub fn at(&self, local: SystemTime) -> SystemTime {
        let by = Duration::from_millis(self.ahead_ms.unsigned_abs());
        if self.ahead_ms >= 0 {
            local.checked_add(by).unwrap_or(local)
        } else {
            local.checked_sub(by).unwrap_or(local)
        }
    }

    /// The API server's time now.
    pub fn now(&self) -> SystemTime {
        self.at(SystemTime::now())
    }

    /// How far ahead of this machine's clock the API server's is, in whole seconds (behind when negative).
    pub fn ahead_secs(&self) -> i64 {
        self.ahead_ms / 1000
    }
}

/// Reads the API server's clock from the `Date` header of its answer to `GET /version` (which every identity may
/// read); `None` when no answer or no date came in time.
pub async fn read(client: &kube::Client) -> Option<ServerClock> {
    let request = http::Request::get("/version")
        .body(kube::client::Body::empty())
        .ok()?;
    let sent = SystemTime::now();
    let response = tokio::time::timeout(READ_TIMEOUT, client.send(request))
        .await
        .ok()?
        .ok()?;
    let answered = SystemTime::now();
    let date = response
        .headers()
        .get(http::header::DATE)?
        .to_str()
        .ok()?
        .to_owned();
    // The body is not needed; read it (bounded by the client's layer) so that the connection is reused.
    let _ = tokio::time::timeout(READ_TIMEOUT, response.into_body().collect()).await;
    let middle = sent + answered.duration_since(sent).unwrap_or_default() / 2;
    let clock = ServerClock::from_date(&date, middle);
    tracing::debug!(?clock, "the API server's clock");
    clock
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Date` 90 s ahead of this machine's clock is read as 90 s ahead (to the middle of its second); times are
    /// moved by it both ways; a `Date` of this machine's own second is no correction.
    #[test]
    fn a_date_ahead_and_behind() {
        // 2026-12-04T18:36:47.700Z.
        let local = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_409_407_700);
        let c = ServerClock::from_date("Fri, 04 Dec 2026 18:38:17 GMT", local).unwrap();
        assert_eq!(c.ahead_secs(), 89);
        assert_eq!(c.at(local), local + Duration::from_millis(89_800));
        let c = ServerClock::from_date("Fri, 04 Dec 2026 18:35:17 GMT", local).unwrap();
        assert_eq!(c.at(local), local - Duration::from_millis(90_200));
        let c = ServerClock::from_date("Fri, 04 Dec 2026 18:36:47 GMT", local).unwrap();
        assert_eq!(c.at(local), local);
        assert_eq!(ServerClock::from_date("yesterday", local), None);
    }
}
