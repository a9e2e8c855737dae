//! The contract's start failures (section 5, "Check pod failures") and how a waiting container's reason becomes one:
//! an image that does not pull, a Secret or key that `env`/`envFrom` names and the namespace lacks, a Custodian
//! volume that does not mount, a refused held value, an OOM kill. [`StartFailure::line`] words each, cleaned.

use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};

use jr2_probe::contract::outcome::PodCode;
use jr2_probe::contract::render;
use jr2_probe::sanitize::Redactor;

use super::containers::{container_spec, waiting};
use super::kubelet::{missing_key, missing_secret, pull_error};

/// Image-pull waiting reasons (`pkg/kubelet/images/types.go`).
pub(super) const IMAGE_REASONS: &[&str] = &[
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "ErrImageNeverPull",
    "RegistryUnavailable",
    "SignatureValidationFailed",
    "ImageInspectError",
];

/// Image-pull reasons that may clear by themselves (a registry that hiccups): fatal only after a grace window.
pub(super) const TRANSIENT_IMAGE_REASONS: &[&str] =
    &["ErrImagePull", "ImagePullBackOff", "RegistryUnavailable"];

/// Waiting reasons that mean the container will not start as it is.
pub(super) const FATAL_WAITING_REASONS: &[&str] = &[
    "CreateContainerError",
    "RunContainerError",
    "PreCreateHookError",
    "PreStartHookError",
    "PostStartHookError",
    "StartError",
];

/// The contract's start failures, each with what its line names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartFailure {
    /// A node cannot pull an image.
    Image {
        /// The container whose image it is.
        container: String,
        /// The image.
        image: String,
        /// The waiting reason (`ImagePullBackOff`...).
        reason: String,
        /// The pull error, without the kubelet's `Failed to pull image "<image>": ` prefix.
        message: String,
    },
    /// `envFrom` names a Secret the namespace does not hold.
    EnvFromSecret {
        /// The container.
        container: String,
        /// The Secret.
        name: String,
    },
    /// An `env` `valueFrom.secretKeyRef` names a key (or a Secret) that does not exist.
    EnvKey {
        /// The container.
        container: String,
        /// The key.
        key: String,
        /// The Secret.
        name: String,
    },
    /// A Secret the Custodian's volume projects is missing, or lacks a key: only a `FailedMount` Event shows it.
    CustodianVolume {
        /// The volume.
        volume: String,
        /// The Secret.
        name: String,
        /// The Event's message.
        message: String,
    },
    /// The Custodian refused a held value at start (`jr2.custodian refuse secret=<NAME> reason=<why>`).
    CustodianRefused {
        /// The held secret's name.
        name: String,
        /// Why (`missing-value`, `empty-value`, `value-not-printable-ascii`).
        reason: String,
    },
    /// A container was OOM-killed.
    OutOfMemory {
        /// The container.
        container: String,
        /// Its memory limit, as the spec writes it (`64Mi`), or `none`.
        limit: String,
    },
    /// Beyond the contract's list: another reason the containers cannot start (a volume of the probe that does not
    /// mount, `CreateContainerError`, a crashing Custodian without a refusal line...).
    Other {
        /// The container, or empty for the pod.
        container: String,
        /// The reason.
        reason: String,
        /// The message, raw.
        message: String,
    },
}

impl StartFailure {
    /// The contract's `error:` line, with every part that came from the cluster cleaned.
    pub fn line(&self, redactor: &Redactor) -> String {
        let c = |s: &str| redactor.clean(s);
        match self {
            StartFailure::Image { image, message, .. } => {
                render::pod_cannot_start_image(&c(image), &c(message))
            }
            StartFailure::EnvFromSecret { name, .. } => render::pod_cannot_start_env_from(&c(name)),
            StartFailure::EnvKey { key, name, .. } => {
                render::pod_cannot_start_env_key(&c(key), &c(name))
            }
            StartFailure::CustodianVolume { name, message, .. } => {
                render::pod_cannot_start_custodian_volume(&c(name), &c(message))
            }
            StartFailure::CustodianRefused { name, reason } => {
                render::pod_custodian_refused(&c(name), &c(reason))
            }
            StartFailure::OutOfMemory { container, limit } => {
                render::pod_out_of_memory(&c(container), &c(limit))
            }
            StartFailure::Other {
                reason, message, ..
            } => render::pod_cannot_start_other(&c(reason), &c(message)),
        }
    }

    /// The stable code of this cause.
    pub fn code(&self) -> PodCode {
        match self {
            StartFailure::Image { .. } => PodCode::ImagePull,
            StartFailure::EnvFromSecret { .. } => PodCode::SecretMissing,
            StartFailure::EnvKey { .. } => PodCode::SecretKeyMissing,
            StartFailure::CustodianVolume { .. } => PodCode::CustodianVolume,
            StartFailure::CustodianRefused { .. } => PodCode::CustodianRefused,
            StartFailure::OutOfMemory { .. } => PodCode::OutOfMemory,
            StartFailure::Other { .. } => PodCode::CannotStart,
        }
    }

    /// A failure that can clear by itself (an image pull that may succeed on the kubelet's next try): the driver
    /// shows it as pending for a grace window before it calls it fatal.
    pub fn is_transient(&self) -> bool {
        matches!(self, StartFailure::Image { reason, .. } if TRANSIENT_IMAGE_REASONS.contains(&reason.as_str()))
    }

    /// A Secret or key that is missing (`envFrom`, an `env` key, the Custodian's volume): a secrets operator may
    /// create it moments after the pod, and the kubelet then starts the pod, as it would a Harness pod; the driver
    /// waits a short grace before it calls it fatal (issue 40, item 15).
    pub fn waits_for_a_secret(&self) -> bool {
        matches!(
            self,
            StartFailure::EnvFromSecret { .. }
                | StartFailure::EnvKey { .. }
                | StartFailure::CustodianVolume { .. }
        )
    }

    /// The reason and message of the pending line while a failure is within its grace window (`grace`: its length,
    /// as the lines write seconds).
    pub fn as_pending(&self, grace: &str) -> (String, String) {
        match self {
            StartFailure::Image {
                reason,
                image,
                message,
                ..
            } => (reason.clone(), format!("{image}: {message}")),
            StartFailure::EnvFromSecret { name, .. } => (
                "CreateContainerConfigError".to_owned(),
                render::secret_wait(&format!("Secret \"{name}\""), grace),
            ),
            StartFailure::EnvKey { key, name, .. } => (
                "CreateContainerConfigError".to_owned(),
                render::secret_wait(&format!("key \"{key}\" of Secret \"{name}\""), grace),
            ),
            StartFailure::CustodianVolume { name, .. } => (
                "FailedMount".to_owned(),
                render::secret_wait(&format!("Secret \"{name}\" (or its key)"), grace),
            ),
            other => ("CannotStart".to_owned(), other.line(&Redactor::default())),
        }
    }

    /// The reason a stopped line gives when this failure struck after the check had begun (an OOM mid-run).
    pub fn stop_reason(&self) -> String {
        match self {
            StartFailure::OutOfMemory { container, limit } => {
                format!("{container} ran out of memory, limit {limit}")
            }
            StartFailure::CustodianRefused { name, reason } => {
                format!("the Custodian refused the held value {name}: {reason}")
            }
            StartFailure::Other {
                reason, message, ..
            } => format!("{reason}: {message}"),
            other => format!("{other:?}"),
        }
    }
}

/// The Secret behind a volume: the one the message names, else the one whose items name the missing key, else the
/// first Secret the volume projects.
pub(super) fn volume_secret(pod: &Pod, volume: &str, message: &str) -> String {
    if let Some(name) = missing_secret(message) {
        return name.to_owned();
    }
    let key = message
        .split("non-existent secret key: ")
        .nth(1)
        .and_then(|k| k.split_whitespace().next());
    let Some(v) = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_ref())
        .and_then(|vs| vs.iter().find(|v| v.name == volume))
    else {
        return volume.to_owned();
    };
    if let Some(name) = v.secret.as_ref().and_then(|s| s.secret_name.clone()) {
        return name;
    }
    let sources: Vec<_> = v
        .projected
        .as_ref()
        .and_then(|p| p.sources.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|s| s.secret.as_ref())
        .collect();
    let has_key = |s: &k8s_openapi::api::core::v1::SecretProjection| {
        key.is_some_and(|k| s.items.iter().flatten().any(|i| i.key == k))
    };
    sources
        .iter()
        .find(|s| has_key(s))
        .or(sources.first())
        .map_or_else(|| volume.to_owned(), |s| s.name.clone())
}

/// `CreateContainerConfigError`: which Secret or key, and whether `envFrom` or `env` names it.
pub(super) fn config_error(pod: &Pod, container: &str, message: &str) -> StartFailure {
    let spec = container_spec(pod, container);
    if let Some((key, name)) = missing_key(message) {
        return StartFailure::EnvKey {
            container: container.to_owned(),
            key: key.to_owned(),
            name: name.to_owned(),
        };
    }
    if let Some(name) = missing_secret(message) {
        let in_env_from = spec.is_some_and(|c| {
            c.env_from
                .iter()
                .flatten()
                .any(|f| f.secret_ref.as_ref().is_some_and(|r| r.name == name))
        });
        let env_key = spec.and_then(|c| {
            c.env.iter().flatten().find_map(|e| {
                let r = e.value_from.as_ref()?.secret_key_ref.as_ref()?;
                (r.name == name).then(|| r.key.clone())
            })
        });
        return match (in_env_from, env_key) {
            (false, Some(key)) => StartFailure::EnvKey {
                container: container.to_owned(),
                key,
                name: name.to_owned(),
            },
            _ => StartFailure::EnvFromSecret {
                container: container.to_owned(),
                name: name.to_owned(),
            },
        };
    }
    StartFailure::Other {
        container: container.to_owned(),
        reason: "CreateContainerConfigError".to_owned(),
        message: message.to_owned(),
    }
}

/// A container's waiting reason as a start failure, when it is one.
pub(super) fn waiting_failure(
    pod: &Pod,
    s: &ContainerStatus,
    events: &[&Event],
) -> Option<StartFailure> {
    let (reason, message) = waiting(s)?;
    if reason == "CreateContainerConfigError" {
        return Some(config_error(pod, &s.name, message));
    }
    if IMAGE_REASONS.contains(&reason) {
        let image = container_spec(pod, &s.name)
            .and_then(|c| c.image.clone())
            .unwrap_or_else(|| s.image.clone());
        let message = pull_error(message, &image, events);
        return Some(StartFailure::Image {
            container: s.name.clone(),
            image,
            reason: reason.to_owned(),
            message,
        });
    }
    FATAL_WAITING_REASONS
        .contains(&reason)
        .then(|| StartFailure::Other {
            container: s.name.clone(),
            reason: reason.to_owned(),
            message: message.to_owned(),
        })
}
