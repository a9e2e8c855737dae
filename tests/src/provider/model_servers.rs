//! Fakes shaped like the model servers a custom endpoint runs: llama.cpp's `llama-server`, vLLM's OpenAI server and a
//! LiteLLM proxy. Each answers Chat Completions as [`super::openai_completions`] does, plus what tells it apart: its
//! `server:` header, its error bodies, and its metadata (`GET /v1/models`; llama.cpp's `/props`; vLLM's `/version`).
//!
//! The canned bodies are in [`canned`], one place, so that the real-peer tests can compare them with what the real
//! `llama-server` answers. Their shapes come from the servers' documentation and the runs: llama-server's
//! `server: llama.cpp`, `/props` with `default_generation_settings.n_ctx` and `chat_template_caps.supports_tools`,
//! `/v1/models` with `meta.n_ctx`; vLLM's `server: uvicorn`, `/version` `{"version": "0.x"}`, `/v1/models` with
//! `max_model_len`, errors as `{"error": {"message", "type", "param", "code"}}`; LiteLLM's `server: uvicorn`,
//! `x-litellm-version`, and `litellm.<Class>: ...` messages.
//!
//! Models (the part before an optional `@` picks the behaviour): `ok` (a call with complete arguments), `ok-slow-<ms>`
//! (the same after a wait), `text`, `length-text` (text until the cap, no reasoning), `length-thinking` (reasoning
//! until the cap), `cut-call` (a call whose arguments the cap cut), `other-tool` (a call of another tool), and the
//! server's own failure: `no-jinja` (llama.cpp's 500), `no-parser` (vLLM's 400), `backend-down` (LiteLLM's 500).

use std::sync::Arc;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::answer::{Handler, json_error, stream};
use crate::http::{Body, Recorded, json};

/// Which server a fake is shaped like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// llama.cpp's `llama-server`.
    LlamaCpp,
    /// vLLM's OpenAI-compatible server.
    Vllm,
    /// A LiteLLM proxy.
    Litellm,
    /// Ollama (no `server:` header; `GET /api/ps` lists the models it has loaded). Only what the real Ollama of
    /// `real_peers.rs` cannot be made to do on demand: a model that streams text, then holds the rest back.
    Ollama,
}

/// A fake model server: its kind, the context it serves, and whether its chat template renders tools.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// The kind.
    pub kind: Kind,
    /// The context it serves (`-c`, `--max-model-len`).
    pub n_ctx: u64,
    /// llama.cpp: the template renders tools (`chat_template_caps.supports_tools`).
    pub supports_tools: bool,
}

/// The canned bodies and header values, as the real servers send them.
pub mod canned {
    use serde_json::{Value, json};

    /// llama-server's `server:` header.
    pub const LLAMA_SERVER: &str = "llama.cpp";
    /// vLLM's and LiteLLM's `server:` header.
    pub const UVICORN: &str = "uvicorn";
    /// vLLM's `/version`.
    pub const VLLM_VERSION: &str = "0.11.0";
    /// LiteLLM's version header value.
    pub const LITELLM_VERSION: &str = "1.77.5";
    /// llama-server's build (`/props` `build_info`), as the vendored tree's commit names it.
    pub const LLAMA_BUILD: &str = "b6709-0c1e570";

    /// llama-server's `GET /v1/models` (single-model mode: whatever id was asked, it lists its one model).
    pub fn llama_models(n_ctx: u64) -> Value {
        json!({
            "models": [{"name": "SmolLM2-135M-Instruct-Q8_0.gguf", "model": "SmolLM2-135M-Instruct-Q8_0.gguf", "type": "model"}],
            "object": "list",
            "data": [{
                "id": "SmolLM2-135M-Instruct-Q8_0.gguf", "object": "model", "created": 1764600000, "owned_by": "llamacpp",
                "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_ctx": n_ctx, "n_embd": 576,
                         "n_params": 134515008, "size": 144805632}
            }]
        })
    }

    /// llama-server's `GET /props`.
    pub fn llama_props(n_ctx: u64, supports_tools: bool) -> Value {
        json!({
            "default_generation_settings": {"n_ctx": n_ctx, "params": {"temperature": 0.8, "n_predict": -1}},
            "total_slots": 1,
            "model_path": "/models/SmolLM2-135M-Instruct-Q8_0.gguf",
            "chat_template": "{% for message in messages %}...{% endfor %}",
            "chat_template_caps": {
                "supports_object_arguments": false, "supports_parallel_tool_calls": false,
                "supports_preserve_reasoning": false, "supports_string_content": true,
                "supports_system_role": true, "supports_tool_calls": supports_tools, "supports_tools": supports_tools,
                "supports_typed_content": false
            },
            "modalities": {"vision": false, "audio": false},
            "build_info": LLAMA_BUILD
        })
    }

    /// llama-server without jinja (`--no-jinja`), asked for tools: HTTP 500.
    pub fn llama_no_jinja() -> Value {
        json!({"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "server_error"}})
    }

    /// llama-server, a prompt longer than its context: HTTP 400.
    pub fn llama_context_exceeded(prompt: u64, n_ctx: u64) -> Value {
        json!({"error": {"code": 400,
            "message": format!("request ({prompt} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"),
            "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": n_ctx}})
    }

    /// vLLM's `GET /v1/models`.
    pub fn vllm_models(id: &str, max_model_len: u64) -> Value {
        json!({"object": "list", "data": [{
            "id": id, "object": "model", "created": 1764600000, "owned_by": "vllm", "root": id, "parent": null,
            "max_model_len": max_model_len,
            "permission": [{"id": "modelperm-1", "object": "model_permission", "created": 1764600000,
                "allow_create_engine": false, "allow_sampling": true, "allow_logprobs": true,
                "allow_search_indices": false, "allow_view": true, "allow_fine_tuning": false, "organization": "*",
                "group": null, "is_blocking": false}]
        }]})
    }

    /// vLLM's `GET /version`.
    pub fn vllm_version() -> Value {
        json!({"version": VLLM_VERSION})
    }

    /// vLLM without `--enable-auto-tool-choice` / `--tool-call-parser`: HTTP 400.
    pub fn vllm_no_parser() -> Value {
        json!({"error": {"message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
            "type": "BadRequestError", "param": null, "code": 400}})
    }

    /// LiteLLM's `GET /v1/models` (no context length).
    pub fn litellm_models(id: &str) -> Value {
        json!({"data": [{"id": id, "object": "model", "created": 1677610602, "owned_by": "openai"}], "object": "list"})
    }

    /// LiteLLM whose backend does not answer: HTTP 500.
    pub fn litellm_backend_down() -> Value {
        json!({"error": {"message": "litellm.APIConnectionError: APIConnectionError: OpenAIException - Connection error. Received Model Group=m\nAvailable Model Group Fallbacks=None",
            "type": null, "param": null, "code": "500"}})
    }
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {c}\n\n")
}

fn call(name: &str, pieces: &[&str], finish: &str) -> Vec<String> {
    let mut events = vec![
        chunk(json!({"role": "assistant", "content": null}), None),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                   "function": {"name": name, "arguments": ""}}]}),
            None,
        ),
    ];
    events.extend(pieces.iter().map(|p| {
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}),
            None,
        )
    }));
    events.push(chunk(json!({}), Some(finish)));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

fn text(field: &str, pieces: &[&str], finish: &str) -> Vec<String> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    events.extend(pieces.iter().map(|p| chunk(json!({ field: p }), None)));
    events.push(chunk(json!({}), Some(finish)));
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// The fake of `shape`.
pub fn handler(shape: Shape) -> Handler {
    Arc::new(move |req: Recorded, _try_n: u32| {
        Box::pin(async move {
            let mut response = respond(shape, &req).await;
            let h = response.headers_mut();
            let server = match shape.kind {
                Kind::LlamaCpp => Some(canned::LLAMA_SERVER),
                Kind::Vllm | Kind::Litellm => Some(canned::UVICORN),
                Kind::Ollama => None,
            };
            if let Some(server) = server {
                h.insert(
                    HeaderName::from_static("server"),
                    HeaderValue::from_static(server),
                );
            }
            if shape.kind == Kind::Litellm {
                h.insert(
                    HeaderName::from_static("x-litellm-version"),
                    HeaderValue::from_static(canned::LITELLM_VERSION),
                );
            }
            response
        })
    })
}

async fn respond(shape: Shape, req: &Recorded) -> Response<Body> {
    let path = req.path.split('?').next().unwrap_or("");
    if req.method == "GET" {
        let body = match (shape.kind, path) {
            (Kind::LlamaCpp, "/v1/models") => canned::llama_models(shape.n_ctx),
            (Kind::LlamaCpp, "/props") => canned::llama_props(shape.n_ctx, shape.supports_tools),
            (Kind::Vllm, "/v1/models") => canned::vllm_models("served-model", shape.n_ctx),
            (Kind::Vllm, "/version") => canned::vllm_version(),
            (Kind::Litellm, "/v1/models") => canned::litellm_models("served-model"),
            (Kind::Ollama, "/api/ps") => json!({"models": [
                {"name": "held-back:latest", "model": "held-back:latest", "context_length": shape.n_ctx},
            ]}),
            _ => return json_error(StatusCode::NOT_FOUND, json!({"detail": "Not Found"})),
        };
        return json(StatusCode::OK, &body);
    }
    let model = req.body["model"].as_str().unwrap_or("");
    let behaviour = model.split('@').next().unwrap_or("");
    if let Some(ms) = behaviour
        .strip_prefix("ok-slow-")
        .and_then(|n| n.parse::<u64>().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        return stream(
            call("probe", &["{\"status\":", "\"ready\"}"], "tool_calls"),
            Duration::ZERO,
            false,
        );
    }
    match behaviour {
        "ok" => stream(
            call("probe", &["{\"status\":", "\"ready\"}"], "tool_calls"),
            Duration::ZERO,
            false,
        ),
        "other-tool" => stream(call("bash", &["{}"], "tool_calls"), Duration::ZERO, false),
        "cut-call" => stream(call("probe", &["{"], "length"), Duration::ZERO, false),
        "text" => stream(
            text("content", &["I can help with that."], "stop"),
            Duration::ZERO,
            false,
        ),
        "length-text" => stream(
            text(
                "content",
                &["Once upon a time ", "there was a model ", "that wrote on"],
                "length",
            ),
            Duration::ZERO,
            false,
        ),
        // Thinking in `content` (a template without a reasoning parser): it ends in `</think>` and the cap comes
        // right after (issue 27, item 11).
        "length-think-in-content" => stream(
            text(
                "content",
                &[
                    "Okay, the user wants ",
                    "me to call the probe tool.\n</think>\n\n",
                ],
                "length",
            ),
            Duration::ZERO,
            false,
        ),
        "length-thinking" => stream(
            text(
                "reasoning_content",
                &["Let me think about ", "which tool to"],
                "length",
            ),
            Duration::ZERO,
            false,
        ),
        // Ollama's tool parser holding back a call the model began and never closed: text, then nothing.
        "held-back" if shape.kind == Kind::Ollama => stream(
            vec![chunk(
                json!({"role": "assistant", "content": "I will call it. "}),
                None,
            )],
            Duration::ZERO,
            true,
        ),
        "no-jinja" if shape.kind == Kind::LlamaCpp => {
            json_error(StatusCode::INTERNAL_SERVER_ERROR, canned::llama_no_jinja())
        }
        "no-parser" if shape.kind == Kind::Vllm => {
            json_error(StatusCode::BAD_REQUEST, canned::vllm_no_parser())
        }
        "backend-down" if shape.kind == Kind::Litellm => json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            canned::litellm_backend_down(),
        ),
        _ => json_error(
            StatusCode::NOT_FOUND,
            json!({"error": {"message": format!("The model `{model}` does not exist."), "type": "NotFoundError", "param": "model", "code": 404}}),
        ),
    }
}
