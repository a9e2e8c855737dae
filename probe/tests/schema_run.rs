//! The run spec's JSON Schema agrees with what `jr2-probe run` reads.

use jr2_probe::spec::{ModelSpec, RunSpec};
use serde_json::{Value, json};

fn schema() -> jsonschema::Validator {
    let schema: Value =
        serde_json::from_str(include_str!("../schemas/run-spec.v1.schema.json")).unwrap();
    jsonschema::draft202012::new(&schema).expect("a valid schema")
}

fn examples() -> Vec<Value> {
    vec![
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": []}),
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "timeoutSeconds": 90, "maxTries": 2, "concurrency": 4, "models": [
            {"model": "anthropic/claude-haiku-4-5", "source": "catalog", "keyEnv": "ANTHROPIC_API_KEY", "keyHeld": true, "viaCustodian": true},
            {"model": "anthropic/claude-haiku-4-5", "source": "gateway", "baseUrl": "https://litellm.corp.example", "keyEnv": "ANTHROPIC_API_KEY", "keyHeld": true},
            {"model": "vllm/Qwen/Qwen3-32B", "source": "custom", "baseUrl": "http://vllm.lan:8000/v1", "api": "openai-completions",
             "keyEnv": "JR2_PROVIDER_API_KEY", "keyHeld": true, "maxTokens": 0, "contextWindow": 32768, "toolChoice": "named"}
        ]}),
    ]
}

#[test]
fn examples_validate_and_parse() {
    let v = schema();
    for ex in examples() {
        assert!(
            v.is_valid(&ex),
            "{ex}: {:?}",
            v.iter_errors(&ex)
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        );
        let spec: RunSpec = serde_json::from_value(ex.clone()).expect("the probe reads it");
        assert_eq!(
            serde_json::to_value(&spec.models)
                .unwrap()
                .as_array()
                .unwrap()
                .len(),
            ex["models"].as_array().unwrap().len()
        );
    }
}

#[test]
fn both_refuse_what_is_not_a_spec() {
    let v = schema();
    let bad = [
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [{"model": "vllm/x", "source": "custom", "apiKey": "sk-x"}]}),
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [{"model": "x", "source": "elsewhere"}]}),
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "extra": 1, "models": []}),
        json!({"schema": "jr2.dev/provider-preflight-run/v1", "models": [{"model": "a/b", "source": "catalog", "toolChoice": "forced"}]}),
    ];
    for b in bad {
        assert!(!v.is_valid(&b), "the schema accepts {b}");
        assert!(
            serde_json::from_value::<RunSpec>(b.clone()).is_err(),
            "the probe accepts {b}"
        );
    }
}

#[test]
fn every_model_field_the_probe_serializes_is_in_the_schema() {
    let schema: Value =
        serde_json::from_str(include_str!("../schemas/run-spec.v1.schema.json")).unwrap();
    let props = schema["$defs"]["model"]["properties"].as_object().unwrap();
    let full: ModelSpec = serde_json::from_value(json!({"model": "a/b", "source": "custom", "baseUrl": "http://h/v1",
        "api": "openai-completions", "keyEnv": "K", "keyHeld": true, "viaCustodian": true, "maxTokens": 1, "contextWindow": 2, "toolChoice": "auto"})).unwrap();
    for key in serde_json::to_value(&full)
        .unwrap()
        .as_object()
        .unwrap()
        .keys()
    {
        assert!(props.contains_key(key), "{key} is not in the schema");
    }
    assert_eq!(
        props.len(),
        serde_json::to_value(&full)
            .unwrap()
            .as_object()
            .unwrap()
            .len()
    );
}
