//! `jr2-probe`: the command line of the provider preflight's probe.
//!
//! `jr2-probe check` is what an operator runs by hand against an endpoint (their vLLM, llama.cpp or gateway): the
//! same request a Turn sends, the same lines `jr2 up` prints, with `(from this machine, ...)`. Exit codes: 0 when no
//! model failed (warnings allowed), 1 when one did, 2 for bad input or usage, each with one `error:` line.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};
use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::check::{Checker, Settings};
use jr2_probe::render;
use jr2_probe::retry::RetryPolicy;
use jr2_probe::sanitize::{self, Redactor};
use jr2_probe::target::{Facts, Key, Secret, Target, new_session_id};
use jr2_probe::transport::{CaFile, ClientFactory, Trust, ca_files_from_env};
use jr2_probe::verdict::{Origin, Route, Verdict};

/// Exit code: no model failed.
const EXIT_OK: u8 = 0;
/// Exit code: a model failed.
const EXIT_FAILED: u8 = 1;
/// Exit code: bad input or usage.
const EXIT_USAGE: u8 = 2;

/// Asks each model for one tool call, as a Turn of pi-ai 0.82.1 asks it, and says whether it can call tools.
#[derive(Debug, Parser)]
#[command(name = "jr2-probe", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check models of one endpoint, by hand.
    ///
    /// Example: jr2-probe check --base-url http://vllm.lan:8000/v1 --model Qwen/Qwen3-32B --api-key-env VLLM_KEY
    Check(CheckArgs),
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// The endpoint's base URL, as harness.provider.baseUrl names it (the API appends /chat/completions).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,

    /// A model id exactly as the endpoint serves it; repeat to check several at once.
    #[arg(long = "model", value_name = "ID", required = true)]
    models: Vec<String>,

    /// The API kind, by pi's name.
    #[arg(long, value_name = "KIND", default_value = "openai-completions")]
    api: String,

    /// The environment variable that holds the endpoint's key (plays the role of harness.provider.apiKey).
    /// Without it the probe sends what pi sends with no key: `Authorization: Bearer unused`.
    #[arg(long, value_name = "NAME")]
    api_key_env: Option<String>,

    /// A PEM file of CA certificates to trust on top of Mozilla's roots (and of NODE_EXTRA_CA_CERTS and
    /// SSL_CERT_FILE when set); repeatable.
    #[arg(long, value_name = "PEM")]
    ca_bundle: Vec<PathBuf>,

    /// No answer within this, per model, is a timeout (e.g. 120s, 2m, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = parse_duration)]
    timeout: Duration,

    /// The model's maxTokens (the token cap a Turn sends). 0 sends 1, as pi does for a custom model without one.
    #[arg(long, value_name = "N", default_value_t = 1024)]
    max_tokens: u64,

    /// The model's context window; when set, the token cap is clamped to it as pi clamps it.
    #[arg(long, value_name = "N", default_value_t = 0)]
    context_window: u64,

    /// The tool_choice to send. A Turn sends none (unset); jr2's plan may set one, as pi's toolChoice option does.
    /// `named` names the probe's tool.
    #[arg(long, value_enum, value_name = "CHOICE", default_value = "unset")]
    tool_choice: ToolChoiceArg,

    /// Tries per model on 429, 529 and 503, the first included.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10))]
    max_tries: u32,

    /// Models checked at once.
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,

    /// human: the lines on stderr; json: also the verdict on stdout.
    #[arg(short = 'o', long, value_enum, default_value = "human")]
    output: Output,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ToolChoiceArg {
    /// Send no tool_choice, as a Turn does.
    Unset,
    /// "auto".
    Auto,
    /// "none".
    None,
    /// "required".
    Required,
    /// The probe's tool by name.
    Named,
}

impl From<ToolChoiceArg> for ToolChoice {
    fn from(c: ToolChoiceArg) -> Self {
        match c {
            ToolChoiceArg::Unset => ToolChoice::Unset,
            ToolChoiceArg::Auto => ToolChoice::Auto,
            ToolChoiceArg::None => ToolChoice::None,
            ToolChoiceArg::Required => ToolChoice::Required,
            ToolChoiceArg::Named => ToolChoice::Named,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Output {
    Human,
    Json,
}

/// Bad input: one `error:` line naming the flag, exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{flag}: {message}")]
struct InputError {
    flag: &'static str,
    message: String,
}

fn input_error(flag: &'static str, message: impl Into<String>) -> InputError {
    InputError {
        flag,
        message: message.into(),
    }
}

/// `120s`, `2m`, `500ms`, or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("\"{text}\" is not a duration (e.g. 120s, 2m, 500ms)"))?;
    let secs = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("\"{text}\" has an unknown unit (use ms, s or m)")),
    };
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("\"{text}\" must be more than 0 and at most a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let Command::Check(args) = cli.command;
    runtime.block_on(async {
        tokio::select! {
            code = check(args) => code,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("error: interrupted; the models not finished were not checked");
                ExitCode::from(130)
            }
        }
    })
}

/// Clap's usage errors as one `error:` line (exit 2); help and version as clap prints them (exit 0).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return ExitCode::from(
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                EXIT_USAGE
            } else {
                EXIT_OK
            },
        );
    }
    let text = e.render().to_string();
    let line = text
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let line = line.strip_prefix("error: ").unwrap_or(&line);
    eprintln!(
        "error: {} (see jr2-probe check --help)",
        sanitize::escape(line)
    );
    ExitCode::from(EXIT_USAGE)
}

fn init_tracing() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

async fn check(args: CheckArgs) -> ExitCode {
    let (targets, checker) = match prepare(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}", sanitize::escape(&e.to_string()));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let started_at = SystemTime::now();
    let start = Instant::now();
    let origin = Origin::ThisMachine;
    let mut lines: Vec<String> = Vec::new();
    let emit = |line: String, lines: &mut Vec<String>| {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
        lines.push(line);
    };
    if let Some(first) = targets.first()
        && is_loopback(&first.base_url)
    {
        emit(render::loopback_warning(&first.host()), &mut lines);
    }
    // Lines come out in the order the models were given, whatever the completion order: a result waits until
    // every model before it has printed.
    let mut pending: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut next = 0usize;
    let results = checker
        .check_all(&targets, |i, result| {
            pending.insert(i, render::model_lines(result, &origin));
            while let Some(ready) = pending.remove(&next) {
                for line in ready {
                    emit(line, &mut lines);
                }
                next += 1;
            }
        })
        .await;
    let verdict = Verdict::new(origin, started_at, start.elapsed(), results, lines);
    if args.output == Output::Json {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer_pretty(&mut out, &verdict);
        let _ = writeln!(out);
    }
    ExitCode::from(if verdict.ok { EXIT_OK } else { EXIT_FAILED })
}

fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

fn prepare(args: &CheckArgs) -> Result<(Vec<Target>, Checker), InputError> {
    let api: ApiKind = args
        .api
        .parse()
        .map_err(|e: jr2_probe::api::UnknownApiKind| input_error("--api", e.to_string()))?;
    let Some(base) = &args.base_url else {
        return Err(input_error(
            "--base-url",
            "required: this version of the probe checks one endpoint named by its base URL",
        ));
    };
    let base_url = parse_base_url(base)?;
    let key = match &args.api_key_env {
        None => None,
        Some(name) => {
            let value = std::env::var(name).map_err(|_| {
                input_error(
                    "--api-key-env",
                    format!("the environment variable {name} is not set (or not UTF-8)"),
                )
            })?;
            if value.is_empty() {
                return Err(input_error(
                    "--api-key-env",
                    format!("the environment variable {name} is empty"),
                ));
            }
            Some(Key {
                env: name.clone(),
                value: Secret::new(value),
            })
        }
    };
    for (i, model) in args.models.iter().enumerate() {
        if model.trim().is_empty() {
            return Err(input_error("--model", format!("model {} is empty", i + 1)));
        }
    }
    let mut ca_files: Vec<CaFile> = args
        .ca_bundle
        .iter()
        .map(|p| CaFile {
            source_name: "--ca-bundle".to_owned(),
            path: p.clone(),
        })
        .collect();
    let mut trust =
        Trust::load(&ca_files).map_err(|e| input_error("--ca-bundle", e.to_string()))?;
    let env_files = ca_files_from_env();
    if !env_files.is_empty() {
        ca_files.extend(env_files);
        match Trust::load(&ca_files) {
            Ok(t) => trust = t,
            // Node.js warns and goes on when NODE_EXTRA_CA_CERTS cannot be read; so does the probe.
            Err(e) => eprintln!(
                "warning: provider: {}; going on without it",
                sanitize::escape(&e.to_string())
            ),
        }
    }
    let max_tokens = jr2_probe::prompt::token_cap(args.max_tokens, args.context_window);
    let session_id = new_session_id();
    let targets = args
        .models
        .iter()
        .map(|model| Target {
            model: model.clone(),
            id: model.clone(),
            api,
            base_url: base_url.clone(),
            route: Route::Custom {
                api_key_set: key.is_some(),
            },
            key: key.clone(),
            max_tokens,
            tool_choice: args.tool_choice.into(),
            // A custom provider's model: pi builds it with `reasoning: true` and no compat of its own.
            facts: Facts {
                reasoning: true,
                ..Facts::default()
            },
            session_id: session_id.clone(),
        })
        .collect();
    let redactor = Redactor::new(key.iter().map(|k| k.value.expose().to_owned()));
    let settings = Settings {
        timeout: args.timeout,
        retry: RetryPolicy {
            max_tries: args.max_tries,
            ..RetryPolicy::default()
        },
        concurrency: usize::from(args.concurrency),
    };
    let connect_timeout = args.timeout.min(Duration::from_secs(10));
    let checker = Checker::new(
        ClientFactory::new(trust, connect_timeout),
        redactor,
        settings,
    );
    Ok((targets, checker))
}

fn parse_base_url(text: &str) -> Result<reqwest::Url, InputError> {
    let shown = sanitize::escape_truncate(text, 200);
    let url = reqwest::Url::parse(text)
        .map_err(|e| input_error("--base-url", format!("\"{shown}\" is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(input_error(
            "--base-url",
            format!("\"{shown}\": the scheme must be http or https"),
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(input_error(
            "--base-url",
            format!("\"{shown}\" names no host"),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(input_error(
            "--base-url",
            "must not carry credentials; put the key in an environment variable and name it with --api-key-env",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(input_error(
            "--base-url",
            format!("\"{shown}\" must not have a query or a fragment"),
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("120s"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("7"), Ok(Duration::from_secs(7)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5h").is_err());
    }

    #[test]
    fn base_urls() {
        assert!(parse_base_url("http://vllm.lan:8000/v1").is_ok());
        for bad in [
            "ftp://x/v1",
            "not a url",
            "http://user:pw@h/v1",
            "http://h/v1?x=1",
        ] {
            let e = parse_base_url(bad).unwrap_err();
            assert_eq!(e.flag, "--base-url", "{bad}");
        }
        // The password never appears in the message.
        let e = parse_base_url("http://user:hunter2@h/v1").unwrap_err();
        assert!(!e.to_string().contains("hunter2"));
    }
}
