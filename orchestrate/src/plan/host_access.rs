//! What a check pod must never take from a Harness pod spec: host access and privilege.
//!
//! The check pod copies the Custodian container and the pod's security context from the placement's Harness spec
//! (contract, section 6), so a hostile or careless spec would hand them on: a privileged Custodian with `/` mounted
//! at `/host` runs on the node as surely as the Harness would. The rule: the probe container is always restricted
//! (`pod.rs` gives it its own security context, whatever the spec says); the Custodian keeps what it needs to run
//! (its image, args, env, CA and Secret mounts, its user); and a spec that asks for host access or privilege is bad
//! input, refused with one `error:` line naming the field (exit 2, nothing created), rather than silently dropped,
//! because a Harness that needs them would then be checked under conditions it does not run in. Refused:
//! `hostNetwork`, `hostPID`, `hostIPC`, pod `sysctls`, `hostPath` volumes, a `hostPort` of the Harness or Custodian
//! container; in the pod's security context SELinux type `spc_t` and AppArmor `Unconfined`; in either container's
//! `privileged`, added capabilities, `allowPrivilegeEscalation: true`, SELinux type `spc_t`, AppArmor or seccomp
//! `Unconfined`. What the check pod never copies as is stays accepted: the pod's `runAsUser: 0` and seccomp profile
//! are made restricted by `pod.rs`. The Custodian keeps its user, as the Harness pod runs it.

use k8s_openapi::api::core::v1::{Container, PodSecurityContext, PodSpec, SecurityContext};

use super::{Field, Placement, PlanError, SpecPath};

/// Where a refused setting is: placement `placement`'s pod spec, at `path`.
struct At {
    placement: usize,
    path: SpecPath,
}

impl At {
    fn key(&self, key: &str) -> At {
        At {
            placement: self.placement,
            path: self.path.key(key),
        }
    }

    fn index(&self, index: usize) -> At {
        At {
            placement: self.placement,
            path: self.path.index(index),
        }
    }
}

fn refused(at: At, what: &str) -> PlanError {
    PlanError::Invalid {
        field: Field::PodSpec(at.placement, at.path),
        message: format!(
            "{what}: a check pod never takes host access or privilege from the Harness spec (the Custodian runs without it)"
        ),
    }
}

/// Refuses a placement whose pod spec asks for host access or privilege (see the module's doc). `placement` is its
/// index in the plan.
pub fn check(placement: usize, p: &Placement) -> Result<(), PlanError> {
    let spec: &PodSpec = &p.pod_spec;
    let at_spec = At {
        placement,
        path: SpecPath::default(),
    };
    for (field, on) in [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ] {
        if on == Some(true) {
            return Err(refused(at_spec.key(field), "true"));
        }
    }
    if let Some(sc) = &spec.security_context {
        pod_context(&at_spec.key("securityContext"), sc)?;
    }
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        if v.host_path.is_some() {
            return Err(refused(
                at_spec.key("volumes").index(i).key("hostPath"),
                &format!("volume \"{}\" mounts a path of the node", v.name),
            ));
        }
    }
    for (path, c) in p.copied_containers() {
        container(&At { placement, path }, c)?;
    }
    Ok(())
}

fn container(at: &At, c: &Container) -> Result<(), PlanError> {
    for (i, port) in c.ports.iter().flatten().enumerate() {
        if port.host_port.is_some() {
            return Err(refused(
                at.key("ports").index(i).key("hostPort"),
                "a port of the node",
            ));
        }
    }
    if let Some(sc) = &c.security_context {
        container_context(&at.key("securityContext"), sc)?;
    }
    Ok(())
}

fn container_context(at: &At, sc: &SecurityContext) -> Result<(), PlanError> {
    if sc.privileged == Some(true) {
        return Err(refused(at.key("privileged"), "true"));
    }
    if sc.allow_privilege_escalation == Some(true) {
        return Err(refused(at.key("allowPrivilegeEscalation"), "true"));
    }
    if let Some(add) = sc.capabilities.as_ref().and_then(|c| c.add.as_ref())
        && !add.is_empty()
    {
        return Err(refused(
            at.key("capabilities").key("add"),
            &format!("adds {}", add.join(", ")),
        ));
    }
    labels(
        at,
        sc.se_linux_options
            .as_ref()
            .and_then(|s| s.type_.as_deref()),
        sc.app_armor_profile.as_ref().map(|a| a.type_.as_str()),
        sc.seccomp_profile.as_ref().map(|s| s.type_.as_str()),
    )
}

fn pod_context(at: &At, sc: &PodSecurityContext) -> Result<(), PlanError> {
    if sc.sysctls.as_ref().is_some_and(|s| !s.is_empty()) {
        return Err(refused(
            at.key("sysctls"),
            "sets kernel parameters of the pod",
        ));
    }
    // The pod's seccomp profile is not taken as is: `pod.rs` puts `RuntimeDefault` in place of anything but
    // `RuntimeDefault` or `Localhost`.
    labels(
        at,
        sc.se_linux_options
            .as_ref()
            .and_then(|s| s.type_.as_deref()),
        sc.app_armor_profile.as_ref().map(|a| a.type_.as_str()),
        None,
    )
}

fn labels(
    at: &At,
    selinux: Option<&str>,
    apparmor: Option<&str>,
    seccomp: Option<&str>,
) -> Result<(), PlanError> {
    if selinux == Some("spc_t") {
        return Err(refused(
            at.key("seLinuxOptions").key("type"),
            "spc_t (a super-privileged container)",
        ));
    }
    if apparmor == Some("Unconfined") {
        return Err(refused(at.key("appArmorProfile").key("type"), "Unconfined"));
    }
    if seccomp == Some("Unconfined") {
        return Err(refused(at.key("seccompProfile").key("type"), "Unconfined"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::plan::{PLAN_SCHEMA, PlanError, RawPlan, ValidPlan};

    /// An edit of a pod spec.
    type Edit = Box<dyn FnOnce(&mut Value)>;

    /// A plan whose one placement has `edit` applied to its pod spec.
    fn plan_with(edit: impl FnOnce(&mut Value)) -> Result<ValidPlan, PlanError> {
        let mut spec = json!({
            "securityContext": {"fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [
                {"name": "harness", "image": "ghcr.io/jr2/harness:0.1.0",
                 "env": [{"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"}]},
                {"name": "custodian", "image": "envoyproxy/envoy:distroless-v1.39.1",
                 "securityContext": {"runAsUser": 101, "allowPrivilegeEscalation": false,
                                     "capabilities": {"drop": ["ALL"]}},
                 "volumeMounts": [{"name": "values", "mountPath": "/etc/jr2/custodian/values"}]}
            ],
            "volumes": [{"name": "values", "secret": {"secretName": "anthropic"}}]
        });
        edit(&mut spec);
        RawPlan::from_value(json!({
            "schema": PLAN_SCHEMA, "namespace": "demo", "instance": "demo", "probeImage": "ghcr.io/jr2/probe:0.1.0",
            "placements": [{"name": "harness", "custodianContainer": "custodian", "podSpec": spec}],
            "models": [{"model": "anthropic/claude-haiku-4-5", "placement": "harness", "source": "catalog",
                        "keyEnv": "ANTHROPIC_API_KEY", "keyHeld": true}]
        }))
        .and_then(RawPlan::validate)
    }

    fn field_of(edit: impl FnOnce(&mut Value)) -> String {
        match plan_with(edit) {
            Err(e @ PlanError::Invalid { .. }) => {
                let line = e.to_string();
                assert!(line.contains("never takes host access"), "{line}");
                assert!(!line.contains('\n'));
                e.field().unwrap().to_string()
            }
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_legitimate_custodian_passes() {
        plan_with(|_| {}).expect("the Custodian keeps its user, mounts and restricted context");
        // What the check pod makes restricted itself is not refused: the pod's uid 0 and its seccomp profile.
        plan_with(|s| {
            s["securityContext"] = json!({"runAsUser": 0, "seccompProfile": {"type": "Unconfined"}})
        })
        .expect("made restricted by pod.rs");
    }

    #[test]
    fn host_access_and_privilege_are_refused_naming_the_field() {
        let at = "plan.placements[0].podSpec";
        let cases: Vec<(&str, Edit)> = vec![
            ("hostNetwork", Box::new(|s| s["hostNetwork"] = json!(true))),
            ("hostPID", Box::new(|s| s["hostPID"] = json!(true))),
            ("hostIPC", Box::new(|s| s["hostIPC"] = json!(true))),
            (
                "securityContext.sysctls",
                Box::new(|s| {
                    s["securityContext"]["sysctls"] =
                        json!([{"name": "kernel.shm_rmid_forced", "value": "0"}])
                }),
            ),
            (
                "securityContext.seLinuxOptions.type",
                Box::new(|s| s["securityContext"]["seLinuxOptions"] = json!({"type": "spc_t"})),
            ),
            (
                "securityContext.appArmorProfile.type",
                Box::new(|s| {
                    s["securityContext"]["appArmorProfile"] = json!({"type": "Unconfined"})
                }),
            ),
            (
                "volumes[1].hostPath",
                Box::new(|s| {
                    s["volumes"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "host", "hostPath": {"path": "/"}}));
                    s["containers"][1]["volumeMounts"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "host", "mountPath": "/host"}));
                }),
            ),
            (
                "containers[1].ports[0].hostPort",
                Box::new(|s| {
                    s["containers"][1]["ports"] = json!([{"containerPort": 80, "hostPort": 80}])
                }),
            ),
            (
                "containers[0].ports[0].hostPort",
                Box::new(|s| {
                    s["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 80}])
                }),
            ),
            (
                "containers[1].securityContext.privileged",
                Box::new(|s| s["containers"][1]["securityContext"]["privileged"] = json!(true)),
            ),
            (
                "containers[1].securityContext.allowPrivilegeEscalation",
                Box::new(|s| {
                    s["containers"][1]["securityContext"]["allowPrivilegeEscalation"] = json!(true)
                }),
            ),
            (
                "containers[1].securityContext.capabilities.add",
                Box::new(|s| {
                    s["containers"][1]["securityContext"]["capabilities"]["add"] =
                        json!(["NET_ADMIN"])
                }),
            ),
            (
                "containers[1].securityContext.seLinuxOptions.type",
                Box::new(|s| {
                    s["containers"][1]["securityContext"]["seLinuxOptions"] =
                        json!({"type": "spc_t"})
                }),
            ),
            (
                "containers[1].securityContext.appArmorProfile.type",
                Box::new(|s| {
                    s["containers"][1]["securityContext"]["appArmorProfile"] =
                        json!({"type": "Unconfined"})
                }),
            ),
            (
                "containers[1].securityContext.seccompProfile.type",
                Box::new(|s| {
                    s["containers"][1]["securityContext"]["seccompProfile"] =
                        json!({"type": "Unconfined"})
                }),
            ),
            (
                "containers[0].securityContext.privileged",
                Box::new(|s| s["containers"][0]["securityContext"] = json!({"privileged": true})),
            ),
        ];
        for (field, edit) in cases {
            assert_eq!(field_of(edit), format!("{at}.{field}"));
        }
    }
}
