//! `jr2-probe`: the command line of the provider preflight's probe.
//!
//! `jr2-probe check` is what an operator runs by hand against an endpoint (their vLLM, llama.cpp or gateway): the
//! same request a Turn sends, the same lines `jr2 up` prints, with `(from this machine, ...)`. Exit codes: 0 when no
//! model failed (warnings allowed), 1 when one did, 2 for bad input or usage, each with one `error:` line, 130 when
//! interrupted by SIGINT ([`jr2_probe::contract::Exit`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};
use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::catalog;
use jr2_probe::check::{Checker, Progress, Settings};
use jr2_probe::contract::Exit;
use jr2_probe::render;
use jr2_probe::retry::RetryPolicy;
use jr2_probe::run::RunOptions;
use jr2_probe::sanitize::{self, Redactor};
use jr2_probe::spec::{self, ModelSpec, Remedy, RunSpec, Source, SpecInput};
use jr2_probe::target::{Key, Secret, Target, new_session_id};
use jr2_probe::transport::{CaFile, ClientFactory, ProxyEnv, Trust, ca_sources_from_env};
use jr2_probe::verdict::{Origin, Verdict};

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
    /// Check the models of a run spec, in the check pod: JSON lines on stdout, a summary in the termination message.
    ///
    /// The spec's JSON Schema is probe/schemas/run-spec.v1.schema.json. NODE_NAME names the node in the lines;
    /// JR2_PROBE_DEADLINE (Unix seconds) is the pod's deadline, which the probe finishes before.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The run spec: a file, or - for stdin.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "spec_json",
        required_unless_present = "spec_json"
    )]
    spec: Option<PathBuf>,

    /// The run spec, inline.
    #[arg(long, value_name = "JSON")]
    spec_json: Option<String>,

    /// Where the compact summary goes (at most 4096 bytes).
    #[arg(long, value_name = "PATH", default_value = "/dev/termination-log")]
    termination_log: PathBuf,

    /// The node the pod runs on, for the lines.
    #[arg(long, value_name = "NAME", env = "NODE_NAME")]
    node: Option<String>,

    /// A PEM file of CA certificates to trust on top of Mozilla's roots and the env's CA files; repeatable.
    #[arg(long, value_name = "PEM")]
    ca_bundle: Vec<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// A custom endpoint's base URL, as harness.provider.baseUrl names it (the API appends /chat/completions).
    /// Without it, each --model is a model of pi's catalog (`anthropic/claude-haiku-4-5`).
    #[arg(long, value_name = "URL", conflicts_with = "gateway")]
    base_url: Option<String>,

    /// With --base-url: a model id exactly as the endpoint serves it. Without: `<provider>/<id>` of pi's catalog.
    /// Repeat to check several at once.
    #[arg(long = "model", value_name = "ID", required = true)]
    models: Vec<String>,

    /// The API kind, by pi's name (default: openai-completions with --base-url, the catalog's otherwise).
    #[arg(long, value_name = "KIND")]
    api: Option<String>,

    /// A harness.catalog gateway that serves the catalog models' provider: its whole base URL, which the API
    /// appends its path to (`https://litellm.corp.example` for anthropic).
    #[arg(long, value_name = "URL")]
    gateway: Option<String>,

    /// The environment variable that holds the key. With --base-url it plays the role of harness.provider.apiKey,
    /// and without it the probe sends what pi sends with no key: `Authorization: Bearer unused`. For a catalog
    /// model the default is the first of the provider's variables (in pi's order) that is set; for amazon-bedrock,
    /// AWS_BEARER_TOKEN_BEDROCK.
    #[arg(long, value_name = "NAME")]
    api_key_env: Option<String>,

    /// A PEM file of CA certificates to trust on top of Mozilla's roots (and of NODE_EXTRA_CA_CERTS and
    /// SSL_CERT_FILE when set); repeatable.
    #[arg(long, value_name = "PEM")]
    ca_bundle: Vec<PathBuf>,

    /// No answer within this, per model, is a timeout (e.g. 120s, 2m, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = jr2_probe::cli::parse_duration)]
    timeout: Duration,

    /// The model's maxTokens (the token cap a Turn sends): default 1024 with --base-url, the catalog's otherwise.
    /// 0 sends 1, as pi does. jr2 sends 1 for a model whose harness.provider sets no maxTokens (it builds the model
    /// with maxTokens 0): --max-tokens 0 checks what such a Turn gets.
    #[arg(long, value_name = "N")]
    max_tokens: Option<u64>,

    /// A model still waiting for its verdict after this gets a progress line, and another at each multiple of it
    /// (0s: none).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = jr2_probe::cli::parse_duration_or_zero)]
    waiting_note: Duration,

    /// The model's context window; when set, the token cap is clamped to it as pi clamps it (default: unknown with
    /// --base-url, the catalog's otherwise).
    #[arg(long, value_name = "N")]
    context_window: Option<u64>,

    /// The tool_choice to send. A Turn sends none (unset); jr2's plan may set one, as pi's toolChoice option does.
    /// `named` names the probe's tool.
    #[arg(long, value_enum, value_name = "CHOICE", default_value = "unset")]
    tool_choice: ToolChoiceArg,

    /// Tries per model on 429, 529 and 503, the first included.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=10))]
    max_tries: u32,

    /// Models checked at once, in all.
    #[arg(long, value_name = "N", default_value_t = Settings::DEFAULT_CONCURRENCY as u16, value_parser = clap::value_parser!(u16).range(1..=64))]
    concurrency: u16,

    /// Models checked at once against one endpoint (its scheme, host and port): the most requests of this check a
    /// provider sees at once.
    #[arg(long, value_name = "N", default_value_t = Settings::DEFAULT_PER_HOST as u16, value_parser = clap::value_parser!(u16).range(1..=64))]
    per_host: u16,

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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    jr2_probe::console::init_tracing();
    let runtime = match jr2_probe::console::runtime() {
        Ok(rt) => rt,
        Err(exit) => return exit,
    };
    runtime.block_on(async {
        let work = async {
            match cli.command {
                Command::Check(args) => check(args).await,
                Command::Run(args) => run(args).await,
            }
        };
        tokio::select! {
            code = work => code,
            _ = tokio::signal::ctrl_c() => {
                jr2_probe::say!("error: interrupted; the models not finished were not checked");
                Exit::Interrupted.into()
            }
        }
    })
}

/// Clap's errors as `jr2_probe::cli::usage_error` ends on them, naming the subcommand's help when one was given.
fn usage_error(e: clap::Error) -> ExitCode {
    let sub = std::env::args()
        .nth(1)
        .filter(|c| c == "check" || c == "run");
    jr2_probe::cli::usage_error(&e, "jr2-probe", sub.as_deref()).into()
}

async fn check(args: CheckArgs) -> ExitCode {
    let (targets, checker, warnings) = match prepare(&args) {
        Ok(p) => p,
        Err(e) => {
            jr2_probe::say!("error: {}", sanitize::escape(&e.to_string()));
            return Exit::Usage.into();
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
    for line in warnings {
        emit(line, &mut lines);
    }
    if let Some(first) = targets.first()
        && is_loopback(&first.base_url)
    {
        emit(render::loopback_warning(&first.host()), &mut lines);
    }
    for proxy in checker
        .factory()
        .proxy()
        .unusable_for(targets.iter().map(|t| t.api))
    {
        emit(proxy.warning_line(), &mut lines);
    }
    // Lines come out in the order the models were given, whatever the completion order: a result waits until
    // every model before it has printed.
    let mut pending: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut next = 0usize;
    // A model still waiting gets its progress line as it comes (not in the verdict's lines: they are the result's).
    let timeout = checker.settings().timeout;
    let waiting = |p: Progress<'_>| {
        if let Progress::Waiting {
            index,
            waited,
            stage,
        } = p
        {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(
                err,
                "{}",
                render::waiting(&targets[index].model, waited, timeout, stage)
            );
        }
    };
    let results = checker
        .check_all_observed(&targets, &waiting, |i, result| {
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
    if args.output == Output::Json
        && let Err(e) = jr2_probe::console::out_json("the verdict", &verdict)
    {
        jr2_probe::say!("{}", e.line());
        return Exit::Failed.into();
    }
    Exit::of_run(verdict.ok).into()
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

fn prepare(args: &CheckArgs) -> Result<(Vec<Target>, Checker, Vec<String>), InputError> {
    let api: Option<ApiKind> = args
        .api
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(|e: jr2_probe::api::UnknownApiKind| input_error("--api", e.to_string()))?;
    for (i, model) in args.models.iter().enumerate() {
        if model.trim().is_empty() {
            return Err(input_error("--model", format!("model {} is empty", i + 1)));
        }
        spec::check_model_id(model)
            .map_err(|problem| input_error("--model", problem.message(in_flags)))?;
    }
    let named_key = match &args.api_key_env {
        None => None,
        // A key that happens to be a valid name (`AIza…`, `gsk_…`, `hf_…`) is refused the same way (issue 25, item 8).
        Some(name) if !spec::is_env_name(name) || jr2_probe::sanitize::looks_like_key(name) => {
            // Not repeated: what was pasted in place of a name is often the key itself.
            return Err(input_error(
                "--api-key-env",
                format!(
                    "is not an environment variable name ({} characters, not repeated: it may be a key); name the \
                     variable that holds the key",
                    name.chars().count()
                ),
            ));
        }
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
    let session_id = new_session_id();
    let targets = match &args.base_url {
        Some(base) => {
            let endpoint = spec::Endpoint {
                base_url: base,
                api: api.unwrap_or(ApiKind::OpenAiCompletions),
                key: named_key.clone(),
                // By hand the cap is the flag's or its default, never jr2's unset 0.
                max_tokens: args.max_tokens.unwrap_or(1024),
                max_tokens_set: args.max_tokens != Some(0),
                context_window: args.context_window,
                tool_choice: args.tool_choice.into(),
            };
            spec::endpoint_targets(&endpoint, &args.models, &session_id)
                .map_err(|problem| input_error("--base-url", problem.message(in_flags)))?
        }
        None => catalog_targets(args, api, named_key.as_ref(), &session_id)?,
    };
    let keys = held_keys(&targets);
    let settings = Settings {
        timeout: args.timeout,
        retry: RetryPolicy {
            max_tries: args.max_tries,
            ..RetryPolicy::default()
        },
        concurrency: usize::from(args.concurrency),
        per_host: usize::from(args.per_host),
        waiting_note: args.waiting_note,
    };
    let connect_timeout = args.timeout.min(Duration::from_secs(10));
    let proxy = ProxyEnv::from_env();
    let (trust, warnings) = load_trust(&args.ca_bundle, &targets, &proxy)?;
    let checker = Checker::new(
        ClientFactory::with_proxy(trust, connect_timeout, proxy),
        Redactor::new(keys),
        settings,
    );
    Ok((targets, checker, warnings))
}

/// The key values the redactor holds: every target's (a Stand-in among them is left out by the redactor itself).
fn held_keys(targets: &[Target]) -> Vec<String> {
    targets
        .iter()
        .filter_map(Target::key_value)
        .map(str::to_owned)
        .collect()
}

/// Catalog models by hand: `direct`, the key from `--api-key-env` or the provider's first variable that is set.
fn catalog_targets(
    args: &CheckArgs,
    api: Option<ApiKind>,
    named_key: Option<&Key>,
    session_id: &str,
) -> Result<Vec<Target>, InputError> {
    let env = |name: &str| std::env::var(name).ok();
    args.models
        .iter()
        .map(|model| {
            let key_env = named_key.map(|k| k.env.clone()).or_else(|| {
                catalog::pinned()
                    .held_key_env(model, |name| env(name).is_some_and(|v| !v.is_empty()))
                    .map(str::to_owned)
            });
            let spec = ModelSpec {
                model: model.clone(),
                source: if args.gateway.is_some() {
                    Source::Gateway
                } else {
                    Source::Catalog
                },
                base_url: args.gateway.clone(),
                api,
                key_held: key_env.is_some(),
                key_env,
                via_custodian: false,
                max_tokens: args.max_tokens,
                context_window: args.context_window,
                tool_choice: Some(args.tool_choice.into()),
            };
            spec::resolve(&spec, "--model", &env, session_id).map_err(|e| {
                let flag = match e.input {
                    SpecInput::Model => "--model",
                    SpecInput::BaseUrl => "--gateway",
                };
                input_error(flag, e.problem.message(in_flags))
            })
        })
        .collect()
}

/// A spec error's remedy in this command line's terms: its flags.
fn in_flags(remedy: Remedy) -> &'static str {
    match remedy {
        Remedy::CheckAsCustom => "name its endpoint with --base-url and --api to check it anyway",
        Remedy::KeyInEnv => "put the key in an environment variable and name it with --api-key-env",
    }
}

/// The trust anchors as Node 24 has them ([`ca_sources_from_env`]), plus `--ca-bundle` (bad input when unusable),
/// and the warning lines of the environment's CA files that cannot be used (each other one is trusted, as Node goes
/// on without a bad `NODE_EXTRA_CA_CERTS`). No certificate is parsed when no connection of the run can use TLS.
fn load_trust(
    ca_bundle: &[PathBuf],
    targets: &[Target],
    proxy: &ProxyEnv,
) -> Result<(Trust, Vec<String>), InputError> {
    let required: Vec<CaFile> = ca_bundle
        .iter()
        .map(|p| CaFile {
            source_name: "--ca-bundle".to_owned(),
            path: p.clone(),
        })
        .collect();
    let tls = proxy.tls_to_a_proxy() || targets.iter().any(|t| t.base_url.scheme() == "https");
    let (trust, skipped) = Trust::plan(&required, &ca_sources_from_env(), tls)
        .map_err(|e| input_error("--ca-bundle", e.to_string()))?;
    let warnings = skipped
        .iter()
        .map(|e| render::ca_file_warning(&sanitize::escape(&e.to_string())))
        .collect();
    Ok((trust, warnings))
}

async fn run(args: RunArgs) -> ExitCode {
    let text = match (&args.spec, &args.spec_json) {
        (_, Some(json)) => Ok(json.clone()),
        (Some(path), None) => spec::input::read_text(path),
        (None, None) => unreachable!("clap requires one of them"),
    };
    let spec: RunSpec = match text
        .map_err(|e| format!("--spec: {e}"))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| format!("--spec: not a run spec ({e})")))
    {
        Ok(s) => s,
        Err(e) => {
            jr2_probe::say!("error: {}", sanitize::escape(&e));
            return Exit::Usage.into();
        }
    };
    if spec.schema != jr2_probe::spec::RUN_SPEC_SCHEMA {
        jr2_probe::say!(
            "error: --spec: schema \"{}\" is not {}",
            sanitize::escape(&spec.schema),
            jr2_probe::spec::RUN_SPEC_SCHEMA
        );
        return Exit::Usage.into();
    }
    let env = |name: &str| std::env::var(name).ok();
    let session_id = new_session_id();
    let mut targets = Vec::with_capacity(spec.models.len());
    for (i, model) in spec.models.iter().enumerate() {
        match spec::resolve(model, &format!("models[{i}]"), &env, &session_id) {
            Ok(t) => targets.push(t),
            Err(e) => {
                let line = format!("{}: {}", e.field(), e.problem.message(in_flags));
                jr2_probe::say!("error: {}", sanitize::escape(&line));
                return Exit::Usage.into();
            }
        }
    }
    let timeout = Duration::from_secs_f64(spec.timeout_seconds.clamp(0.1, 86_400.0));
    let settings = Settings {
        timeout,
        retry: RetryPolicy {
            max_tries: spec.max_tries.clamp(1, 10),
            ..RetryPolicy::default()
        },
        concurrency: spec.concurrency.clamp(1, 64),
        per_host: spec
            .concurrency_per_host
            .unwrap_or(Settings::DEFAULT_PER_HOST)
            .clamp(1, 64),
        waiting_note: spec
            .waiting_note_seconds
            .map_or(Settings::DEFAULT_WAITING_NOTE, |s| {
                Duration::from_secs_f64(s.clamp(0.0, 86_400.0))
            }),
    };
    let keys = held_keys(&targets);
    let proxy = ProxyEnv::from_env_as_node();
    let (trust, mut warnings) = match load_trust(&args.ca_bundle, &targets, &proxy) {
        Ok(t) => t,
        Err(e) => {
            jr2_probe::say!("error: {}", sanitize::escape(&e.to_string()));
            return Exit::Usage.into();
        }
    };
    let checker = Checker::new(
        ClientFactory::with_proxy(trust, timeout.min(Duration::from_secs(10)), proxy),
        Redactor::new(keys),
        settings,
    );
    // The warnings go to stderr (the pod's log) and, as `warning` events, to the driver, which prints them.
    let proxy_lines = checker
        .factory()
        .proxy()
        .unusable_for(targets.iter().map(|t| t.api))
        .into_iter()
        .map(|p| p.warning_line());
    warnings.splice(0..0, proxy_lines);
    // A held key whose Turn goes around the Custodian (issue 38, item 5): once per variable and host.
    let mut bypassed: Vec<String> = Vec::new();
    for t in &targets {
        let Some(key) = t
            .key
            .as_ref()
            .filter(|k| sanitize::is_stand_in(k.value.expose()))
        else {
            continue;
        };
        if let Some(var) = checker.factory().proxy().bypassed_for(t.api, &t.base_url) {
            let line =
                render::stand_in_bypass_warning(var, &t.model, &t.host(), key.value.expose());
            if !bypassed.contains(&line) {
                bypassed.push(line);
            }
        }
    }
    warnings.extend(bypassed);
    for line in &warnings {
        jr2_probe::say!("{line}");
    }
    let deadline = match std::env::var_os("JR2_PROBE_DEADLINE") {
        None => None,
        Some(value) => {
            let value = value.to_string_lossy();
            let deadline = jr2_probe::run::parse_deadline(&value);
            if deadline.is_none() {
                let line = render::deadline_unusable(&sanitize::escape_truncate(&value, 40));
                jr2_probe::say!("{line}");
                warnings.push(line);
            }
            deadline
        }
    };
    // Written by the driver from the Custodian's readiness probe; anything else is not asked (the proxy wait holds).
    let custodian_ready = std::env::var(jr2_probe::sidecar::READY_ENV)
        .ok()
        .and_then(|v| jr2_probe::sidecar::Readiness::parse(&v));
    let options = RunOptions {
        node: args.node.clone().filter(|n| !n.is_empty()),
        deadline,
        termination_log: Some(args.termination_log.clone()),
        warnings,
        custodian_ready,
    };
    let verdict =
        jr2_probe::run::run(&checker, &targets, &options, Box::new(std::io::stdout())).await;
    Exit::of_run(verdict.ok).into()
}
