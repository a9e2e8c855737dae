//! One model's check: the tries, the stream, the deadline, and the outcome (the contract's sections 3 and 4).
//!
//! A try sends the request a Turn sends and reads the answer until the message's stop reason, then drops the
//! connection. A complete tool call is not yet the verdict: pi-agent-core fails every call of a message that the token
//! cap stopped (`failToolCallsFromTruncatedMessage` in its agent loop), so a call passes only in a message that stopped
//! for another reason (issue 27, item 5); reading past the call costs the few tokens between the call's end and the
//! stop, bounded by the model's deadline like the rest. A try that gets 429, 529 or 503
//! (or an overload event inside the stream) is followed by another, as [`crate::retry`] decides. Every try runs
//! under the model's deadline; nothing here waits without one. A retry after busy tries that gets no answer before
//! that deadline leaves the model busy, not timed out: the user's document says a provider that answers 429 and
//! then never answers a retry is a warning (an error for Gemini and Vertex). What the bytes of a 200 say is judged by
//! [`stream::StreamJudge`], synchronously; this module does the I/O and the timing around it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use reqwest::header::CONTENT_TYPE;
use tokio::sync::Semaphore;

pub mod endpoint;
pub mod stream;

use crate::api::{self, ProviderError};
use crate::contract::outcome::{Code, Outcome};
use crate::contract::render;
use crate::contract::verdict::{ModelResult, Timings, Try};
use crate::retry::{self, RetryPolicy};
use crate::sanitize::Redactor;
use crate::target::Target;
use crate::transport::ClientFactory;
use stream::{StreamEnd, StreamJudge};

/// The most of an error body the probe reads.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// What a check reports while it runs (pod mode streams it as JSON lines). A model's own future reports its
/// events, one after the other, as they happen: `Started`, each `Try`, then `Finished`, so whatever writes them
/// sees them in that order for every model, however the models interleave.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// A model's check started.
    Started {
        /// The model's index in the run.
        index: usize,
    },
    /// A try ended (its wait before the next try, if any, decided).
    Try {
        /// The model's index.
        index: usize,
        /// The try.
        attempt: &'a Try,
    },
    /// A model has waited this long for its verdict ([`Settings::waiting_note`] after its start, then at that
    /// pace): `provider: <model>: no answer yet after <n> s of <timeout> s ...`.
    Waiting {
        /// The model's index.
        index: usize,
        /// How long it has waited.
        waited: Duration,
    },
    /// A model's check ended.
    Finished {
        /// The model's index.
        index: usize,
        /// Its result.
        result: &'a ModelResult,
    },
}

/// Where a check reports its [`Progress`]: called from the models' futures, in order for each model.
pub type Observer<'o> = &'o (dyn Fn(Progress<'_>) + Sync);

/// Limits of a check.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// No answer within this, per model: timeout.
    pub timeout: Duration,
    /// Retries.
    pub retry: RetryPolicy,
    /// Models checked at once, in all.
    pub concurrency: usize,
    /// Models checked at once against one endpoint (scheme, host and port of the base URL): what one provider sees
    /// of a check at most.
    pub per_host: usize,
    /// A model that has no verdict after this gets a progress line, and another at each multiple of it before its
    /// deadline (30 s: lines at 30, 60 and 90 s of the 120 s default). Zero: no progress lines.
    pub waiting_note: Duration,
}

impl Settings {
    /// Models at once, in all, by default: every model of a plan of two endpoints at full width.
    pub const DEFAULT_CONCURRENCY: usize = crate::spec::RunSpec::DEFAULT_CONCURRENCY;
    /// Models at once against one endpoint by default: 16 models of one endpoint take about as long as one, and a
    /// provider never sees more than 16 requests of a check at once (a Turn of each of 16 Harness pods does as much).
    pub const DEFAULT_PER_HOST: usize = 16;
    /// The first progress line of a model still waiting, and the pace of the next ones.
    pub const DEFAULT_WAITING_NOTE: Duration = Duration::from_secs(30);
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(120),
            retry: RetryPolicy::default(),
            concurrency: Self::DEFAULT_CONCURRENCY,
            per_host: Self::DEFAULT_PER_HOST,
            waiting_note: Self::DEFAULT_WAITING_NOTE,
        }
    }
}

/// Checks models.
#[derive(Clone, Debug)]
pub struct Checker {
    factory: ClientFactory,
    redactor: Arc<Redactor>,
    settings: Settings,
}

/// How one try ended.
#[derive(Debug)]
enum End {
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

#[derive(Debug)]
struct Attempt {
    status: Option<u16>,
    end: End,
    retryable: bool,
    wait_asked: Option<Duration>,
    first_byte: Option<Duration>,
    tool_call: Option<Duration>,
    answer: String,
    seen: endpoint::Seen,
    reasoned: bool,
    call_arguments: Option<String>,
    /// The first call's name, when the call was complete (its arguments parse): with a `length` end, a call in a
    /// message the cap stopped.
    call_complete: Option<String>,
}

impl Attempt {
    fn fail(status: Option<u16>, outcome: Outcome, code: Code, error: String) -> Self {
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

impl Checker {
    /// A checker with these clients, this redactor (it knows every key the run holds) and these limits.
    pub fn new(factory: ClientFactory, redactor: Redactor, settings: Settings) -> Self {
        // A proxy's password and its `Basic` token are held values too: a 407 can echo them.
        let redactor = redactor.holding(factory.proxy().held_values().iter().cloned());
        Self {
            factory,
            redactor: Arc::new(redactor),
            settings,
        }
    }

    /// The clients' factory (its proxy settings, for the warning lines).
    pub fn factory(&self) -> &ClientFactory {
        &self.factory
    }

    /// The limits.
    pub fn settings(&self) -> Settings {
        self.settings
    }

    /// Checks every target, at most `concurrency` at once and `per_host` at once against one endpoint, and calls
    /// `on_result` as each finishes (in completion order, with its index). Returns the results in the targets'
    /// order.
    pub async fn check_all(
        &self,
        targets: &[Target],
        on_result: impl FnMut(usize, &ModelResult),
    ) -> Vec<ModelResult> {
        self.check_all_observed(targets, &|_| {}, on_result).await
    }

    /// As [`Checker::check_all`], and reports [`Progress`] to `observer` as it goes: each model's future calls it
    /// itself, with `Started`, each `Try` and `Finished`, in that order.
    pub async fn check_all_observed(
        &self,
        targets: &[Target],
        observer: Observer<'_>,
        mut on_result: impl FnMut(usize, &ModelResult),
    ) -> Vec<ModelResult> {
        let permits = Arc::new(Semaphore::new(self.settings.concurrency.max(1)));
        let mut endpoints: HashMap<String, Arc<Semaphore>> = HashMap::new();
        let mut running: FuturesUnordered<_> = targets
            .iter()
            .enumerate()
            .map(|(i, target)| {
                let permits = permits.clone();
                let endpoint = endpoints
                    .entry(target.base_url.origin().ascii_serialization())
                    .or_insert_with(|| Arc::new(Semaphore::new(self.settings.per_host.max(1))))
                    .clone();
                async move {
                    // The endpoint's permit first: a model that waits for its endpoint holds no permit another
                    // endpoint's model could use.
                    let _endpoint_permit = endpoint
                        .acquire()
                        .await
                        .expect("the semaphore is never closed");
                    let _permit = permits
                        .acquire()
                        .await
                        .expect("the semaphore is never closed");
                    observer(Progress::Started { index: i });
                    let result = self.check_observed(target, Some((i, observer))).await;
                    observer(Progress::Finished {
                        index: i,
                        result: &result,
                    });
                    (i, result)
                }
            })
            .collect();
        let mut results: Vec<Option<ModelResult>> = vec![None; targets.len()];
        while let Some((i, result)) = running.next().await {
            on_result(i, &result);
            results[i] = Some(result);
        }
        results
            .into_iter()
            .map(|r| r.expect("every target yields a result"))
            .collect()
    }

    /// Checks one model, with its retries, under its deadline.
    pub async fn check(&self, target: &Target) -> ModelResult {
        self.check_observed(target, None).await
    }

    /// [`Checker::check_tries`], with a [`Progress::Waiting`] for each [`Settings::waiting_note`] it takes.
    async fn check_observed(
        &self,
        target: &Target,
        observer: Option<(usize, Observer<'_>)>,
    ) -> ModelResult {
        let Some((index, observe)) = observer else {
            return self.check_tries(target, None).await;
        };
        let pace = self.settings.waiting_note;
        let work = self.check_tries(target, observer);
        if pace.is_zero() {
            return work.await;
        }
        tokio::pin!(work);
        let start = tokio::time::Instant::now();
        let mut waited = pace;
        loop {
            tokio::select! {
                result = &mut work => return result,
                () = tokio::time::sleep_until(start + waited) => {
                    if waited < self.settings.timeout {
                        observe(Progress::Waiting { index, waited });
                    }
                    waited += pace;
                }
            }
        }
    }

    async fn check_tries(
        &self,
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
            return self.finish(
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
                return self.finish(
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
                self.attempt(&client, target, try_start, &mut call_seen),
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
                return self.busy_then_no_answer(target, start, tries, status, &busy_error);
            }
            let seen = attempt.seen;
            let r = self.conclude(target, start, tries, attempt);
            return self
                .know_endpoint(&client, target, r, seen, deadline, slots_look)
                .await;
        }
    }

    /// What the endpoint tells about a concluded result: its kind (and, for a custom endpoint after a failure or
    /// for the context check, its metadata), the cause it names, and a forced tool choice it ignored.
    async fn know_endpoint(
        &self,
        client: &reqwest::Client,
        target: &Target,
        mut r: ModelResult,
        seen: endpoint::Seen,
        deadline: tokio::time::Instant,
        slots_look: Option<SlotsLook>,
    ) -> ModelResult {
        let started = Instant::now();
        let failed = r.outcome != Outcome::Ok;
        let learned = if endpoint::applies(target) && endpoint::reached(&r) {
            tokio::time::timeout_at(
                deadline,
                endpoint::learn(client, target, seen, failed, &self.redactor),
            )
            .await
            .ok()
        } else {
            None
        };
        // A timeout: whether llama-server's slots were all busy (its queue held the request), in place of the guess
        // that the model loads on first use.
        if r.outcome == Outcome::Timeout
            && endpoint::applies(target)
            && r.findings.cause.is_none()
            && r.error
                .as_deref()
                .is_some_and(|e| e.starts_with("no answer in"))
            && let Some(slots) = match slots_look {
                Some(look) => look.seen().await,
                None => None,
            }
        {
            r.error = Some(render::timeout_queued_error(
                &render::seconds(self.settings.timeout),
                slots,
            ));
            r.findings.cause = Some(crate::contract::endpoint::Cause::LlamaCppSlotsBusy { slots });
        }
        let asked = learned.is_some();
        let known = learned.or_else(|| seen.kind.map(crate::contract::endpoint::Endpoint::of));
        // The context could not be learned: said, not left silent (issue 27, item 6); an error keeps its own cause.
        if asked && r.level != crate::contract::outcome::Level::Error {
            r.findings.context_unchecked = endpoint::context_unchecked(known.as_ref(), target);
        }
        r.elapsed_ms += started.elapsed().as_millis() as u64;
        r.findings.tool_choice_ignored = target.tool_choice == crate::api::ToolChoice::Named
            && (r.outcome == Outcome::Text
                || (r.outcome == Outcome::Ok
                    && r.tool_name.as_deref() != Some(crate::prompt::TOOL_NAME)));
        let cause = self
            .cause(&r, known.as_ref(), target)
            .or_else(|| r.findings.cause.take());
        if let Some(cause) = cause {
            if let crate::contract::endpoint::Cause::ContextTooSmall { served, needed, .. } = cause
                && matches!(
                    r.level,
                    crate::contract::outcome::Level::Pass
                        | crate::contract::outcome::Level::Warning
                )
            {
                r.outcome = Outcome::Http;
                r.level = Outcome::Http.level(target.api);
                r.code = Code::ContextTooSmall;
                r.error = Some(render::context_too_small_error(served, needed));
            }
            r.findings.cause = Some(cause);
        }
        r.next_action = render::next_action(&r);
        // Nothing learned is no endpoint in the JSON.
        r.findings.endpoint = known.filter(|e| {
            *e != crate::contract::endpoint::Endpoint::of(
                crate::contract::endpoint::EndpointKind::Unknown,
            )
        });
        r
    }

    /// The cause the endpoint names for a result, if any: for a pass or a warning the context first (it fails every
    /// Turn), then the outcome's own.
    fn cause(
        &self,
        r: &ModelResult,
        known: Option<&crate::contract::endpoint::Endpoint>,
        target: &Target,
    ) -> Option<crate::contract::endpoint::Cause> {
        use crate::contract::endpoint::{Cause, EndpointKind};
        let kind = known.map(|e| e.kind);
        // A result that is already an error keeps the cause its own line names; the context is the next run's.
        if r.level != crate::contract::outcome::Level::Error
            && let Some(c) = known.and_then(|e| endpoint::context_cause(e, target))
        {
            return Some(c);
        }
        let error = r.error.as_deref().unwrap_or("");
        match (r.outcome, r.code) {
            (Outcome::Text, _)
                if kind == Some(EndpointKind::LlamaCpp)
                    && known.and_then(|e| e.supports_tools) == Some(false) =>
            {
                Some(Cause::LlamaCppTemplateWithoutTools)
            }
            (_, Code::ToolsNotEnabled) if error.contains("--jinja") => {
                Some(Cause::LlamaCppWithoutJinja)
            }
            (_, Code::ToolsNotEnabled) => Some(Cause::VllmToolsNotEnabled),
            (Outcome::Unreachable, _) if render::hop_cause(error).is_some() => {
                render::hop_cause(error)
            }
            _ if kind == Some(EndpointKind::Litellm) => {
                let message = error.split_once(": ").map_or(error, |(_, m)| m);
                endpoint::gateway_backend_error(message)
                    .map(|error| Cause::GatewayBackendFailed { error })
            }
            _ => None,
        }
    }

    /// A busy model whose last retry got no answer before the model's deadline: busy (a warning; an error for
    /// Gemini and Vertex), and its `<error>` says the retry got no answer.
    fn busy_then_no_answer(
        &self,
        target: &Target,
        start: Instant,
        tries: Vec<Try>,
        status: Option<u16>,
        busy_error: &str,
    ) -> ModelResult {
        let mut r = self.finish(
            target,
            start,
            tries,
            status,
            Outcome::Busy,
            Code::Busy,
            None,
            None,
        );
        let waited = render::stalled_retry(&r).unwrap_or_default();
        r.error = Some(crate::sanitize::escape_truncate(
            &render::busy_then_no_answer_error(r.tries.len(), &render::seconds(waited), busy_error),
            crate::sanitize::MAX_ERROR_CHARS,
        ));
        r
    }

    /// The result of a model that did not finish: cut off by the run's deadline (timeout) or never reached
    /// (not checked). `waited` is the model's own time, from its start to the cut; `tries` the tries it had ended.
    pub fn unfinished(
        &self,
        target: &Target,
        outcome: Outcome,
        error: String,
        waited: Duration,
        tries: Vec<Try>,
    ) -> ModelResult {
        let status = tries.last().and_then(|t| t.status);
        let mut r = self.finish(
            target,
            Instant::now(),
            tries,
            status,
            outcome,
            outcome.default_code(),
            Some(error),
            None,
        );
        r.elapsed_ms = waited.as_millis() as u64;
        r
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

    fn conclude(
        &self,
        target: &Target,
        start: Instant,
        tries: Vec<Try>,
        attempt: Attempt,
    ) -> ModelResult {
        let cut = attempt.answer.len() >= stream::ANSWER_KEEP_BYTES;
        let answer =
            (!attempt.answer.is_empty()).then(|| self.redactor.clean_answer(&attempt.answer, cut));
        let status = attempt.status;
        match attempt.end {
            End::ToolCall { name } => {
                let mut r = self.finish(
                    target,
                    start,
                    tries,
                    status,
                    Outcome::Ok,
                    Code::Ok,
                    None,
                    answer,
                );
                r.tool_name = Some(self.redactor.clean_to(&name, 100));
                r
            }
            End::Text { stop } => {
                let mut r = self.finish(
                    target,
                    start,
                    tries,
                    status,
                    Outcome::Text,
                    Code::TextAnswer,
                    None,
                    answer,
                );
                r.stop_reason = stop.map(|s| self.redactor.clean_to(&s, 100));
                r
            }
            End::Length { stop } => {
                let stop_shown = self.redactor.clean_to(&stop, 40);
                let error = match (&attempt.call_complete, &attempt.call_arguments) {
                    (Some(name), _) => render::call_in_capped_message_error(
                        &stop_shown,
                        &self.redactor.clean_to(name, 100),
                        target.max_tokens,
                    ),
                    (None, Some(_)) => render::call_cut_error(&stop_shown, target.max_tokens),
                    (None, None) => format!(
                        "stop reason \"{stop_shown}\" before any tool call (the token cap sent was {})",
                        target.max_tokens
                    ),
                };
                use crate::contract::endpoint::Cause;
                let clamped = target.facts.context_window.filter(|w| {
                    *w > 0 && target.max_tokens >= crate::prompt::token_cap(u64::MAX, *w)
                });
                let cause = if attempt.call_arguments.is_some() {
                    Some(Cause::ToolCallCut)
                } else if let Some(context_window) = clamped {
                    // The window set the cap: that is what to change, whatever filled it.
                    Some(Cause::CapClamped { context_window })
                } else if attempt.reasoned || thought_in_content(&attempt.answer) {
                    Some(Cause::LengthWhileThinking)
                } else if answer.is_some() && target.max_tokens > 1 {
                    Some(Cause::TextUntilCap)
                } else {
                    None
                };
                let arguments = attempt.call_arguments.as_deref().map(|a| {
                    let cut = a.len() >= stream::ANSWER_KEEP_BYTES;
                    self.redactor.clean_answer(a, cut)
                });
                let mut r = self.finish(
                    target,
                    start,
                    tries,
                    status,
                    Outcome::Length,
                    Code::Length,
                    Some(error),
                    answer,
                );
                r.stop_reason = Some(self.redactor.clean_to(&stop, 100));
                // The tool the model called, when the call was complete: the cap stopped its message.
                r.tool_name = attempt
                    .call_complete
                    .as_deref()
                    .map(|n| self.redactor.clean_to(n, 100));
                r.findings.cause = cause;
                r.findings.tool_arguments = arguments;
                r
            }
            End::Fail {
                outcome,
                code,
                error,
            } => self.finish(
                target,
                start,
                tries,
                status,
                outcome,
                code,
                Some(error),
                answer,
            ),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish(
        &self,
        target: &Target,
        start: Instant,
        tries: Vec<Try>,
        http_status: Option<u16>,
        outcome: Outcome,
        code: Code,
        error: Option<String>,
        answer: Option<String>,
    ) -> ModelResult {
        let mut r = ModelResult {
            findings: Default::default(),
            model: target.model.clone(),
            id: target.id.clone(),
            api: target.api,
            base_url: self.redactor.display_url(target.base_url.as_str()),
            host: target.host(),
            route: target.route.clone(),
            outcome,
            level: outcome.level(target.api),
            code,
            next_action: code.next_action().to_owned(),
            error,
            http_status,
            stop_reason: None,
            tool_name: None,
            answer,
            max_tokens: target.max_tokens,
            elapsed_ms: start.elapsed().as_millis() as u64,
            tries,
        };
        r.next_action = render::next_action(&r);
        r
    }

    async fn attempt(
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
        a.seen = seen;
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
            seen: endpoint::Seen::from_headers(&headers).with_error(perr.as_ref()),
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
                    let end = judge.push(&bytes);
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
                    "HTTP 200, but the stream ended before the answer was complete (no stop reason, no end event)"
                        .to_owned()
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
            seen: endpoint::Seen::default(),
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

/// The look at llama-server's slots that runs beside a custom endpoint's tries ([`endpoint::slots_busy_before`]):
/// aborted when dropped, so a check that ends first leaves nothing running.
struct SlotsLook(tokio::task::JoinHandle<Option<u64>>);

impl SlotsLook {
    /// What the look saw: every slot busy (their number). It ends by the deadline, which has passed when this is
    /// asked.
    async fn seen(mut self) -> Option<u64> {
        (&mut self.0).await.ok().flatten()
    }
}

impl Drop for SlotsLook {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Text that is a model's thinking, written in `content` by a server without a reasoning parser: it opens with
/// `<think>` or holds its closing `</think>` (the chat template opened it). Cut by the cap, it was thinking, not a
/// text answer (issue 27, item 11).
fn thought_in_content(answer: &str) -> bool {
    answer.trim_start().starts_with("<think>") || answer.contains("</think>")
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
                || message.contains("tools param requires --jinja") =>
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

    #[test]
    fn endpoint_joins_without_double_slash() {
        use crate::api::endpoint;
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert_eq!(
            endpoint(&u("http://h:8000/v1"), "/chat/completions").as_str(),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            endpoint(&u("http://h:8000/v1/"), "/chat/completions").as_str(),
            "http://h:8000/v1/chat/completions"
        );
        assert_eq!(
            endpoint(&u("https://api.deepseek.com"), "/chat/completions").as_str(),
            "https://api.deepseek.com/chat/completions"
        );
    }
}
