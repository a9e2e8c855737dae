//! The field a plan error is about, as data: `plan.models[2].placement`, a field under a placement's pod spec, or the
//! flag that stands for it (`--namespace`).
//!
//! Validation and the reader build a [`Field`]; each front end words it with a `match` (`check` names its flags,
//! `--from-deployment` the Deployment's fields) and never takes its text apart. Its `Display` is the plan's own
//! naming, the one `run` prints.

use std::fmt;

/// Where in a plan (or on the command line) an error is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// A flag that stands for a field of the plan or makes one (`--namespace`, `check`'s `--base-url`).
    Flag(&'static str),
    /// The plan as a whole: `plan`.
    Plan,
    /// A field of the plan: `plan.namespace`, `plan.models` (the list).
    Top(TopField),
    /// A placement, `plan.placements[1]`, or one of its fields but the pod spec.
    Placement(usize, Option<PlacementField>),
    /// A placement's pod spec, `plan.placements[1].podSpec`, or a field under it.
    PodSpec(usize, SpecPath),
    /// A model, `plan.models[2]`, or one of its fields.
    Model(usize, Option<ModelField>),
    /// A field of `plan.networkPolicyCheck`.
    NetworkPolicy(NetworkPolicyField),
    /// A key the object at `parent` does not have: `plan.deadline`.
    Unknown {
        /// The object.
        parent: Box<Field>,
        /// The key, as the plan gives it.
        key: String,
    },
}

impl Field {
    /// `plan.<field>`.
    pub fn top(field: TopField) -> Field {
        Field::Top(field)
    }

    /// `plan.placements[<index>].<field>`.
    pub fn placement(index: usize, field: PlacementField) -> Field {
        Field::Placement(index, Some(field))
    }

    /// `plan.models[<index>].<field>`.
    pub fn model(index: usize, field: ModelField) -> Field {
        Field::Model(index, Some(field))
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Flag(flag) => f.write_str(flag),
            Field::Plan => f.write_str("plan"),
            Field::Top(top) => write!(f, "plan.{}", top.key()),
            Field::Placement(i, None) => write!(f, "plan.placements[{i}]"),
            Field::Placement(i, Some(field)) => write!(f, "plan.placements[{i}].{}", field.key()),
            Field::PodSpec(i, path) => write!(f, "plan.placements[{i}].podSpec{path}"),
            Field::Model(i, None) => write!(f, "plan.models[{i}]"),
            Field::Model(i, Some(field)) => write!(f, "plan.models[{i}].{}", field.key()),
            Field::NetworkPolicy(NetworkPolicyField::HarnessPodLabels) => {
                f.write_str("plan.networkPolicyCheck.harnessPodLabels")
            }
            Field::NetworkPolicy(NetworkPolicyField::Labels(placement)) => {
                write!(f, "plan.networkPolicyCheck.harnessPodLabels.{placement}")
            }
            Field::Unknown { parent, key } => write!(f, "{parent}.{key}"),
        }
    }
}

/// Declares the keys of one object of the plan: the enum, its keys in the order of the type's fields, and the
/// lookup by key. The tests of `read.rs` hold each list to the fields serde knows of the type.
macro_rules! keys {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $key:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every key, in the order of the type's fields.
            pub const ALL: &[$name] = &[$($name::$variant,)*];

            /// The key, as the plan writes it.
            pub fn key(self) -> &'static str {
                match self {
                    $($name::$variant => $key,)*
                }
            }

            /// The key of that name.
            pub fn of(key: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|k| k.key() == key)
            }
        }
    };
}

keys! {
    /// A field of the plan ([`super::Plan`]).
    TopField {
        /// `schema`.
        Schema = "schema",
        /// `namespace`.
        Namespace = "namespace",
        /// `instance`.
        Instance = "instance",
        /// `probeImage`.
        ProbeImage = "probeImage",
        /// `deadlineSeconds`.
        DeadlineSeconds = "deadlineSeconds",
        /// `timeoutSeconds`.
        TimeoutSeconds = "timeoutSeconds",
        /// `waitingNoteSeconds`.
        WaitingNoteSeconds = "waitingNoteSeconds",
        /// `placements`, the list.
        Placements = "placements",
        /// `models`, the list.
        Models = "models",
        /// `networkPolicyCheck`, the object.
        NetworkPolicyCheck = "networkPolicyCheck",
    }
}

keys! {
    /// A field of a placement ([`super::Placement`]) but its pod spec ([`Field::PodSpec`]).
    PlacementField {
        /// `name`.
        Name = "name",
        /// `harnessContainer`.
        HarnessContainer = "harnessContainer",
        /// `custodianContainer`.
        CustodianContainer = "custodianContainer",
    }
}

keys! {
    /// A field of a model ([`super::PlanModel`]).
    ModelField {
        /// `model`.
        Model = "model",
        /// `placement`.
        Placement = "placement",
        /// `source`.
        Source = "source",
        /// `baseUrl`.
        BaseUrl = "baseUrl",
        /// `api`.
        Api = "api",
        /// `keyEnv`.
        KeyEnv = "keyEnv",
        /// `keyHeld`.
        KeyHeld = "keyHeld",
        /// `maxTokens`.
        MaxTokens = "maxTokens",
        /// `contextWindow`.
        ContextWindow = "contextWindow",
        /// `toolChoice`.
        ToolChoice = "toolChoice",
    }
}

impl From<jr2_probe::spec::SpecInput> for ModelField {
    fn from(input: jr2_probe::spec::SpecInput) -> Self {
        match input {
            jr2_probe::spec::SpecInput::Model => ModelField::Model,
            jr2_probe::spec::SpecInput::BaseUrl => ModelField::BaseUrl,
        }
    }
}

/// A field of `plan.networkPolicyCheck`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetworkPolicyField {
    /// `harnessPodLabels`, the map.
    HarnessPodLabels,
    /// `harnessPodLabels.<placement>`: the labels of one placement's Harness pods.
    Labels(String),
}

/// A field under a pod spec, as the API server names it: `.containers[0].env[1].value` (each key written with its
/// leading dot, so the path follows the field it is under: `podSpec`, or a Deployment's `spec.template.spec`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpecPath(Vec<Step>);

/// One step of a [`SpecPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A field of an object.
    Key(String),
    /// An item of a list.
    Index(usize),
}

impl SpecPath {
    /// This path, then the field `key`.
    pub fn key(&self, key: impl Into<String>) -> SpecPath {
        self.then(Step::Key(key.into()))
    }

    /// This path, then the item `index`.
    pub fn index(&self, index: usize) -> SpecPath {
        self.then(Step::Index(index))
    }

    /// This path, then `step`.
    pub fn then(&self, step: Step) -> SpecPath {
        let mut steps = self.0.clone();
        steps.push(step);
        SpecPath(steps)
    }

    /// The steps, from the pod spec down.
    pub fn steps(&self) -> &[Step] {
        &self.0
    }
}

impl fmt::Display for SpecPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for step in &self.0 {
            match step {
                Step::Key(key) => write!(f, ".{key}")?,
                Step::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_written_as_the_plan_names_them() {
        let spec = SpecPath::default().key("containers").index(0).key("env");
        for (field, text) in [
            (Field::Plan, "plan"),
            (Field::Flag("--namespace"), "--namespace"),
            (Field::top(TopField::ProbeImage), "plan.probeImage"),
            (Field::Placement(1, None), "plan.placements[1]"),
            (
                Field::placement(0, PlacementField::HarnessContainer),
                "plan.placements[0].harnessContainer",
            ),
            (
                Field::PodSpec(0, SpecPath::default()),
                "plan.placements[0].podSpec",
            ),
            (
                Field::PodSpec(2, spec),
                "plan.placements[2].podSpec.containers[0].env",
            ),
            (
                Field::model(3, ModelField::BaseUrl),
                "plan.models[3].baseUrl",
            ),
            (
                Field::NetworkPolicy(NetworkPolicyField::Labels("gpu".to_owned())),
                "plan.networkPolicyCheck.harnessPodLabels.gpu",
            ),
            (
                Field::Unknown {
                    parent: Box::new(Field::Model(0, None)),
                    key: "keyHel".to_owned(),
                },
                "plan.models[0].keyHel",
            ),
        ] {
            assert_eq!(field.to_string(), text);
        }
        assert_eq!(ModelField::of("keyEnv"), Some(ModelField::KeyEnv));
        assert_eq!(TopField::of("deadline"), None);
    }
}
