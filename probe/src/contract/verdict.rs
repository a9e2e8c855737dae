//! The machine-readable result: per model what happened, and the run's verdict.
//!
//! These types are the JSON `jr2 up` reads (`--output json`) and the driver builds its own verdict from; their
//! schema is `probe/schemas/verdict.v1.schema.json` (a test validates every verdict the suites produce against it).
//! Field names are camelCase for the TypeScript caller. Nothing in here may hold a secret value: every free text
//! went through [`crate::sanitize::Redactor`] before it was stored.

use serde::{Deserialize, Serialize};

use crate::contract::api_kind::ApiKind;
use crate::contract::endpoint::{Cause, ContextUnchecked, Endpoint};
use crate::contract::exit::Exit;
use crate::contract::outcome::{Code, Level, Outcome};

/// The verdict's schema identifier; bumped on any incompatible change.
pub const VERDICT_SCHEMA: &str = "jr2.dev/provider-preflight-verdict/v1";

/// How a model is reached: decides the form of its lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Route {
    /// The one custom provider (`harness.provider`), or an endpoint named by hand with `--base-url`.
    #[serde(rename_all = "camelCase")]
    Custom {
        /// A key is configured (`harness.provider.apiKey`; by hand: `--api-key-env`).
        api_key_set: bool,
        /// A `maxTokens` is configured for the model (per model or per provider; by hand: `--max-tokens` or its
        /// default). When not, jr2 builds the model with `maxTokens: 0` and a Turn asks for 1 token; the `length`
        /// error then says so. Absent in older JSON: true.
        #[serde(default = "yes")]
        max_tokens_set: bool,
    },
    /// A model of pi's catalog.
    #[serde(rename_all = "camelCase")]
    Catalog {
        /// The catalog provider (`anthropic`).
        provider: String,
        /// The pods hold a secret, so the call goes through a Custodian.
        via_custodian: bool,
        /// The key's env var: the held one, or (when no pod holds one) the one to add.
        key_env: String,
        /// Whether a Harness pod holds that key.
        key_held: bool,
        /// A `harness.catalog` gateway serves the provider.
        gateway: bool,
    },
}

fn yes() -> bool {
    true
}

impl Route {
    /// A custom provider or a gateway may serve a model that loads on first use: its timeout says so.
    pub fn may_load_on_first_use(&self) -> bool {
        matches!(
            self,
            Route::Custom { .. } | Route::Catalog { gateway: true, .. }
        )
    }
}

/// Where the check ran: the `<where>` of the lines.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Origin {
    /// By hand.
    ThisMachine,
    /// In a check pod.
    Node {
        /// The node's name.
        name: String,
    },
}

/// Time marks of one try, in milliseconds from the try's start. `None` when it did not happen (a reused
/// connection has no connect, a plain-HTTP endpoint no TLS, a failed try no first byte).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// The host name was resolved (not measured behind a proxy or for an IP literal).
    pub dns_ms: Option<u64>,
    /// The server's certificate was verified (TLS handshake).
    pub tls_ms: Option<u64>,
    /// The connection was ready: TCP, proxy tunnel and TLS.
    pub connect_ms: Option<u64>,
    /// The response headers arrived.
    pub first_byte_ms: Option<u64>,
    /// The first tool-call event arrived.
    pub tool_call_ms: Option<u64>,
    /// The try ended.
    pub total_ms: u64,
}

/// One HTTP try.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Try {
    /// 1 for the first try.
    pub n: u32,
    /// The HTTP status, when one came back.
    pub status: Option<u16>,
    /// What this try ended with.
    pub outcome: Outcome,
    /// The wait the server asked for before the next try, in milliseconds.
    pub wait_asked_ms: Option<u64>,
    /// The wait taken before the next try, in milliseconds (0 after the last try).
    pub wait_taken_ms: u64,
    /// The try's time marks.
    pub timings: Timings,
}

/// What one model's check ended with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelResult {
    /// The model as the plan (or `--model`) names it.
    pub model: String,
    /// The id sent in the request.
    pub id: String,
    /// The API kind.
    pub api: ApiKind,
    /// The base URL the request went to.
    pub base_url: String,
    /// `<host>` of the lines: the base URL's host, with `:port` when the URL names one.
    pub host: String,
    /// How the model is reached.
    pub route: Route,
    /// The outcome.
    pub outcome: Outcome,
    /// Pass, warning or error.
    pub level: Level,
    /// The stable code.
    pub code: Code,
    /// What to do next.
    pub next_action: String,
    /// `<error>`: one sanitized line, at most 300 characters. `None` on a pass.
    pub error: Option<String>,
    /// The last HTTP status.
    pub http_status: Option<u16>,
    /// The stop reason the model gave, if any.
    pub stop_reason: Option<String>,
    /// The tool the model called.
    pub tool_name: Option<String>,
    /// The start of a text answer (sanitized, 300 characters at most).
    pub answer: Option<String>,
    /// The token cap sent.
    pub max_tokens: u64,
    /// Milliseconds from the model's start to its result.
    pub elapsed_ms: u64,
    /// Every try.
    pub tries: Vec<Try>,
    /// What the endpoint told beyond the outcome (its kind, the cause it named, a cut call's arguments).
    #[serde(flatten)]
    pub findings: Findings,
}

/// What a model's check learned beyond its outcome: `null` (or `false`) in the JSON when nothing was learned; absent in
/// the JSON of an older probe.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Findings {
    /// The server behind the base URL, as far as the answer and its metadata told.
    #[serde(default)]
    pub endpoint: Option<Endpoint>,
    /// The cause the endpoint named: one line after the contract's lines, and the next action.
    #[serde(default)]
    pub cause: Option<Cause>,
    /// The first tool call's arguments as far as they came (redacted, at most 300 characters), when the call was
    /// cut before they were complete.
    #[serde(default)]
    pub tool_arguments: Option<String>,
    /// The plan asked for the probe's tool by name (`toolChoice: named`) and the model answered as if it could
    /// choose (in text, or with another tool).
    #[serde(default)]
    pub tool_choice_ignored: bool,
    /// The served context could not be learned, so it was not checked (a gateway that names no context for the
    /// model, or a server whose metadata gives none), when a window was configured or a gateway answered: its line
    /// follows the model's lines (issue 27, item 6).
    #[serde(default)]
    pub context_unchecked: Option<ContextUnchecked>,
    /// Ollama answered, and does to the request a Turn sends what the verdict cannot show (issue 38): each its note
    /// line after the model's lines. Empty for any other server.
    #[serde(default)]
    pub ollama_drops: Vec<OllamaDrop>,
}

/// Something of a Turn's request Ollama drops or overrides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OllamaDrop {
    /// The cap is sent as `max_completion_tokens`, which Ollama ignores (it honours `max_tokens`): nothing stops a
    /// model that writes on.
    MaxCompletionTokens,
    /// The system prompt is sent as a `developer` message, which Ollama's templates do not render: the model never
    /// sees it.
    DeveloperRole,
    /// The request names no temperature, and Ollama's `/v1` then samples at 1.0 (over the Modelfile's): a text
    /// answer this time can be a call the next.
    Temperature,
}

impl ModelResult {
    /// The timings of the last try (the one the verdict rests on).
    pub fn last_timings(&self) -> Timings {
        self.tries.last().map(|t| t.timings).unwrap_or_default()
    }
}

/// The run's verdict: what `--output json` prints on stdout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    /// [`VERDICT_SCHEMA`].
    pub schema: String,
    /// The probe's version.
    pub probe_version: String,
    /// Where the check ran.
    pub origin: Origin,
    /// No model failed (warnings allowed).
    pub ok: bool,
    /// The process's exit code: 0 or 1 ([`Exit::of_run`]).
    pub exit_code: i32,
    /// Models whose level is error.
    pub errors: usize,
    /// Models whose level is warning.
    pub warnings: usize,
    /// UTC start, RFC 3339.
    pub started_at: String,
    /// Milliseconds the run took.
    pub elapsed_ms: u64,
    /// Per model, in the order given.
    pub models: Vec<ModelResult>,
    /// The lines written on stderr, in order.
    pub lines: Vec<String>,
}

impl Verdict {
    /// Builds the verdict from the results, in order, and the lines rendered for them.
    pub fn new(
        origin: Origin,
        started_at: std::time::SystemTime,
        elapsed: std::time::Duration,
        models: Vec<ModelResult>,
        lines: Vec<String>,
    ) -> Self {
        let errors = models.iter().filter(|m| m.level == Level::Error).count();
        let warnings = models.iter().filter(|m| m.level == Level::Warning).count();
        Self {
            schema: VERDICT_SCHEMA.to_owned(),
            probe_version: env!("CARGO_PKG_VERSION").to_owned(),
            origin,
            ok: errors == 0,
            exit_code: Exit::of_run(errors == 0).into(),
            errors,
            warnings,
            started_at: rfc3339_utc(started_at),
            elapsed_ms: elapsed.as_millis() as u64,
            models,
            lines,
        }
    }
}

/// `2026-11-29T18:36:47.123Z`: UTC, millisecond precision, without a date library.
pub fn rfc3339_utc(t: std::time::SystemTime) -> String {
    let since = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn rfc3339_matches_known_instants() {
        assert_eq!(rfc3339_utc(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_millis(1_796_409_407_123)),
            "2026-12-04T18:36:47.123Z"
        );
        assert_eq!(
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(951_782_400)),
            "2000-02-29T00:00:00.000Z"
        );
    }
}
