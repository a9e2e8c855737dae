//! The probe knows the server behind a custom endpoint (issue 16): against fakes shaped like llama-server, vLLM and
//! LiteLLM (`jr2_testkit::provider::model_servers`), the real binary, by hand, says the cause the server told, runs
//! the context check, waits for a tool call's complete arguments, notes a forced tool choice it ignored, and prints
//! progress while a model takes long. Each test asserts the lines and the verdict JSON.

mod common;

use common::{Run, probe};
use jr2_probe::contract::endpoint::{Cause, EndpointKind};
use jr2_probe::outcome::{Code, Level, Outcome};
use jr2_probe::render;
use jr2_testkit::provider::FakeProvider;
use jr2_testkit::provider::model_servers::{self, Kind, Shape, canned};

async fn server(kind: Kind, n_ctx: u64, supports_tools: bool) -> FakeProvider {
    FakeProvider::start_with(
        model_servers::handler(Shape {
            kind,
            n_ctx,
            supports_tools,
        }),
        None,
    )
    .await
}

async fn check(fake: &FakeProvider, model: &str, extra: &[&str]) -> Run {
    let base = fake.base_url();
    let mut args = vec![
        "check",
        "--base-url",
        base.as_str(),
        "--model",
        model,
        "--output",
        "json",
    ];
    args.extend(extra);
    probe(&args, &[]).await
}

/// The model's lines: stderr without the loopback warning.
fn lines(run: &Run) -> Vec<String> {
    run.lines()
        .into_iter()
        .filter(|l| !(l.starts_with("warning: provider: ") && l.contains("is a loopback address")))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_cpp_template_without_tools_names_the_template_not_jinja() {
    let fake = server(Kind::LlamaCpp, 8192, false).await;
    let run = check(&fake, "text", &[]).await;
    let v = run.verdict();
    let r = &v.models[0];
    assert_eq!((r.outcome, r.level), (Outcome::Text, Level::Warning));
    let e = r.findings.endpoint.as_ref().expect("the endpoint is known");
    assert_eq!(e.kind, EndpointKind::LlamaCpp);
    assert_eq!(e.supports_tools, Some(false));
    assert_eq!(e.context_length, Some(8192));
    assert_eq!(e.version.as_deref(), Some(canned::LLAMA_BUILD));
    assert_eq!(r.findings.cause, Some(Cause::LlamaCppTemplateWithoutTools));
    assert!(
        r.next_action.contains("--chat-template-file"),
        "{}",
        r.next_action
    );
    assert!(!r.next_action.contains("--jinja flag"));
    let got = lines(&run);
    let want_cause = render::cause_line(&Cause::LlamaCppTemplateWithoutTools, r).unwrap();
    assert!(
        got.ends_with(&[render::text_warning("text"), want_cause]),
        "{got:#?}"
    );
    // The metadata went to the check's own origin, and the key header with it (pi's `Bearer unused`).
    let gets: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|q| q.method == "GET")
        .collect();
    let paths: Vec<&str> = gets.iter().map(|q| q.path.as_str()).collect();
    assert_eq!(paths, ["/v1/models", "/props"]);
    assert!(
        gets.iter()
            .all(|q| q.header("authorization") == Some("Bearer unused"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn llama_cpp_without_jinja_names_jinja_not_vllm() {
    let fake = server(Kind::LlamaCpp, 8192, true).await;
    let run = check(&fake, "no-jinja", &[]).await;
    let r = &run.verdict().models[0];
    assert_eq!(r.code, Code::ToolsNotEnabled);
    assert_eq!(r.findings.cause, Some(Cause::LlamaCppWithoutJinja));
    assert!(r.next_action.contains("--jinja") && !r.next_action.contains("vLLM"));
    let got = lines(&run);
    assert_eq!(
        got.last().unwrap(),
        &render::cause_line(&Cause::LlamaCppWithoutJinja, r).unwrap()
    );
    // The contract's lines come first, unchanged.
    assert!(got[0].starts_with("error: provider preflight failed for model \"no-jinja\""));
    assert_eq!(got[2], render::hint::MODEL_ID);
}

#[tokio::test(flavor = "multi_thread")]
async fn vllm_is_known_by_its_version_and_keeps_today_s_line() {
    let fake = server(Kind::Vllm, 32768, true).await;
    let run = check(&fake, "no-parser", &[]).await;
    let r = &run.verdict().models[0];
    let e = r.findings.endpoint.as_ref().unwrap();
    assert_eq!(e.kind, EndpointKind::Vllm);
    assert_eq!(e.version.as_deref(), Some(canned::VLLM_VERSION));
    assert_eq!(e.context_length, Some(32768));
    assert_eq!(r.findings.cause, Some(Cause::VllmToolsNotEnabled));
    assert_eq!(r.next_action, Code::ToolsNotEnabled.next_action());
    // No line beyond the contract's: its vLLM line says it.
    assert_eq!(lines(&run).last().unwrap(), render::hint::LENGTH);
    let paths: Vec<String> = fake
        .requests()
        .into_iter()
        .filter(|q| q.method == "GET")
        .map(|q| q.path)
        .collect();
    assert_eq!(paths, ["/v1/models", "/version"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_litellm_gateway_whose_backend_failed_says_so() {
    let fake = server(Kind::Litellm, 0, true).await;
    let run = check(&fake, "backend-down", &[]).await;
    let r = &run.verdict().models[0];
    assert_eq!(
        r.findings.endpoint.as_ref().unwrap().kind,
        EndpointKind::Litellm
    );
    let cause = Cause::GatewayBackendFailed {
        error: "APIConnectionError".into(),
    };
    assert_eq!(r.findings.cause.as_ref(), Some(&cause));
    assert_eq!(
        lines(&run).last().unwrap(),
        &render::cause_line(&cause, r).unwrap()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn length_with_and_without_reasoning_says_which() {
    let fake = server(Kind::LlamaCpp, 8192, true).await;
    for (model, cause) in [
        ("length-thinking", Cause::LengthWhileThinking),
        ("length-text", Cause::TextUntilCap),
        // Thinking text in `content`, ending in `</think>`: it was thinking, not a text answer (issue 27, item 11).
        ("length-think-in-content", Cause::LengthWhileThinking),
    ] {
        let run = check(&fake, model, &[]).await;
        let r = &run.verdict().models[0];
        assert_eq!(
            (r.outcome, r.level),
            (Outcome::Length, Level::Error),
            "{model}"
        );
        assert_eq!(r.findings.cause.as_ref(), Some(&cause), "{model}");
        assert_eq!(r.next_action, render::cause_next_action(&cause));
        assert_eq!(
            lines(&run).last().unwrap(),
            &render::cause_line(&cause, r).unwrap()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_call_the_cap_cut_is_length_with_its_arguments() {
    let fake = server(Kind::LlamaCpp, 8192, true).await;
    let run = check(&fake, "cut-call", &[]).await;
    let r = &run.verdict().models[0];
    assert_eq!((r.outcome, r.code), (Outcome::Length, Code::Length));
    assert_eq!(r.findings.cause, Some(Cause::ToolCallCut));
    assert_eq!(r.findings.tool_arguments.as_deref(), Some("{"));
    assert_eq!(
        r.error.as_deref(),
        Some(render::call_cut_error("length", 1024).as_str())
    );
    // A complete call passes.
    let run = check(&fake, "ok", &[]).await;
    assert_eq!(
        run.verdict().models[0].outcome,
        Outcome::Ok,
        "{}",
        run.stderr
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_served_context_smaller_than_the_window_is_an_error() {
    let fake = server(Kind::LlamaCpp, 2048, true).await;
    let run = check(&fake, "ok", &["--context-window", "32768"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = &run.verdict().models[0];
    assert_eq!((r.outcome, r.code), (Outcome::Http, Code::ContextTooSmall));
    let cause = Cause::ContextTooSmall {
        served: 2048,
        needed: 32768,
        from_window: true,
        server: EndpointKind::LlamaCpp,
        slots: None,
        prompt_cut: false,
    };
    assert_eq!(r.findings.cause.as_ref(), Some(&cause));
    assert_eq!(
        r.error.as_deref(),
        Some(render::context_too_small_error(2048, 32768, None).as_str())
    );
    assert_eq!(
        lines(&run).last().unwrap(),
        &render::cause_line(&cause, r).unwrap()
    );
    // Without a window: the cap and the probe's own prompt. 256 tokens of context cannot hold a 1024-token cap.
    let small = server(Kind::Vllm, 256, true).await;
    let r = check(&small, "ok", &[]).await.verdict().models[0].clone();
    assert!(
        matches!(
            r.findings.cause,
            Some(Cause::ContextTooSmall {
                served: 256,
                from_window: false,
                server: EndpointKind::Vllm,
                ..
            })
        ),
        "{:?}",
        r.findings
    );
    // A context that holds the window passes, and its length is in the verdict.
    let big = server(Kind::LlamaCpp, 32768, true).await;
    let r = check(&big, "ok", &["--context-window", "32768"])
        .await
        .verdict()
        .models[0]
        .clone();
    assert_eq!(r.outcome, Outcome::Ok);
    assert_eq!(r.findings.endpoint.unwrap().context_length, Some(32768));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forced_tool_choice_answered_otherwise_is_noted() {
    let fake = server(Kind::LlamaCpp, 8192, true).await;
    for model in ["text", "other-tool"] {
        let run = check(&fake, model, &["--tool-choice", "named"]).await;
        let r = &run.verdict().models[0];
        assert!(r.findings.tool_choice_ignored, "{model}");
        assert!(
            lines(&run).contains(&render::tool_choice_ignored(model)),
            "{}",
            run.stderr
        );
    }
    let r = check(&fake, "ok", &["--tool-choice", "named"])
        .await
        .verdict()
        .models[0]
        .clone();
    assert!(!r.findings.tool_choice_ignored);
    // Without a forced choice, a text answer is no such note.
    let r = check(&fake, "text", &[]).await.verdict().models[0].clone();
    assert!(!r.findings.tool_choice_ignored);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_takes_long_gets_progress_lines() {
    let fake = server(Kind::LlamaCpp, 8192, true).await;
    let run = check(
        &fake,
        "ok-slow-1600",
        &["--waiting-note", "500ms", "--timeout", "10s"],
    )
    .await;
    assert_eq!(
        run.verdict().models[0].outcome,
        Outcome::Ok,
        "{}",
        run.stderr
    );
    let waiting: Vec<String> = lines(&run)
        .into_iter()
        .filter(|l| l.contains("no verdict yet"))
        .collect();
    let line = |ms| {
        render::waiting(
            "ok-slow-1600",
            std::time::Duration::from_millis(ms),
            std::time::Duration::from_secs(10),
            jr2_probe::contract::events::WaitStage::NoAnswer,
        )
    };
    // The model answers after 1.6 s: at least the three lines before it, each at the pace.
    assert!(
        waiting.starts_with(&[line(500), line(1000), line(1500)]),
        "{waiting:#?}"
    );
    assert!(
        waiting
            .iter()
            .enumerate()
            .all(|(i, l)| *l == line(500 * (i as u64 + 1))),
        "{waiting:#?}"
    );
    // None when the verdict comes first.
    let run = check(&fake, "ok", &["--waiting-note", "30s"]).await;
    assert!(!run.stderr.contains("no verdict yet"), "{}", run.stderr);
    // `0s: none`, as --help says (issue 27, item 11: it was refused as "must be more than 0").
    let run = check(
        &fake,
        "ok-slow-1200",
        &["--waiting-note", "0s", "--timeout", "10s"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("no verdict yet"), "{}", run.stderr);
}

/// `contextWindow` equal to the served context (`-c`): pi's clamp leaves every Turn a cap of 1 token, so the check
/// stops for length; the cause names the clamp and the next action is the window, not `raise maxTokens`, which
/// changes nothing (issue 27, item 11).
#[tokio::test(flavor = "multi_thread")]
async fn a_cap_clamped_by_the_window_names_the_clamp() {
    let fake = server(Kind::LlamaCpp, 4096, true).await;
    let run = check(
        &fake,
        "length-text",
        &["--context-window", "4096", "--max-tokens", "1024"],
    )
    .await;
    let r = &run.verdict().models[0];
    assert_eq!((r.outcome, r.level), (Outcome::Length, Level::Error));
    assert_eq!(
        r.max_tokens, 1,
        "pi's clamp: 4096 - the prompt - 4096, at least 1"
    );
    let cause = Cause::CapClamped {
        context_window: 4096,
    };
    assert_eq!(r.findings.cause.as_ref(), Some(&cause), "{r:#?}");
    assert_eq!(r.next_action, render::cause_next_action(&cause));
    assert!(
        !r.next_action.starts_with("raise maxTokens"),
        "{}",
        r.next_action
    );
    assert_eq!(
        lines(&run).last().unwrap(),
        "  - pi clamps the cap to the contextWindow of 4096 less its estimate of the prompt and a 4096-token reserve, so every Turn asks for 1 token: raising maxTokens changes nothing; set contextWindow in jr2.config.ts to the context the server really serves, or serve a larger one"
    );
}

/// Issue 38, item 4: the waiting note says how far the try has come, never "loads on first use" while text streams:
/// no byte (`stall`), the headers and an empty first chunk (`stall-mid-stream`), text and no call
/// (`text-then-stall`), a call begun (`call-then-stall`).
#[tokio::test(flavor = "multi_thread")]
async fn the_waiting_note_says_how_far_the_try_came() {
    use jr2_probe::contract::events::WaitStage;
    let fake = FakeProvider::start().await;
    for (model, stage) in [
        ("stall", WaitStage::NoAnswer),
        ("stall-mid-stream", WaitStage::Headers),
        ("text-then-stall", WaitStage::Text),
        ("call-then-stall", WaitStage::ToolCall),
    ] {
        let run = check(
            &fake,
            model,
            &["--waiting-note", "500ms", "--timeout", "2s"],
        )
        .await;
        let want = render::waiting(
            model,
            std::time::Duration::from_millis(1000),
            std::time::Duration::from_secs(2),
            stage,
        );
        assert!(
            lines(&run).contains(&want),
            "{model}: {want}\n{}",
            run.stderr
        );
        if stage != WaitStage::NoAnswer {
            assert!(
                !lines(&run)
                    .iter()
                    .any(|l| l.contains("no verdict yet") && l.contains("loads on first use")),
                "{model}: {}",
                run.stderr
            );
        }
    }
}

/// Issue 38, item 4: with no byte of an answer, the waiting note asks Ollama's `/api/ps`. A (fake) Ollama that does
/// not list the model: each note says Ollama has not loaded it, and asks again at the next; a server that answers the
/// GET with a 404 (the llama.cpp fake): the plain note, and no more GETs after the first.
#[tokio::test(flavor = "multi_thread")]
async fn the_waiting_note_asks_ollama_whether_the_model_is_loaded() {
    use jr2_probe::contract::events::WaitStage;
    for (kind, stage) in [
        (Kind::Ollama, WaitStage::OllamaNotLoaded),
        (Kind::LlamaCpp, WaitStage::NoAnswer),
    ] {
        let fake = server(kind, 8192, true).await;
        let run = check(
            &fake,
            "ok-slow-2400",
            &["--waiting-note", "500ms", "--timeout", "10s"],
        )
        .await;
        assert_eq!(
            run.verdict().models[0].outcome,
            Outcome::Ok,
            "{kind:?}: {}",
            run.stderr
        );
        let notes: Vec<String> = lines(&run)
            .into_iter()
            .filter(|l| l.contains("no verdict yet"))
            .collect();
        let note = |ms| {
            render::waiting(
                "ok-slow-2400",
                std::time::Duration::from_millis(ms),
                std::time::Duration::from_secs(10),
                stage,
            )
        };
        assert!(
            notes.starts_with(&[note(500), note(1000), note(1500)]),
            "{kind:?}: {notes:#?}"
        );
        let looks = fake
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path == "/api/ps")
            .count();
        match kind {
            Kind::Ollama => assert!(looks >= 3, "{looks}"),
            _ => assert_eq!(looks, 1, "no look after the 404"),
        }
    }
}

/// Issue 38: Ollama's tool parser holds back everything after the start of a tool call until it closes; a model that
/// began one and never closed it streamed text, then nothing. The timeout then names the held-back call, not a queue
/// (`/api/ps`: the model was loaded; text had come). The real Ollama does it in `real_peers.rs`
/// (`ollama_holds_back_a_call_that_never_closes`).
#[tokio::test(flavor = "multi_thread")]
async fn ollama_holding_back_an_unfinished_call_is_named() {
    let fake = server(Kind::Ollama, 4096, true).await;
    let run = check(&fake, "held-back", &["--timeout", "5s"]).await;
    let m = &run.verdict().models[0];
    assert_eq!(
        (m.outcome, m.code),
        (Outcome::Timeout, Code::Timeout),
        "{}",
        run.stderr
    );
    assert_eq!(
        m.error.as_deref(),
        Some(render::timeout_ollama_held_back_error("5").as_str())
    );
    let want = Cause::OllamaHeldBackCall;
    assert_eq!(m.findings.cause.as_ref(), Some(&want), "{}", run.stderr);
    assert_eq!(
        lines(&run).last().map(String::as_str),
        render::cause_line(&want, m).as_deref()
    );
    assert_eq!(m.next_action, render::cause_next_action(&want));
}
