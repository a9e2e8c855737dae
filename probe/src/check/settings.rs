//! A check's terms with its caller: the limits it runs under ([`Settings`]) and what it reports while it runs
//! ([`Progress`], to an [`Observer`]).

use std::time::Duration;

pub use crate::contract::events::WaitStage;
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
    /// pace): `provider: <model>: no verdict yet after <n> s of <timeout> s — <what the probe knows>`.
    Waiting {
        /// The model's index.
        index: usize,
        /// How long it has waited.
        waited: Duration,
        /// How far its try has come.
        stage: WaitStage,
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

tokio::task_local! {
    /// The stage of the try the current model's future runs, shared with its waiting notes ([`mark`]).
    static STAGE: std::sync::Arc<Marks>;
}

/// What a model's tries mark for its waiting notes.
#[derive(Debug, Default)]
struct Marks {
    /// How far the current try has come.
    stage: std::sync::atomic::AtomicU8,
    /// An answer named a server that is not Ollama (its headers): the notes ask no `/api/ps`.
    other_server: std::sync::atomic::AtomicBool,
}

/// A model's stage, read by its waiting notes while its tries run in [`Stage::scope`].
#[derive(Clone, Debug, Default)]
pub struct Stage(std::sync::Arc<Marks>);

impl Stage {
    /// Runs `work` with this stage as the one its tries [`mark`].
    pub async fn scope<F: std::future::Future>(&self, work: F) -> F::Output {
        STAGE.scope(self.0.clone(), work).await
    }

    /// The stage last marked (never one of the server's own words: those are the notes').
    pub fn get(&self) -> WaitStage {
        match self.0.stage.load(std::sync::atomic::Ordering::Relaxed) {
            1 => WaitStage::Headers,
            2 => WaitStage::Text,
            3 => WaitStage::ToolCall,
            _ => WaitStage::NoAnswer,
        }
    }

    /// An answer of an earlier try named a server that is not Ollama ([`mark_other_server`]).
    pub fn other_server(&self) -> bool {
        self.0
            .other_server
            .load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// How far the current try had come (outside a [`Stage::scope`]: `noAnswer`).
pub fn current() -> WaitStage {
    STAGE
        .try_with(|s| Stage(s.clone()).get())
        .unwrap_or_default()
}

/// Marks how far the current try has come (nothing outside a [`Stage::scope`]). The server's own words
/// (`ollamaLoaded`, `ollamaNotLoaded`) are no try's stage: marked, they are `noAnswer`.
pub fn mark(stage: WaitStage) {
    let n = match stage {
        WaitStage::NoAnswer | WaitStage::OllamaLoaded | WaitStage::OllamaNotLoaded => 0,
        WaitStage::Headers => 1,
        WaitStage::Text => 2,
        WaitStage::ToolCall => 3,
    };
    let _ = STAGE.try_with(|s| s.stage.store(n, std::sync::atomic::Ordering::Relaxed));
}

/// Marks that an answer named a server that is not Ollama (llama.cpp, uvicorn, LiteLLM's headers): the model's
/// waiting notes then ask no `GET /api/ps`.
pub fn mark_other_server() {
    let _ = STAGE.try_with(|s| {
        s.other_server
            .store(true, std::sync::atomic::Ordering::Relaxed)
    });
}
