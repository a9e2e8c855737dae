//! What one model's check ended with: the contract's outcomes (section 4), their level, stable code and next action.
//!
//! The outcome is the coarse class the lines are chosen by; the [`Code`] refines it for machines and for the
//! troubleshooting page, which asks every error to carry a stable code and the next action.

use serde::{Deserialize, Serialize};

use crate::contract::api_kind::ApiKind;

/// The contract's outcomes, in the order they are decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A tool call came back.
    Ok,
    /// The model answered in text, not with a tool call.
    Text,
    /// 429, 529 or an overload signal on every try, or on every try but the last, which got no answer.
    Busy,
    /// 503 on every try.
    Unavailable,
    /// The model stopped for length before any tool call.
    Length,
    /// 401 or 403 from the endpoint (or Gemini's 400 `API_KEY_INVALID`).
    KeyRefused,
    /// The Custodian answered instead of the provider.
    CustodianRefused,
    /// No answer within the model's deadline.
    Timeout,
    /// DNS failure, connection refused, no route, connect timeout, a proxy that refused the tunnel.
    Unreachable,
    /// Certificate not trusted, name mismatch, handshake failure.
    Tls,
    /// Any other HTTP status, or an error the provider reported inside a 200 stream.
    Http,
    /// A 200 whose body or stream cannot be read as the API's format.
    Protocol,
    /// The check stopped, or its deadline passed, before this model was reached.
    NotChecked,
    /// The preflight cannot send this model's request yet (an API kind or credential chain it does not speak).
    Unsupported,
    /// The preflight was skipped (`--skip-provider-preflight`): nothing was sent, and the skip's one warning line
    /// names the model.
    Skipped,
    /// The preflight cannot check this model, by design (credentials only a Turn holds: Vertex's Application
    /// Default Credentials, openai-codex's OAuth login): a warning, and the run goes on (issue 27, item 3).
    NotCheckable,
}

/// How an outcome weighs on the converge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The model can call tools.
    Pass,
    /// Printed, but the converge goes on.
    Warning,
    /// The converge stops (exit 1).
    Error,
}

impl Outcome {
    /// Every outcome, in the contract's order.
    pub const ALL: [Outcome; 16] = [
        Outcome::Ok,
        Outcome::Text,
        Outcome::Busy,
        Outcome::Unavailable,
        Outcome::Length,
        Outcome::KeyRefused,
        Outcome::CustodianRefused,
        Outcome::Timeout,
        Outcome::Unreachable,
        Outcome::Tls,
        Outcome::Http,
        Outcome::Protocol,
        Outcome::NotChecked,
        Outcome::Unsupported,
        Outcome::Skipped,
        Outcome::NotCheckable,
    ];

    /// The level of this outcome for a model of `api`. Busy is a warning (not confirmed either way) except for
    /// Gemini and Vertex, whose tries are not seen.
    pub fn level(self, api: ApiKind) -> Level {
        match self {
            Outcome::Ok => Level::Pass,
            Outcome::Text | Outcome::Skipped | Outcome::NotCheckable => Level::Warning,
            Outcome::Busy if api.is_google() => Level::Error,
            Outcome::Busy => Level::Warning,
            _ => Level::Error,
        }
    }

    /// The outcome's name in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Text => "text",
            Outcome::Busy => "busy",
            Outcome::Unavailable => "unavailable",
            Outcome::Length => "length",
            Outcome::KeyRefused => "key_refused",
            Outcome::CustodianRefused => "custodian_refused",
            Outcome::Timeout => "timeout",
            Outcome::Unreachable => "unreachable",
            Outcome::Tls => "tls",
            Outcome::Http => "http",
            Outcome::Protocol => "protocol",
            Outcome::NotChecked => "not_checked",
            Outcome::Unsupported => "unsupported",
            Outcome::Skipped => "skipped",
            Outcome::NotCheckable => "not_checkable",
        }
    }

    /// The code an outcome has when nothing more precise is known.
    pub fn default_code(self) -> Code {
        match self {
            Outcome::Ok => Code::Ok,
            Outcome::Text => Code::TextAnswer,
            Outcome::Busy => Code::Busy,
            Outcome::Unavailable => Code::Unavailable,
            Outcome::Length => Code::Length,
            Outcome::KeyRefused => Code::KeyRefused,
            Outcome::CustodianRefused => Code::CustodianRefused,
            Outcome::Timeout => Code::Timeout,
            Outcome::Unreachable => Code::Unreachable,
            Outcome::Tls => Code::Tls,
            Outcome::Http => Code::HttpError,
            Outcome::Protocol => Code::ProtocolError,
            Outcome::NotChecked => Code::NotChecked,
            Outcome::Unsupported => Code::Unsupported,
            Outcome::Skipped => Code::Skipped,
            Outcome::NotCheckable => Code::NotCheckableAdc,
        }
    }
}

/// Stable codes, one per documented cause. Never renamed: `jr2 up` and support tooling match on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[allow(missing_docs)] // each variant is documented by its `next_action`
pub enum Code {
    #[serde(rename = "PROVIDER_OK")]
    Ok,
    #[serde(rename = "PROVIDER_TEXT_ANSWER")]
    TextAnswer,
    #[serde(rename = "PROVIDER_BUSY")]
    Busy,
    #[serde(rename = "PROVIDER_UNAVAILABLE")]
    Unavailable,
    #[serde(rename = "PROVIDER_LENGTH")]
    Length,
    #[serde(rename = "PROVIDER_KEY_REFUSED")]
    KeyRefused,
    #[serde(rename = "PROVIDER_CUSTODIAN_REFUSED")]
    CustodianRefused,
    #[serde(rename = "PROVIDER_TIMEOUT")]
    Timeout,
    #[serde(rename = "PROVIDER_UNREACHABLE")]
    Unreachable,
    #[serde(rename = "PROVIDER_TLS")]
    Tls,
    #[serde(rename = "PROVIDER_HTTP_ERROR")]
    HttpError,
    #[serde(rename = "PROVIDER_MODEL_NOT_FOUND")]
    ModelNotFound,
    #[serde(rename = "PROVIDER_TOOLS_NOT_ENABLED")]
    ToolsNotEnabled,
    #[serde(rename = "PROVIDER_QUOTA_EXHAUSTED")]
    QuotaExhausted,
    #[serde(rename = "PROVIDER_STREAM_ERROR")]
    StreamError,
    #[serde(rename = "PROVIDER_CROSS_ORIGIN_REDIRECT")]
    CrossOriginRedirect,
    #[serde(rename = "PROVIDER_PROTOCOL_ERROR")]
    ProtocolError,
    #[serde(rename = "PROVIDER_NOT_CHECKED")]
    NotChecked,
    #[serde(rename = "PROVIDER_UNSUPPORTED")]
    Unsupported,
    #[serde(rename = "PROVIDER_CONTEXT_TOO_SMALL")]
    ContextTooSmall,
    #[serde(rename = "PROVIDER_SKIPPED")]
    Skipped,
    #[serde(rename = "PROVIDER_NOT_CHECKABLE_ADC")]
    NotCheckableAdc,
    #[serde(rename = "PROVIDER_NOT_CHECKABLE_OAUTH")]
    NotCheckableOauth,
}

impl Code {
    /// Every code, in documentation order.
    pub const ALL: [Code; 23] = [
        Code::Ok,
        Code::TextAnswer,
        Code::Busy,
        Code::Unavailable,
        Code::Length,
        Code::KeyRefused,
        Code::CustodianRefused,
        Code::Timeout,
        Code::Unreachable,
        Code::Tls,
        Code::HttpError,
        Code::ModelNotFound,
        Code::ToolsNotEnabled,
        Code::QuotaExhausted,
        Code::StreamError,
        Code::CrossOriginRedirect,
        Code::ProtocolError,
        Code::NotChecked,
        Code::Unsupported,
        Code::ContextTooSmall,
        Code::Skipped,
        Code::NotCheckableAdc,
        Code::NotCheckableOauth,
    ];

    /// The code as it appears in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Ok => "PROVIDER_OK",
            Code::TextAnswer => "PROVIDER_TEXT_ANSWER",
            Code::Busy => "PROVIDER_BUSY",
            Code::Unavailable => "PROVIDER_UNAVAILABLE",
            Code::Length => "PROVIDER_LENGTH",
            Code::KeyRefused => "PROVIDER_KEY_REFUSED",
            Code::CustodianRefused => "PROVIDER_CUSTODIAN_REFUSED",
            Code::Timeout => "PROVIDER_TIMEOUT",
            Code::Unreachable => "PROVIDER_UNREACHABLE",
            Code::Tls => "PROVIDER_TLS",
            Code::HttpError => "PROVIDER_HTTP_ERROR",
            Code::ModelNotFound => "PROVIDER_MODEL_NOT_FOUND",
            Code::ToolsNotEnabled => "PROVIDER_TOOLS_NOT_ENABLED",
            Code::QuotaExhausted => "PROVIDER_QUOTA_EXHAUSTED",
            Code::StreamError => "PROVIDER_STREAM_ERROR",
            Code::CrossOriginRedirect => "PROVIDER_CROSS_ORIGIN_REDIRECT",
            Code::ProtocolError => "PROVIDER_PROTOCOL_ERROR",
            Code::NotChecked => "PROVIDER_NOT_CHECKED",
            Code::Unsupported => "PROVIDER_UNSUPPORTED",
            Code::ContextTooSmall => "PROVIDER_CONTEXT_TOO_SMALL",
            Code::Skipped => "PROVIDER_SKIPPED",
            Code::NotCheckableAdc => "PROVIDER_NOT_CHECKABLE_ADC",
            Code::NotCheckableOauth => "PROVIDER_NOT_CHECKABLE_OAUTH",
        }
    }

    /// The one next action the troubleshooting page asks every result to carry.
    pub fn next_action(self) -> &'static str {
        match self {
            Code::Ok => "none: the model called the tool",
            Code::TextAnswer => {
                "enable tool calls for this model on the endpoint (vLLM: --enable-auto-tool-choice and a \
                 --tool-call-parser; llama.cpp: --jinja), or choose a model that calls tools"
            }
            Code::Busy => {
                "none required: a Turn makes one try, so it can fail the same way; run jr2 up again later to confirm the model"
            }
            Code::Unavailable => {
                "wait until the server has loaded its model, or give the gateway a backend, then run jr2 up again"
            }
            Code::Length => {
                "raise maxTokens for this model, or turn thinking off: it ran out of tokens before the tool call"
            }
            Code::KeyRefused => {
                "check the held key: that it is set, current, and has access to this model"
            }
            Code::CustodianRefused => {
                "fix the held secret the Custodian named (its hosts, headers and value in jr2.config.ts)"
            }
            Code::Timeout => {
                "check that the model is loaded and answers, then run jr2 up again; for a model that loads for longer \
                 than the check waits, run jr2 up --skip-provider-preflight once you know it works"
            }
            Code::Unreachable => {
                "check the address, and that the pods have egress to it (NetworkPolicy, firewall, route, DNS)"
            }
            Code::Tls => {
                "put the CA that signs the endpoint's certificate in harness.caBundle, or fix the certificate"
            }
            Code::HttpError => {
                "read the provider's message in the error and fix the request's target"
            }
            Code::ModelNotFound => {
                "use the model id exactly as the endpoint serves it (vLLM: GET /v1/models)"
            }
            Code::ToolsNotEnabled => {
                "start vLLM with --enable-auto-tool-choice and a --tool-call-parser that matches the model"
            }
            Code::QuotaExhausted => {
                "add credit or raise the quota of the account that owns the key"
            }
            Code::StreamError => {
                "read the provider's message in the error; run jr2 up again if it was transient"
            }
            Code::CrossOriginRedirect => {
                "set the base URL to where the endpoint redirects (the error names the host), or fix its redirect: \
                 the probe sends the key to no other origin"
            }
            Code::ProtocolError => {
                "check that the base URL points at the API itself (not a web page or another service)"
            }
            Code::NotChecked => {
                "the check stopped before this model was reached: run jr2 up once more; if it stops the same way and \
                 you know the models work, run jr2 up --skip-provider-preflight"
            }
            Code::ContextTooSmall => {
                "serve the model with a context of at least the model's contextWindow (llama.cpp: -c; vLLM: \
                 --max-model-len), or set contextWindow in jr2.config.ts to what the server serves"
            }
            Code::Skipped => {
                "none required: the preflight was skipped (--skip-provider-preflight), so the first Turn is this \
                 model's first check; run jr2 up without that flag to check it"
            }
            Code::NotCheckableAdc => {
                "none required: a Turn authenticates to Vertex with the pod's Application Default Credentials, which \
                 the preflight does not mint, so the first Turn is this model's first check; to have it checked, give \
                 the Harness GOOGLE_CLOUD_API_KEY (Vertex express mode)"
            }
            Code::NotCheckableOauth => {
                "none required: a Turn of openai-codex uses the ChatGPT login file in the Harness, which a check pod \
                 does not hold, so the first Turn is this model's first check"
            }
            Code::Unsupported => {
                "check this model by hand (jr2-probe check), or run jr2 up --skip-provider-preflight, which skips the \
                 check of every model"
            }
        }
    }
}

/// Stable codes of the check pod's own failures, one per cause: the driver's verdict carries one per failed pod
/// (`pods[].code`), and the models that pod leaves unchecked take its next action. Never renamed, like [`Code`].
///
/// A cause that comes back the same way on the next run (a missing Secret, an image that does not pull, a probe that
/// refuses the run spec) says what to fix before `jr2 up` runs again, never just "run jr2 up again": the
/// troubleshooting page asks not to retry repeatedly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[allow(missing_docs)] // each variant is documented by its `next_action`
pub enum PodCode {
    #[serde(rename = "PROVIDER_POD_IMAGE_PULL")]
    ImagePull,
    #[serde(rename = "PROVIDER_POD_SECRET_MISSING")]
    SecretMissing,
    #[serde(rename = "PROVIDER_POD_SECRET_KEY_MISSING")]
    SecretKeyMissing,
    #[serde(rename = "PROVIDER_POD_CUSTODIAN_VOLUME")]
    CustodianVolume,
    #[serde(rename = "PROVIDER_POD_CUSTODIAN_REFUSED")]
    CustodianRefused,
    #[serde(rename = "PROVIDER_POD_OUT_OF_MEMORY")]
    OutOfMemory,
    #[serde(rename = "PROVIDER_POD_CANNOT_START")]
    CannotStart,
    #[serde(rename = "PROVIDER_POD_REFUSED")]
    ClusterRefused,
    #[serde(rename = "PROVIDER_POD_STOPPED")]
    Stopped,
    #[serde(rename = "PROVIDER_POD_PROBE_ERROR")]
    ProbeError,
    #[serde(rename = "PROVIDER_POD_NOT_STARTED")]
    NotStarted,
    #[serde(rename = "PROVIDER_CLUSTER_UNREACHABLE")]
    ClusterUnreachable,
    #[serde(rename = "PROVIDER_CLUSTER_AUTH")]
    ClusterAuth,
    #[serde(rename = "PROVIDER_INTERRUPTED")]
    Interrupted,
    #[serde(rename = "PROVIDER_PERMISSION_MISSING")]
    PermissionMissing,
    #[serde(rename = "PROVIDER_POD_SECURITY")]
    PodSecurity,
    #[serde(rename = "PROVIDER_POD_LEFT")]
    Left,
    #[serde(rename = "PROVIDER_POD_CREATE_TIMEOUT")]
    CreateTimeout,
    #[serde(rename = "PROVIDER_NAMESPACE_TERMINATING")]
    NamespaceTerminating,
    #[serde(rename = "PROVIDER_CLOCK_SKEW")]
    ClockSkew,
    #[serde(rename = "PROVIDER_POD_NODE_LOST")]
    NodeLost,
    #[serde(rename = "PROVIDER_POD_WOULD_PREEMPT")]
    WouldPreempt,
}

impl PodCode {
    /// Every pod code, in documentation order.
    pub const ALL: [PodCode; 22] = [
        PodCode::ImagePull,
        PodCode::SecretMissing,
        PodCode::SecretKeyMissing,
        PodCode::CustodianVolume,
        PodCode::CustodianRefused,
        PodCode::OutOfMemory,
        PodCode::CannotStart,
        PodCode::ClusterRefused,
        PodCode::Stopped,
        PodCode::ProbeError,
        PodCode::NotStarted,
        PodCode::ClusterUnreachable,
        PodCode::ClusterAuth,
        PodCode::Interrupted,
        PodCode::PermissionMissing,
        PodCode::PodSecurity,
        PodCode::Left,
        PodCode::CreateTimeout,
        PodCode::NamespaceTerminating,
        PodCode::ClockSkew,
        PodCode::NodeLost,
        PodCode::WouldPreempt,
    ];

    /// The code as it appears in the JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            PodCode::ImagePull => "PROVIDER_POD_IMAGE_PULL",
            PodCode::SecretMissing => "PROVIDER_POD_SECRET_MISSING",
            PodCode::SecretKeyMissing => "PROVIDER_POD_SECRET_KEY_MISSING",
            PodCode::CustodianVolume => "PROVIDER_POD_CUSTODIAN_VOLUME",
            PodCode::CustodianRefused => "PROVIDER_POD_CUSTODIAN_REFUSED",
            PodCode::OutOfMemory => "PROVIDER_POD_OUT_OF_MEMORY",
            PodCode::CannotStart => "PROVIDER_POD_CANNOT_START",
            PodCode::ClusterRefused => "PROVIDER_POD_REFUSED",
            PodCode::Stopped => "PROVIDER_POD_STOPPED",
            PodCode::ProbeError => "PROVIDER_POD_PROBE_ERROR",
            PodCode::NotStarted => "PROVIDER_POD_NOT_STARTED",
            PodCode::ClusterUnreachable => "PROVIDER_CLUSTER_UNREACHABLE",
            PodCode::ClusterAuth => "PROVIDER_CLUSTER_AUTH",
            PodCode::Interrupted => "PROVIDER_INTERRUPTED",
            PodCode::PermissionMissing => "PROVIDER_PERMISSION_MISSING",
            PodCode::PodSecurity => "PROVIDER_POD_SECURITY",
            PodCode::Left => "PROVIDER_POD_LEFT",
            PodCode::CreateTimeout => "PROVIDER_POD_CREATE_TIMEOUT",
            PodCode::NamespaceTerminating => "PROVIDER_NAMESPACE_TERMINATING",
            PodCode::ClockSkew => "PROVIDER_CLOCK_SKEW",
            PodCode::NodeLost => "PROVIDER_POD_NODE_LOST",
            PodCode::WouldPreempt => "PROVIDER_POD_WOULD_PREEMPT",
        }
    }

    /// What to do next, in `jr2 up`'s words (its flags, `jr2.config.ts` fields): the fix of the cause first, and
    /// "run jr2 up again" only after it, or once for a cause that can pass by itself.
    pub fn next_action(self) -> &'static str {
        match self {
            PodCode::ImagePull => {
                "make the image the error names pullable from the node (that the registry holds it: kitRegistry in \
                 jr2.config.ts for the Kit's images; that the Harness pods' imagePullSecrets let the node pull it), \
                 then run jr2 up again"
            }
            PodCode::SecretMissing => {
                "create the Secret that harness.envFrom names in the Instance's namespace, or remove it from \
                 harness.envFrom in jr2.config.ts, then run jr2 up again"
            }
            PodCode::SecretKeyMissing => {
                "add the key to the Secret that a harness.env valueFrom.secretKeyRef names, or fix that reference in \
                 jr2.config.ts, then run jr2 up again"
            }
            PodCode::CustodianVolume => {
                "create the Secret (or add the key) that a secrets valueFrom in jr2.config.ts names, in the \
                 Instance's namespace, then run jr2 up again"
            }
            PodCode::CustodianRefused => {
                "give the held value the Custodian named a value that is set, not empty and printable ASCII \
                 (secrets in jr2.config.ts, or the Secret it comes from), then run jr2 up again"
            }
            PodCode::OutOfMemory => {
                "a container of the check pod ran out of memory (the error names it and its limit), and a new run \
                 stops the same way: report the error; once you know the models work, run jr2 up \
                 --skip-provider-preflight"
            }
            PodCode::CannotStart => {
                "fix what the error names (the container and the cluster's reason) in the Instance's namespace, \
                 then run jr2 up again"
            }
            PodCode::ClusterRefused => {
                "read the API server's message in the error (a quota, Pod Security, an admission webhook) and make \
                 room for the check pod in the Instance's namespace, then run jr2 up again"
            }
            PodCode::Stopped => {
                "read why the check pod stopped in the error: an eviction, a preemption or a deletion can pass, so \
                 run jr2 up once more; if it stops the same way, fix that cause, or run jr2 up \
                 --skip-provider-preflight once you know the models work"
            }
            PodCode::ProbeError => {
                "the probe image refused this run (its own error is in the line; a probe image of another jr2 \
                 release does): give the Instance and the jr2 CLI one Kit version, so that jr2 up runs its own \
                 probe image, then run jr2 up again; a new run as it is fails the same way"
            }
            PodCode::NotStarted => {
                "read the last reason in the error and make room for the check pod (a node that fits \
                 sandbox.nodeSelector and sandbox.tolerations in jr2.config.ts, free memory and cpu), then run jr2 \
                 up again"
            }
            PodCode::ClusterUnreachable => {
                "check that the cluster runs and its API server answers (kubectl config current-context; jr2 up \
                 --context), then run jr2 up again"
            }
            PodCode::ClusterAuth => {
                "the kubeconfig's credentials could not be used (the error says how; what an exec credential plugin \
                 printed is not shown): log in again as the kubeconfig's user does (kubectl get pods runs the same \
                 plugin and shows what it says), then run jr2 up again"
            }
            PodCode::Interrupted => {
                "the run was interrupted before the check ended: run jr2 up again"
            }
            PodCode::PermissionMissing => {
                "the identity jr2 up runs as may not do what the check needs in the Instance's namespace (the error \
                 names the verb and resource): have the Role and RoleBinding that `jr2-preflight rbac -n <namespace> \
                 --user <you>` prints applied, then run jr2 up again"
            }
            PodCode::PodSecurity => {
                "the namespace's Pod Security level refuses the check pod (the error names the field, copied from \
                 the Harness spec's Custodian or pod): make that container of the Harness spec meet the level in \
                 jr2.config.ts (a Harness pod would be refused too), then run jr2 up again"
            }
            PodCode::Left => {
                "the cluster did not confirm the delete of the check pod (the error says why): delete it with the \
                 kubectl line in the error, then run jr2 up again"
            }
            PodCode::CreateTimeout => {
                "the API server did not finish the create of the check pod in time: its admission (a webhook) was \
                 slower than the create waits (the error says how long it waited); have the webhook's owner make it \
                 answer within its timeoutSeconds, then run jr2 up again (a Harness pod's create waits the same way)"
            }
            PodCode::NamespaceTerminating => {
                "the Instance's namespace is being deleted (or was deleted during the run): nothing can run in it; \
                 create the namespace again once its deletion is over (kubectl get namespace <namespace>), or point \
                 jr2 up at another, then run jr2 up again"
            }
            PodCode::ClockSkew => {
                "the clocks disagree (the error says which and by how much): sync the node's clock and the clock \
                 of the machine that runs jr2 up with the API server's (NTP), then run jr2 up again"
            }
            PodCode::NodeLost => {
                "the node the error names stopped answering the cluster, or never started the check pod (its \
                 kubelet, its container runtime or the machine): look at it (kubectl describe node <node>), bring \
                 it back or cordon it (kubectl cordon <node>) so that new pods go to another node, then run jr2 up \
                 again"
            }
            PodCode::WouldPreempt => {
                "a Harness pod of this placement would evict pods of lower priority to find room, which the check \
                 pod never does, so its models were not checked: free room on a node the placement fits (or add \
                 one) and run jr2 up again, or accept that they are not checked"
            }
        }
    }
}

impl std::fmt::Display for PodCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_serialize_as_their_names_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for code in Code::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
            assert!(seen.insert(code.as_str()), "duplicate {code}");
            assert!(!code.next_action().is_empty());
        }
    }

    /// Pod codes are unique, not the probe's, and their next actions speak `jr2 up`'s words: none names a flag of
    /// the driver that the user does not run, and a cause that comes back the same way does not just say "again".
    #[test]
    fn every_code_s_next_action_is_held() {
        // The `nextAction` texts reach `jr2 up` in the JSON: each one, by its code, is held here.
        let mut out = String::new();
        for code in Code::ALL {
            out.push_str(&format!("{}\n  {}\n", code.as_str(), code.next_action()));
        }
        for code in PodCode::ALL {
            out.push_str(&format!("{}\n  {}\n", code.as_str(), code.next_action()));
        }
        insta::assert_snapshot!("next_actions", out);
    }

    #[test]
    fn pod_codes_are_unique_and_say_what_to_fix() {
        let mut seen: std::collections::HashSet<&str> =
            Code::ALL.iter().map(|c| c.as_str()).collect();
        for code in PodCode::ALL {
            let json = serde_json::to_value(code).unwrap();
            assert_eq!(json, serde_json::Value::String(code.as_str().to_owned()));
            assert!(seen.insert(code.as_str()), "duplicate {code}");
        }
        let actions = PodCode::ALL
            .iter()
            .map(|c| c.next_action())
            .chain(Code::ALL.iter().map(|c| c.next_action()));
        for action in actions {
            for flag in [
                "--evidence",
                "--timeout",
                "--keep-pod",
                "--plan",
                "--from-deployment",
            ] {
                assert!(!action.contains(flag), "{action}");
            }
            assert!(!action.starts_with("run jr2 up again"), "{action}");
        }
    }

    #[test]
    fn busy_is_an_error_only_for_google() {
        assert_eq!(
            Outcome::Busy.level(ApiKind::OpenAiCompletions),
            Level::Warning
        );
        assert_eq!(
            Outcome::Busy.level(ApiKind::GoogleGenerativeAi),
            Level::Error
        );
        assert_eq!(Outcome::Busy.level(ApiKind::GoogleVertex), Level::Error);
        assert_eq!(Outcome::Text.level(ApiKind::GoogleVertex), Level::Warning);
        assert_eq!(
            Outcome::Unavailable.level(ApiKind::OpenAiCompletions),
            Level::Error
        );
    }
}
