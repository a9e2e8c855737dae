//! `jr2-probe check` against the fake OpenAI-compatible provider: every outcome of the contract's section 4 that a
//! custom endpoint can produce, the exact lines of section 5, the request a Turn sends, the tries, and bad input.

mod common;

use common::{loopback_line, probe};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_testkit::provider::FakeProvider;
use jr2_testkit::provider::openai_completions::GOOD_KEY;

const HINTS: [&str; 4] = [
    "  - localhost never works from a pod; use a LAN address",
    "  - the model id must be exactly what the endpoint serves (vLLM: GET /v1/models)",
    "  - vLLM needs --enable-auto-tool-choice and a matching --tool-call-parser",
    "  - stop reason \"length\" means the model ran out of tokens before the call (a thinking model reasons first)",
];
const KEY_HINT: &str =
    "  - the held secret JR2_PROVIDER_API_KEY may be wrong (harness.provider.apiKey)";

fn host(fake: &FakeProvider) -> String {
    fake.addr().to_string()
}

fn error_line(fake: &FakeProvider, model: &str, error: &str) -> String {
    format!(
        "error: provider preflight failed for model \"{model}\" against {} (from this machine, as a Turn calls it): {error}",
        host(fake)
    )
}

async fn check(fake: &FakeProvider, models: &[&str], extra: &[&str]) -> common::Run {
    let base = fake.base_url();
    let mut args = vec!["check", "--base-url", base.as_str(), "--output", "json"];
    for m in models {
        args.extend(["--model", m]);
    }
    args.extend(extra);
    probe(&args, &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_passes_and_the_request_is_the_one_a_turn_sends() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["ok"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines = run.lines();
    assert_eq!(lines[0], loopback_line(&host(&fake)));
    assert!(
        lines[1].starts_with("provider: ok completed a tool call ("),
        "{}",
        lines[1]
    );
    assert!(lines[1].ends_with(" ms)"));
    assert_eq!(lines.len(), 2);

    let v = run.verdict();
    let m = &v.models[0];
    assert_eq!(
        (m.outcome, m.level, m.code),
        (Outcome::Ok, Level::Pass, Code::Ok)
    );
    assert_eq!(m.tool_name.as_deref(), Some("probe"));
    assert_eq!(m.tries.len(), 1);
    let t = m.tries[0].timings;
    assert!(
        t.connect_ms.is_some() && t.first_byte_ms.is_some() && t.tool_call_ms.is_some(),
        "{t:?}"
    );
    assert!(t.connect_ms <= t.first_byte_ms && t.first_byte_ms <= t.tool_call_ms);

    let reqs = fake.requests_for("ok");
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        r.header("authorization"),
        Some("Bearer unused"),
        "pi sends `unused` when no key is set"
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    let b = &r.body;
    assert_eq!(b["messages"][0]["role"], "developer");
    assert_eq!(b["messages"][1]["content"][0]["type"], "text");
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"]["include_usage"], true);
    assert_eq!(b["store"], false);
    assert_eq!(b["max_completion_tokens"], 1024);
    assert_eq!(b["tools"][0]["type"], "function");
    assert_eq!(b["tools"][0]["function"]["name"], "probe");
    assert_eq!(b["tools"][0]["function"]["strict"], false);
    assert!(b.get("tool_choice").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn token_cap_and_tool_choice_follow_the_flags() {
    let fake = FakeProvider::start().await;
    let run = check(
        &fake,
        &["ok"],
        &["--max-tokens", "0", "--tool-choice", "named"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let b = &fake.requests_for("ok")[0].body;
    assert_eq!(
        b["max_completion_tokens"], 1,
        "maxTokens 0 is sent as 1, as pi does"
    );
    assert_eq!(b["tool_choice"]["function"]["name"], "probe");
}

#[tokio::test(flavor = "multi_thread")]
async fn text_answer_is_a_warning() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["text"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.lines()[1],
        "warning: provider: text answered the request of a Turn in text, not with a tool call"
    );
    let m = &run.verdict().models[0];
    assert_eq!((m.outcome, m.level), (Outcome::Text, Level::Warning));
    assert!(
        m.answer
            .as_deref()
            .unwrap()
            .starts_with("I would call the probe tool")
    );
    assert_eq!(m.stop_reason.as_deref(), Some("stop"));
}

#[tokio::test(flavor = "multi_thread")]
async fn length_stop_is_an_error_with_the_four_hints() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["length"], &[]).await;
    assert_eq!(run.code, 1);
    let mut want = vec![
        loopback_line(&host(&fake)),
        error_line(
            &fake,
            "length",
            "stop reason \"length\" before any tool call (the token cap sent was 1024)",
        ),
    ];
    want.extend(HINTS.map(String::from));
    // The fake streams no reasoning: after the contract's four hints, the line that says the model wrote text
    // until the cap (issue 16).
    let m = run.verdict().models[0].clone();
    want.push(
        jr2_probe::render::cause_line(&jr2_probe::contract::endpoint::Cause::TextUntilCap, &m)
            .unwrap(),
    );
    assert_eq!(run.lines(), want);
    assert_eq!(m.code, Code::Length);
}

/// Issue 27, item 5: a complete call is not the verdict; the message's stop reason is. The whole call, then `length`:
/// a `length` error naming the tool, since pi-agent-core fails every call of a message the cap stopped; the whole
/// call, then no stop before the deadline: a timeout that says the call came.
#[tokio::test(flavor = "multi_thread")]
async fn a_complete_call_in_a_message_the_cap_stopped_is_length() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["call-then-length"], &["--max-tokens", "24"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let error = jr2_probe::render::call_in_capped_message_error("length", "probe", 24);
    let mut want = vec![
        loopback_line(&host(&fake)),
        error_line(&fake, "call-then-length", &error),
    ];
    want.extend(HINTS.iter().map(|h| h.to_string()));
    want.push("  - the tool call was complete, and the cap of 24 tokens stopped its message: a Turn runs no tool call of a message the cap stopped (pi-agent-core fails them all, their arguments may be cut); raise maxTokens".to_owned());
    assert_eq!(run.lines(), want);
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code, m.tool_name.as_deref()),
        (Outcome::Length, Level::Error, Code::Length, Some("probe"))
    );
    assert_eq!(m.stop_reason.as_deref(), Some("length"));
    assert_eq!(
        m.findings.tool_arguments.as_deref(),
        Some("{\"status\":\"ready\"}")
    );
    assert_eq!(m.next_action, jr2_probe::render::CAPPED_CALL_NEXT_ACTION);
    assert!(m.tries[0].timings.tool_call_ms.is_some());

    let run = check(&fake, &["call-then-stall"], &["--timeout", "1s"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let m = &run.verdict().models[0];
    assert_eq!((m.outcome, m.code), (Outcome::Timeout, Code::Timeout));
    let error = m.error.as_deref().unwrap();
    assert!(
        error.starts_with("a tool call came in ")
            && error
                .ends_with(" s, and its message did not stop in 1 s (a Turn waits for the stop)"),
        "{error}"
    );
    assert_eq!(run.lines()[1], error_line(&fake, "call-then-stall", error));
}

#[tokio::test(flavor = "multi_thread")]
async fn vllm_without_tool_parser_names_its_message() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["vllm-no-parser"], &[]).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1],
        error_line(
            &fake,
            "vllm-no-parser",
            "HTTP 400: \"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set"
        )
    );
    assert_eq!(run.lines()[2..], HINTS);
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.code, m.http_status),
        (Outcome::Http, Code::ToolsNotEnabled, Some(400))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn model_not_found_with_a_key_adds_the_fifth_line() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "missing",
            "--api-key-env",
            "K",
            "-o",
            "json",
        ],
        &[("K", GOOD_KEY)],
    )
    .await;
    assert_eq!(run.code, 1);
    let mut want = vec![
        loopback_line(&host(&fake)),
        error_line(
            &fake,
            "missing",
            "HTTP 404: The model `missing` does not exist.",
        ),
    ];
    want.extend(HINTS.map(String::from));
    want.push(KEY_HINT.to_owned());
    assert_eq!(run.lines(), want);
    assert_eq!(run.verdict().models[0].code, Code::ModelNotFound);
    assert_eq!(
        fake.requests()[0].header("authorization"),
        Some(format!("Bearer {GOOD_KEY}").as_str())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn key_refused_gives_the_two_line_form() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    // No key: the endpoint wants one.
    let run = check(&fake, &["auth"], &[]).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1..],
        [
            error_line(&fake, "auth", "HTTP 401: Unauthorized"),
            "  - the endpoint wants a key: set harness.provider.apiKey".to_owned(),
            HINTS[1].to_owned(),
        ]
    );
    // A wrong key: it may be wrong.
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "auth",
            "--api-key-env",
            "K",
        ],
        &[("K", "sk-wrong-key-000000000")],
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1..],
        [
            error_line(&fake, "auth", "HTTP 401: Unauthorized"),
            KEY_HINT.to_owned(),
            HINTS[1].to_owned()
        ]
    );
    // The right key passes.
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "auth",
            "--api-key-env",
            "K",
        ],
        &[("K", GOOD_KEY)],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_key_never_reaches_the_output() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let secret = "sk-live-do-not-print-me-42";
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "echo-key",
            "--api-key-env",
            "K",
            "-o",
            "json",
        ],
        &[("K", secret)],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(
        fake.requests()[0]
            .header("authorization")
            .unwrap()
            .contains(secret),
        "the key was sent"
    );
    assert!(
        !run.stdout.contains(secret) && !run.stderr.contains(secret),
        "{}\n{}",
        run.stderr,
        run.stdout
    );
    assert!(
        run.lines()[1].contains("Incorrect API key provided: [redacted]."),
        "{}",
        run.lines()[1]
    );
    // Not in argv either: the key is named, never passed.
    assert!(!std::env::args().any(|a| a.contains(secret)));
}

#[tokio::test(flavor = "multi_thread")]
async fn busy_after_every_try_is_a_warning_and_every_try_is_recorded() {
    let fake = FakeProvider::start().await;
    for (model, status) in [("rate-limited", 429u16), ("overloaded", 529)] {
        let run = check(&fake, &[model], &[]).await;
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(
            run.lines()[1],
            format!(
                "warning: provider: {model} is busy toward {} after 4 tries (HTTP {status}) — not confirmed; a Turn makes one try, so it can fail the same way",
                host(&fake)
            )
        );
        let m = &run.verdict().models[0];
        assert_eq!(
            (m.outcome, m.level, m.http_status),
            (Outcome::Busy, Level::Warning, Some(status))
        );
        assert_eq!(m.tries.len(), 4);
        assert!(
            m.tries
                .iter()
                .all(|t| t.status == Some(status) && t.wait_asked_ms == Some(0))
        );
        assert_eq!(fake.requests_for(model).len(), 4);
    }
}

/// Issue 12, item 2: a 429, then a retry that never gets an answer, is busy (a warning), and its line says the
/// retry got no answer (before: a `timeout` error, "it can be a model that loads on first use").
#[tokio::test(flavor = "multi_thread")]
async fn a_429_then_a_retry_with_no_answer_is_a_busy_warning() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["rate-limited-then-stall"], &["--timeout", "2s"]).await;
    assert_eq!(run.code, 0, "busy is a warning: {}", run.stderr);
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.level, m.code, m.http_status),
        (Outcome::Busy, Level::Warning, Code::Busy, Some(429))
    );
    let statuses: Vec<_> = m.tries.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Some(429), None]);
    // The stalled retry's own time, to a tenth of a second: what the line says.
    let waited = jr2_probe::render::stalled_retry(m).expect("the retry stalled");
    assert!(
        waited > std::time::Duration::from_secs(1) && waited <= std::time::Duration::from_secs(2),
        "{waited:?}"
    );
    let seconds = jr2_probe::render::seconds(waited);
    assert_eq!(
        run.lines()[1],
        format!(
            "warning: provider: rate-limited-then-stall is busy toward {} after 2 tries (HTTP 429) and the retry got no answer in {seconds} s — not confirmed; a Turn makes one try, so it can fail the same way",
            host(&fake)
        )
    );
    assert_eq!(
        m.error.as_deref(),
        Some(
            format!(
                "the retry got no answer in {seconds} s, after HTTP 429: Rate limit reached for requests"
            )
            .as_str()
        )
    );
    assert_eq!(run.lines().len(), 2, "{:?}", run.lines());
}

/// Issue 12, item 14: one try reads `after 1 try`; an overload that came inside a 200's stream is not `(HTTP 200)`.
#[tokio::test(flavor = "multi_thread")]
async fn busy_after_one_try_and_an_overload_in_the_stream_read_as_they_happened() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["rate-limited"], &["--max-tries", "1"]).await;
    assert_eq!(
        run.lines()[1],
        format!(
            "warning: provider: rate-limited is busy toward {} after 1 try (HTTP 429) — not confirmed; a Turn makes one try, so it can fail the same way",
            host(&fake)
        )
    );
    let run = check(&fake, &["overloaded-after-200"], &["--max-tries", "2"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m = &run.verdict().models[0];
    assert_eq!((m.outcome, m.http_status), (Outcome::Busy, Some(200)));
    assert_eq!(
        run.lines()[1],
        format!(
            "warning: provider: overloaded-after-200 is busy toward {} after 2 tries (an overload in the stream) — not confirmed; a Turn makes one try, so it can fail the same way",
            host(&fake)
        )
    );
}

/// Issue 12, item 14: a key that equals a word the provider's message holds is still a key, so the word is
/// redacted from what is shown; the message is classified as it came (here vLLM's tool-choice flags), not as
/// redacted.
#[tokio::test(flavor = "multi_thread")]
async fn a_key_that_is_a_word_is_redacted_and_the_message_classified_as_it_came() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "vllm-no-parser",
            "--api-key-env",
            "VLLM_KEY",
            "-o",
            "json",
        ],
        &[("VLLM_KEY", "choice")],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let m = &run.verdict().models[0];
    assert_eq!(m.code, Code::ToolsNotEnabled);
    assert_eq!(
        m.error.as_deref(),
        Some(
            "HTTP 400: \"auto\" tool [redacted] requires --enable-auto-tool-[redacted] and --tool-call-parser to be set"
        )
    );
    assert!(!run.stdout.contains("choice requires"), "{}", run.stdout);
    assert!(!run.stderr.contains("choice requires"), "{}", run.stderr);
}

/// Issue 12, item 14: an explicit `:443` in the base URL stays in `<host>` (a parsed URL drops it).
#[tokio::test(flavor = "multi_thread")]
async fn an_explicit_default_port_stays_in_the_host() {
    let run = probe(
        &[
            "check",
            "--base-url",
            "https://127.0.0.1:443/v1",
            "--model",
            "m",
            "--timeout",
            "2s",
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(run.lines()[0], loopback_line("127.0.0.1:443"));
    assert!(
        run.lines()[1].starts_with(
            "error: provider preflight failed for model \"m\" against 127.0.0.1:443 (from this machine"
        ),
        "{}",
        run.stderr
    );
    assert_eq!(run.verdict().models[0].host, "127.0.0.1:443");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_429_then_ok_passes_after_its_retries() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["rate-limited-2"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Ok);
    let statuses: Vec<_> = m.tries.iter().map(|t| t.status).collect();
    assert_eq!(statuses, [Some(429), Some(429), Some(200)]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_503_on_every_try_is_an_error_with_the_503_line() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["unavailable"], &["--max-tries", "2"]).await;
    assert_eq!(run.code, 1);
    let mut want = vec![
        loopback_line(&host(&fake)),
        error_line(&fake, "unavailable", "HTTP 503: Loading model"),
    ];
    want.extend(HINTS.map(String::from));
    want.push("  - a 503 comes from a gateway with no backend, or from a server that still loads its model".into());
    assert_eq!(run.lines(), want);
    let m = &run.verdict().models[0];
    assert_eq!((m.outcome, m.tries.len()), (Outcome::Unavailable, 2));
    // A server that loaded in the meantime passes.
    let run = check(&fake, &["unavailable-1"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[tokio::test(flavor = "multi_thread")]
async fn quota_and_huge_waits_are_not_retried() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["quota"], &[]).await;
    assert_eq!(run.code, 1);
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.code, m.tries.len()),
        (Outcome::Http, Code::QuotaExhausted, 1)
    );

    let run = check(&fake, &["retry-after-huge"], &[]).await;
    assert_eq!(run.code, 0, "busy stays a warning");
    let m = &run.verdict().models[0];
    assert_eq!((m.outcome, m.tries.len()), (Outcome::Busy, 1));
    assert_eq!(m.tries[0].wait_asked_ms, Some(99_999_000));
    assert_eq!(m.tries[0].wait_taken_ms, 0);
    assert!(
        run.elapsed.as_secs() < 30,
        "a requested wait over 60 s is not waited: {:?}",
        run.elapsed
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_as_an_http_date_is_honoured() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["retry-after-date"], &["--max-tries", "2"]).await;
    let m = &run.verdict().models[0];
    assert_eq!(m.tries.len(), 2);
    let asked = m.tries[0].wait_asked_ms.expect("a wait was asked");
    assert!(asked <= 2000, "{asked}");
    assert_eq!(
        m.tries[0].wait_taken_ms, asked,
        "the asked wait is the wait taken"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn errors_inside_a_200_stream() {
    let fake = FakeProvider::start().await;
    let run = check(
        &fake,
        &["error-after-200", "overloaded-after-200", "finish-error"],
        &["--max-tries", "2"],
    )
    .await;
    assert_eq!(run.code, 1);
    let v = run.verdict();
    assert_eq!(
        (v.models[0].outcome, v.models[0].code),
        (Outcome::Http, Code::StreamError)
    );
    assert_eq!(
        v.models[0].error.as_deref(),
        Some("HTTP 200, then an error in the stream: the backend dropped the request")
    );
    assert_eq!(
        (v.models[1].outcome, v.models[1].tries.len()),
        (Outcome::Busy, 2),
        "overload in a stream is retried"
    );
    assert_eq!(v.models[2].code, Code::StreamError);
}

#[tokio::test(flavor = "multi_thread")]
async fn stalls_end_at_the_deadline_with_the_load_hint() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["stall", "stall-mid-stream"], &["--timeout", "1s"]).await;
    assert_eq!(run.code, 1);
    let err = "no answer in 1 s — it can be a model that loads on first use: run jr2 up again once it has loaded";
    let lines = run.lines();
    assert_eq!(lines[1], error_line(&fake, "stall", err));
    assert_eq!(lines[6], error_line(&fake, "stall-mid-stream", err));
    let v = run.verdict();
    assert!(v.models.iter().all(|m| m.outcome == Outcome::Timeout));
    // Checked at once, so both stalls share one deadline; the process does not outlive it by much.
    assert!(run.elapsed.as_secs_f64() < 1.0 + 2.0, "{:?}", run.elapsed);
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_that_are_not_the_api_format() {
    let fake = FakeProvider::start().await;
    let run = check(
        &fake,
        &["html-502", "json-200", "garbage", "truncated"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    let v = run.verdict();
    assert_eq!(
        v.models[0].error.as_deref(),
        Some("HTTP 502: 502 Bad Gateway")
    );
    assert_eq!(v.models[0].code, Code::HttpError);
    for m in &v.models[1..] {
        assert_eq!(m.outcome, Outcome::Protocol, "{m:?}");
    }
    assert_eq!(
        v.models[1].error.as_deref(),
        Some("HTTP 200, but the answer is one JSON document, not the event stream a Turn reads")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_endless_line_is_refused_without_buffering_it() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["no-newline-2000000"], &["--timeout", "10s"]).await;
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Protocol);
    assert!(
        m.error
            .as_deref()
            .unwrap()
            .contains("longer than 1048576 bytes"),
        "{m:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lines_come_out_in_the_order_given_whatever_the_completion_order() {
    let fake = FakeProvider::start().await;
    let run = check(&fake, &["ok-delay-400", "missing", "ok"], &[]).await;
    assert_eq!(run.code, 1);
    let lines = run.lines();
    assert!(
        lines[1].starts_with("provider: ok-delay-400 completed a tool call"),
        "{lines:?}"
    );
    assert!(lines[2].starts_with("error: provider preflight failed for model \"missing\""));
    assert!(
        lines[7].starts_with("provider: ok completed a tool call"),
        "{lines:?}"
    );
    let names: Vec<_> = run
        .verdict()
        .models
        .iter()
        .map(|m| m.model.clone())
        .collect();
    assert_eq!(names, ["ok-delay-400", "missing", "ok"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_refused_is_unreachable() {
    // A port that was just free: bind, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let run = probe(
        &["check", "--base-url", &base, "--model", "m", "-o", "json"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.lines()[1],
        format!(
            "error: provider preflight failed for model \"m\" against 127.0.0.1:{port} (from this machine, as a Turn calls it): connection refused"
        )
    );
    assert_eq!(run.verdict().models[0].code, Code::Unreachable);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_one_error_line_naming_the_flag_and_exit_2() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 10] = [
        (
            &["check", "--base-url", "ftp://h/v1", "--model", "m"],
            &[],
            "error: --base-url: \"ftp://h/v1\": the scheme must be http or https",
        ),
        (
            &["check", "--base-url", "not a url", "--model", "m"],
            &[],
            "error: --base-url: \"not a url\" is not a URL (relative URL without a base)",
        ),
        (
            &["check", "--base-url", "http://h/v1"],
            &[],
            "error: the following required arguments were not provided: --model <ID> (see jr2-probe check --help)",
        ),
        (
            &[
                "check",
                "--base-url",
                "http://h/v1",
                "--model",
                "m",
                "--api",
                "openai-chat",
            ],
            &[],
            "error: --api: unknown api kind \"openai-chat\" (pi's kinds: openai-completions, anthropic-messages, openai-responses, azure-openai-responses, openai-codex-responses, google-generative-ai, google-vertex, mistral-conversations, bedrock-converse-stream)",
        ),
        (
            &[
                "check",
                "--base-url",
                "http://h/v1",
                "--model",
                "m",
                "--api-key-env",
                "NOPE",
            ],
            &[],
            "error: --api-key-env: the environment variable NOPE is not set (or not UTF-8)",
        ),
        (
            &[
                "check",
                "--base-url",
                "http://h/v1",
                "--model",
                "m",
                "--ca-bundle",
                "/nonexistent/ca.pem",
            ],
            &[],
            "error: --ca-bundle: cannot read the CA file /nonexistent/ca.pem named by --ca-bundle: No such file or directory (os error 2)",
        ),
        (
            &[
                "check",
                "--base-url",
                "http://h/v1",
                "--model",
                "m",
                "--timeout",
                "soon",
            ],
            &[],
            "error: invalid value 'soon' for '--timeout <DURATION>': \"soon\" is not a duration (e.g. 120s, 2m, 500ms) (see jr2-probe check --help)",
        ),
        // The probe's spec errors, worded with this command line's flags.
        (
            &["check", "--base-url", "http://u:pw@h/v1", "--model", "m"],
            &[],
            "error: --base-url: must not carry credentials; put the key in an environment variable and name it with --api-key-env",
        ),
        (
            &["check", "--model", "anthropic/claude-nope-9"],
            &[],
            "error: --model: model \"anthropic/claude-nope-9\" is not in pi's catalog (@earendil-works/pi-ai 0.82.1); name its endpoint with --base-url and --api to check it anyway",
        ),
        (
            &[
                "check",
                "--gateway",
                "https://litellm.corp.example?x=1",
                "--model",
                "anthropic/claude-haiku-4-5",
            ],
            &[],
            "error: --gateway: \"https://litellm.corp.example?[redacted]\" must not have a query or a fragment",
        ),
    ];
    for (args, envs, want) in cases {
        let run = probe(args, envs).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.lines(), [want], "{args:?}");
        assert!(run.stdout.is_empty());
    }
}

/// A model id is printed in every line: a control, bidi or invisible character in it is bad input, by hand (custom
/// and catalog) and in a run spec, one escaped `error:` line and exit 2 (issue 11, item 5).
#[tokio::test(flavor = "multi_thread")]
async fn a_model_id_with_a_control_bidi_or_invisible_character_is_bad_input() {
    let spec = serde_json::json!({
        "schema": "jr2.dev/provider-preflight-run/v1",
        "models": [{"model": "vllm/m\u{202e}x", "source": "custom", "baseUrl": "http://h/v1"}],
    })
    .to_string();
    let cases: [(&[&str], &str); 3] = [
        (
            &[
                "check",
                "--base-url",
                "http://h/v1",
                "--model",
                "m\u{1b}[31m\nerror: forged",
            ],
            "error: --model: model \"m\\u{1b}[31m\\nerror: forged\" has a control character (U+001B); a model id is printed in every line, so control, bidi and invisible characters are refused",
        ),
        (
            &["check", "--model", "anthropic/claude-haiku-4-5\u{200b}"],
            "error: --model: model \"anthropic/claude-haiku-4-5\\u{200b}\" has an invisible character (U+200B); a model id is printed in every line, so control, bidi and invisible characters are refused",
        ),
        (
            &[
                "run",
                "--spec-json",
                &spec,
                "--termination-log",
                "/dev/null",
            ],
            "error: models[0].model: model \"vllm/m\\u{202e}x\" has a bidi control (U+202E); a model id is printed in every line, so control, bidi and invisible characters are refused",
        ),
    ];
    for (args, want) in cases {
        let run = probe(args, &[]).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.lines(), [want], "{args:?}");
        assert!(!run.stderr.contains('\u{1b}') && !run.stderr.contains('\u{202e}'));
        assert!(run.stdout.is_empty());
    }
}

/// Issue 12, item 10: by hand `--max-tokens` stays (default 1024 for a custom endpoint), and its help says what jr2
/// sends for a model of harness.provider that sets none.
#[tokio::test(flavor = "multi_thread")]
async fn the_max_tokens_help_says_what_jr2_sends_without_one() {
    let run = probe(&["check", "--help"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let help = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "--max-tokens <N> The model's maxTokens (the token cap a Turn sends): default 1024 with --base-url"
        ) && help.contains(
            "jr2 sends 1 for a model whose harness.provider sets no maxTokens (it builds the model with maxTokens 0): --max-tokens 0 checks what such a Turn gets"
        ),
        "{help}"
    );
}

/// The by-hand recipe of both READMEs runs as written (issue 12, item 18): the binary it names is on PATH (`cargo
/// install`, not a `cargo build` that leaves it in `target/release/`), and its first check runs with no key variable
/// set (an endpoint without a key needs no `--api-key-env`); each later check runs with the variables exported before
/// it, against a fake in place of the vLLM endpoint.
#[tokio::test(flavor = "multi_thread")]
async fn the_readmes_by_hand_recipe_runs_as_written() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    for readme in ["../README.md", "README.md"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(readme);
        let text = std::fs::read_to_string(&path).unwrap();
        let after = text
            .split_once("An operator testing their vLLM endpoint runs")
            .unwrap_or_else(|| panic!("{readme}: no by-hand recipe"))
            .1;
        let block = after
            .split("```sh\n")
            .nth(1)
            .unwrap()
            .split("```")
            .next()
            .unwrap();
        let commands: Vec<&str> = block
            .lines()
            .map(|l| l.split(" #").next().unwrap().trim())
            .filter(|l| !l.is_empty())
            .collect();
        assert!(
            commands[0].starts_with("cargo install "),
            "{readme}: the recipe must put jr2-probe on PATH: {}",
            commands[0]
        );
        let mut envs: Vec<(String, String)> = Vec::new();
        let mut checks = 0;
        for command in &commands[1..] {
            if let Some(assignment) = command.strip_prefix("export ") {
                let (name, _) = assignment.split_once('=').unwrap();
                envs.push((name.to_owned(), "readme-test-key-0123456789".to_owned()));
                continue;
            }
            let words: Vec<&str> = command.split_whitespace().collect();
            assert_eq!(words[..2], ["jr2-probe", "check"], "{readme}: {command}");
            if checks == 0 {
                assert!(
                    envs.is_empty(),
                    "{readme}: the first check needs no key variable"
                );
            }
            checks += 1;
            let args: Vec<&str> = words[1..]
                .iter()
                .map(|w| match *w {
                    "http://vllm.lan:8000/v1" => base.as_str(),
                    "Qwen/Qwen3-32B" => "ok",
                    w => w,
                })
                .collect();
            let envs: Vec<(&str, &str)> =
                envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let run = probe(&args, &envs).await;
            assert_eq!(run.code, 0, "{readme}: {command}\n{}", run.stderr);
            assert!(
                run.stderr.contains("provider: ok completed a tool call ("),
                "{readme}: {command}\n{}",
                run.stderr
            );
        }
        assert!(checks >= 2, "{readme}: a check without a key and one with");
    }
    let auth: Vec<Option<String>> = fake
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    // Without a key, what a Turn sends in its place (see the probe's README).
    assert!(auth.contains(&Some("Bearer unused".to_owned())), "{auth:?}");
    assert!(
        auth.contains(&Some("Bearer readme-test-key-0123456789".to_owned())),
        "{auth:?}"
    );
}

/// Issue 25, item 8: a key pasted in place of `--api-key-env`'s name is refused without being repeated, though it
/// is a valid variable name (`AIza…`, `gsk_…`, `hf_…`, `ghp_…`).
#[tokio::test(flavor = "multi_thread")]
async fn a_key_given_as_the_key_variable_s_name_is_refused_unrepeated() {
    for pasted in [
        "AIzaSyD3kq8PW4242abcdefghijklmnopqrstuv",
        "gsk_PW4242abcdefghijklmnop",
        "hf_PW4242abcdefghijklmnop",
        "ghp_PW4242abcdefghijklmnop",
    ] {
        let run = probe(
            &[
                "check",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--api-key-env",
                pasted,
            ],
            &[],
        )
        .await;
        assert_eq!(run.code, 2, "{pasted}: {}", run.stderr);
        assert!(
            !run.stderr.contains("PW4242") && !run.stdout.contains("PW4242"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("--api-key-env"), "{}", run.stderr);
    }
}
