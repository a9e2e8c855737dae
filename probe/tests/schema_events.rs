//! The schemas of pod mode's output agree with what `jr2-probe run` writes: every JSON line validates against
//! `probe/schemas/events.v1.schema.json` and reads back as the same [`ProbeEvent`], byte for byte; every termination
//! message validates against `probe/schemas/summary.v1.schema.json`, however much of it had to be cut.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jr2_probe::contract::ProbeEvent;
use jr2_probe::contract::outcome::{Code, Level, Outcome};
use jr2_probe::contract::verdict::{ModelResult, Origin, Verdict};
use jr2_probe::run::{Summary, TERMINATION_LIMIT};
use jr2_testkit::provider::FakeProvider;
use jr2_testkit::provider::openai_completions::GOOD_KEY;
use serde_json::{Value, json};

const EVENTS: &str = include_str!("../schemas/events.v1.schema.json");
const SUMMARY: &str = include_str!("../schemas/summary.v1.schema.json");
const VERDICT: &str = include_str!("../schemas/verdict.v1.schema.json");

fn load(text: &str) -> Value {
    serde_json::from_str(text).expect("the schema is JSON")
}

fn validator(text: &str) -> jsonschema::Validator {
    jsonschema::draft202012::new(&load(text)).expect("a valid draft 2020-12 schema")
}

fn assert_valid(v: &jsonschema::Validator, instance: &Value) {
    let errors: Vec<String> = v.iter_errors(instance).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{instance}: {errors:?}");
}

fn custom(model: &str, base: &str) -> Value {
    json!({"model": format!("vllm/{model}"), "source": "custom", "baseUrl": base, "api": "openai-completions",
           "keyEnv": "JR2_PROVIDER_API_KEY", "keyHeld": true})
}

fn temp_path(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "jr2-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ))
}

/// Runs pod mode and checks its lines and its termination message against the schemas; returns the event names.
async fn run_and_validate(spec: Value, deadline: Option<SystemTime>) -> Vec<String> {
    let term = temp_path("schema-events");
    let deadline =
        deadline.map(|d| format!("{:.3}", d.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()));
    let mut envs = vec![
        ("JR2_PROVIDER_API_KEY", GOOD_KEY),
        ("NODE_NAME", "worker-2"),
        // A CA file that cannot be read: a `warning` line.
        ("NODE_EXTRA_CA_CERTS", "/nonexistent/jr2-schema-events.pem"),
    ];
    if let Some(d) = &deadline {
        envs.push(("JR2_PROBE_DEADLINE", d));
    }
    let run = common::probe(
        &[
            "run",
            "--spec-json",
            &spec.to_string(),
            "--termination-log",
            term.to_str().unwrap(),
        ],
        &envs,
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let events = validator(EVENTS);
    let mut names = Vec::new();
    for line in run.stdout.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        assert_valid(&events, &value);
        let event = ProbeEvent::from_line(line).unwrap_or_else(|| panic!("not an event: {line}"));
        assert_eq!(
            event.to_line(),
            line,
            "the type writes the line back unchanged"
        );
        names.push(value["event"].as_str().unwrap().to_owned());
    }
    let text = std::fs::read_to_string(&term).unwrap();
    let _ = std::fs::remove_file(&term);
    assert!(text.len() <= TERMINATION_LIMIT);
    assert_valid(&validator(SUMMARY), &load(&text));
    names
}

#[tokio::test(flavor = "multi_thread")]
async fn every_line_and_the_termination_message_of_a_run_validate() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    // A model that answers after 700 ms with a waiting note every 200 ms: `waiting` events, validated (issue 16).
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 10, "maxTries": 2,
                      "waitingNoteSeconds": 0.2,
                      "models": [custom("auth", &base), custom("rate-limited", &base), custom("missing", &base),
                                 custom("ok-delay-700", &base)]});
    let names = run_and_validate(spec, None).await;
    let kinds: BTreeSet<&str> = names.iter().map(String::as_str).collect();
    assert_eq!(
        kinds,
        BTreeSet::from([
            "start",
            "warning",
            "modelStarted",
            "try",
            "waiting",
            "result",
            "summary"
        ])
    );
    // A waiting event validates (issue 16), at each stage (issue 38, item 4).
    use jr2_probe::contract::events::WaitStage;
    for stage in [
        WaitStage::NoAnswer,
        WaitStage::Headers,
        WaitStage::Text,
        WaitStage::ToolCall,
        WaitStage::OllamaLoaded,
        WaitStage::OllamaNotLoaded,
    ] {
        let waiting = ProbeEvent::Waiting {
            index: 0,
            model: "vllm/slow".to_owned(),
            waited_ms: 30_000,
            timeout_ms: 120_000,
            stage,
        };
        assert_valid(
            &validator(EVENTS),
            &serde_json::from_str(&waiting.to_line()).unwrap(),
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_cut_by_the_pods_deadline_validates() {
    let fake = FakeProvider::start().await;
    let base = fake.base_url();
    let models: Vec<Value> = ["auth", "stall", "stall", "stall"]
        .iter()
        .map(|m| custom(m, &base))
        .collect();
    let spec = json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 60, "concurrency": 2, "models": models});
    let names = run_and_validate(spec, Some(SystemTime::now() + Duration::from_secs(5))).await;
    assert_eq!(names.first().map(String::as_str), Some("start"));
    assert_eq!(names.last().map(String::as_str), Some("summary"));
}

fn model(i: usize, outcome: Outcome) -> ModelResult {
    ModelResult {
        base_url: "https://api.anthropic.com".into(),
        host: "api.anthropic.com".into(),
        error: (outcome != Outcome::Ok).then(|| "é\u{1b}[31m".repeat(100)),
        http_status: (outcome != Outcome::Timeout).then_some(500),
        max_tokens: 1,
        elapsed_ms: 12,
        ..ModelResult::test(
            &format!("anthropic/claude-model-number-{i}"),
            jr2_probe::contract::ApiKind::AnthropicMessages,
            outcome,
        )
    }
}

/// Every cut of the termination message (errors shorter, then gone, then the names, then the entries) validates.
#[test]
fn every_form_of_the_summary_validates() {
    let v = validator(SUMMARY);
    let mut truncated = BTreeSet::new();
    for n in [0, 1, 3, 20, 50, 200, 2000] {
        let models = (0..n)
            .map(|i| model(i, [Outcome::Ok, Outcome::Http, Outcome::Timeout][i % 3]))
            .collect();
        let verdict = Verdict::new(
            Origin::ThisMachine,
            SystemTime::now(),
            Duration::ZERO,
            models,
            Vec::new(),
        );
        // With a warning line of the run, which fits while there is room (issue 27, item 18).
        let warnings = [
            "warning: provider: cannot read the CA file /x.pem named by NODE_EXTRA_CA_CERTS"
                .to_owned(),
        ];
        let text = Summary::fitting(&verdict, &warnings, TERMINATION_LIMIT);
        assert!(text.len() <= TERMINATION_LIMIT);
        let value = load(&text);
        assert_valid(&v, &value);
        if n <= 3 {
            assert_eq!(value["w"], json!(warnings), "{text}");
        }
        truncated.insert(value["truncated"].as_bool().unwrap());
        let _: Summary = serde_json::from_str(&text).unwrap();
    }
    assert_eq!(truncated, BTreeSet::from([false, true]));
    assert!(
        !v.is_valid(&json!({"schema": "jr2.dev/provider-preflight-summary/v1", "ok": true, "n": 0, "models": [], "truncated": false, "extra": 1}))
    );
    assert!(
        !v.is_valid(&json!({"schema": "jr2.dev/provider-preflight-summary/v1", "ok": true, "n": 1, "models": [{"o": "fine", "c": "PROVIDER_OK", "t": 1, "ms": 1}], "truncated": false}))
    );
}

#[test]
fn the_schemas_refuse_what_the_type_refuses() {
    let v = validator(EVENTS);
    for bad in [
        json!({"event": "later"}),
        json!({"event": "modelStarted", "index": 0}),
        json!({"event": "modelStarted", "index": -1, "model": "a/b"}),
        json!({"event": "modelStarted", "index": 0, "model": "a/b", "extra": true}),
        json!({"event": "start", "schema": "jr2.dev/provider-preflight-events/v2", "probeVersion": "0.1.0",
               "origin": {"kind": "thisMachine"}, "models": 0, "budgetMs": null}),
    ] {
        assert!(!v.is_valid(&bad), "the schema accepts {bad}");
    }
    for bad in [
        json!({"event": "later"}),
        json!({"event": "modelStarted", "index": 0}),
        json!({"event": "modelStarted", "index": -1, "model": "a/b"}),
    ] {
        assert_eq!(ProbeEvent::from_line(&bad.to_string()), None, "{bad}");
    }
}

/// The events' definitions are the verdict's, and `$defs/Verdict` is the verdict schema's root; the summary's
/// `Outcome` and `Code` are the verdict's.
#[test]
fn the_definitions_are_the_verdicts() {
    let verdict = load(VERDICT);
    let events = load(EVENTS);
    let summary = load(SUMMARY);
    for (name, def) in verdict["$defs"].as_object().unwrap() {
        assert_eq!(&events["$defs"][name], def, "events: $defs/{name}");
    }
    for name in ["Outcome", "Code"] {
        assert_eq!(
            summary["$defs"][name], verdict["$defs"][name],
            "summary: $defs/{name}"
        );
    }
    let root = &events["$defs"]["Verdict"];
    for key in [
        "description",
        "type",
        "additionalProperties",
        "required",
        "properties",
    ] {
        assert_eq!(root[key], verdict[key], "events: $defs/Verdict/{key}");
    }
    // The event names are the type's.
    let names: BTreeSet<&str> = events["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["properties"]["event"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "start",
            "warning",
            "modelStarted",
            "try",
            "waiting",
            "result",
            "summary"
        ])
    );
    // A warning line validates; a line that is not a warning does not.
    let v = validator(EVENTS);
    let warning = ProbeEvent::Warning {
        line: "warning: provider: cannot read the CA file /x.pem named by NODE_EXTRA_CA_CERTS: No such file or directory (os error 2); going on without it".to_owned(),
    };
    assert_valid(&v, &serde_json::from_str(&warning.to_line()).unwrap());
    assert!(!v.is_valid(&serde_json::json!({"event": "warning", "line": "error: forged"})));
    let _ = (Code::Ok, Level::Pass);
}
