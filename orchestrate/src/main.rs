//! `jr2-preflight`: the command `jr2 up` runs as a subprocess for the provider preflight.
//!
//! `jr2-preflight run --plan <file|->` reads the plan, builds one check pod per placement, runs them, writes the
//! contract's lines on stderr and (with `--output json`) the verdict on stdout. Exit 0 when no error (warnings
//! allowed), 1 on an error, 2 on bad input or usage; nothing is created on bad input. The check pods are deleted on
//! every path, Ctrl-C and SIGTERM included.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};
use jr2_preflight::cluster::{Cancel, Cleanup, RunOptions, run_pods, sweep_stale};
use jr2_preflight::driver::{self, DriverVerdict};
use jr2_preflight::plan::Plan;
use jr2_preflight::pod;
use jr2_probe::sanitize::{self, Redactor};

const EXIT_OK: u8 = 0;
const EXIT_FAILED: u8 = 1;
const EXIT_USAGE: u8 = 2;

/// The provider preflight of `jr2 up`: one check pod per placement asks each model for a tool call, as a Turn does.
#[derive(Debug, Parser)]
#[command(name = "jr2-preflight", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the preflight of a plan.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The plan (JSON, schemas/plan.v1.schema.json): a file, or - for stdin.
    #[arg(long, value_name = "FILE")]
    plan: PathBuf,

    /// The kubeconfig file (default: KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,

    /// The namespace (default: the plan's).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// human: the lines on stderr; json: also the verdict on stdout.
    #[arg(short = 'o', long, value_enum, default_value = "human")]
    output: Output,

    /// Skip the preflight: one warning line, nothing contacted.
    #[arg(long)]
    skip_provider_preflight: bool,

    /// Print the check pods (YAML) and contact nothing.
    #[arg(long, conflicts_with = "from_deployment")]
    dry_run: bool,

    /// Take the placement (and the Custodian) from an existing Harness Deployment in the namespace: its pod template
    /// replaces every placement's pod spec. For operators checking what runs now.
    #[arg(long, value_name = "NAME")]
    from_deployment: Option<String>,

    /// The whole check's deadline, from the first create to the last verdict (e.g. 300s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = jr2_probe::cli::parse_duration)]
    timeout: Option<Duration>,

    /// Keep a failed check pod for inspection (the lines say how to delete it).
    #[arg(long)]
    keep_pod: bool,

    /// The probe's image (default: the plan's probeImage).
    #[arg(long, value_name = "IMAGE")]
    probe_image: Option<String>,

    /// Write a secret-safe evidence bundle to this folder when the check fails.
    #[arg(long, value_name = "DIR")]
    evidence: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Output {
    Human,
    Json,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let filter =
        tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
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
    let Command::Run(args) = cli.command;
    runtime.block_on(run(args))
}

fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::from(EXIT_OK);
    }
    let line = jr2_probe::cli::usage_line(&e);
    eprintln!("error: {} (see jr2-preflight run --help)", line);
    ExitCode::from(EXIT_USAGE)
}

/// Writes a line on stderr and keeps it for the verdict.
struct Lines(Vec<String>);

impl Lines {
    fn emit(&mut self, line: String) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        self.0.push(line);
    }
}

async fn run(args: RunArgs) -> ExitCode {
    let mut plan = match Plan::read(&args.plan) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {}", sanitize::escape(&e.to_string()));
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if let Some(ns) = &args.namespace {
        plan.namespace = ns.clone();
    }
    if let Some(image) = &args.probe_image {
        plan.probe_image = image.clone();
    }
    if let Err(e) = plan.validate() {
        eprintln!("error: {}", sanitize::escape(&e.to_string()));
        return ExitCode::from(EXIT_USAGE);
    }
    let run_id = pod::new_run_id();
    if args.skip_provider_preflight {
        let verdict = driver::skipped(&plan, &run_id);
        for line in &verdict.lines {
            eprintln!("{line}");
        }
        print_verdict(&args, &verdict);
        return ExitCode::from(EXIT_OK);
    }
    let now = SystemTime::now();
    let pods = pod::check_pods(&plan, &run_id, now);
    if args.dry_run {
        print!("{}", pod::to_yaml(&pods));
        return ExitCode::from(EXIT_OK);
    }
    let client = match client(&args).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "error: provider preflight: cannot reach the cluster: {}",
                sanitize::escape(&e)
            );
            return ExitCode::from(EXIT_FAILED);
        }
    };
    if let Some(name) = &args.from_deployment {
        match deployment_pod_spec(client.clone(), &plan.namespace, name).await {
            Ok(spec) => {
                for placement in &mut plan.placements {
                    placement.pod_spec = spec.clone();
                }
                if let Err(e) = plan.validate() {
                    eprintln!(
                        "error: --from-deployment {name}: {}",
                        sanitize::escape(&e.to_string())
                    );
                    return ExitCode::from(EXIT_USAGE);
                }
            }
            Err(e) => {
                eprintln!("error: --from-deployment {name}: {}", sanitize::escape(&e));
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let pods = pod::check_pods(&plan, &run_id, now);
    let started_at = SystemTime::now();
    let start = Instant::now();
    let mut lines = Lines(Vec::new());
    match tokio::time::timeout(
        Duration::from_secs(15),
        sweep_stale(client.clone(), &plan.namespace, &plan.instance, now),
    )
    .await
    {
        Ok(Ok(sweep)) if !sweep.deleted.is_empty() => {
            tracing::info!(deleted = ?sweep.deleted, "swept stale check pods");
        }
        Ok(Err(e)) => tracing::warn!(error = %e, "cannot sweep stale check pods"),
        _ => {}
    }
    for w in driver::network_policy_warnings(client.clone(), &plan).await {
        lines.emit(w);
    }
    let cleanup = Cleanup::new(client.clone(), &plan.namespace);
    let cancel = Cancel::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let timeout = args
        .timeout
        .unwrap_or(Duration::from_secs(plan.deadline_seconds + 60));
    let options = RunOptions {
        timeout,
        keep_failed: args.keep_pod,
        redactor: Redactor::default(),
        progress: Some(tx),
        cleanup: Some(cleanup.clone()),
        cancel: Some(cancel.clone()),
        ..RunOptions::default()
    };
    let running = run_pods(client.clone(), &plan.namespace, pods.clone(), options);
    tokio::pin!(running);
    let mut interrupted: Option<u8> = None;
    let mut sigterm =
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    let result = loop {
        tokio::select! {
            result = &mut running => break result,
            Some(p) = rx.recv() => {
                if let Some(line) = p.line() {
                    lines.emit(line);
                }
            }
            _ = tokio::signal::ctrl_c(), if interrupted.is_none() => {
                interrupted = Some(130);
                cancel.cancel();
            }
            _ = async { match sigterm.as_mut() { Some(s) => { s.recv().await; } None => std::future::pending().await } }, if interrupted.is_none() => {
                interrupted = Some(143);
                cancel.cancel();
            }
        }
    };
    while let Ok(p) = rx.try_recv() {
        if let Some(line) = p.line() {
            lines.emit(line);
        }
    }
    let before = lines.0.len();
    let verdict = driver::assemble(&plan, &pods, &result, &run_id, started_at, start, lines.0);
    for line in &verdict.lines[before..] {
        eprintln!("{line}");
    }
    print_verdict(&args, &verdict);
    if let Some(dir) = args.evidence.as_ref().filter(|_| !verdict.ok)
        && let Err(e) = driver::write_evidence(dir, &pods, &result, &verdict)
    {
        eprintln!(
            "warning: provider: cannot write the evidence to {}: {e}",
            dir.display()
        );
    }
    // The deletes were sent as each pod finished; give them a bounded moment to be answered.
    let report = cleanup.wait(Duration::from_secs(10)).await;
    for name in report
        .unfinished
        .iter()
        .chain(report.failed.iter().map(|(n, _)| n))
    {
        eprintln!(
            "warning: provider: the check pod {name} may still exist: kubectl -n {} delete pod {name}",
            plan.namespace
        );
    }
    if let Some(code) = interrupted {
        eprintln!("error: provider preflight: interrupted; the check pods were deleted");
        return ExitCode::from(code);
    }
    ExitCode::from(if verdict.ok { EXIT_OK } else { EXIT_FAILED })
}

fn print_verdict(args: &RunArgs, verdict: &DriverVerdict) {
    if args.output == Output::Json {
        let mut out = std::io::stdout().lock();
        let _ = serde_json::to_writer_pretty(&mut out, verdict);
        let _ = writeln!(out);
    }
}

/// A client from the kubeconfig, kubectl's way: `--kubeconfig`, else `KUBECONFIG`, else `~/.kube/config`; `--context`.
async fn client(args: &RunArgs) -> Result<kube::Client, String> {
    let options = kube::config::KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig =
                kube::config::Kubeconfig::read_from(path).map_err(|e| e.to_string())?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options)
                .await
                .map_err(|e| e.to_string())?
        }
        None => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| e.to_string())?,
    };
    kube::Client::try_from(config).map_err(|e| e.to_string())
}

/// The pod template of a Deployment: what its Harness pods run now.
async fn deployment_pod_spec(
    client: kube::Client,
    namespace: &str,
    name: &str,
) -> Result<k8s_openapi::api::core::v1::PodSpec, String> {
    let api: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(client, namespace);
    let deployment = tokio::time::timeout(Duration::from_secs(15), api.get(name))
        .await
        .map_err(|_| "the API server did not answer in 15 s".to_owned())?
        .map_err(|e| {
            format!("cannot read Deployment \"{name}\" in namespace \"{namespace}\": {e}")
        })?;
    deployment
        .spec
        .and_then(|s| s.template.spec)
        .ok_or_else(|| format!("Deployment \"{name}\" has no pod template"))
}
