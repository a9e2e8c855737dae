//! TLS by hand: Mozilla's roots alone do not trust a private CA; `--ca-bundle` and `NODE_EXTRA_CA_CERTS` add it,
//! and `SSL_CERT_FILE` only under `--use-openssl-ca` or `--use-system-ca`, as Node 24 (the Harness) reads them; each
//! readable CA file is trusted when another cannot be read; a certificate for another name is a mismatch.

mod common;

use common::probe;
use jr2_probe::outcome::{Code, Outcome};
use jr2_testkit::provider::FakeProvider;

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

    // As Node 24 trusts them: NODE_EXTRA_CA_CERTS always, SSL_CERT_FILE only under --use-openssl-ca (in place of
    // the bundled roots) or --use-system-ca / NODE_USE_SYSTEM_CA=1 (on top of them).
    for env in [
        &[("NODE_EXTRA_CA_CERTS", ca_file)][..],
        &[
            ("SSL_CERT_FILE", ca_file),
            ("NODE_OPTIONS", "--use-openssl-ca"),
        ],
        &[
            ("SSL_CERT_FILE", ca_file),
            ("NODE_OPTIONS", "--max-old-space-size=512 --use-system-ca"),
        ],
        &[("SSL_CERT_FILE", ca_file), ("NODE_USE_SYSTEM_CA", "1")],
    ] {
        let run = probe(&["check", "--base-url", &base, "--model", "ok"], env).await;
        assert_eq!(run.code, 0, "{env:?}: {}", run.stderr);
        assert!(!run.stderr.contains("CA file"), "{env:?}: {}", run.stderr);
    }
    // SSL_CERT_FILE alone: Node does not read it, nor does the probe.
    let run = probe(
        &["check", "--base-url", &base, "--model", "ok", "-o", "json"],
        &[("SSL_CERT_FILE", ca_file)],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.verdict().models[0].error.as_deref(),
        Some("certificate not trusted: unknown issuer")
    );
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
async fn a_readable_ca_file_is_trusted_when_another_cannot_be_read() {
    let (fake, ca) = FakeProvider::start_tls(&["127.0.0.1"]).await;
    let ca_file = ca.ca_file.to_str().unwrap();
    let missing = "/nonexistent/jr2-missing.pem";
    for (env, named_by) in [
        (
            &[
                ("NODE_EXTRA_CA_CERTS", missing),
                ("SSL_CERT_FILE", ca_file),
                ("NODE_OPTIONS", "--use-openssl-ca"),
            ][..],
            "NODE_EXTRA_CA_CERTS",
        ),
        (
            &[
                ("SSL_CERT_FILE", missing),
                ("NODE_EXTRA_CA_CERTS", ca_file),
                ("NODE_OPTIONS", "--use-system-ca"),
            ],
            "SSL_CERT_FILE",
        ),
    ] {
        let run = probe(
            &["check", "--base-url", &fake.base_url(), "--model", "ok"],
            env,
        )
        .await;
        assert_eq!(
            run.code, 0,
            "{env:?}: the readable file is trusted: {}",
            run.stderr
        );
        assert_eq!(
            run.lines()[0],
            format!(
                "warning: provider: cannot read the CA file {missing} named by {named_by}: No such file or directory (os error 2); going on without it"
            )
        );
    }
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
