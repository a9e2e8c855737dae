//! TLS by hand: Mozilla's roots alone do not trust a private CA; `--ca-bundle`, `NODE_EXTRA_CA_CERTS` and
//! `SSL_CERT_FILE` add it, as the Harness's env does; a certificate for another name is a mismatch.

mod common;

use common::probe;
use jr2_probe::outcome::{Code, Outcome};
use jr2_testkit::fake_provider::FakeProvider;

#[tokio::test(flavor = "multi_thread")]
async fn a_private_ca_is_trusted_only_when_named() {
    let (fake, ca) = FakeProvider::start_tls(&["localhost", "127.0.0.1"]).await;
    let base = fake.base_url();
    let ca_file = ca.ca_file.to_str().unwrap();

    let run = probe(
        &["check", "--base-url", &base, "--model", "ok", "-o", "json"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    let m = &run.verdict().models[0];
    assert_eq!((m.outcome, m.code), (Outcome::Tls, Code::Tls));
    assert_eq!(
        run.lines()[1],
        format!(
            "error: provider preflight failed for model \"ok\" against {} (from this machine, as a Turn calls it): certificate not trusted: unknown issuer",
            fake.addr()
        )
    );
    assert!(
        fake.requests().is_empty(),
        "nothing is sent over an untrusted connection"
    );

    let run = probe(
        &[
            "check",
            "--base-url",
            &base,
            "--model",
            "ok",
            "--ca-bundle",
            ca_file,
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let t = run.verdict().models[0].tries[0].timings;
    assert!(t.tls_ms.is_some() && t.tls_ms <= t.connect_ms, "{t:?}");

    for var in ["NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"] {
        let run = probe(
            &["check", "--base-url", &base, "--model", "ok"],
            &[(var, ca_file)],
        )
        .await;
        assert_eq!(run.code, 0, "{var}: {}", run.stderr);
    }
    // By name, through the resolver: `localhost` is in the certificate.
    let run = probe(
        &[
            "check",
            "--base-url",
            &fake.base_url_for("localhost"),
            "--model",
            "ok",
            "--ca-bundle",
            ca_file,
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.verdict().models[0].tries[0].timings.dns_ms.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_certificate_for_another_name_is_a_mismatch() {
    let (fake, ca) = FakeProvider::start_tls(&["provider.example"]).await;
    let run = probe(
        &[
            "check",
            "--base-url",
            &fake.base_url(),
            "--model",
            "ok",
            "--ca-bundle",
            ca.ca_file.to_str().unwrap(),
            "-o",
            "json",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    let m = &run.verdict().models[0];
    assert_eq!(m.outcome, Outcome::Tls, "{}", run.stderr);
    assert_eq!(
        m.error.as_deref(),
        Some("certificate name mismatch: the certificate is not valid for this host")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_ca_from_the_env_warns_and_goes_on() {
    let (fake, _ca) = FakeProvider::start_tls(&["127.0.0.1"]).await;
    let run = probe(
        &["check", "--base-url", &fake.base_url(), "--model", "ok"],
        &[("NODE_EXTRA_CA_CERTS", "/nonexistent/extra.pem")],
    )
    .await;
    assert_eq!(run.code, 1, "the private CA is still missing");
    assert_eq!(
        run.lines()[0],
        "warning: provider: cannot read the CA file /nonexistent/extra.pem named by NODE_EXTRA_CA_CERTS: No such file or directory (os error 2); going on without it"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_without_certificates_is_bad_input() {
    let dir = std::env::temp_dir().join(format!("jr2-empty-ca-{}", std::process::id()));
    std::fs::write(&dir, "not a certificate\n").unwrap();
    let run = probe(
        &[
            "check",
            "--base-url",
            "https://h.example/v1",
            "--model",
            "m",
            "--ca-bundle",
            dir.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 2);
    assert_eq!(
        run.lines(),
        [format!(
            "error: --ca-bundle: the CA file {} named by --ca-bundle holds no PEM certificate",
            dir.display()
        )]
    );
}
