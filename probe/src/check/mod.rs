//! Checking models: many at once within the limits (in all, and per endpoint), each under its own deadline, each
//! reporting its [`Progress`] as it goes.
//!
//! One model's check is in rooms of its own: `settings.rs` (the limits and the progress reports), `tries.rs` (one
//! model's tries, the waits between them and its deadline), `attempt.rs` (one try's request and answer),
//! [`stream`] (what the bytes of a 200 say), `conclude.rs` (the result the last try gives), `findings.rs` and
//! [`endpoint`] (what the server behind the base URL adds).
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use tokio::sync::Semaphore;

mod attempt;
mod conclude;
pub mod endpoint;
mod findings;
mod settings;
pub mod stream;
mod tries;

pub use attempt::classify_status;
pub use settings::{Observer, Progress, Settings, WaitStage};

use crate::contract::outcome::Outcome;
use crate::contract::verdict::{ModelResult, Try};
use crate::sanitize::Redactor;
use crate::target::Target;
use crate::transport::ClientFactory;
use conclude::Concluder;
use tries::Tries;

/// Checks models.
#[derive(Clone, Debug)]
pub struct Checker {
    factory: ClientFactory,
    redactor: Arc<Redactor>,
    settings: Settings,
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

    /// One model's tries ([`Tries::run`]), with a [`Progress::Waiting`] for each [`Settings::waiting_note`] it takes.
    async fn check_observed(
        &self,
        target: &Target,
        observer: Option<(usize, Observer<'_>)>,
    ) -> ModelResult {
        let Some((index, observe)) = observer else {
            return self.tries().run(target, None).await;
        };
        let pace = self.settings.waiting_note;
        let stage = settings::Stage::default();
        let tries = self.tries();
        let work = stage.scope(tries.run(target, observer));
        if pace.is_zero() {
            return work.await;
        }
        tokio::pin!(work);
        let start = tokio::time::Instant::now();
        let mut waited = pace;
        // A custom endpoint may be Ollama until an answer names another server: a note with no byte of an answer asks
        // its `/api/ps` whether the model is loaded (a queue) or not (a load), and says which (issue 38, item 4). The
        // look is bounded by half the pace, so it ends before the next note; the note waits for it.
        let mut may_be_ollama = endpoint::applies(target);
        let bound = endpoint::NOTE_LOOK.min(pace / 2);
        type Look = std::pin::Pin<Box<dyn std::future::Future<Output = endpoint::PsSaid> + Send>>;
        let mut look: Option<(Duration, Look)> = None;
        loop {
            tokio::select! {
                result = &mut work => return result,
                () = tokio::time::sleep_until(start + waited) => {
                    if waited < self.settings.timeout && look.is_none() {
                        let now = stage.get();
                        may_be_ollama &= !stage.other_server();
                        let client = (now == WaitStage::NoAnswer && may_be_ollama)
                            .then(|| self.factory.client_for(target.api, &target.base_url).ok())
                            .flatten();
                        match client {
                            Some((client, _)) => {
                                let asked = endpoint::ollama_lists(client, target.clone(), bound);
                                look = Some((waited, Box::pin(asked)));
                            }
                            None => observe(Progress::Waiting { index, waited, stage: now }),
                        }
                    }
                    waited += pace;
                }
                listed = async { look.as_mut().expect("guarded").1.as_mut().await }, if look.is_some() => {
                    let (at, _) = look.take().expect("guarded");
                    let said = match listed {
                        endpoint::PsSaid::Listed => WaitStage::OllamaLoaded,
                        endpoint::PsSaid::NotListed => WaitStage::OllamaNotLoaded,
                        endpoint::PsSaid::Silent => WaitStage::NoAnswer,
                        // Not Ollama: no more looks.
                        endpoint::PsSaid::NotOllama => {
                            may_be_ollama = false;
                            WaitStage::NoAnswer
                        }
                    };
                    // The answer may have begun while the look ran: then the try's stage is what the note knows.
                    let now = match stage.get() {
                        WaitStage::NoAnswer => said,
                        moved => moved,
                    };
                    observe(Progress::Waiting { index, waited: at, stage: now });
                }
            }
        }
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
        let mut r = self.concluder().finish(
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

    fn tries(&self) -> Tries<'_> {
        Tries {
            factory: &self.factory,
            redactor: &self.redactor,
            settings: self.settings,
        }
    }

    fn concluder(&self) -> Concluder<'_> {
        Concluder {
            redactor: &self.redactor,
        }
    }
}
