//! The Custodian path with a real TLS-intercepting proxy in the middle: mitmproxy, with an addon that behaves as the
//! Custodian does (`tests/peers/custodian_addon.py`). The probe holds only the Stand-in `jr2-held-<NAME>`, reaches the
//! provider through `HTTPS_PROXY` with CONNECT, trusts the proxy's CA through `NODE_EXTRA_CA_CERTS`; the provider
//! sees the real key, and the probe's output never holds it.

mod common;

use jr2_probe::outcome::{Code, Outcome};
use jr2_testkit::peers::start_custodian;
use jr2_testkit::provider::FakeProvider;
use jr2_testkit::provider::openai_completions::GOOD_KEY;
use serde_json::json;

const NAME: &str = "JR2_PROVIDER_API_KEY";
const STAND_IN: &str = "jr2-held-JR2_PROVIDER_API_KEY";

#[tokio::test(flavor = "multi_thread")]
async fn the_custodian_swaps_the_stand_in_and_answers_for_itself() {
    let (fake, ca) = FakeProvider::start_tls(&["localhost"]).await;
    let target = format!("localhost:{}", fake.addr().port());
    let upstream_ca = ca.ca_file.clone();
    let custodian = tokio::task::spawn_blocking(move || {
        start_custodian(NAME, GOOD_KEY, &[target], &upstream_ca)
    })
    .await
    .unwrap();
    let base = fake.base_url_for("localhost");
    let spec = |model: &str| {
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 20, "maxTries": 1, "models": [
            {"model": format!("vllm/{model}"), "source": "custom", "baseUrl": base, "keyEnv": NAME, "keyHeld": true, "viaCustodian": true}
        ]})
        .to_string()
    };
    let mitm_ca = custodian.ca_file.to_str().unwrap().to_owned();
    let pod_env = |with_stand_in: bool| {
        let mut env = vec![
            ("HTTPS_PROXY", custodian.proxy_url.clone()),
            ("NO_PROXY", String::new()),
            // As the Custodian's env has it: Node's fetch reads the proxy variables only then.
            ("NODE_USE_ENV_PROXY", "1".to_owned()),
            ("NODE_EXTRA_CA_CERTS", mitm_ca.clone()),
            ("NODE_NAME", "worker-1".to_owned()),
        ];
        if with_stand_in {
            env.push((NAME, STAND_IN.to_owned()));
        }
        env
    };
    let run_probe = |spec: String, env: Vec<(&'static str, String)>| async move {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        common::probe(
            &[
                "run",
                "--spec-json",
                &spec,
                "--termination-log",
                "/dev/null",
            ],
            &env,
        )
        .await
    };
    let verdict = |run: &common::Run| -> jr2_probe::verdict::Verdict {
        let last = run.stdout.lines().last().unwrap_or_default();
        let v: serde_json::Value = serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("{e}: {}\n{}", run.stdout, run.stderr));
        serde_json::from_value(v["verdict"].clone()).unwrap()
    };

    // The Stand-in goes out, the real key arrives.
    let run = run_probe(spec("auth"), pod_env(true)).await;
    let v = verdict(&run);
    assert_eq!(
        v.models[0].outcome,
        Outcome::Ok,
        "{:?}\n{}",
        v.models[0],
        custodian.server.log()
    );
    let seen = fake.requests_for("auth");
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {GOOD_KEY}").as_str()),
        "the provider sees the real key"
    );
    assert!(
        !run.stdout.contains(GOOD_KEY) && !run.stderr.contains(GOOD_KEY),
        "the probe never holds it"
    );
    assert!(
        v.models[0].tries[0].timings.tls_ms.is_some(),
        "TLS to the proxy's leaf, trusted through NODE_EXTRA_CA_CERTS"
    );

    // No Stand-in: the Custodian answers, the provider sees nothing.
    let run = run_probe(spec("auth"), pod_env(false)).await;
    let v = verdict(&run);
    let m = &v.models[0];
    assert_eq!(
        (m.outcome, m.code, m.http_status),
        (Outcome::CustodianRefused, Code::CustodianRefused, Some(403))
    );
    let port = fake.addr().port();
    assert_eq!(
        m.error.as_deref(),
        Some(format!("HTTP 403: jr2 custodian: localhost:{port} needs the stand-in of {NAME} in authorization").as_str())
    );
    assert_eq!(
        fake.requests_for("auth").len(),
        1,
        "nothing more reached the provider"
    );
    assert!(v.lines[0].starts_with(&format!(
        "error: provider preflight failed for model \"vllm/auth\" against localhost:{port} (from a pod on node worker-1, as a Turn calls it): HTTP 403: jr2 custodian:"
    )));

    // Without the proxy's CA, its leaf is not trusted.
    let mut env = pod_env(true);
    env.retain(|(k, _)| *k != "NODE_EXTRA_CA_CERTS");
    let run = run_probe(spec("ok"), env).await;
    let v = verdict(&run);
    assert_eq!(v.models[0].outcome, Outcome::Tls, "{:?}", v.models[0]);
}
