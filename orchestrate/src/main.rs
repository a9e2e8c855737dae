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
use jr2_preflight::plan::{Plan, PlanError};
use jr2_preflight::pod;
use jr2_preflight::run::{
    Cancel, Cleanup, Evidence, FailureKind, PodFailure, PodOutcome, PodRun, PodToRun, RunConfig,
    RunResult, run_pods, sweep_stale,
};
use jr2_preflight::signals::Signals;
use jr2_preflight::verdict::{self, DriverVerdict};
use jr2_preflight::workload;
use jr2_preflight::{evidence, network_policy, pull_secrets};
use jr2_probe::contract::{Exit, render};
use jr2_probe::sanitize::{self, Redactor};

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
    /// Print every image the check pods would pull, one a line: what a mirror of an air-gapped cluster must hold.
    /// Contacts nothing.
    Images(ImagesArgs),
}

#[derive(Debug, clap::Args)]
struct ImagesArgs {
    /// The plan (JSON): a file, or - for stdin. Without it, only the probe image.
    #[arg(long, value_name = "FILE")]
    plan: Option<PathBuf>,

    /// The probe's image (default: the plan's probeImage, else this version's release).
    #[arg(long, value_name = "IMAGE")]
    probe_image: Option<String>,
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The plan (JSON, orchestrate/schemas/plan.v1.schema.json): a file, or - for stdin.
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

    /// Keep reading stdin (after the plan, with --plan -): a line `cancel`, or its end, cancels the run as SIGINT
    /// does (pods deleted, exit 130). The cancel that works on Windows, where a parent cannot send SIGINT.
    #[arg(long)]
    cancel_on_stdin: bool,
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
    jr2_probe::console::init_tracing();
    match cli.command {
        Command::Run(args) => {
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    jr2_probe::say!("error: cannot start the async runtime: {e}");
                    return Exit::Failed.into();
                }
            };
            runtime.block_on(run(args))
        }
        // It contacts nothing: no runtime.
        Command::Images(args) => images(&args),
    }
}

/// Bad input (the plan, a flag): its one `error:` line, escaped (a path or a value may hold anything), and exit 2.
/// Nothing has been created.
fn bad_input(e: &PlanError) -> ExitCode {
    jr2_probe::say!("error: {}", sanitize::escape(&e.to_string()));
    PlanError::EXIT.into()
}

/// `jr2-preflight images`: the images of the check pods `run --dry-run` would print (the probe's, each Custodian's),
/// or the probe image alone without a plan. Bad input: one `error:` line, exit 2.
fn images(args: &ImagesArgs) -> ExitCode {
    if let Some(image) = &args.probe_image
        && let Err(e) = jr2_preflight::plan::image_reference("--probe-image", image)
    {
        return bad_input(&e);
    }
    let images = match &args.plan {
        None => vec![
            args.probe_image
                .clone()
                .unwrap_or_else(|| jr2_preflight::plan::DEFAULT_PROBE_IMAGE.to_owned()),
        ],
        Some(path) => {
            let mut plan = match Plan::read(path).and_then(|mut plan| {
                if let Some(image) = &args.probe_image {
                    plan.probe_image = image.clone();
                }
                plan.validate().map(|()| plan)
            }) {
                Ok(plan) => plan,
                Err(e) => {
                    return bad_input(&e);
                }
            };
            // A plan without models has no check pod; the probe image is still what a mirror needs for the next.
            if plan.models.is_empty() {
                vec![std::mem::take(&mut plan.probe_image)]
            } else {
                let checks = pod::check_pods(&plan, &pod::new_run_id(), SystemTime::now());
                pod::images(checks.iter().map(|c| &c.pod))
            }
        }
    };
    let mut text = images.join("\n");
    text.push('\n');
    jr2_probe::console::out("the images", text.as_bytes())
        .map_or_else(stdout_failed, |()| Exit::Ok.into())
}

fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return Exit::Ok.into();
    }
    let line = jr2_probe::cli::usage_line(&e);
    // The help of the subcommand asked for (clap names none in the error).
    let sub = match std::env::args().nth(1).as_deref() {
        Some("images") => "images",
        _ => "run",
    };
    jr2_probe::say!("error: {line} (see jr2-preflight {sub} --help)");
    Exit::Usage.into()
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
    // Listen for SIGINT and SIGTERM before anything else: from here on a signal is ours to handle (nothing created,
    // or the pods deleted, then 130/143), never the default action, which would end the process between a create
    // and its delete and leave the pod behind.
    let mut signals = Signals::listen();
    let from_stdin = args.plan.as_os_str() == "-";
    let read = if args.cancel_on_stdin && from_stdin {
        // The plan's JSON value ends it: stdin stays open for the cancel.
        Plan::read_leading(std::io::stdin().lock())
    } else {
        Plan::read(&args.plan)
    };
    let mut plan = match read {
        Ok(p) => p,
        Err(e) => {
            return bad_input(&e);
        }
    };
    // The flags' values are checked under their own names, before they stand in for the plan's.
    let flags = [
        args.namespace
            .as_deref()
            .map(|ns| jr2_preflight::plan::check_namespace("--namespace", ns)),
        args.probe_image
            .as_deref()
            .map(|image| jr2_preflight::plan::image_reference("--probe-image", image)),
    ];
    if let Some(e) = flags.into_iter().flatten().find_map(Result::err) {
        return bad_input(&e);
    }
    if let Some(ns) = &args.namespace {
        plan.namespace = ns.clone();
    }
    if let Some(image) = &args.probe_image {
        plan.probe_image = image.clone();
    }
    if let Err(e) = plan.validate() {
        return bad_input(&e);
    }
    let run_id = pod::new_run_id();
    // Skipped, or nothing to check: no pod, nothing contacted.
    if args.skip_provider_preflight || (plan.models.is_empty() && !args.dry_run) {
        let verdict = if args.skip_provider_preflight {
            verdict::skipped(&plan, &run_id)
        } else {
            verdict::nothing_to_check(&plan, &run_id)
        };
        for line in &verdict.lines {
            jr2_probe::say!("{line}");
        }
        let printed = print_verdict(&args, &verdict);
        // A signal meanwhile still means "stop": `jr2 up` must not read a 0 as "go on".
        return match signals.received() {
            Some(exit) => interrupted(exit),
            None => printed.map_or_else(stdout_failed, |()| Exit::Ok.into()),
        };
    }
    let now = SystemTime::now();
    if args.dry_run {
        let checks = pod::check_pods(&plan, &run_id, now);
        let yaml = pod::to_yaml(checks.iter().map(|c| &c.pod));
        let printed = jr2_probe::console::out("the dry-run pods", yaml.as_bytes());
        return match signals.received() {
            Some(exit) => interrupted(exit),
            None => printed.map_or_else(stdout_failed, |()| Exit::Ok.into()),
        };
    }
    // `--evidence DIR` must be a new directory (or an empty one): refused now, before anything reaches the cluster.
    if let Some(dir) = &args.evidence
        && let Err(why) = evidence::check(dir)
    {
        jr2_probe::say!("error: --evidence: {why}");
        return Exit::Usage.into();
    }
    if args.cancel_on_stdin {
        // Only now, when the cluster is about to be contacted: a dry run or a skip is over before a cancel matters,
        // and what was already written to stdin stays there to be read.
        signals.cancel_on(|| std::io::stdin().lock());
    }
    // Until the pods are created, a signal stops the run at once: what is then in flight (the client, the
    // Deployment's read, the sweep, the NetworkPolicy list) only reads, or deletes stale pods that the next run
    // sweeps again, so it is dropped where it stands.
    let mut stopped: Option<Exit> = None;
    let client = match signals.until(connect(&args, &mut plan)).await {
        Ok(Ok(c)) => Some(c),
        Ok(Err(exit)) => return exit,
        Err(exit) => {
            stopped = Some(exit);
            None
        }
    };
    let checks = pod::check_pods(&plan, &run_id, now);
    let to_run: Vec<PodToRun> = checks.iter().map(|c| PodToRun::of(c, &plan)).collect();
    let started_at = SystemTime::now();
    let start = Instant::now();
    let mut lines = Lines(Vec::new());
    if let Some(client) = &client {
        match signals
            .until(prepare(client.clone(), &plan, &checks, now))
            .await
        {
            Ok(warnings) => {
                for w in warnings {
                    lines.emit(w);
                }
            }
            Err(exit) => stopped = Some(exit),
        }
    }
    // A signal that came as the last answer was read: checked once more, so that no pod is created after it.
    // (One that the runtime has not dispatched yet is seen by the loop below, which deletes what was created.)
    if stopped.is_none() {
        stopped = signals.received();
    }
    let (result, cleanup, interrupted_by) = match (client, stopped) {
        (Some(client), None) => {
            let (result, cleanup, exit) =
                run_checks(client, &args, &plan, &to_run, &mut signals, &mut lines).await;
            (result, Some(cleanup), exit)
        }
        (_, exit) => (not_run(&to_run), None, exit),
    };
    let before = lines.0.len();
    let mut verdict =
        verdict::assemble(&plan, &checks, &result, &run_id, started_at, start, lines.0);
    if let Some(exit) = interrupted_by {
        // The verdict says what the process's exit code will say: a reader of either sees the same thing.
        verdict.ok = false;
        verdict.exit_code = i32::from(exit);
    }
    for line in &verdict.lines[before..] {
        jr2_probe::say!("{line}");
    }
    let printed = print_verdict(&args, &verdict);
    if let Some(dir) = args.evidence.as_ref().filter(|_| !verdict.ok)
        && let Err(e) = evidence::write(dir, &checks, &result, &verdict)
    {
        jr2_probe::say!(
            "{}",
            render::evidence_not_written(&dir.display().to_string(), &e.to_string())
        );
    }
    if let Some(cleanup) = cleanup {
        // The deletes were sent as each pod finished; give them a bounded moment to be answered.
        let report = cleanup.wait(Duration::from_secs(10)).await;
        for name in report
            .unfinished
            .iter()
            .chain(report.failed.iter().map(|(n, _)| n))
        {
            jr2_probe::say!("{}", render::pod_may_still_exist(&plan.namespace, name));
        }
    }
    if let Some(exit) = interrupted_by {
        return interrupted(exit);
    }
    match printed {
        Ok(()) => Exit::of_run(verdict.ok).into(),
        Err(e) => stdout_failed(e),
    }
}

/// The verdict or the dry-run pods did not reach stdout: one line, exit 1 (the caller has nothing to read).
fn stdout_failed(e: jr2_probe::console::StdoutError) -> ExitCode {
    jr2_probe::say!("{}", e.line());
    Exit::Failed.into()
}

fn interrupted(exit: Exit) -> ExitCode {
    jr2_probe::say!("{}", render::interrupted());
    exit.into()
}

/// The client, and with `--from-deployment` the placements' pod spec from the Deployment. `Err`: the exit, its
/// line written.
async fn connect(args: &RunArgs, plan: &mut Plan) -> Result<kube::Client, ExitCode> {
    let client = match jr2_preflight::cluster::client(
        args.kubeconfig.as_deref(),
        args.context.clone(),
    )
    .await
    {
        Ok(c) => c,
        Err(e) => {
            jr2_probe::say!(
                "{}",
                render::cannot_reach_cluster(&sanitize::escape(&e.to_string()))
            );
            return Err(Exit::Failed.into());
        }
    };
    if let Some(name) = &args.from_deployment {
        let applied = match workload::read_deployment(client.clone(), &plan.namespace, name).await {
            Ok(w) => workload::apply(plan, &w),
            Err(e) => Err(e),
        };
        if let Err(e) = applied {
            jr2_probe::say!(
                "error: --from-deployment: {}",
                sanitize::escape(&e.to_string())
            );
            return Err(workload::WorkloadError::EXIT.into());
        }
    }
    pull_secrets::adopt(client.clone(), plan).await;
    Ok(client)
}

/// Before the create: the sweep of stale check pods of the Instance (a failure is only logged), then the
/// NetworkPolicy warning lines.
async fn prepare(
    client: kube::Client,
    plan: &Plan,
    checks: &[pod::CheckPod],
    now: SystemTime,
) -> Vec<String> {
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
    network_policy::warnings(client, plan, checks).await
}

/// Creates and runs the pods, writing the progress lines as they come; a signal cancels the run (its pods are
/// deleted as `run_pods` returns) and is returned as the exit it asks for.
async fn run_checks(
    client: kube::Client,
    args: &RunArgs,
    plan: &Plan,
    to_run: &[PodToRun],
    signals: &mut Signals,
    lines: &mut Lines,
) -> (RunResult, Cleanup, Option<Exit>) {
    let cleanup = Cleanup::new(client.clone(), &plan.namespace);
    let cancel = Cancel::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let timeout = args
        .timeout
        .unwrap_or(Duration::from_secs(plan.deadline_seconds + 60));
    let options = RunConfig {
        timeout,
        keep_failed: args.keep_pod,
        redactor: Redactor::default(),
        progress: Some(tx),
        cleanup: Some(cleanup.clone()),
        cancel: Some(cancel.clone()),
        ..RunConfig::default()
    };
    let running = run_pods(client, &plan.namespace, to_run.to_vec(), options);
    tokio::pin!(running);
    let mut interrupted: Option<Exit> = None;
    let result = loop {
        tokio::select! {
            result = &mut running => break result,
            Some(p) = rx.recv() => {
                if let Some(line) = p.line() {
                    lines.emit(line);
                }
            }
            exit = signals.recv(), if interrupted.is_none() => {
                interrupted = Some(exit);
                cancel.cancel();
            }
        }
    };
    while let Ok(p) = rx.try_recv() {
        if let Some(line) = p.line() {
            lines.emit(line);
        }
    }
    (result, cleanup, interrupted)
}

/// The result of a run stopped before anything was created: every pod interrupted, as `run_pods` reports a run
/// cancelled before its creates were answered.
fn not_run(to_run: &[PodToRun]) -> RunResult {
    RunResult {
        pods: to_run
            .iter()
            .map(|p| {
                let models = p.models.clone();
                PodRun {
                    name: p.pod.metadata.name.clone().unwrap_or_default(),
                    uid: None,
                    node: None,
                    results: models.iter().map(|_| None).collect(),
                    models,
                    outcome: PodOutcome::Failed(PodFailure {
                        kind: FailureKind::Interrupted,
                        lines: Vec::new(),
                    }),
                    evidence: Evidence::default(),
                    kept: false,
                }
            })
            .collect(),
        warnings: Vec::new(),
    }
}

fn print_verdict(
    args: &RunArgs,
    verdict: &DriverVerdict,
) -> Result<(), jr2_probe::console::StdoutError> {
    if args.output == Output::Json {
        jr2_probe::console::out_json("the verdict", verdict)?;
    }
    Ok(())
}
