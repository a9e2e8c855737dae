//! One model's check: its tries, the waits between them, and its deadline (the contract's sections 3 and 4).
//!
//! A try sends the request a Turn sends and reads the answer until the message's stop reason, then drops the
//! connection. A complete tool call is not yet the verdict: pi-agent-core fails every call of a message that the token
//! cap stopped (`failToolCallsFromTruncatedMessage` in its agent loop), so a call passes only in a message that stopped
//! for another reason (issue 27, item 5); reading past the call costs the few tokens between the call's end and the
//! stop, bounded by the model's deadline like the rest. A try that gets 429, 529 or 503
//! (or an overload event inside the stream) is followed by another, as [`crate::retry`] decides. Every try runs
//! under the model's deadline; nothing here waits without one. A retry after busy tries that gets no answer before
//! that deadline leaves the model busy, not timed out: the user's document says a provider that answers 429 and
//! then never answers a retry is a warning (an error for Gemini and Vertex). One try's request and answer are
//! [`super::attempt`]'s, the result the last one gives [`super::conclude`]'s, what the endpoint adds
//! [`super::findings`]'s; this module does the timing around them.

use std::time::{Duration, Instant};

use super::attempt::{Attempt, End, Sender};
use super::conclude::Concluder;
use super::endpoint;
use super::findings::{EndpointLook, SlotsLook};
use super::settings::{Observer, Progress, Settings};
use crate::contract::outcome::{Code, Outcome};
use crate::contract::render;
use crate::contract::verdict::{ModelResult, Timings, Try};
use crate::sanitize::Redactor;
use crate::target::Target;
use crate::transport::ClientFactory;

/// What one model's tries need of the checker: its clients, its redactor and its limits.
pub(super) struct Tries<'a> {
    pub(super) factory: &'a ClientFactory,
    pub(super) redactor: &'a Redactor,
    pub(super) settings: Settings,
}

impl Tries<'_> {
    fn sender(&self) -> Sender<'_> {
        Sender {
            factory: self.factory,
            redactor: self.redactor,
        }
    }

    fn concluder(&self) -> Concluder<'_> {
        Concluder {
            redactor: self.redactor,
        }
    }

    fn look(&self) -> EndpointLook<'_> {
        EndpointLook {
            redactor: self.redactor,
            settings: self.settings,
        }
    }

    /// Checks one model, with its retries, under its deadline; reports each try to `observer`.
    pub(super) async fn run(
        self,
        target: &Target,
        observer: Option<(usize, Observer<'_>)>,
    ) -> ModelResult {
        let report = |t: &Try| {
            if let Some((index, observe)) = observer {
                observe(Progress::Try { index, attempt: t });
            }
        };
        let start = Instant::now();
        let deadline = tokio::time::Instant::from_std(start + self.settings.timeout);
        if let Some(why) = target.api.unsupported_because() {
            // openai-codex: its OAuth login is a Turn's alone; not checked, a warning (issue 27, item 3).
            return self.concluder().finish(
                target,
                start,
                Vec::new(),
                None,
                Outcome::NotCheckable,
                Code::NotCheckableOauth,
                Some(why.to_owned()),
                None,
            );
        }
        let (client, clock) = match self.factory.client_for(target.api, &target.base_url) {
            Ok(c) => c,
            Err(e) => {
                let error = self
                    .redactor
                    .clean(&format!("cannot build an HTTP client: {e}"));
                return self.concluder().finish(
                    target,
                    start,
                    Vec::new(),
                    None,
                    Outcome::Unreachable,
                    Code::Unreachable,
                    Some(error),
                    None,
                );
            }
        };
        // A custom endpoint's look at llama-server's slots, taken just before the deadline while the request still
        // waits, and read only if the model times out (issue 27, item 8); aborted when the check ends first.
        // Its own client: its GET never takes the tries' pooled connection, nor their timing marks.
        let slots_look = endpoint::applies(target)
            .then(|| self.factory.client_for(target.api, &target.base_url).ok())
            .flatten()
            .map(|(look_client, _)| {
                let half = tokio::time::Instant::from_std(start + self.settings.timeout / 2);
                let at = deadline
                    .checked_sub(endpoint::SLOTS_LOOK)
                    .map_or(half, |early| early.max(half));
                SlotsLook(tokio::spawn(endpoint::slots_busy_before(
                    look_client,
                    target.clone(),
                    at,
                    deadline,
                )))
            });
        let policy = self.settings.retry;
        let mut backoff = policy.backoff();
        let mut tries: Vec<Try> = Vec::new();
        let mut waited = Duration::ZERO;
        // The last busy try's status and `<error>`: a retry after it that gets no answer is still busy.
        let mut last_busy: Option<(Option<u16>, String)> = None;
        loop {
            let n = tries.len() as u32 + 1;
            let try_start = clock.restart();
            // When the first call was complete: a deadline that comes after it, before the message's stop reason,
            // says so.
            let mut call_seen: Option<Duration> = None;
            let attempt = match tokio::time::timeout_at(
                deadline,
                self.sender()
                    .attempt(&client, target, try_start, &mut call_seen),
            )
            .await
            {
                Ok(a) => a,
                // The deadline passed while a new connection was still coming up: a connect timeout, as
                // the client's own connect timeout (the same length when the model's is 10 s or less) would
                // have said, whichever of the two timers fired first.
                Err(_) if clock.connecting() => {
                    let span = if n == 1 {
                        self.settings.timeout
                    } else {
                        let left = deadline.into_std().saturating_duration_since(try_start);
                        Duration::from_millis(left.as_millis().div_ceil(100) as u64 * 100)
                    };
                    let error = format!(
                        "connection timed out after {} s",
                        render::seconds(span.min(self.factory.connect_timeout()))
                    );
                    Attempt::fail(None, Outcome::Unreachable, Code::Unreachable, error)
                }
                Err(_) => match call_seen {
                    Some(at) => self.timed_out_after_call(at),
                    None => self.timed_out(target),
                },
            };
            let (dns_ms, tls_ms, connect_ms) = clock.marks();
            let ms = |d: Option<Duration>| d.map(|d| d.as_millis() as u64);
            let timings = Timings {
                dns_ms,
                tls_ms,
                connect_ms,
                first_byte_ms: ms(attempt.first_byte),
                tool_call_ms: ms(attempt.tool_call),
                total_ms: try_start.elapsed().as_millis() as u64,
            };
            let outcome = match &attempt.end {
                End::ToolCall { .. } => Outcome::Ok,
                End::Text { .. } => Outcome::Text,
                End::Length { .. } => Outcome::Length,
                End::Fail { outcome, .. } => *outcome,
            };
            tries.push(Try {
                n,
                status: attempt.status,
                outcome,
                wait_asked_ms: ms(attempt.wait_asked),
                wait_taken_ms: 0,
                timings,
            });
            if let End::Fail {
                outcome: Outcome::Busy,
                error,
                ..
            } = &attempt.end
            {
                last_busy = Some((attempt.status, error.clone()));
            }
            if attempt.retryable && n < policy.max_tries {
                let wait = match attempt.wait_asked {
                    Some(asked) if asked > policy.max_requested_wait => None,
                    Some(asked) => {
                        backoff.next();
                        Some(asked)
                    }
                    None => backoff.next(),
                };
                let fits = |w: Duration| {
                    waited + w <= policy.budget && tokio::time::Instant::now() + w < deadline
                };
                if let Some(wait) = wait.filter(|w| fits(*w)) {
                    tracing::debug!(model = %target.model, try_n = n, wait_ms = wait.as_millis() as u64, "retrying");
                    if let Some(last) = tries.last_mut() {
                        last.wait_taken_ms = wait.as_millis() as u64;
                        report(last);
                    }
                    tokio::time::sleep(wait).await;
                    waited += wait;
                    continue;
                }
            }
            if let Some(last) = tries.last() {
                report(last);
            }
            let all_busy_before = tries.len() > 1
                && tries[..tries.len() - 1]
                    .iter()
                    .all(|t| t.outcome == Outcome::Busy);
            if outcome == Outcome::Timeout
                && all_busy_before
                && let Some((status, busy_error)) = last_busy
            {
                return self.concluder().busy_then_no_answer(
                    target,
                    start,
                    tries,
                    status,
                    &busy_error,
                );
            }
            let seen = attempt.seen;
            let r = self.concluder().conclude(target, start, tries, attempt);
            return self
                .look()
                .know_endpoint(&client, target, r, seen, deadline, slots_look)
                .await;
        }
    }

    fn timed_out(&self, target: &Target) -> Attempt {
        let may_load = target.route.may_load_on_first_use();
        let error = render::timeout_error(&render::seconds(self.settings.timeout), may_load);
        Attempt::fail(None, Outcome::Timeout, Code::Timeout, error)
    }

    /// The deadline came after a complete tool call, before the message's stop reason: a Turn waits for that stop too
    /// (it fails every call of a message the cap stops), so this is a timeout, whose `<error>` says the call came.
    fn timed_out_after_call(&self, at: Duration) -> Attempt {
        let error = render::call_then_no_stop_error(
            &render::seconds(render::to_tenths(at)),
            &render::seconds(self.settings.timeout),
        );
        Attempt::fail(None, Outcome::Timeout, Code::Timeout, error)
    }
}
