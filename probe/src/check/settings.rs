//! A check's terms with its caller: the limits it runs under ([`Settings`]) and what it reports while it runs
//! ([`Progress`], to an [`Observer`]).

use std::time::Duration;

use crate::contract::verdict::{ModelResult, Try};
use crate::retry::RetryPolicy;

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
