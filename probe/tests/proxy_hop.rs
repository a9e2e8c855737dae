//! The hop that failed is named (issue 27, item 1): a proxy that refuses connections, with the provider up, is
//! `cannot reach the proxy <addr> (the provider was not reached): connection refused` and the proxy's hint, not
//! `connection refused` toward the provider and its egress hint. The real `jr2-probe` against the fake provider on
//! loopback, through a proxy variable naming a closed loopback port.

mod common;

use common::probe;
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_testkit::provider::FakeProvider;

/// A loopback port nothing listens on (bound, then closed).
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_proxy_that_refuses_is_named_not_the_provider() {
    let fake = FakeProvider::start().await;
    let port = closed_port();
    let proxy = format!("http://127.0.0.1:{port}");
    let run = probe(
        &[
            "check",
            "--base-url",
            &fake.base_url(),
            "--model",
            "ok",
            "-o",
            "json",
        ],
        &[
            ("NODE_USE_ENV_PROXY", "1"),
            ("HTTP_PROXY", &proxy),
            ("HTTPS_PROXY", &proxy),
        ],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = run.verdict();
    let r = &v.models[0];
    assert_eq!(
        (r.outcome, r.level, r.code),
        (Outcome::Unreachable, Level::Error, Code::Unreachable)
    );
    assert_eq!(
        r.error.as_deref(),
        Some(
            format!(
                "cannot reach the proxy 127.0.0.1:{port} (the provider was not reached): connection refused"
            )
            .as_str()
        )
    );
    assert_eq!(
        r.findings.cause,
        Some(jr2_probe::contract::endpoint::Cause::ProxyUnreachable)
    );
    assert!(
        r.next_action.starts_with("make the proxy that HTTPS_PROXY"),
        "{}",
        r.next_action
    );
    assert!(
        run.stderr.lines().any(|l| l
            == "  - the proxy failed, not the provider: check that the proxy the Harness env names (HTTPS_PROXY, HTTP_PROXY) runs and that the pods can reach it"),
        "{}",
        run.stderr
    );
    // Nothing reached the provider.
    assert!(fake.requests().is_empty());
}

/// openai-codex cannot be checked by design (its OAuth login file is a Turn's alone): by hand, a warning line with its
/// own code, exit 0, nothing sent (issue 27, item 3: before, exit 1 with `add the key of openai-codex to secrets`).
#[tokio::test(flavor = "multi_thread")]
async fn openai_codex_is_a_warning_not_an_error() {
    let run = probe(
        &["check", "--model", "openai-codex/gpt-5.4", "-o", "json"],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.verdict();
    let r = &v.models[0];
    assert_eq!(
        (r.outcome, r.level, r.code),
        (
            Outcome::NotCheckable,
            Level::Warning,
            Code::NotCheckableOauth
        )
    );
    assert_eq!(
        run.lines(),
        [
            "warning: provider: openai-codex/gpt-5.4 was not checked — openai-codex-responses needs the OAuth login file of a ChatGPT account, which a check pod does not hold; a Turn uses credentials the check pod does not hold, so its first call is the check"
        ]
    );
    assert!(r.tries.is_empty());
}
