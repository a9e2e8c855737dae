//! The verdict's JSON Schema (`probe/schemas/verdict.v1.schema.json`) matches the Rust types: every verdict the types can
//! produce validates, the schema's enums are exactly the Rust enums, and the schema is strict enough to reject a
//! verdict that is not one.

use std::collections::BTreeSet;
use std::time::{Duration, UNIX_EPOCH};

use jr2_probe::api::ApiKind;
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::verdict::{ModelResult, Origin, Route, Timings, Try, VERDICT_SCHEMA, Verdict};
use serde_json::{Value, json};

const SCHEMA: &str = include_str!("../schemas/verdict.v1.schema.json");

fn schema() -> Value {
    serde_json::from_str(SCHEMA).expect("the schema file is JSON")
}

fn validator() -> jsonschema::Validator {
    jsonschema::draft202012::new(&schema()).expect("the schema compiles as draft 2020-12")
}

/// Every outcome. The `match` makes a new variant a compile error here until it is listed.
fn all_outcomes() -> Vec<Outcome> {
    let all = vec![
        Outcome::Ok,
        Outcome::Text,
        Outcome::Busy,
        Outcome::Unavailable,
        Outcome::Length,
        Outcome::KeyRefused,
        Outcome::CustodianRefused,
        Outcome::Timeout,
        Outcome::Unreachable,
        Outcome::Tls,
        Outcome::Http,
        Outcome::Protocol,
        Outcome::NotChecked,
        Outcome::Unsupported,
        Outcome::Skipped,
        Outcome::NotCheckable,
    ];
    for o in &all {
        match o {
            Outcome::Ok
            | Outcome::Text
            | Outcome::Busy
            | Outcome::Unavailable
            | Outcome::Length
            | Outcome::KeyRefused
            | Outcome::CustodianRefused
            | Outcome::Timeout
            | Outcome::Unreachable
            | Outcome::Tls
            | Outcome::Http
            | Outcome::Protocol
            | Outcome::NotChecked
            | Outcome::Unsupported
            | Outcome::Skipped
            | Outcome::NotCheckable => {}
        }
    }
    all
}

/// Every level, with the same compile-time guard.
fn all_levels() -> Vec<Level> {
    let all = vec![Level::Pass, Level::Warning, Level::Error];
    for l in &all {
        match l {
            Level::Pass | Level::Warning | Level::Error => {}
        }
    }
    all
}

/// The outcome a code comes with: the one whose default code it is, else `http` (the refinements of an HTTP error).
fn outcome_of(code: Code) -> Outcome {
    all_outcomes()
        .into_iter()
        .find(|o| o.default_code() == code)
        .unwrap_or(Outcome::Http)
}

fn custom_route(api_key_set: bool) -> Route {
    Route::Custom {
        api_key_set,
        max_tokens_set: true,
    }
}

fn catalog_route(via_custodian: bool) -> Route {
    Route::Catalog {
        provider: "anthropic".to_owned(),
        via_custodian,
        key_env: "ANTHROPIC_API_KEY".to_owned(),
        key_held: via_custodian,
        gateway: !via_custodian,
    }
}

fn full_timings() -> Timings {
    Timings {
        dns_ms: Some(3),
        tls_ms: Some(41),
        connect_ms: Some(42),
        first_byte_ms: Some(180),
        tool_call_ms: Some(612),
        total_ms: 613,
    }
}

/// A result for `code` with the given route; `i` varies the API kind and which optional fields are set.
fn result(i: usize, code: Code, outcome: Outcome, route: Route) -> ModelResult {
    let api = ApiKind::ALL[i % ApiKind::ALL.len()];
    let sent = !matches!(
        outcome,
        Outcome::NotChecked | Outcome::Unsupported | Outcome::Skipped | Outcome::NotCheckable
    );
    let passed = outcome == Outcome::Ok;
    let status = match outcome {
        Outcome::Ok | Outcome::Text | Outcome::Length | Outcome::Protocol => Some(200),
        Outcome::Busy => Some(429),
        Outcome::Unavailable => Some(503),
        Outcome::KeyRefused => Some(401),
        Outcome::CustodianRefused => Some(403),
        Outcome::Http => Some(400),
        _ => None,
    };
    let tries = if sent {
        let mut tries = vec![Try {
            n: 1,
            status,
            outcome,
            wait_asked_ms: if i.is_multiple_of(2) {
                Some(1000)
            } else {
                None
            },
            wait_taken_ms: 0,
            timings: if i.is_multiple_of(2) {
                full_timings()
            } else {
                Timings::default()
            },
        }];
        if outcome == Outcome::Busy {
            tries[0].wait_taken_ms = 1000;
            tries.push(Try {
                n: 2,
                status,
                outcome,
                wait_asked_ms: None,
                wait_taken_ms: 0,
                timings: Timings {
                    dns_ms: None,
                    tls_ms: None,
                    connect_ms: None,
                    first_byte_ms: Some(90),
                    tool_call_ms: None,
                    total_ms: 91,
                },
            });
        }
        tries
    } else {
        Vec::new()
    };
    ModelResult {
        id: format!("org/model-{i}"),
        base_url: "https://llm.example:8443/v1".to_owned(),
        host: "llm.example:8443".to_owned(),
        route,
        code,
        next_action: code.next_action().to_owned(),
        error: if passed {
            None
        } else {
            Some(format!("{} for m{i}: {}…", code, "x".repeat(200)))
        },
        http_status: status,
        stop_reason: match outcome {
            Outcome::Ok => Some("tool_calls".to_owned()),
            Outcome::Text => Some("stop".to_owned()),
            Outcome::Length => Some("length".to_owned()),
            _ => None,
        },
        tool_name: passed.then(|| "get_weather".to_owned()),
        answer: (outcome == Outcome::Text).then(|| "I cannot call tools, but…".to_owned()),
        max_tokens: 1024,
        elapsed_ms: 700 + i as u64,
        tries,
        ..ModelResult::test(&format!("m{i}"), api, outcome)
    }
}

/// Verdicts covering every code (so every outcome), both routes, both origins, and one with no models.
fn verdicts() -> Vec<Verdict> {
    let started = UNIX_EPOCH + Duration::from_millis(1_796_409_407_123);
    let mut models = Vec::new();
    for (i, code) in Code::ALL.into_iter().enumerate() {
        let route = if i.is_multiple_of(2) {
            custom_route(i.is_multiple_of(4))
        } else {
            catalog_route(i.is_multiple_of(3))
        };
        models.push(result(i, code, outcome_of(code), route));
    }
    let lines: Vec<String> = models
        .iter()
        .map(|m| format!("{} {} {}", m.model, m.host, m.code))
        .collect();
    let passing: Vec<ModelResult> = models
        .iter()
        .filter(|m| m.level != Level::Error)
        .cloned()
        .collect();
    vec![
        Verdict::new(
            Origin::ThisMachine,
            started,
            Duration::from_millis(4321),
            models.clone(),
            lines.clone(),
        ),
        Verdict::new(
            Origin::Node {
                name: "worker-1".to_owned(),
            },
            started,
            Duration::from_millis(4321),
            models,
            lines,
        ),
        Verdict::new(
            Origin::Node {
                name: "worker-2".to_owned(),
            },
            started,
            Duration::from_millis(900),
            passing,
            vec!["ok".to_owned()],
        ),
        Verdict::new(
            Origin::ThisMachine,
            UNIX_EPOCH,
            Duration::ZERO,
            Vec::new(),
            Vec::new(),
        ),
    ]
}

fn errors_of(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

fn a_verdict_json() -> Value {
    serde_json::to_value(&verdicts()[0]).unwrap()
}

fn enum_of(schema: &Value, def: &str) -> Vec<String> {
    schema["$defs"][def]["enum"]
        .as_array()
        .unwrap_or_else(|| panic!("$defs/{def} has an enum"))
        .iter()
        .map(|v| v.as_str().expect("enum values are strings").to_owned())
        .collect()
}

#[test]
fn the_schema_is_a_valid_draft_2020_12_schema() {
    let s = schema();
    jsonschema::draft202012::meta::validate(&s).expect("valid against the 2020-12 meta-schema");
    assert_eq!(
        s["$id"],
        "https://jr2.dev/schemas/provider-preflight-verdict/v1"
    );
    assert_eq!(s["properties"]["schema"]["const"], VERDICT_SCHEMA);
}

#[test]
fn every_verdict_the_types_produce_validates() {
    let v = validator();
    let all = verdicts();
    let mut outcomes = BTreeSet::new();
    let mut codes = BTreeSet::new();
    let mut levels = BTreeSet::new();
    let mut apis = BTreeSet::new();
    let (mut custom, mut catalog, mut here, mut node) = (false, false, false, false);
    for verdict in &all {
        match verdict.origin {
            Origin::ThisMachine => here = true,
            Origin::Node { .. } => node = true,
        }
        for m in &verdict.models {
            outcomes.insert(m.outcome.as_str());
            codes.insert(m.code.as_str());
            levels.insert(format!("{:?}", m.level));
            apis.insert(m.api.as_str());
            match m.route {
                Route::Custom { .. } => custom = true,
                Route::Catalog { .. } => catalog = true,
            }
        }
        let instance = serde_json::to_value(verdict).unwrap();
        let errors = errors_of(&v, &instance);
        assert!(
            errors.is_empty(),
            "verdict does not validate: {errors:#?}\n{instance:#}"
        );
        let back: Verdict = serde_json::from_value(instance).unwrap();
        assert_eq!(&back, verdict, "the JSON reads back as the same verdict");
    }
    assert_eq!(
        outcomes.len(),
        all_outcomes().len(),
        "every outcome covered"
    );
    assert_eq!(codes.len(), Code::ALL.len(), "every code covered");
    assert_eq!(levels.len(), all_levels().len(), "every level covered");
    assert_eq!(apis.len(), ApiKind::ALL.len(), "every API kind covered");
    assert!(custom && catalog, "both route kinds covered");
    assert!(here && node, "both origin kinds covered");
    assert!(
        all.iter().any(|v| v.ok) && all.iter().any(|v| !v.ok),
        "passing and failing verdicts covered"
    );
}

#[test]
fn the_schema_rejects_what_is_not_a_verdict() {
    let v = validator();
    let good = a_verdict_json();
    assert!(v.is_valid(&good));

    let mut extra = good.clone();
    extra["apiKey"] = json!("sk-should-not-be-here");
    assert!(!v.is_valid(&extra), "an unknown top-level property");

    let mut extra_nested = good.clone();
    extra_nested["models"][0]["tries"][0]["timings"]["sendMs"] = json!(1);
    assert!(!v.is_valid(&extra_nested), "an unknown nested property");

    let mut extra_route = good.clone();
    extra_route["models"][0]["route"]["provider"] = json!("anthropic");
    assert!(
        !v.is_valid(&extra_route),
        "a catalog field on a custom route"
    );

    let mut wrong_outcome = good.clone();
    wrong_outcome["models"][0]["outcome"] = json!("fine");
    assert!(!v.is_valid(&wrong_outcome), "an unknown outcome");

    let mut wrong_code = good.clone();
    wrong_code["models"][0]["code"] = json!("PROVIDER_FINE");
    assert!(!v.is_valid(&wrong_code), "an unknown code");

    let mut wrong_api = good.clone();
    wrong_api["models"][0]["api"] = json!("openai");
    assert!(!v.is_valid(&wrong_api), "an unknown API kind");

    let mut wrong_origin = good.clone();
    wrong_origin["origin"] = json!({ "kind": "pod", "name": "x" });
    assert!(!v.is_valid(&wrong_origin), "an unknown origin kind");

    let mut wrong_schema = good.clone();
    wrong_schema["schema"] = json!("jr2.dev/provider-preflight-verdict/v2");
    assert!(!v.is_valid(&wrong_schema), "another schema identifier");

    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("exitCode");
    assert!(!v.is_valid(&missing), "a missing top-level field");

    let mut missing_nullable = good.clone();
    missing_nullable["models"][0]
        .as_object_mut()
        .unwrap()
        .remove("error");
    assert!(
        !v.is_valid(&missing_nullable),
        "a nullable field is still required"
    );

    let mut missing_node_name = good.clone();
    missing_node_name["origin"] = json!({ "kind": "node" });
    assert!(!v.is_valid(&missing_node_name), "a node without its name");

    let mut wrong_null = good.clone();
    wrong_null["models"][0]["tries"][0]["timings"]["totalMs"] = Value::Null;
    assert!(!v.is_valid(&wrong_null), "a null where none is allowed");

    let mut inconsistent = good.clone();
    assert_eq!(inconsistent["ok"], json!(false));
    inconsistent["ok"] = json!(true);
    assert!(!v.is_valid(&inconsistent), "ok with exit code 1");
}

#[test]
fn the_schema_enums_are_the_rust_enums() {
    let s = schema();
    let codes: Vec<String> = Code::ALL.iter().map(|c| c.as_str().to_owned()).collect();
    assert_eq!(enum_of(&s, "Code"), codes, "codes, in documentation order");

    let outcomes: Vec<String> = all_outcomes()
        .iter()
        .map(|o| o.as_str().to_owned())
        .collect();
    assert_eq!(enum_of(&s, "Outcome"), outcomes);
    for o in all_outcomes() {
        assert_eq!(serde_json::to_value(o).unwrap(), json!(o.as_str()));
    }

    let levels: Vec<String> = all_levels()
        .iter()
        .map(|l| {
            serde_json::to_value(l)
                .unwrap()
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(enum_of(&s, "Level"), levels);

    let apis: Vec<String> = ApiKind::ALL.iter().map(|k| k.as_str().to_owned()).collect();
    assert_eq!(enum_of(&s, "ApiKind"), apis);
    for k in ApiKind::ALL {
        assert_eq!(serde_json::to_value(k).unwrap(), json!(k.as_str()));
    }

    let kinds = |def: &str| -> Vec<String> {
        s["$defs"][def]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                b["properties"]["kind"]["const"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let route_kinds: Vec<String> = [custom_route(true), catalog_route(true)]
        .iter()
        .map(|r| {
            serde_json::to_value(r).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds("Route"), route_kinds);
    let origin_kinds: Vec<String> = [
        Origin::ThisMachine,
        Origin::Node {
            name: "n".to_owned(),
        },
    ]
    .iter()
    .map(|o| {
        serde_json::to_value(o).unwrap()["kind"]
            .as_str()
            .unwrap()
            .to_owned()
    })
    .collect();
    assert_eq!(kinds("Origin"), origin_kinds);
}

/// Every object in the schema is closed, lists its properties as required, and documents each property.
#[test]
fn every_object_is_closed_required_and_documented() {
    fn walk(node: &Value, path: &str, objects: &mut usize) {
        match node {
            Value::Object(map) => {
                if let Some(props) = map.get("properties").and_then(Value::as_object)
                    && map.get("type") == Some(&json!("object"))
                {
                    *objects += 1;
                    assert_eq!(
                        map.get("additionalProperties"),
                        Some(&json!(false)),
                        "{path} is closed"
                    );
                    let required: BTreeSet<&str> = map["required"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{path} lists required"))
                        .iter()
                        .map(|r| r.as_str().unwrap())
                        .collect();
                    let listed: BTreeSet<&str> = props.keys().map(String::as_str).collect();
                    assert_eq!(required, listed, "{path}: every property is required");
                    for (name, prop) in props {
                        let doc = prop["description"].as_str().unwrap_or_default();
                        assert!(!doc.is_empty(), "{path}.{name} has a description");
                    }
                }
                for (k, v) in map {
                    walk(v, &format!("{path}/{k}"), objects);
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, &format!("{path}/{i}"), objects);
                }
            }
            _ => {}
        }
    }
    let mut objects = 0;
    walk(&schema(), "#", &mut objects);
    // Verdict, ModelResult, Try, Timings, two Routes, two Origins; Endpoint and the five forms of Cause (issue 16;
    // capClamped, issue 27; llamaCppSlotsBusy, issue 27 item 8); the six of Ollama (issue 38: ollamaRepeatLimit the
    // sixth).
    assert_eq!(objects, 20);
}
