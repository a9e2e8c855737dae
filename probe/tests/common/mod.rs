//! Runs the real `jr2-probe` binary and reads what it wrote; checks in process against a TLS fake of a provider's
//! API, and the assertions the per-API tests share.

#![allow(dead_code)]

use std::process::Command;
use std::time::{Duration, Instant};

use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::target::Target;
use jr2_probe::verdict::{ModelResult, Origin, Route, Verdict};
use jr2_testkit::fake_provider::{FakeProvider, Handler, Recorded, TestCa};

/// What one run of the binary gave.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl Run {
    /// The stderr lines.
    pub fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    /// The verdict on stdout (`--output json`).
    pub fn verdict(&self) -> Verdict {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not a verdict ({e}):\n{}", self.stdout))
    }
}

/// Runs `jr2-probe <args>` with `envs` added to a clean environment (no proxy, no CA variables), in a blocking
/// thread so the test's own servers keep serving.
pub async fn probe(args: &[&str], envs: &[(&str, &str)]) -> Run {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let envs: Vec<(String, String)> = envs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tokio::task::spawn_blocking(move || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_jr2-probe"));
        cmd.args(&args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let start = Instant::now();
        let out = cmd.output().expect("run jr2-probe");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            elapsed: start.elapsed(),
        }
    })
    .await
    .expect("join")
}

/// The loopback warning every by-hand run against the fake prints first.
pub fn loopback_line(host: &str) -> String {
    jr2_probe::render::loopback_warning(host)
}

/// Checks `target` in this process, trusting the test CA in `ca_file` on top of Mozilla's roots, with the target's
/// key known to the redactor: what the per-API tests share.
pub async fn check_trusting(
    ca_file: &std::path::Path,
    target: &Target,
    timeout: Duration,
    max_tries: u32,
) -> ModelResult {
    use jr2_probe::check::{Checker, Settings};
    use jr2_probe::retry::RetryPolicy;
    use jr2_probe::sanitize::Redactor;
    use jr2_probe::transport::{CaFile, ClientFactory, Trust};
    let key = target.key_value().unwrap_or_default().to_owned();
    let trust = Trust::load(&[CaFile {
        source_name: "--ca-bundle".into(),
        path: ca_file.to_path_buf(),
    }])
    .unwrap();
    let settings = Settings {
        timeout,
        retry: RetryPolicy {
            max_tries,
            ..Default::default()
        },
        concurrency: 4,
        per_host: 4,
        waiting_note: Settings::DEFAULT_WAITING_NOTE,
    };
    Checker::new(
        ClientFactory::new(trust, Duration::from_secs(5)),
        Redactor::new([key]),
        settings,
    )
    .check(target)
    .await
}

// ---------------------------------------------------------------------------------------------------------------
// The per-API tests (`api_*.rs`): one TLS fake of a provider's API, the targets they build, and what they assert.

/// A TLS fake of one provider's API and the test CA its certificate chains to. Each `api_*.rs` file adds its own
/// target builders and its `check` (timeout, tries) in an `impl TlsFake` block of its own.
pub struct TlsFake {
    pub fake: FakeProvider,
    pub ca: TestCa,
}

impl TlsFake {
    /// Starts `handler` behind TLS, with a certificate for 127.0.0.1 from a fresh test CA.
    pub async fn start_with(handler: Handler) -> Self {
        let ca = TestCa::new(&["127.0.0.1"]);
        let fake = FakeProvider::start_with(handler, Some(&ca)).await;
        Self { fake, ca }
    }

    /// `https://<fake>`: scheme and host, no path.
    pub fn base(&self) -> reqwest::Url {
        reqwest::Url::parse(&format!("https://{}", self.fake.addr())).unwrap()
    }

    /// `<host>` of the lines: the fake's address.
    pub fn host(&self) -> String {
        self.fake.addr().to_string()
    }

    /// Checks `target` with [`check_trusting`], trusting this fake's CA.
    pub async fn check_trusting(
        &self,
        target: &Target,
        timeout: Duration,
        max_tries: u32,
    ) -> ModelResult {
        check_trusting(&self.ca.ca_file, target, timeout, max_tries).await
    }

    /// The one request the fake received; fails when it received none or more than one.
    #[track_caller]
    pub fn only_request(&self) -> Recorded {
        let all = self.fake.requests();
        assert_eq!(all.len(), 1, "{all:#?}");
        all.into_iter().next().unwrap()
    }
}

/// Takes the key out of a catalog target, as when no Harness pod holds one: no key, and `key_held: false`.
pub fn without_key(t: &mut Target) {
    t.key = None;
    match &mut t.route {
        Route::Catalog { key_held, .. } => *key_held = false,
        other => panic!("not a catalog route: {other:?}"),
    }
}

/// The status of each try, in order (`None` where no answer came).
pub fn statuses(r: &ModelResult) -> Vec<Option<u16>> {
    r.tries.iter().map(|t| t.status).collect()
}

/// The lines the probe prints for `r`, checked from this machine.
pub fn lines(r: &ModelResult) -> Vec<String> {
    jr2_probe::render::model_lines(r, &Origin::ThisMachine)
}

/// Asserts that the check ended as `outcome` / `code` at `level`.
#[track_caller]
pub fn assert_ended(r: &ModelResult, outcome: Outcome, code: Code, level: Level) {
    assert_eq!(
        (r.outcome, r.code, r.level),
        (outcome, code, level),
        "{r:#?}"
    );
}

/// Asserts that the check ended as `outcome` / `code` with exactly the error `error`.
#[track_caller]
pub fn assert_error(r: &ModelResult, outcome: Outcome, code: Code, error: &str) {
    assert_eq!((r.outcome, r.code), (outcome, code), "{r:#?}");
    assert_eq!(r.error.as_deref(), Some(error), "{r:#?}");
}

/// Asserts the tool call in one try: Ok / Ok / Pass, the tool `probe` called, no error, a single HTTP 200, and the
/// token cap `max_tokens` sent.
#[track_caller]
pub fn assert_tool_call(r: &ModelResult, max_tokens: u64) {
    assert_ended(r, Outcome::Ok, Code::Ok, Level::Pass);
    assert_eq!(r.tool_name.as_deref(), Some("probe"));
    assert_eq!(r.error, None);
    assert_eq!(r.http_status, Some(200));
    assert_eq!(statuses(r), [Some(200)]);
    assert_eq!(r.max_tokens, max_tokens);
}

/// Asserts a text answer instead of a tool call: Text / TextAnswer / Warning, the stop reason `stop_reason`, the
/// answer `answer`, no error, and exactly the one warning line for `model`.
#[track_caller]
pub fn assert_text_warning(r: &ModelResult, stop_reason: &str, answer: &str, model: &str) {
    assert_ended(r, Outcome::Text, Code::TextAnswer, Level::Warning);
    assert_eq!(r.stop_reason.as_deref(), Some(stop_reason));
    assert_eq!(r.answer.as_deref(), Some(answer));
    assert_eq!(r.error, None);
    assert_eq!(
        lines(r),
        [format!(
            "warning: provider: {model} answered the request of a Turn in text, not with a tool call"
        )]
    );
}

/// Asserts a stop at the token cap in one try: Length / Length / Error after a single HTTP 200, the stop reason
/// `stop_reason`, and the error `stop reason "<stop_reason>" before any tool call (the token cap sent was <cap>)`.
#[track_caller]
pub fn assert_length(r: &ModelResult, stop_reason: &str, cap: u64) {
    assert_ended(r, Outcome::Length, Code::Length, Level::Error);
    assert_eq!(r.stop_reason.as_deref(), Some(stop_reason));
    assert_eq!(
        r.error.as_deref(),
        Some(
            format!(
                "stop reason \"{stop_reason}\" before any tool call (the token cap sent was {cap})"
            )
            .as_str()
        )
    );
    assert_eq!(statuses(r), [Some(200)]);
}

/// Asserts a key the provider refused, in the catalog form: KeyRefused / KeyRefused / Error, the error `error`, and
/// exactly three lines: the failure of `model` toward `host` with `error`, the held secret `key_env` to look at, and
/// the private CA hint.
#[track_caller]
pub fn assert_refused_key_lines(
    r: &ModelResult,
    model: &str,
    host: &str,
    key_env: &str,
    error: &str,
) {
    assert_ended(r, Outcome::KeyRefused, Code::KeyRefused, Level::Error);
    assert_eq!(r.error.as_deref(), Some(error));
    assert_eq!(
        lines(r),
        [
            format!(
                "error: provider preflight failed for model \"{model}\" toward {host} (from this machine, direct, as a Turn calls it): {error}"
            ),
            format!(
                "  - the held secret {key_env} may be empty, wrong, or without access to this model (`secrets` in jr2.config.ts)"
            ),
            "  - a private CA on that path must be in harness.caBundle".to_owned(),
        ]
    );
}

/// Asserts busy after two HTTP 429s, as a warning: Busy / Busy / Warning, the statuses `[429, 429]`, and exactly the
/// one line that `model` is busy toward `host`, with the tries a Turn of its API makes (3 on Bedrock, one elsewhere).
#[track_caller]
pub fn assert_busy_warning(r: &ModelResult, model: &str, host: &str) {
    assert_ended(r, Outcome::Busy, Code::Busy, Level::Warning);
    assert_eq!(statuses(r), [Some(429), Some(429)]);
    let turn = if r.api == jr2_probe::api::ApiKind::BedrockConverseStream {
        "a Turn makes 3 tries (the AWS SDK's retries), so it can fail the same way"
    } else {
        "a Turn makes one try, so it can fail the same way"
    };
    assert_eq!(
        lines(r),
        [format!(
            "warning: provider: {model} is busy toward {host} after 2 tries (HTTP 429) — not confirmed; {turn}"
        )]
    );
    assert!(r.next_action.contains(turn), "{}", r.next_action);
}

/// Asserts unavailable after `tries` HTTP 503s: Unavailable / Unavailable / Error, one 503 a try, the error
/// `error`, and the 503 hint as the last line.
#[track_caller]
pub fn assert_unavailable(r: &ModelResult, tries: usize, error: &str) {
    assert_ended(r, Outcome::Unavailable, Code::Unavailable, Level::Error);
    assert_eq!(statuses(r), vec![Some(503); tries]);
    assert_eq!(r.error.as_deref(), Some(error));
    assert_eq!(
        lines(r).last().map(String::as_str),
        Some(
            "  - a 503 comes from a gateway with no backend, or from a server that still loads its model"
        )
    );
}

/// Asserts a check with no key held: KeyRefused / KeyRefused / Error, the error `error`, and as the second line the
/// hint to add `key_env` of `provider` to the secrets.
#[track_caller]
pub fn assert_no_key(r: &ModelResult, error: &str, provider: &str, key_env: &str) {
    assert_ended(r, Outcome::KeyRefused, Code::KeyRefused, Level::Error);
    assert_eq!(r.error.as_deref(), Some(error));
    assert_eq!(
        lines(r)[1],
        format!(
            "  - no Harness pod holds a key of {provider}: add {key_env} to `secrets` in jr2.config.ts"
        )
    );
}
