//! `jr2-preflight`: the command `jr2 up` runs as a subprocess for the provider preflight. This file is its flags:
//! each subcommand's flags become a validated plan and a [`Session`] (bad input: one `error:` line, exit 2, nothing
//! created), and `session::execute` runs it (`session/`). `jr2-preflight run --plan <file|->` reads the plan; `check`
//! is the operator's by-hand check, whose flags make a one-placement plan (`one_off.rs`) that runs through the same
//! code; `images` and `rbac` print what an air-gapped mirror and a least-privilege Role need, contacting nothing.
//! Exit 0 when no error (warnings allowed), 1 on an error, 2 on bad input or usage; the check pods are deleted on
//! every path, Ctrl-C and SIGTERM included.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use clap::{Parser, Subcommand, ValueEnum};
use jr2_preflight::one_off::{self, OneOff, SecretKey};
use jr2_preflight::plan::{Field, Overrides, PlanError, RawPlan};
use jr2_preflight::session::{self, Session, shown, valid_plan};
use jr2_preflight::signals::Signals;
use jr2_preflight::{access, pod};
use jr2_probe::api::ApiKind;
use jr2_probe::contract::Exit;
use jr2_probe::sanitize;

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
    /// Print the Role (and with a subject, the RoleBinding) that grants what the driver needs in a namespace, then
    /// the ClusterRole of the nodes it may watch, optional (and its ClusterRoleBinding), for `kubectl apply -f -`.
    /// Contacts nothing.
    Rbac(RbacArgs),
}

#[derive(Debug, clap::Args)]
struct RbacArgs {
    /// The namespace of the Role (default: none, kubectl apply -n sets it).
    #[arg(short = 'n', long, value_name = "NAMESPACE")]
    namespace: Option<String>,

    /// Bind the Role (and the ClusterRole) to this user (repeatable).
    #[arg(long, value_name = "NAME")]
    user: Vec<String>,

    /// Bind the Role (and the ClusterRole) to this group (repeatable).
    #[arg(long, value_name = "NAME")]
    group: Vec<String>,

    /// Bind the Role (and the ClusterRole) to this ServiceAccount of the namespace (repeatable; needs -n).
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

impl Common {
    /// The session these flags ask for; `run` and `check` add their own.
    fn session(&self) -> Session<'_> {
        Session {
            kubeconfig: self.kubeconfig.as_deref(),
            context: self.context.as_deref(),
            json: self.output == Output::Json,
            dry_run: self.dry_run,
            timeout: self.timeout,
            keep_pod: self.keep_pod,
            evidence: self.evidence.as_deref(),
            ..Session::default()
        }
    }
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
        .map_or_else(session::stdout_failed, |()| Exit::Ok)
        .into()
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
    // A pod-spec field Kubernetes does not know is dropped, as the API server drops it: a warning each, and on.
    let read = read.inspect(|plan| {
        for line in plan.unknown_field_lines() {
            jr2_probe::say!("{line}");
        }
    });
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
    let session = Session {
        from_deployment: args.from_deployment.as_deref(),
        skip: args.skip_provider_preflight,
        cancel_on_stdin: args.cancel_on_stdin,
        ..common.session()
    };
    session::execute(plan, &session, signals).await.into()
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
    let session = Session {
        from_deployment: args.from_deployment.as_deref(),
        one_off: true,
        ..common.session()
    };
    session::execute(plan, &session, signals).await.into()
}

/// `jr2-preflight rbac`: the Role of `access::ALL`, the RoleBinding to the subjects named, then the ClusterRole of
/// its nodes and its ClusterRoleBinding.
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
    // Nodes are no namespace's: their ClusterRole, optional (without it, a warning and no node watch).
    docs.push(serde_json::to_value(access::cluster_role()).expect("a ClusterRole serializes"));
    if !subjects.is_empty() {
        docs.push(
            serde_json::to_value(access::cluster_role_binding(ns, &subjects))
                .expect("a ClusterRoleBinding serializes"),
        );
    }
    let text = jr2_preflight::yaml::documents(docs).expect("JSON values serialize");
    jr2_probe::console::out("the Role", text.as_bytes())
        .map_or_else(session::stdout_failed, |()| Exit::Ok)
        .into()
}
