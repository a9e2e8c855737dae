//! The plan: what `jr2 up` hands the driver (`jr2-preflight run --plan <file|->`).
//!
//! A plan names the namespace and the Instance, the probe's image, the deadline of the whole check, the placements
//! of the Harness pods (each with the pod spec `jr2 up` renders for them, Custodian container and volumes included)
//! and the models to check, each on the placement whose Harness pods run it. It is versioned (`schema`,
//! [`PLAN_SCHEMA`]) and closed: an unknown field is an error. Its JSON Schema is `orchestrate/schemas/plan.v1.schema.json`; an
//! example is `orchestrate/examples/plan.json`.
//!
//! A plan never holds a secret value: the Harness env carries Stand-ins (`jr2-held-<NAME>`) and `valueFrom`
//! references, the models name the env var of their key. [`Plan::parse`] refuses a plan whose Harness env sets a
//! model's key env var to a literal that is not its Stand-in.
//!
//! Every error names the field it is about (`plan.models[2].placement: no placement "sandbox-gpu" ...`), and the
//! caller exits with [`PlanError::EXIT`] (2, bad input) before contacting the cluster.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use jr2_probe::api::{ApiKind, ToolChoice};
use jr2_probe::contract::Exit;
use jr2_probe::contract::verdict::Route;
use jr2_probe::spec::input::InputError;
use jr2_probe::spec::{ModelSpec, Remedy, RunSpec, Source, SpecError};
use jr2_probe::target::Target;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use thiserror::Error;

/// The plan's schema identifier.
pub const PLAN_SCHEMA: &str = "jr2.dev/provider-preflight-plan/v1";

/// The default deadline of the whole check, in seconds.
pub const DEFAULT_DEADLINE_SECONDS: u64 = 300;

/// The default time one model has to answer, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;

/// The most a deadline or a timeout may be: a day (a larger value is most likely milliseconds).
pub const MAX_SECONDS: u64 = 86_400;

/// The default name of the Harness container in a placement's pod spec.
pub const DEFAULT_HARNESS_CONTAINER: &str = "harness";

/// The plan `jr2 up` hands over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Plan {
    /// [`PLAN_SCHEMA`].
    pub schema: String,
    /// The namespace of the Instance: the check pods are created there.
    pub namespace: String,
    /// The Instance's name: in the check pods' names and labels, and what the stale-pod sweep selects on.
    pub instance: String,
    /// The probe's image (`jr2-probe`), as the cluster pulls it (re-homed to the kit registry where there is one);
    /// default [`DEFAULT_PROBE_IMAGE`], overridden by `--probe-image`.
    #[serde(default = "default_probe_image")]
    pub probe_image: String,
    /// The deadline of the whole check, in seconds: the pods' `activeDeadlineSeconds`, and the probe's deadline.
    #[serde(default = "default_deadline")]
    pub deadline_seconds: u64,
    /// The time one model has to answer, in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Seconds a model waits for its verdict before its progress line, and between the next ones; absent: the
    /// probe's 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_note_seconds: Option<f64>,
    /// Where the Harness pods run: one check pod per placement that has a model.
    pub placements: Vec<Placement>,
    /// The models to check, in the order the lines are printed.
    pub models: Vec<PlanModel>,
    /// The labels of each placement's Harness pods, to find the NetworkPolicies that select them; absent: no
    /// NetworkPolicy check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy_check: Option<NetworkPolicyCheck>,
}

/// The probe image the driver uses when the plan names none: the release of this version.
pub const DEFAULT_PROBE_IMAGE: &str = concat!("ghcr.io/jr2/jr2-probe:", env!("CARGO_PKG_VERSION"));

fn default_probe_image() -> String {
    DEFAULT_PROBE_IMAGE.to_owned()
}

fn default_deadline() -> u64 {
    DEFAULT_DEADLINE_SECONDS
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECONDS
}

fn default_harness() -> String {
    DEFAULT_HARNESS_CONTAINER.to_owned()
}

/// One placement of Harness pods: a Sandbox placement, or the Instance Harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Placement {
    /// The placement's name (a DNS-1123 label): in the check pod's name and its `jr2.dev/placement` label.
    pub name: String,
    /// The pod spec `jr2 up` renders for these Harness pods, Custodian container and volumes included.
    pub pod_spec: PodSpec,
    /// The Harness container's name in `pod_spec.containers`.
    #[serde(default = "default_harness")]
    pub harness_container: String,
    /// The Custodian container's name (in `pod_spec.containers`, or already a sidecar in `initContainers`); absent:
    /// these pods hold no secret and have no Custodian.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custodian_container: Option<String>,
}

impl Placement {
    /// The Harness container.
    pub fn harness(&self) -> Option<&Container> {
        self.pod_spec
            .containers
            .iter()
            .find(|c| c.name == self.harness_container)
    }

    /// The Custodian container, if the pods have one.
    pub fn custodian(&self) -> Option<&Container> {
        let name = self.custodian_container.as_deref()?;
        self.pod_spec
            .containers
            .iter()
            .chain(self.pod_spec.init_containers.iter().flatten())
            .find(|c| c.name == name)
    }

    /// The containers the check pod copies (the Harness and the Custodian), each with its field under the pod spec
    /// (`containers[0]`, `initContainers[1]`).
    pub fn copied_containers(&self) -> impl Iterator<Item = (String, &Container)> {
        let wanted = [
            Some(self.harness_container.as_str()),
            self.custodian_container.as_deref(),
        ];
        let spec = &self.pod_spec;
        [
            ("containers", Some(&spec.containers)),
            ("initContainers", spec.init_containers.as_ref()),
        ]
        .into_iter()
        .flat_map(|(list, containers)| {
            containers
                .into_iter()
                .flatten()
                .enumerate()
                .map(move |(i, c)| (format!("{list}[{i}]"), c))
        })
        .filter(move |(_, c)| wanted.contains(&Some(c.name.as_str())))
    }

    /// Calls go through a Custodian: the pods have one.
    pub fn via_custodian(&self) -> bool {
        self.custodian_container.is_some()
    }
}

/// One model to check. Mirrors [`jr2_probe::spec::ModelSpec`], plus the placement; `viaCustodian` is derived from
/// the placement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlanModel {
    /// `<provider>/<id>`, as the Agent names it.
    pub model: String,
    /// The name of the placement whose Harness pods run this model.
    pub placement: String,
    /// Where it comes from: pi's catalog, a `harness.catalog` gateway, or the custom provider.
    pub source: Source,
    /// The base URL: required for `custom` and `gateway`; the catalog's when absent for `catalog`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// pi's API kind: default `openai-completions` for `custom`, the catalog's otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiKind>,
    /// The env var that holds the key (its value in the Harness env is the Stand-in `jr2-held-<NAME>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_env: Option<String>,
    /// A Harness pod holds that key (custom: `harness.provider.apiKey` is set).
    pub key_held: bool,
    /// The model's `maxTokens` as jr2 resolves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// The model's context window as jr2 resolves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The `tool_choice` to send; absent: none, as a Turn sends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// What the probe's resolution gave when [`Plan::validate`] checked this model; never read from the plan.
    #[serde(skip)]
    resolved: Option<Resolved>,
}

/// What the probe's resolution of a model gave on the host, when the plan was validated: the facts a result names
/// (its id, API, base URL, host and route) before the probe has said anything. The model is resolved once here; the
/// probe resolves it again where it runs, from the pod's environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The spec it was resolved from: a model changed since is resolved again.
    spec: ModelSpec,
    /// The id sent in the request.
    pub id: String,
    /// The API kind.
    pub api: ApiKind,
    /// The base URL.
    pub base_url: String,
    /// `<host>` of the lines.
    pub host: String,
    /// How the model is reached.
    pub route: Route,
}

impl Resolved {
    fn of(spec: ModelSpec, target: &Target) -> Self {
        Resolved {
            spec,
            id: target.id.clone(),
            api: target.api,
            base_url: target.base_url.to_string(),
            host: target.host(),
            route: target.route.clone(),
        }
    }
}

impl PlanModel {
    /// A model of `placement` with nothing else set: no base URL, API, key or limits of its own.
    pub fn new(model: String, placement: &str, source: Source) -> Self {
        PlanModel {
            model,
            placement: placement.to_owned(),
            source,
            base_url: None,
            api: None,
            key_env: None,
            key_held: false,
            max_tokens: None,
            context_window: None,
            tool_choice: None,
            resolved: None,
        }
    }

    /// The probe's spec of this model.
    pub fn spec(&self, via_custodian: bool) -> ModelSpec {
        ModelSpec {
            model: self.model.clone(),
            source: self.source,
            base_url: self.base_url.clone(),
            api: self.api,
            key_env: self.key_env.clone(),
            key_held: self.key_held,
            via_custodian,
            max_tokens: self.max_tokens,
            context_window: self.context_window,
            tool_choice: self.tool_choice,
        }
    }

    /// What the probe's resolution gave for this model when the plan was validated ([`Plan::validate`]); `None`
    /// before.
    pub fn resolved(&self) -> Option<&Resolved> {
        self.resolved.as_ref()
    }
}

/// What the NetworkPolicy check needs: the check pod has labels of its own, so a policy that selects the Harness
/// pods does not select it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkPolicyCheck {
    /// Per placement name: the labels of its Harness pods.
    pub harness_pod_labels: BTreeMap<String, BTreeMap<String, String>>,
}

/// A plan that cannot be run: bad input, named by its field. The caller prints `error: <this>` and exits with
/// [`PlanError::EXIT`], before contacting the cluster.
#[derive(Debug, Error)]
pub enum PlanError {
    /// The plan file cannot be read, is larger than [`MAX_PLAN_BYTES`], or is not text.
    #[error("--plan: {0}{hint}", hint = read_hint(.0))]
    Read(#[from] InputError),
    /// The plan is not JSON.
    #[error("plan: not JSON: {0}")]
    Json(String),
    /// An object of the plan gives a key twice.
    #[error("plan: {0}; a plan gives each field once")]
    Repeated(String),
    /// A field is missing, of the wrong type, unknown, or invalid.
    #[error("{field}: {message}")]
    Invalid {
        /// The field (`plan.models[2].placement`).
        field: String,
        /// Why.
        message: String,
    },
}

impl PlanError {
    /// The exit for bad input.
    pub const EXIT: Exit = Exit::Usage;
    /// [`PlanError::EXIT`]'s code (2).
    pub const EXIT_CODE: u8 = Self::EXIT.code();

    /// The field the error is about, when it names one.
    pub fn field(&self) -> Option<&str> {
        match self {
            PlanError::Invalid { field, .. } => Some(field),
            PlanError::Read(_) | PlanError::Json(_) | PlanError::Repeated(_) => None,
        }
    }
}

/// A model the probe cannot check (its name, its base URL, not in the catalog): the probe's problem, worded with
/// the plan's fields.
impl From<SpecError> for PlanError {
    fn from(e: SpecError) -> Self {
        PlanError::Invalid {
            field: e.field(),
            message: e.problem.message(|remedy| match remedy {
                Remedy::CheckAsCustom => {
                    "to check it anyway, make it source \"custom\" with its baseUrl and api"
                }
                Remedy::KeyInEnv => {
                    "put the key in an environment variable and name it with keyEnv"
                }
            }),
        }
    }
}

/// What a plan too large to read is too large for.
fn read_hint(e: &InputError) -> &'static str {
    match e {
        InputError::TooLarge { .. } => {
            "; a plan's check pods must fit the API server's limit on one object (1.5 MiB)"
        }
        _ => "",
    }
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// The Stand-in of a held secret: what the Harness env holds in place of its value.
pub fn stand_in(name: &str) -> String {
    format!("jr2-held-{name}")
}

/// The largest plan read, in bytes. Each check pod copies its placement's pod spec and carries its models as one
/// argument, and the API server stores a pod of at most 1.5 MiB (etcd's request limit): a plan of 1 MiB keeps every
/// pod under it. `/dev/zero` as the plan stops here instead of filling memory.
pub const MAX_PLAN_BYTES: u64 = jr2_probe::spec::input::MIB;

/// The longest run spec one check pod's probe takes, in bytes of JSON: it is one argument (`--spec-json`), and
/// Linux takes at most 128 KiB per argument (`MAX_ARG_STRLEN`, with its NUL). Past it the container cannot start.
pub const MAX_RUN_SPEC_BYTES: usize = 128 * 1024 - 1;

impl Plan {
    /// A plan of these placements and models, every other field its default (not validated).
    pub fn new(
        namespace: &str,
        instance: &str,
        placements: Vec<Placement>,
        models: Vec<PlanModel>,
    ) -> Plan {
        Plan {
            schema: PLAN_SCHEMA.to_owned(),
            namespace: namespace.to_owned(),
            instance: instance.to_owned(),
            probe_image: default_probe_image(),
            deadline_seconds: DEFAULT_DEADLINE_SECONDS,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            waiting_note_seconds: None,
            placements,
            models,
            network_policy_check: None,
        }
    }

    /// Reads a plan from a file, or stdin for `-` (at most [`MAX_PLAN_BYTES`]), and validates it. A pipe or a
    /// process substitution (`--plan <(jr2 plan)`) is read like a file.
    pub fn read(path: &Path) -> Result<Plan, PlanError> {
        let text = jr2_probe::spec::input::read_text(path)?;
        Plan::parse(&text)
    }

    /// Reads one plan from the start of `input` (stdin under `--cancel-on-stdin`), and not a byte past it: the end of
    /// its JSON value ends the plan, not the end of the input, which the caller keeps open to cancel the run. The same
    /// limit and the same errors as [`Plan::read`] (a plan cut short reads as the JSON error it is).
    pub fn read_leading(mut input: impl std::io::BufRead) -> Result<Plan, PlanError> {
        let io = |source| InputError::Io {
            path: "-".into(),
            source,
        };
        if input.fill_buf().map_err(io)?.starts_with(b"\xEF\xBB\xBF") {
            input.consume(3);
        }
        let mut seen = Recorded {
            inner: std::io::Read::take(&mut input, MAX_PLAN_BYTES + 1),
            bytes: Vec::new(),
        };
        // Only to find where the value ends; `Plan::parse` then reads it with the strict rules.
        let whole = serde::de::IgnoredAny::deserialize(&mut serde_json::Deserializer::from_reader(
            &mut seen,
        ));
        let bytes = seen.bytes;
        if bytes.len() as u64 > MAX_PLAN_BYTES {
            return Err(InputError::TooLarge {
                path: "-".into(),
                limit: "1 MiB",
            }
            .into());
        }
        if let Err(e) = &whole
            && e.is_io()
        {
            return Err(io(std::io::Error::other(e.to_string())).into());
        }
        let text = String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
            path: "-".into(),
            at: e.utf8_error().valid_up_to(),
        })?;
        Plan::parse(&text)
    }

    /// Parses and validates a plan. A leading UTF-8 byte order mark (what some Windows editors write) is skipped; a
    /// key given twice in one object is refused (serde_json would keep the last one: a second `namespace` could
    /// point the run elsewhere than the first one a reader sees).
    pub fn parse(text: &str) -> Result<Plan, PlanError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let value = strict_json::parse(text).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => PlanError::Repeated(e.to_string()),
            _ => PlanError::Json(e.to_string()),
        })?;
        Plan::from_value(value)
    }

    /// Reads and validates a plan already parsed as JSON.
    pub fn from_value(value: Value) -> Result<Plan, PlanError> {
        check_schema(&value)?;
        let mut plan: Plan = match serde_json::from_value(value.clone()) {
            Ok(plan) => plan,
            Err(e) => return Err(locate(&value, &e)),
        };
        plan.validate()?;
        Ok(plan)
    }

    /// Checks what the types do not: names, references between fields, the models (through the probe's own
    /// resolution, with an empty environment), and that no secret is a literal ([`crate::secret_env`]). Each model keeps what its
    /// resolution gave ([`PlanModel::resolved`]); one resolved already, and unchanged since, is not resolved again.
    pub fn validate(&mut self) -> Result<(), PlanError> {
        if self.schema != PLAN_SCHEMA {
            return Err(schema_error(&Value::String(self.schema.clone())));
        }
        dns_label("plan.namespace", &self.namespace)?;
        dns_label("plan.instance", &self.instance)?;
        image_reference("plan.probeImage", &self.probe_image)?;
        seconds("plan.deadlineSeconds", self.deadline_seconds)?;
        seconds("plan.timeoutSeconds", self.timeout_seconds)?;
        if self.deadline_seconds <= self.timeout_seconds {
            return Err(invalid(
                "plan.deadlineSeconds",
                format!(
                    "{} s leaves no time for one model's timeout (plan.timeoutSeconds: {} s); make it longer",
                    self.deadline_seconds, self.timeout_seconds
                ),
            ));
        }

        if self.placements.is_empty() {
            return Err(invalid(
                "plan.placements",
                "empty: name the placement of the Harness pods",
            ));
        }
        let key_envs: Vec<&str> = self
            .models
            .iter()
            .filter_map(|m| m.key_env.as_deref())
            .collect();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (i, p) in self.placements.iter().enumerate() {
            let at = format!("plan.placements[{i}]");
            dns_label(&format!("{at}.name"), &p.name)?;
            if let Some(first) = seen.insert(&p.name, i) {
                return Err(invalid(
                    format!("{at}.name"),
                    format!(
                        "\"{}\" is already the name of plan.placements[{first}]",
                        p.name
                    ),
                ));
            }
            validate_placement(&at, p)?;
            crate::secret_env::check(&at, p, &key_envs)?;
        }

        let mut checked: HashMap<(&str, &str), usize> = HashMap::new();
        let mut resolved = Vec::with_capacity(self.models.len());
        for (i, m) in self.models.iter().enumerate() {
            let at = format!("plan.models[{i}]");
            let Some(placement) = self.placement(&m.placement) else {
                return Err(invalid(
                    format!("{at}.placement"),
                    format!(
                        "no placement \"{}\" (the plan's placements: {})",
                        jr2_probe::sanitize::escape_truncate(&m.placement, 100),
                        self.placement_names()
                    ),
                ));
            };
            // A key that happens to be a valid name (`AIza…`, `gsk_…`) is refused the same way (issue 25, item 8).
            if let Some(name) = &m.key_env
                && (!is_env_name(name) || jr2_probe::sanitize::looks_like_key(name))
            {
                return Err(invalid(
                    format!("{at}.keyEnv"),
                    // Not repeated: what was pasted in place of a name is often the key itself.
                    format!(
                        "is not an environment variable name ({} characters, not repeated: it may be a key); name \
                         the variable that holds the key",
                        name.chars().count()
                    ),
                ));
            }
            // The probe's own resolution: a model without a provider, not in the catalog, a bad base URL. The env is
            // empty: validation never reads a key.
            let spec = m.spec(placement.via_custodian());
            match &m.resolved {
                Some(r) if r.spec == spec => resolved.push(r.clone()),
                _ => {
                    let target = jr2_probe::spec::resolve(&spec, &at, &|_| None, "plan")?;
                    resolved.push(Resolved::of(spec, &target));
                }
            }
            if let Some(first) = checked.insert((&m.placement, &m.model), i) {
                return Err(invalid(
                    format!("{at}.model"),
                    format!(
                        "\"{}\" is already checked on placement \"{}\" (plan.models[{first}])",
                        m.model, m.placement
                    ),
                ));
            }
        }
        for (m, r) in self.models.iter_mut().zip(resolved) {
            m.resolved = Some(r);
        }
        for p in &self.placements {
            let bytes =
                serde_json::to_string(&self.run_spec_for(&p.name)).map_or(0, |json| json.len());
            if bytes > MAX_RUN_SPEC_BYTES {
                let n = self.models.iter().filter(|m| m.placement == p.name).count();
                return Err(invalid(
                    "plan.models",
                    format!(
                        "the {n} models of placement \"{}\" make a run spec of {bytes} bytes; the probe takes it as \
                         one argument, and Linux takes at most 131072 bytes per argument: check fewer models in one run",
                        p.name
                    ),
                ));
            }
        }

        if let Some(check) = &self.network_policy_check {
            for name in check.harness_pod_labels.keys() {
                if self.placement(name).is_none() {
                    return Err(invalid(
                        format!("plan.networkPolicyCheck.harnessPodLabels.{name}"),
                        format!(
                            "no placement \"{}\" (the plan's placements: {})",
                            jr2_probe::sanitize::escape_truncate(name, 100),
                            self.placement_names()
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// The placement of that name.
    pub fn placement(&self, name: &str) -> Option<&Placement> {
        self.placements.iter().find(|p| p.name == name)
    }

    /// The placements that have a model to check, in plan order: one check pod each.
    pub fn placements_with_models(&self) -> impl Iterator<Item = &Placement> {
        self.placements
            .iter()
            .filter(|p| self.models.iter().any(|m| m.placement == p.name))
    }

    /// The run spec of one placement's check pod: its models, in plan order, with `viaCustodian` derived from the
    /// placement. It names env vars, never a value.
    pub fn run_spec_for(&self, placement: &str) -> RunSpec {
        let via_custodian = self
            .placement(placement)
            .is_some_and(Placement::via_custodian);
        let models: Vec<ModelSpec> = self
            .models
            .iter()
            .filter(|m| m.placement == placement)
            .map(|m| m.spec(via_custodian))
            .collect();
        // The probe's own defaults (tries, concurrency), the plan's timeout.
        RunSpec {
            timeout_seconds: self.timeout_seconds as f64,
            waiting_note_seconds: self.waiting_note_seconds,
            ..RunSpec::new(models)
        }
    }

    /// The labels of a placement's Harness pods, for the NetworkPolicy check.
    pub fn harness_pod_labels(&self, placement: &str) -> Option<&BTreeMap<String, String>> {
        self.network_policy_check
            .as_ref()?
            .harness_pod_labels
            .get(placement)
    }

    fn placement_names(&self) -> String {
        self.placements
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn check_schema(value: &Value) -> Result<(), PlanError> {
    let Some(top) = value.as_object() else {
        return Err(invalid("plan", "must be a JSON object"));
    };
    match top.get("schema") {
        None => Err(invalid(
            "plan.schema",
            format!("missing; this driver reads \"{PLAN_SCHEMA}\""),
        )),
        Some(Value::String(s)) if s == PLAN_SCHEMA => Ok(()),
        Some(other) => Err(schema_error(other)),
    }
}

fn schema_error(found: &Value) -> PlanError {
    let shown = jr2_probe::sanitize::escape_truncate(&found.to_string(), 100);
    invalid(
        "plan.schema",
        format!("{shown} is not a plan this driver reads (it reads \"{PLAN_SCHEMA}\")"),
    )
}

fn validate_placement(at: &str, p: &Placement) -> Result<(), PlanError> {
    let spec = &p.pod_spec;
    let Some(hi) = spec
        .containers
        .iter()
        .position(|c| c.name == p.harness_container)
    else {
        return Err(invalid(
            format!("{at}.harnessContainer"),
            format!(
                "no container \"{}\" in {at}.podSpec.containers ({})",
                p.harness_container,
                names(&spec.containers)
            ),
        ));
    };
    check_mounts(
        &format!("{at}.podSpec.containers[{hi}]"),
        &spec.containers[hi],
        spec,
    )?;
    env_names(
        &format!("{at}.podSpec.containers[{hi}]"),
        &spec.containers[hi],
    )?;
    if let Some(name) = &p.custodian_container {
        if *name == p.harness_container {
            return Err(invalid(
                format!("{at}.custodianContainer"),
                "names the Harness container; the Custodian is a container of its own",
            ));
        }
        let found = spec
            .containers
            .iter()
            .position(|c| &c.name == name)
            .map(|i| format!("{at}.podSpec.containers[{i}]"))
            .or_else(|| {
                spec.init_containers
                    .iter()
                    .flatten()
                    .position(|c| &c.name == name)
                    .map(|i| format!("{at}.podSpec.initContainers[{i}]"))
            });
        let Some(path) = found else {
            return Err(invalid(
                format!("{at}.custodianContainer"),
                format!("no container \"{name}\" in {at}.podSpec.containers or initContainers"),
            ));
        };
        let custodian = p.custodian().expect("found above");
        check_mounts(&path, custodian, spec)?;
        env_names(&path, custodian)?;
        match custodian.image.as_deref() {
            Some(image) => image_reference(&format!("{path}.image"), image)?,
            None => {
                return Err(invalid(
                    format!("{path}.image"),
                    "missing: the check pod runs the Custodian's image",
                ));
            }
        }
    }
    crate::host_access::check(at, p)?;
    Ok(())
}

fn names(containers: &[Container]) -> String {
    if containers.is_empty() {
        return "none".to_owned();
    }
    containers
        .iter()
        .map(|c| format!("\"{}\"", c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every mount of a container the check pod copies names a volume of the spec.
fn check_mounts(at: &str, c: &Container, spec: &PodSpec) -> Result<(), PlanError> {
    for (j, m) in c.volume_mounts.iter().flatten().enumerate() {
        if !spec.volumes.iter().flatten().any(|v| v.name == m.name) {
            return Err(invalid(
                format!("{at}.volumeMounts[{j}].name"),
                format!("no volume \"{}\" in the pod spec's volumes", m.name),
            ));
        }
    }
    Ok(())
}

/// The env names of a container the check pod copies, as the API server takes them (1.35): not empty, printable
/// ASCII, no `=`. Refused here rather than by the create, with the field named.
fn env_names(at: &str, c: &Container) -> Result<(), PlanError> {
    for (k, e) in c.env.iter().flatten().enumerate() {
        let ok = !e.name.is_empty()
            && e.name
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'=');
        if !ok {
            return Err(invalid(
                format!("{at}.env[{k}].name"),
                format!(
                    "\"{}\" is not an environment variable name (printable ASCII, no '=', not empty)",
                    jr2_probe::sanitize::escape_truncate(&e.name, 100)
                ),
            ));
        }
    }
    Ok(())
}

/// A namespace (`plan.namespace`, `--namespace`) is a DNS-1123 label; `field` names where it came from.
pub fn check_namespace(field: &str, value: &str) -> Result<(), PlanError> {
    dns_label(field, value)
}

/// An image reference (`plan.probeImage`, `--probe-image`, the Custodian's image) as a container runtime parses it
/// (distribution's reference grammar): `[host[:port]/]path[:tag][@algorithm:hex]`, the path's components lower-case
/// letters and digits joined by `.`, `_`, `__` or dashes, the tag at most 128 of `[A-Za-z0-9_.-]` (not starting with
/// `.` or `-`), the name at most 255 characters. The API server takes any string, and the kubelet refuses a bad one
/// only once the pod is scheduled (`InvalidImageName`), so it is refused here, before anything is created.
pub fn image_reference(field: &str, value: &str) -> Result<(), PlanError> {
    match image_reference_problem(value) {
        None => Ok(()),
        Some(why) => Err(invalid(
            field,
            format!(
                "\"{}\" is not an image reference ({why})",
                jr2_probe::sanitize::escape_truncate(value, 200)
            ),
        )),
    }
}

fn image_reference_problem(value: &str) -> Option<&'static str> {
    if value.is_empty() {
        return Some("empty");
    }
    let (rest, digest) = match value.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (value, None),
    };
    if let Some(digest) = digest {
        let Some((algorithm, hex)) = digest.split_once(':') else {
            return Some("a digest is <algorithm>:<hex>");
        };
        let algorithm_ok = !algorithm.is_empty()
            && algorithm.split(['+', '.', '_', '-']).all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
        if !algorithm_ok || hex.len() < 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some("a digest is <algorithm>:<at least 32 hex digits>");
        }
    }
    // A tag follows the last ':' after the last '/' (a ':' before it is the registry's port).
    let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match rest[last_slash..].rfind(':') {
        Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
        None => (rest, None),
    };
    if let Some(tag) = tag {
        let ok = !tag.is_empty()
            && tag.len() <= 128
            && !tag.starts_with(['.', '-'])
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
        if !ok {
            return Some(
                "a tag is 1 to 128 of letters, digits, '_', '.', '-', not starting with '.' or '-'",
            );
        }
    }
    if name.is_empty() {
        return Some("no name");
    }
    if name.len() > 255 {
        return Some("the name is longer than 255 characters");
    }
    let mut components: Vec<&str> = name.split('/').collect();
    // The first component is a registry when it looks like a host: a '.', a ':' or `localhost` (as Docker reads it).
    if components.len() > 1 {
        let first = components[0];
        if first.contains(['.', ':']) || first == "localhost" {
            if !is_registry(first) {
                return Some("the registry is <host>[:<port>]");
            }
            components.remove(0);
        }
    }
    if !components.iter().all(|c| is_path_component(c)) {
        return Some(
            "the path's components are lower-case letters and digits joined by '.', '_', '__' or '-'",
        );
    }
    None
}

/// `[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*`: runs of lower-case letters and digits, one separator between two runs.
fn is_path_component(c: &str) -> bool {
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = c.as_bytes();
    if bytes.is_empty() || !alnum(bytes[0]) || !alnum(bytes[bytes.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < bytes.len() {
        if alnum(bytes[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !alnum(bytes[i]) {
            i += 1;
        }
        let separator = &c[start..i];
        if !(matches!(separator, "." | "_" | "__") || separator.bytes().all(|b| b == b'-')) {
            return false;
        }
    }
    true
}

/// `host[:port]` of a registry: DNS labels (letters, digits, inner '-') joined by '.', or `[IPv6]`, and a port.
fn is_registry(text: &str) -> bool {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let Some((v6, after)) = rest.split_once(']') else {
            return false;
        };
        if v6.parse::<std::net::Ipv6Addr>().is_err() {
            return false;
        }
        match after {
            "" => return true,
            p => match p.strip_prefix(':') {
                Some(port) => ("", Some(port)),
                None => return false,
            },
        }
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        }
    };
    let port_ok =
        port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()));
    let host_ok = host.is_empty() && text.starts_with('[')
        || !host.is_empty()
            && host.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
    port_ok && host_ok
}

/// A DNS-1123 label: what Kubernetes takes as a namespace or a pod's name, and each dot-separated part of a Secret's.
pub fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

fn dns_label(field: &str, value: &str) -> Result<(), PlanError> {
    if is_dns_label(value) {
        Ok(())
    } else {
        Err(invalid(
            field,
            format!(
                "\"{}\" is not a DNS-1123 label (lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit)",
                jr2_probe::sanitize::escape_truncate(value, 100)
            ),
        ))
    }
}

fn seconds(field: &str, value: u64) -> Result<(), PlanError> {
    if value == 0 {
        return Err(invalid(field, "must be at least 1 (seconds)"));
    }
    if value > MAX_SECONDS {
        return Err(invalid(
            field,
            format!("{value} is more than a day; the value is in seconds"),
        ));
    }
    Ok(())
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

// --- Naming the field of a serde error -----------------------------------------------------------------------------
//
// serde_json's errors from a `Value` say what is wrong but not where. When the plan does not deserialize, `locate`
// walks it again, one field at a time, with the type of each field, and names the first one that fails.

type Check = fn(&Value) -> Result<(), Wrong>;

/// What a [`Check`] found wrong: the message, and the field below the checked one it is about, when it knows it.
struct Wrong {
    /// `containers[0].env[1].value`, under the checked field.
    inner: Option<String>,
    message: String,
}

impl From<String> for Wrong {
    fn from(message: String) -> Self {
        Wrong {
            inner: None,
            message,
        }
    }
}

fn is<T: DeserializeOwned>(v: &Value) -> Result<(), Wrong> {
    serde_json::from_value::<T>(v.clone())
        .map(|_| ())
        .map_err(|e| e.to_string().into())
}

/// A pod spec that does not deserialize names its inner field: `containers[0].env[1].value: invalid type...`, as
/// the API server would, rather than the whole `podSpec`.
fn pod_spec(v: &Value) -> Result<(), Wrong> {
    serde_path_to_error::deserialize::<_, PodSpec>(v.clone())
        .map(|_| ())
        .map_err(|e| {
            let inner = e.path().to_string();
            Wrong {
                inner: (!inner.is_empty() && inner != ".").then_some(inner),
                message: e.into_inner().to_string(),
            }
        })
}

fn api_kind(v: &Value) -> Result<(), Wrong> {
    is::<ApiKind>(v).map_err(|_| {
        match v {
            Value::String(s) => format!(
                "unknown API kind \"{}\" (pi's kinds: {})",
                jr2_probe::sanitize::escape_truncate(s, 100),
                ApiKind::ALL.map(ApiKind::as_str).join(", ")
            ),
            other => format!("must be a string, not {}", kind_of(other)),
        }
        .into()
    })
}

fn source(v: &Value) -> Result<(), Wrong> {
    is::<Source>(v).map_err(|_| {
        match v {
            Value::String(s) => format!(
                "unknown source \"{}\" (one of: catalog, gateway, custom)",
                jr2_probe::sanitize::escape_truncate(s, 100)
            ),
            other => format!("must be a string, not {}", kind_of(other)),
        }
        .into()
    })
}

fn tool_choice(v: &Value) -> Result<(), Wrong> {
    is::<ToolChoice>(v).map_err(|_| {
        format!(
            "{} is not a tool choice (one of: unset, auto, none, required, named)",
            jr2_probe::sanitize::escape_truncate(&v.to_string(), 100)
        )
        .into()
    })
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// (name, required, check) per field of an object of the plan.
const TOP: &[(&str, bool, Check)] = &[
    ("schema", true, is::<String>),
    ("namespace", true, is::<String>),
    ("instance", true, is::<String>),
    ("probeImage", true, is::<String>),
    ("deadlineSeconds", false, is::<u64>),
    ("timeoutSeconds", false, is::<u64>),
    ("placements", true, is::<Vec<Value>>),
    ("models", true, is::<Vec<Value>>),
    ("networkPolicyCheck", false, is::<Value>),
];

const PLACEMENT: &[(&str, bool, Check)] = &[
    ("name", true, is::<String>),
    ("podSpec", true, pod_spec),
    ("harnessContainer", false, is::<String>),
    ("custodianContainer", false, is::<String>),
];

const MODEL: &[(&str, bool, Check)] = &[
    ("model", true, is::<String>),
    ("placement", true, is::<String>),
    ("source", true, source),
    ("baseUrl", false, is::<String>),
    ("api", false, api_kind),
    ("keyEnv", false, is::<String>),
    ("keyHeld", true, is::<bool>),
    ("maxTokens", false, is::<u64>),
    ("contextWindow", false, is::<u64>),
    ("toolChoice", false, tool_choice),
];

const NETWORK_POLICY_CHECK: &[(&str, bool, Check)] = &[(
    "harnessPodLabels",
    true,
    is::<BTreeMap<String, BTreeMap<String, String>>>,
)];

fn check_object(at: &str, v: &Value, fields: &[(&str, bool, Check)]) -> Result<(), PlanError> {
    let Some(obj) = v.as_object() else {
        return Err(invalid(
            at,
            format!("must be an object, not {}", kind_of(v)),
        ));
    };
    for key in obj.keys() {
        if !fields.iter().any(|(name, _, _)| name == key) {
            return Err(invalid(
                format!("{at}.{key}"),
                format!(
                    "unknown field (the fields here: {})",
                    fields.iter().map(|f| f.0).collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    for (name, required, check) in fields {
        match obj.get(*name) {
            None if *required => return Err(invalid(format!("{at}.{name}"), "missing")),
            None => {}
            Some(value) => check(value).map_err(|w| match w.inner {
                Some(inner) => invalid(format!("{at}.{name}.{inner}"), w.message),
                None => invalid(format!("{at}.{name}"), w.message),
            })?,
        }
    }
    Ok(())
}

fn locate(value: &Value, error: &serde_json::Error) -> PlanError {
    let walk = || -> Result<(), PlanError> {
        check_object("plan", value, TOP)?;
        for (list, fields) in [("placements", PLACEMENT), ("models", MODEL)] {
            for (i, item) in value[list].as_array().into_iter().flatten().enumerate() {
                check_object(&format!("plan.{list}[{i}]"), item, fields)?;
            }
        }
        if let Some(check) = value.get("networkPolicyCheck") {
            check_object("plan.networkPolicyCheck", check, NETWORK_POLICY_CHECK)?;
        }
        Ok(())
    };
    match walk() {
        Err(e) => e,
        Ok(()) => invalid("plan", error.to_string()),
    }
}

/// A reader that keeps what was read through it.
struct Recorded<R> {
    inner: R,
    bytes: Vec<u8>,
}

impl<R: std::io::Read> std::io::Read for Recorded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// JSON read as [`Value`], except that a key given twice in one object is an error (serde_json keeps the last).
mod strict_json {
    use std::fmt;

    use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
    use serde_json::{Map, Value};

    /// Parses `text`; a repeated key is a data error: `key "namespace" given twice at line 4 column 15`.
    pub fn parse(text: &str) -> Result<Value, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Strict.deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// A [`Value`] whose objects never repeat a key.
    struct Strict;

    impl<'de> DeserializeSeed<'de> for Strict {
        type Value = Value;

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
            d.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Strict {
        type Value = Value;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON value")
        }

        fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
            Ok(Value::Bool(v))
        }

        fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
            Ok(Value::from(v))
        }

        fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
            Ok(Value::from(v))
        }

        fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
            Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
        }

        fn visit_str<E>(self, v: &str) -> Result<Value, E> {
            Ok(Value::String(v.to_owned()))
        }

        fn visit_string<E>(self, v: String) -> Result<Value, E> {
            Ok(Value::String(v))
        }

        fn visit_unit<E>(self) -> Result<Value, E> {
            Ok(Value::Null)
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element_seed(Strict)? {
                items.push(item);
            }
            Ok(Value::Array(items))
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
            let mut object = Map::new();
            while let Some(key) = map.next_key::<String>()? {
                if object.contains_key(&key) {
                    return Err(de::Error::custom(format_args!(
                        "key \"{}\" given twice",
                        jr2_probe::sanitize::escape_truncate(&key, 100)
                    )));
                }
                let value = map.next_value_seed(Strict)?;
                object.insert(key, value);
            }
            Ok(Value::Object(object))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jr2_probe::spec::RUN_SPEC_SCHEMA;

    fn example() -> Value {
        serde_json::from_str(include_str!("../examples/plan.json")).unwrap()
    }

    #[test]
    fn a_leading_plan_is_read_up_to_its_end_and_not_past_it() {
        use std::io::{BufRead, Cursor};
        let text = format!(
            "\u{feff}{}\ncancel\n",
            include_str!("../examples/plan.json").trim_end()
        );
        let mut input = Cursor::new(text.into_bytes());
        let plan = Plan::read_leading(&mut input).expect("the example, then a cancel line");
        assert_eq!(plan, Plan::from_value(example()).unwrap());
        let mut rest = String::new();
        while input.read_line(&mut rest).expect("a cursor") > 0 {}
        assert_eq!(rest, "\ncancel\n");
    }

    #[test]
    fn a_leading_plan_cut_short_or_too_long_is_refused_as_read_would() {
        let cut = r#"{"schema": "jr2.dev/provider-preflight-plan/v1", "namespace""#;
        let from_leading = Plan::read_leading(std::io::Cursor::new(cut)).unwrap_err();
        assert_eq!(
            from_leading.to_string(),
            Plan::parse(cut).unwrap_err().to_string()
        );
        assert!(
            matches!(from_leading, PlanError::Json(_)),
            "{from_leading:?}"
        );
        // A plan as long as the limit, of spaces before its value: refused without reading the rest.
        let long = " ".repeat(MAX_PLAN_BYTES as usize + 10) + "{}";
        let e = Plan::read_leading(std::io::Cursor::new(long)).unwrap_err();
        assert!(
            e.to_string().starts_with("--plan: - is larger than 1 MiB"),
            "{e}"
        );
        let e = Plan::read_leading(std::io::Cursor::new(b"{\"namespace\": \"\xff\"}".to_vec()))
            .unwrap_err();
        assert!(e.to_string().contains("not UTF-8"), "{e}");
    }

    #[test]
    fn the_example_parses_and_round_trips() {
        let plan = Plan::from_value(example()).expect("the example is valid");
        let again = Plan::from_value(serde_json::to_value(&plan).unwrap()).unwrap();
        assert_eq!(plan, again);
        assert_eq!(plan.deadline_seconds, 300);
        assert_eq!(plan.timeout_seconds, 120);
    }

    /// Issue 25, item 8: a key pasted as a model's `keyEnv` is refused and not repeated, though it is a valid name.
    #[test]
    fn a_key_shaped_key_env_is_refused_unrepeated() {
        let mut v = example();
        v["models"][0]["keyEnv"] = serde_json::json!("AIzaSyD3kq8PW4242abcdefghijklmnopqrstu");
        let e = Plan::from_value(v).unwrap_err();
        assert_eq!(e.field(), Some("plan.models[0].keyEnv"), "{e}");
        assert!(!e.to_string().contains("PW4242"), "{e}");
    }

    #[test]
    fn defaults_apply() {
        let mut v = example();
        let o = v.as_object_mut().unwrap();
        o.remove("deadlineSeconds");
        o.remove("timeoutSeconds");
        o["placements"][1]
            .as_object_mut()
            .unwrap()
            .remove("harnessContainer");
        let plan = Plan::from_value(v).unwrap();
        assert_eq!(plan.deadline_seconds, DEFAULT_DEADLINE_SECONDS);
        assert_eq!(plan.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
        assert_eq!(plan.placements[1].harness_container, "harness");
    }

    #[test]
    fn run_spec_takes_the_placements_models_in_plan_order() {
        let plan = Plan::from_value(example()).unwrap();
        let spec = plan.run_spec_for("instance-harness");
        assert_eq!(spec.schema, RUN_SPEC_SCHEMA);
        assert_eq!(spec.timeout_seconds, 120.0);
        assert_eq!(spec.max_tries, 4);
        assert_eq!(spec.concurrency, 32);
        assert_eq!(
            spec.concurrency_per_host, None,
            "the probe's default, left out"
        );
        let names: Vec<_> = spec.models.iter().map(|m| m.model.as_str()).collect();
        assert_eq!(names, ["vllm/Qwen/Qwen3-32B", "google/gemini-2.5-flash"]);
        assert!(spec.models.iter().all(|m| m.via_custodian));
        assert!(plan.run_spec_for("nowhere").models.is_empty());
    }

    #[test]
    fn via_custodian_follows_the_placement() {
        let mut v = example();
        v["placements"][0]
            .as_object_mut()
            .unwrap()
            .remove("custodianContainer");
        let plan = Plan::from_value(v).unwrap();
        assert!(!plan.run_spec_for("sandbox").models[0].via_custodian);
        assert!(plan.run_spec_for("instance-harness").models[0].via_custodian);
    }

    #[test]
    fn env_names_and_labels() {
        assert!(is_env_name("JR2_PROVIDER_API_KEY"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
        assert!(!is_env_name(""));
        assert!(dns_label("f", "a-1").is_ok());
        assert!(dns_label("f", "A").is_err());
        assert!(dns_label("f", "-a").is_err());
        assert!(dns_label("f", &"a".repeat(64)).is_err());
    }

    #[test]
    fn errors_name_their_field() {
        let e = Plan::parse("[1]").unwrap_err();
        assert_eq!(e.to_string(), "plan: must be a JSON object");
        let e = Plan::parse("{").unwrap_err();
        assert!(matches!(e, PlanError::Json(_)), "{e}");
        let mut v = example();
        v["models"][1]["api"] = Value::from("openai-chat");
        let e = Plan::from_value(v).unwrap_err();
        assert_eq!(e.field(), Some("plan.models[1].api"));
    }
}
