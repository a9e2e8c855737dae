//! `jr2-preflight`: the command `jr2 up` runs as a subprocess for the provider preflight.
//!
//! `jr2-preflight run --plan <file|->` reads the plan, builds one check pod per placement, runs them, writes the
//! contract's lines on stderr and (with `--output json`) the verdict on stdout. Exit 0 when no error (warnings
//! allowed), 1 on an error, 2 on bad input or usage; nothing is created on bad input. The check pods are deleted on
//! every path, Ctrl-C and SIGTERM included. `jr2-preflight check` is the operator's by-hand check: its flags make a
//! one-placement plan (`one_off.rs`) that runs through the same code. `images` and `rbac` print what an air-gapped
//! mirror and a least-privilege Role need, contacting nothing.
//!
//! Before anything is created, the driver asks the API server what it may do (`access.rs`) and whether the
//! namespace's Pod Security level admits the check pods (`pod_security.rs`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};
use jr2_preflight::access::{self, Access};
use jr2_preflight::one_off::{self, OneOff, SecretKey};
use jr2_preflight::plan::{Field, Overrides, PlanError, RawPlan, ValidPlan};
use jr2_preflight::run::{
    Cancel, Cleanup, Evidence, FailureKind, PodFailure, PodOutcome, PodRun, PodToRun, RunConfig,
    RunResult, RunUpdate, run_pods, sweep_stale,
};
use jr2_preflight::signals::Signals;
use jr2_preflight::verdict::{self, DriverVerdict};
use jr2_preflight::workload;
use jr2_preflight::{evidence, network_policy, pull_secrets};
use jr2_preflight::{pod, pod_security};
use jr2_probe::api::ApiKind;
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
    /// Check one endpoint (or catalog models) from a pod of the cluster: the by-hand check, with run's lines and
    /// exit codes.
    Check(CheckArgs),
    /// Print every image the check pods would pull, one a line: what a mirror of an air-gapped cluster must hold.
    /// Contacts nothing.
    Images(ImagesArgs),
    /// Print the Role (and with a subject, the RoleBinding) that grants what the driver needs in a namespace, for
    /// `kubectl apply -f -`. Contacts nothing.
    Rbac(RbacArgs),
}

#[derive(Debug, clap::Args)]
struct RbacArgs {
    /// The namespace of the Role (default: none, kubectl apply -n sets it).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// Bind the Role to this user (repeatable).
    #[arg(long, value_name = "NAME")]
    user: Vec<String>,

    /// Bind the Role to this group (repeatable).
    #[arg(long, value_name = "NAME")]
    group: Vec<String>,

    /// Bind the Role to this ServiceAccount of the namespace (repeatable; needs -n).
    #[arg(long, value_name = "NAME", requires = "namespace")]
    service_account: Vec<String>,
}

/// The flags `run` and `check` share: the cluster, the output, how the run goes.
#[derive(Debug, clap::Args)]
struct Common {
    /// The kubeconfig file (default: KUBECONFIG, then ~/.kube/config).
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,

    /// The kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    context: Option<String>,

    /// The namespace (run: default the plan's; check: the context's, else default).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// human: the lines on stderr; json: also the verdict on stdout.
    #[arg(short = 'o', long, value_enum, default_value = "human")]
    output: Output,

    /// Print the check pods (YAML) and contact nothing.
    #[arg(long, conflicts_with = "from_deployment")]
    dry_run: bool,

    /// The whole check's deadline, from the first create to the last verdict (e.g. 300s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = jr2_probe::cli::parse_duration)]
    timeout: Option<Duration>,

    /// Keep a failed check pod for inspection (the lines say how to delete it).
    #[arg(long)]
    keep_pod: bool,

    /// The probe's image (run: default the plan's probeImage; check: this version's release).
    #[arg(long, value_name = "IMAGE")]
    probe_image: Option<String>,

    /// Write a secret-safe evidence bundle to this folder when the check fails.
    #[arg(long, value_name = "DIR")]
    evidence: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// A custom endpoint's base URL, as harness.provider.baseUrl names it (reached from the pod). Without it, each
    /// --model is a model of pi's catalog (`anthropic/claude-haiku-4-5`).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,

    /// With --base-url: the model id exactly as the endpoint serves it (the lines name it `<provider>/<ID>`).
    /// Without: `<provider>/<id>` of pi's catalog. Repeat to check several.
    #[arg(long = "model", value_name = "ID", required = true)]
    models: Vec<String>,

    /// With --base-url: the custom provider's id, as harness.provider.id names it (default: custom).
    #[arg(long, value_name = "ID", requires = "base_url")]
    provider: Option<String>,

    /// The API kind, by pi's name (default: openai-completions with --base-url, the catalog's otherwise).
    #[arg(long, value_name = "KIND")]
    api: Option<String>,

    /// The key, as a Secret of the namespace holds it: NAME/KEY. It reaches the probe as a secretKeyRef, never as
    /// a value (with --base-url as JR2_PROVIDER_API_KEY, else as the provider's variable).
    #[arg(long, value_name = "NAME/KEY", conflicts_with = "from_deployment")]
    api_key_secret: Option<String>,

    /// Run on this node (a required node affinity on its name: the scheduler still weighs taints and room).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["node_selector", "from_deployment"])]
    node: Option<String>,

    /// Run on a node with this label (k=v, repeatable).
    #[arg(long, value_name = "KEY=VALUE", conflicts_with = "from_deployment")]
    node_selector: Vec<String>,

    /// Take the placement, the Custodian (container `custodian`) and the keys its Harness container holds from
    /// this Deployment of the namespace (jr2-instance-harness): the check from where the Harness pods stand.
    #[arg(long, value_name = "NAME")]
    from_deployment: Option<String>,

    #[command(flatten)]
    common: Common,
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

    /// Skip the preflight: one warning line, nothing contacted.
    #[arg(long)]
    skip_provider_preflight: bool,

    /// Take the placement (and the Custodian) from an existing Harness Deployment in the namespace: its pod template
    /// replaces every placement's pod spec. For operators checking what runs now.
    #[arg(long, value_name = "NAME")]
    from_deployment: Option<String>,

    /// Keep reading stdin (after the plan, with --plan -): a line `cancel`, or its end, cancels the run as SIGINT
    /// does (pods deleted, exit 130). The cancel that works on Windows, where a parent cannot send SIGINT.
    #[arg(long)]
    cancel_on_stdin: bool,

    #[command(flatten)]
    common: Common,
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
        Command::Run(args) => match jr2_probe::console::runtime() {
            Ok(rt) => rt.block_on(run(args)),
            Err(exit) => exit,
        },
        Command::Check(args) => match jr2_probe::console::runtime() {
            Ok(rt) => rt.block_on(check(args)),
            Err(exit) => exit,
        },
        // They contact nothing: no runtime.
        Command::Images(args) => images(&args),
        Command::Rbac(args) => rbac(&args),
    }
}

/// Bad input (the plan, a flag): its one `error:` line, escaped (a path or a value may hold anything), and exit 2.
/// Nothing has been created.
fn bad_input(e: &PlanError) -> ExitCode {
    jr2_probe::say!("error: {}", shown(&e.to_string()));
    PlanError::EXIT.into()
}

/// The one place a plan becomes a [`ValidPlan`]: the flags' values in place of the plan's own (each checked under its
/// flag's name), then the plan validated as it will run.
fn valid_plan(mut plan: RawPlan, overrides: &Overrides) -> Result<ValidPlan, PlanError> {
    plan.override_with(overrides)?;
    plan.validate()
}

/// `jr2-preflight images`: the images of the check pods `run --dry-run` would print (the probe's, each Custodian's),
/// or the probe image alone without a plan. Bad input: one `error:` line, exit 2.
fn images(args: &ImagesArgs) -> ExitCode {
    if let Some(image) = &args.probe_image
        && let Err(e) = jr2_preflight::plan::image_reference(Field::Flag("--probe-image"), image)
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
            let overrides = Overrides {
                namespace: None,
                probe_image: args.probe_image.clone(),
            };
            let plan = match RawPlan::read(path).and_then(|plan| valid_plan(plan, &overrides)) {
                Ok(plan) => plan,
                Err(e) => {
                    return bad_input(&e);
                }
            };
            // A plan without models has no check pod; the probe image is still what a mirror needs for the next.
            if plan.models.is_empty() {
                vec![plan.probe_image.clone()]
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

/// Clap's errors as `jr2_probe::cli::usage_error` ends on them, naming the help of the subcommand asked for (clap
/// names none in the error; `run` when none was).
fn usage_error(e: clap::Error) -> ExitCode {
    let arg = std::env::args().nth(1);
    let sub = arg
        .as_deref()
        .filter(|sub| ["images", "check", "rbac"].contains(sub))
        .unwrap_or("run");
    jr2_probe::cli::usage_error(&e, "jr2-preflight", Some(sub)).into()
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
    let signals = Signals::listen();
    let from_stdin = args.plan.as_os_str() == "-";
    let read = if args.cancel_on_stdin && from_stdin {
        // The plan's JSON value ends it: stdin stays open for the cancel.
        RawPlan::read_leading(std::io::stdin().lock())
    } else {
        RawPlan::read(&args.plan)
    };
    let common = &args.common;
    // The flags' values are checked under their own names, then stand in for the plan's.
    let overrides = Overrides {
        namespace: common.namespace.clone(),
        probe_image: common.probe_image.clone(),
    };
    let plan = match read.and_then(|plan| valid_plan(plan, &overrides)) {
        Ok(p) => p,
        Err(e) => {
            return bad_input(&e);
        }
    };
    let exec = Exec {
        common,
        from_deployment: args.from_deployment.as_deref(),
        one_off: false,
        skip: args.skip_provider_preflight,
        cancel_on_stdin: args.cancel_on_stdin,
    };
    execute(plan, &exec, signals).await
}

/// `jr2-preflight check`: the flags' plan (`one_off.rs`), run as `run` runs a plan.
async fn check(args: CheckArgs) -> ExitCode {
    let signals = Signals::listen();
    let common = &args.common;
    let mut one_off = OneOff {
        base_url: args.base_url.clone(),
        provider: args.provider.clone(),
        models: args.models.clone(),
        ..OneOff::default()
    };
    let mut errors: Vec<PlanError> = Vec::new();
    if let Some(api) = &args.api {
        match api.parse::<ApiKind>() {
            Ok(kind) => one_off.api = Some(kind),
            Err(e) => errors.push(PlanError::Invalid {
                field: Field::Flag("--api"),
                message: e.to_string(),
            }),
        }
    }
    if let Some(text) = &args.api_key_secret {
        match SecretKey::parse(text) {
            Ok(key) => one_off.key = Some(key),
            Err(e) => errors.push(e),
        }
    }
    // A node's name is a DNS subdomain: anything else (an escape, a bidi control) never reaches the pod or a line.
    if let Some(node) = &args.node {
        if node.len() <= 253 && node.split('.').all(jr2_preflight::plan::is_dns_label) {
            one_off.node = Some(node.clone());
        } else {
            errors.push(PlanError::Invalid {
                field: Field::Flag("--node"),
                message: format!(
                    "\"{}\" is not a node name (a DNS subdomain: lowercase letters, digits, '-' and '.')",
                    sanitize::escape_truncate(node, 100)
                ),
            });
        }
    }
    for pair in &args.node_selector {
        match pair.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                one_off.node_selector.push((k.to_owned(), v.to_owned()))
            }
            _ => errors.push(PlanError::Invalid {
                field: Field::Flag("--node-selector"),
                message: format!("\"{pair}\" is not KEY=VALUE"),
            }),
        }
    }
    if let Some(ns) = &common.namespace
        && let Err(e) = jr2_preflight::plan::check_namespace(Field::Flag("--namespace"), ns)
    {
        errors.push(e);
    }
    if let Some(image) = &common.probe_image
        && let Err(e) = jr2_preflight::plan::image_reference(Field::Flag("--probe-image"), image)
    {
        errors.push(e);
    }
    if let Some(e) = errors.first() {
        return bad_input(e);
    }
    // kubectl's rule: -n, else the context's namespace, else default (read from the kubeconfig, contacting nothing).
    one_off.namespace = common.namespace.clone().unwrap_or_else(|| {
        jr2_preflight::cluster::context_namespace(
            common.kubeconfig.as_deref(),
            common.context.as_deref(),
        )
        .unwrap_or_else(|| "default".to_owned())
    });
    one_off.probe_image = common.probe_image.clone();
    // Its namespace and probe image are in the plan already, their flags checked above.
    let plan = match one_off::plan(&one_off)
        .and_then(|plan| valid_plan(plan, &Overrides::default()))
        .map_err(one_off::as_flag)
    {
        Ok(plan) => plan,
        Err(e) => return bad_input(&e),
    };
    let exec = Exec {
        common,
        from_deployment: args.from_deployment.as_deref(),
        one_off: true,
        skip: false,
        cancel_on_stdin: false,
    };
    execute(plan, &exec, signals).await
}

/// How a validated plan is run: the shared flags, and what `run` or `check` add.
struct Exec<'a> {
    common: &'a Common,
    from_deployment: Option<&'a str>,
    /// `check`: the Deployment is adopted as `one_off::adopt` does (its containers found by name).
    one_off: bool,
    skip: bool,
    cancel_on_stdin: bool,
}

async fn execute(mut plan: ValidPlan, exec: &Exec<'_>, mut signals: Signals) -> ExitCode {
    let common = exec.common;
    let run_id = pod::new_run_id();
    // Skipped, or nothing to check: no pod, nothing contacted.
    if exec.skip || (plan.models.is_empty() && !common.dry_run) {
        let verdict = if exec.skip {
            verdict::skipped(&plan, &run_id)
        } else {
            verdict::nothing_to_check(&plan, &run_id)
        };
        let mut verdict = verdict;
        envelope(&mut verdict, common, None);
        for line in &verdict.lines {
            jr2_probe::say!("{line}");
        }
        let printed = print_verdict(common, &verdict);
        // A signal meanwhile still means "stop": `jr2 up` must not read a 0 as "go on".
        return match signals.received() {
            Some(exit) => interrupted(exit, false),
            None => printed.map_or_else(stdout_failed, |()| Exit::Ok.into()),
        };
    }
    let now = SystemTime::now();
    if common.dry_run {
        let checks = pod::check_pods(&plan, &run_id, now);
        let yaml = pod::to_yaml(checks.iter().map(|c| &c.pod));
        let printed = jr2_probe::console::out("the dry-run pods", yaml.as_bytes());
        return match signals.received() {
            Some(exit) => interrupted(exit, false),
            None => printed.map_or_else(stdout_failed, |()| Exit::Ok.into()),
        };
    }
    // `--evidence DIR` must be a new directory (or an empty one): refused now, before anything reaches the cluster.
    if let Some(dir) = &common.evidence
        && let Err(why) = evidence::check(dir)
    {
        jr2_probe::say!("error: --evidence: {why}");
        return Exit::Usage.into();
    }
    if exec.cancel_on_stdin {
        // Only now, when the cluster is about to be contacted: a dry run or a skip is over before a cancel matters,
        // and what was already written to stdin stays there to be read.
        signals.cancel_on(|| std::io::stdin().lock());
    }
    // Until the pods are created, a signal stops the run at once: what is then in flight (the client, the access
    // reviews, the Deployment's read, the sweep, the NetworkPolicy list, the Namespace's read) only reads, or
    // deletes stale pods that the next run sweeps again, so it is dropped where it stands.
    let mut stopped: Option<Exit> = None;
    let mut lines = Lines(Vec::new());
    let connected = match signals.until(connect(exec, &mut plan, &mut lines)).await {
        Ok(Ok(c)) => Some(c),
        Ok(Err(exit)) => return exit,
        Err(exit) => {
            stopped = Some(exit);
            None
        }
    };
    // The API server's version, for the verdict's envelope: asked beside the run, never delaying it; not when the
    // run lacks a permission it needs (then nothing but the reviews is sent).
    let kube_version = connected
        .as_ref()
        .filter(|c| c.access.missing.is_empty())
        .map(|c| {
            let client = c.client.clone();
            tokio::spawn(async move {
                tokio::time::timeout(Duration::from_secs(5), client.apiserver_version())
                    .await
                    .ok()?
                    .ok()
                    .map(|v| v.git_version)
            })
        });
    let checks = pod::check_pods(&plan, &run_id, now);
    let to_run: Vec<PodToRun> = checks.iter().map(|c| PodToRun::of(c, &plan)).collect();
    let started_at = SystemTime::now();
    let start = Instant::now();
    // Pods the cluster would not let run (a permission denied, a Pod Security level): not created, their failure
    // known now. `None`: created and run.
    let mut not_created: Vec<Option<PodFailure>> = vec![None; to_run.len()];
    if let Some(c) = &connected {
        if !c.access.missing.is_empty() {
            for perm in &c.access.missing {
                lines.emit(render::permission_missing(
                    perm.verb,
                    &perm.qualified(),
                    &plan.namespace,
                ));
            }
            lines.emit(render::permission_next_action(&plan.namespace));
            let missing: Vec<String> = c
                .access
                .missing
                .iter()
                .map(|p| format!("{} {}", p.verb, p.qualified()))
                .collect();
            for slot in &mut not_created {
                *slot = Some(PodFailure {
                    kind: FailureKind::NotAllowed {
                        missing: missing.clone(),
                    },
                    // Said once for the run, above.
                    lines: Vec::new(),
                });
            }
        } else {
            match signals
                .until(prepare(c.client.clone(), &plan, &checks, now, &c.access))
                .await
            {
                Ok(prepared) => {
                    for w in prepared.warnings {
                        lines.emit(w);
                    }
                    for (i, failure) in prepared.refused {
                        not_created[i] = Some(failure);
                    }
                }
                Err(exit) => stopped = Some(exit),
            }
        }
    }
    // A signal that came as the last answer was read: checked once more, so that no pod is created after it.
    // (One that the runtime has not dispatched yet is seen by the loop below, which deletes what was created.)
    if stopped.is_none() {
        stopped = signals.received();
    }
    let mut live = verdict::LiveOrder::new(&plan, &checks);
    let runnable: Vec<PodToRun> = to_run
        .iter()
        .zip(&not_created)
        .filter(|(_, f)| f.is_none())
        .map(|(p, _)| p.clone())
        .collect();
    let (ran, cleanup, interrupted_by) = match (connected, stopped) {
        (Some(_), None) if runnable.is_empty() => (RunResult::default(), None, None),
        (Some(c), None) => {
            let (result, cleanup, exit) = run_checks(
                c,
                common,
                &plan,
                &runnable,
                &mut signals,
                &mut lines,
                &mut live,
            )
            .await;
            (result, Some(cleanup), exit)
        }
        (_, exit) => (not_run(&runnable), None, exit),
    };
    let result = merge(&to_run, not_created, ran);
    // The deletes were sent as each pod finished; give them a bounded moment to be confirmed, before the verdict,
    // which names a pod that may outlive the run.
    let report = match &cleanup {
        Some(cleanup) => Some(cleanup.wait(Duration::from_secs(10)).await),
        None => None,
    };
    let before = lines.0.len();
    let mut verdict = verdict::assemble(
        &plan,
        &checks,
        &result,
        &run_id,
        started_at,
        start,
        lines.0,
        live.written(),
    );
    let kube_version = match kube_version {
        // Finished by now, or given at most a moment: the run does not wait on it.
        Some(task) => tokio::time::timeout(Duration::from_millis(500), task)
            .await
            .ok()
            .and_then(Result::ok)
            .flatten(),
        None => None,
    };
    envelope(&mut verdict, common, kube_version);
    if let Some(exit) = interrupted_by {
        // The verdict says what the process's exit code will say: a reader of either sees the same thing.
        verdict.ok = false;
        verdict.exit_code = i32::from(exit);
    }
    if let Some(report) = &report {
        let left: Vec<(String, String)> = report
            .failed
            .iter()
            .cloned()
            .chain(report.unfinished.iter().map(|name| {
                (
                    name.clone(),
                    "its delete was not confirmed in 10 s".to_owned(),
                )
            }))
            .collect();
        verdict::pods_left(&mut verdict, &left);
    }
    for line in &verdict.lines[before..] {
        jr2_probe::say!("{line}");
    }
    let printed = print_verdict(common, &verdict);
    if let Some(dir) = common.evidence.as_ref().filter(|_| !verdict.ok)
        && let Err(e) = evidence::write(dir, &checks, &result, &verdict)
    {
        jr2_probe::say!(
            "{}",
            render::evidence_not_written(&dir.display().to_string(), &e.to_string())
        );
    }
    if let Some(exit) = interrupted_by {
        let left = report.as_ref().is_some_and(|r| !r.survivors().is_empty());
        return interrupted(exit, left);
    }
    match printed {
        Ok(()) => Exit::of_run(verdict.ok).into(),
        Err(e) => stdout_failed(e),
    }
}

/// The verdict's troubleshooting envelope: the kube context and the cluster's server from the kubeconfig (read
/// again, contacting nothing), and the Kubernetes version when the API server gave it.
fn envelope(verdict: &mut DriverVerdict, common: &Common, kubernetes_version: Option<String>) {
    let (context, server) =
        jr2_preflight::cluster::describe(common.kubeconfig.as_deref(), common.context.as_deref());
    verdict.kube_context = context;
    verdict.cluster = server.map(|server| verdict::ClusterInfo {
        server,
        kubernetes_version,
    });
}

/// The run's result in `to_run`'s order: the pods not created with their failure, the others as the run gave them
/// (in the same order, without the pods not created).
fn merge(to_run: &[PodToRun], not_created: Vec<Option<PodFailure>>, ran: RunResult) -> RunResult {
    let mut ran_pods = ran.pods.into_iter();
    let pods = to_run
        .iter()
        .zip(not_created)
        .filter_map(|(p, failure)| match failure {
            None => ran_pods.next(),
            Some(failure) => Some(PodRun {
                name: p.pod.metadata.name.clone().unwrap_or_default(),
                uid: None,
                node: None,
                results: p.models.iter().map(|_| None).collect(),
                models: p.models.clone(),
                outcome: PodOutcome::Failed(failure),
                evidence: Evidence::default(),
                kept: false,
            }),
        })
        .collect();
    RunResult {
        pods,
        warnings: ran.warnings,
    }
}

/// The verdict or the dry-run pods did not reach stdout: one line, exit 1 (the caller has nothing to read).
fn stdout_failed(e: jr2_probe::console::StdoutError) -> ExitCode {
    jr2_probe::say!("{}", e.line());
    Exit::Failed.into()
}

fn interrupted(exit: Exit, pods_left: bool) -> ExitCode {
    if pods_left {
        jr2_probe::say!("{}", render::interrupted_pods_left());
    } else {
        jr2_probe::say!("{}", render::interrupted());
    }
    exit.into()
}

/// The cluster as the run found it before creating anything.
struct Connected {
    client: kube::Client,
    access: Access,
}

/// The client, what it may do (the warnings of what it may not, written), and with `--from-deployment` the
/// placements' pod spec from the Deployment. `Err`: the exit, its line written.
async fn connect(
    exec: &Exec<'_>,
    plan: &mut ValidPlan,
    lines: &mut Lines,
) -> Result<Connected, ExitCode> {
    let common = exec.common;
    let client =
        match jr2_preflight::cluster::client(common.kubeconfig.as_deref(), common.context.clone())
            .await
        {
            Ok(c) => c,
            Err(e) => {
                jr2_probe::say!("{}", render::cannot_reach_cluster(&shown(&e.to_string())));
                return Err(Exit::Failed.into());
            }
        };
    let needs = access::Needs {
        deployment: exec.from_deployment.is_some(),
        network_policies: plan.network_policy_check.is_some() || exec.from_deployment.is_some(),
        service_accounts: exec.from_deployment.is_some() || pull_secrets::reads_accounts(plan),
    };
    let access = access::review(client.clone(), &plan.namespace, &needs).await;
    if !access.missing.is_empty() {
        return Ok(Connected { client, access });
    }
    if let Some(name) = exec.from_deployment {
        let applied = match workload::read_deployment(client.clone(), &plan.namespace, name).await {
            Ok(w) => adopt(exec, plan.clone(), &w),
            Err(e) => Err(e),
        };
        match applied {
            Ok(adopted) => *plan = adopted,
            Err(e) => {
                jr2_probe::say!("error: --from-deployment: {}", shown(&e.to_string()));
                return Err(workload::WorkloadError::EXIT.into());
            }
        }
    }
    // What the run lacks, said once the plan is whole: a Deployment's template may name no ServiceAccount, or give
    // no labels to compare policies with, and then nothing is lacking.
    let mut access = access;
    access.lacking.retain(|p| match p.used_for {
        access::Use::ServiceAccounts => pull_secrets::reads_accounts(plan),
        access::Use::NetworkPolicies => plan.network_policy_check.is_some(),
        _ => true,
    });
    for line in access::lacking_lines(&access, &plan.namespace) {
        lines.emit(line);
    }
    if !access.denied(access::Use::ServiceAccounts) {
        pull_secrets::adopt(client.clone(), plan).await;
    }
    Ok(Connected { client, access })
}

/// `--from-deployment`: the Deployment's template in the plan (and for `check`, its containers and the keys they
/// hold), which is then validated again, as a plan is: a template is new input. Its errors are named as the
/// Deployment names its fields.
fn adopt(
    exec: &Exec<'_>,
    plan: ValidPlan,
    w: &workload::HarnessWorkload,
) -> Result<ValidPlan, workload::WorkloadError> {
    let mut plan = plan.into_raw();
    if exec.one_off {
        one_off::adopt(&mut plan, w)?;
    } else {
        workload::apply(&mut plan, w);
    }
    valid_plan(plan, &Overrides::default()).map_err(|e| workload::invalid(w, e))
}

/// What is known before the create: warnings to write, and the pods the namespace's Pod Security level refuses
/// (by their index), which are not created.
struct Prepared {
    warnings: Vec<String>,
    refused: Vec<(usize, PodFailure)>,
}

/// Before the create: the sweep of stale check pods of the Instance (a failure is only logged), the NetworkPolicy
/// warning lines, and the Pod Security level of the namespace against each check pod (all at once).
async fn prepare(
    client: kube::Client,
    plan: &ValidPlan,
    checks: &[pod::CheckPod],
    now: SystemTime,
    access: &Access,
) -> Prepared {
    let sweep = async {
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
    };
    let policies = async {
        if access.denied(access::Use::NetworkPolicies) {
            Vec::new()
        } else {
            network_policy::warnings(client.clone(), plan, checks).await
        }
    };
    let level = async {
        if access.denied(access::Use::Namespace) {
            None
        } else {
            pod_security::enforced(client.clone(), &plan.namespace).await
        }
    };
    let ((), warnings, level) = tokio::join!(sweep, policies, level);
    let mut refused = Vec::new();
    if let Some(level) = level {
        for (i, check) in checks.iter().enumerate() {
            let found = pod_security::violations(&check.pod, level);
            if found.is_empty() {
                continue;
            }
            let name = check.pod.metadata.name.clone().unwrap_or_default();
            let mut lines = vec![render::pod_security_refusal(
                &plan.namespace,
                level.as_str(),
                &name,
                &found[0].field,
                &sanitize::escape(&found[0].what),
            )];
            lines.extend(
                found[1..]
                    .iter()
                    .map(|v| render::pod_security_also(&v.field, &sanitize::escape(&v.what))),
            );
            lines.push(render::pod_security_hint());
            refused.push((
                i,
                PodFailure {
                    kind: FailureKind::PodSecurity {
                        level: level.as_str().to_owned(),
                        fields: found.iter().map(|v| v.field.clone()).collect(),
                    },
                    lines,
                },
            ));
        }
    }
    Prepared { warnings, refused }
}

/// Creates and runs the pods, writing the progress lines as they come; a signal cancels the run (its pods are
/// deleted as `run_pods` returns) and is returned as the exit it asks for.
async fn run_checks(
    connected: Connected,
    common: &Common,
    plan: &ValidPlan,
    to_run: &[PodToRun],
    signals: &mut Signals,
    lines: &mut Lines,
    live: &mut verdict::LiveOrder,
) -> (RunResult, Cleanup, Option<Exit>) {
    let client = connected.client;
    let cleanup = Cleanup::new(client.clone(), &plan.namespace);
    let cancel = Cancel::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let timeout = common
        .timeout
        .unwrap_or(Duration::from_secs(plan.deadline_seconds + 60));
    let options = RunConfig {
        timeout,
        keep_failed: common.keep_pod,
        redactor: Redactor::default(),
        progress: Some(tx),
        cleanup: Some(cleanup.clone()),
        cancel: Some(cancel.clone()),
        events_forbidden_said: connected.access.denied(access::Use::Events),
        ..RunConfig::default()
    };
    let running = run_pods(client, &plan.namespace, to_run.to_vec(), options);
    tokio::pin!(running);
    let mut interrupted: Option<Exit> = None;
    let result = loop {
        tokio::select! {
            result = &mut running => break result,
            Some(p) = rx.recv() => progress(p, lines, live),
            exit = signals.recv(), if interrupted.is_none() => {
                interrupted = Some(exit);
                cancel.cancel();
            }
        }
    };
    while let Ok(p) = rx.try_recv() {
        progress(p, lines, live);
    }
    (result, cleanup, interrupted)
}

/// A progress update's lines: a result's in plan order ([`verdict::LiveOrder`]), any other's at once.
fn progress(p: RunUpdate, lines: &mut Lines, live: &mut verdict::LiveOrder) {
    match &p {
        RunUpdate::Result { pod, index, result } => {
            for line in live.result(pod, *index, result) {
                lines.emit(line);
            }
        }
        _ => {
            if let Some(line) = p.line() {
                lines.emit(line);
            }
        }
    }
}

/// The result of a run stopped before anything was created: every pod interrupted, as `run_pods` reports a run
/// cancelled before its creates were answered.
fn not_run(to_run: &[PodToRun]) -> RunResult {
    let failures = to_run
        .iter()
        .map(|_| {
            Some(PodFailure {
                kind: FailureKind::Interrupted,
                lines: Vec::new(),
            })
        })
        .collect();
    merge(to_run, failures, RunResult::default())
}

fn print_verdict(
    common: &Common,
    verdict: &DriverVerdict,
) -> Result<(), jr2_probe::console::StdoutError> {
    if common.output == Output::Json {
        jr2_probe::console::out_json("the verdict", verdict)?;
    }
    Ok(())
}

/// `jr2-preflight rbac`: the Role of `access::ALL`, and the RoleBinding to the subjects named.
fn rbac(args: &RbacArgs) -> ExitCode {
    if let Some(ns) = &args.namespace
        && let Err(e) = jr2_preflight::plan::check_namespace(Field::Flag("--namespace"), ns)
    {
        return bad_input(&e);
    }
    let ns = args.namespace.as_deref();
    let subjects: Vec<access::Bound> = args
        .user
        .iter()
        .cloned()
        .map(access::Bound::User)
        .chain(args.group.iter().cloned().map(access::Bound::Group))
        .chain(
            args.service_account
                .iter()
                .cloned()
                .map(access::Bound::ServiceAccount),
        )
        .collect();
    if let Some(bad) = subjects.iter().find_map(|s| match s {
        access::Bound::User(n) | access::Bound::Group(n) | access::Bound::ServiceAccount(n)
            if n.is_empty() || n.chars().any(char::is_control) =>
        {
            Some(n)
        }
        _ => None,
    }) {
        return bad_input(&PlanError::Invalid {
            field: Field::Flag("--user/--group/--service-account"),
            message: format!("{} is not a name", sanitize::escape(bad)),
        });
    }
    let mut docs = vec![serde_json::to_value(access::role(ns)).expect("a Role serializes")];
    if !subjects.is_empty() {
        docs.push(
            serde_json::to_value(access::role_binding(ns, &subjects))
                .expect("a RoleBinding serializes"),
        );
    }
    let text = jr2_preflight::yaml::documents(docs).expect("JSON values serialize");
    jr2_probe::console::out("the Role", text.as_bytes())
        .map_or_else(stdout_failed, |()| Exit::Ok.into())
}

/// An error's text as a line shows it: the secrets by their shape redacted (a key, a URL's credentials:
/// `sanitize::redact_shapes`, the one rule), then escaped.
fn shown(text: &str) -> String {
    sanitize::escape(&sanitize::redact_shapes(text))
}
