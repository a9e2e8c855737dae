//! The check pod passes the restricted Pod Security profile (baseline included), checked field by field on the
//! whole pod.

use jr2_preflight::pod::check_pod;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

mod common;
use common::{
    RUN_ID, assert_probe_security_context, check_pods, example, example_json, full, now, plan_of,
    probe, spec, variants_json,
};

/// The restricted Pod Security Standard (baseline included), field by field, on the whole pod: an empty list means
/// the pod is admitted in a namespace labelled `pod-security.kubernetes.io/enforce: restricted`.
fn restricted_violations(pod: &Pod) -> Vec<String> {
    let s = spec(pod);
    let mut v = Vec::new();
    let mut bad = |cond: bool, what: String| {
        if cond {
            v.push(what);
        }
    };
    bad(s.host_network == Some(true), "hostNetwork".into());
    bad(s.host_pid == Some(true), "hostPID".into());
    bad(s.host_ipc == Some(true), "hostIPC".into());
    let psc = s.security_context.clone().unwrap_or_default();
    bad(psc.run_as_user == Some(0), "pod runAsUser 0".into());
    let safe_sysctls = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    ];
    for sysctl in psc.sysctls.iter().flatten() {
        bad(
            !safe_sysctls.contains(&sysctl.name.as_str()),
            format!("sysctl {}", sysctl.name),
        );
    }
    let seccomp_ok = |p: Option<&k8s_openapi::api::core::v1::SeccompProfile>| {
        p.map(|p| matches!(p.type_.as_str(), "RuntimeDefault" | "Localhost"))
    };
    for vol in s.volumes.iter().flatten() {
        let allowed = vol.config_map.is_some()
            || vol.csi.is_some()
            || vol.downward_api.is_some()
            || vol.empty_dir.is_some()
            || vol.ephemeral.is_some()
            || vol.persistent_volume_claim.is_some()
            || vol.projected.is_some()
            || vol.secret.is_some();
        bad(
            !allowed,
            format!("volume {} of a type restricted forbids", vol.name),
        );
    }
    for c in s
        .containers
        .iter()
        .chain(s.init_containers.iter().flatten())
    {
        let sc = c.security_context.clone().unwrap_or_default();
        let n = &c.name;
        bad(sc.privileged == Some(true), format!("{n}: privileged"));
        bad(
            sc.allow_privilege_escalation != Some(false),
            format!("{n}: allowPrivilegeEscalation is not false"),
        );
        let non_root = sc.run_as_non_root.or(psc.run_as_non_root);
        bad(
            non_root != Some(true),
            format!("{n}: runAsNonRoot is not true"),
        );
        bad(sc.run_as_user == Some(0), format!("{n}: runAsUser 0"));
        let seccomp =
            seccomp_ok(sc.seccomp_profile.as_ref()).or(seccomp_ok(psc.seccomp_profile.as_ref()));
        bad(
            seccomp != Some(true),
            format!("{n}: seccomp is not RuntimeDefault or Localhost"),
        );
        let caps = sc.capabilities.clone().unwrap_or_default();
        bad(
            !caps.drop.iter().flatten().any(|d| d == "ALL"),
            format!("{n}: does not drop ALL"),
        );
        bad(
            caps.add.iter().flatten().any(|a| a != "NET_BIND_SERVICE"),
            format!("{n}: adds a capability"),
        );
        bad(
            sc.proc_mount.as_deref().is_some_and(|m| m != "Default"),
            format!("{n}: procMount"),
        );
        bad(
            c.ports
                .iter()
                .flatten()
                .any(|p| p.host_port.is_some_and(|h| h != 0)),
            format!("{n}: hostPort"),
        );
        if let Some(se) = &sc.se_linux_options {
            bad(
                se.user.is_some() || se.role.is_some(),
                format!("{n}: SELinux user or role"),
            );
        }
        if let Some(a) = &sc.app_armor_profile {
            bad(a.type_ == "Unconfined", format!("{n}: AppArmor Unconfined"));
        }
    }
    v
}

#[test]
fn the_restricted_pod_security_profile() {
    for plan in [example(), full(), plan_of(variants_json()).unwrap()] {
        for pod in check_pods(&plan, RUN_ID, now()) {
            assert_eq!(
                restricted_violations(&pod),
                Vec::<String>::new(),
                "{:?}",
                pod.metadata.name
            );
            assert_probe_security_context(probe(&pod).security_context.as_ref().unwrap());
        }
    }
    // A Harness pod security context that is not restricted is made so at the pod level.
    let mut v = example_json();
    v["placements"][1]["podSpec"]["securityContext"] =
        json!({"runAsUser": 0, "seccompProfile": {"type": "Unconfined"}, "fsGroup": 2000});
    let plan = plan_of(v).unwrap();
    let pod = check_pod(&plan, &plan.placements[1], RUN_ID, now());
    let sc = spec(&pod).security_context.clone().unwrap();
    assert_eq!(sc.run_as_user, None);
    assert_eq!(sc.run_as_non_root, Some(true));
    assert_eq!(sc.seccomp_profile.unwrap().type_, "RuntimeDefault");
    assert_eq!(sc.fs_group, Some(2000));
    assert_eq!(restricted_violations(&pod), Vec::<String>::new());
    // And the check catches a pod that is not.
    let mut pod = pod;
    pod.spec
        .as_mut()
        .unwrap()
        .containers
        .last_mut()
        .unwrap()
        .security_context = None;
    pod.spec.as_mut().unwrap().host_network = Some(true);
    assert_eq!(
        restricted_violations(&pod),
        [
            "hostNetwork",
            "probe: allowPrivilegeEscalation is not false",
            "probe: does not drop ALL"
        ]
    );
}
