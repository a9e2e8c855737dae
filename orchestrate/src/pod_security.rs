//! Which field of a pod the namespace's Pod Security level refuses, said before the pod is created.
//!
//! The check pod copies the Custodian container and the pod's security context from the placement's Harness spec
//! (`pod.rs`), so what the Harness spec carries lands in a pod the driver creates. A namespace labelled
//! `pod-security.kubernetes.io/enforce` refuses at admission a pod that breaks its level, with one long `403` that
//! names containers, not fields. The driver reads the label first and asks [`violations`] which field of the pod it is
//! about to create the level forbids: naming `spec.containers[1].securityContext.allowPrivilegeEscalation` before
//! the create beats relaying the API server's refusal after it.
//!
//! This is a pure evaluator of the Pod Security Standards as the Pod Security Admission controller enforces them in
//! Kubernetes 1.35 at version `latest` (which resolves to the newest policy version registered, v1.35). It follows
//! the checks of `k8s.io/pod-security-admission` (kubernetes/kubernetes, `staging/src/k8s.io/pod-security-admission`),
//! read, not copied: `policy/check_*.go`, `policy/visitor.go` and `policy/helpers.go`, with `api/helpers.go` for the
//! label. It reimplements their rules over `k8s-openapi`'s types; its messages are its own.
//!
//! `baseline` (every check also runs at `restricted`, except where a restricted check replaces it):
//! - host namespaces (`check_hostNamespaces.go`): `hostNetwork`, `hostPID`, `hostIPC` not true;
//! - privileged (`check_privileged.go`): no container `privileged: true`;
//! - capabilities (`check_capabilities_baseline.go`): `capabilities.add` only from the default set (`AUDIT_WRITE`,
//!   `CHOWN`, `DAC_OVERRIDE`, `FOWNER`, `FSETID`, `KILL`, `MKNOD`, `NET_BIND_SERVICE`, `SETFCAP`, `SETGID`, `SETPCAP`,
//!   `SETUID`, `SYS_CHROOT`);
//! - hostPath volumes (`check_hostPathVolumes.go`);
//! - host ports (`check_hostPorts.go`): `hostPort` 0 or unset;
//! - probe and lifecycle hosts (`check_hostProbesAndhostLifecycle.go`, policy 1.34): no `host` in a probe's or a
//!   lifecycle handler's `httpGet` or `tcpSocket`;
//! - AppArmor (`check_appArmorProfile.go`): `appArmorProfile.type` of the pod and the containers `RuntimeDefault` or
//!   `Localhost`; a `container.apparmor.security.beta.kubernetes.io/*` annotation empty, `runtime/default` or
//!   `localhost/*`;
//! - SELinux (`check_seLinuxOptions.go`, policy 1.31): `seLinuxOptions.type` unset, `container_t`,
//!   `container_init_t`, `container_kvm_t` or `container_engine_t`; `user` and `role` unset;
//! - `/proc` mount type (`check_procMount_baseline.go`, policy 1.35): `procMount` unset or `Default`, any value in a
//!   pod with `hostUsers: false`;
//! - seccomp (`check_seccompProfile_baseline.go`, policy 1.19): a set `seccompProfile.type` is `RuntimeDefault` or
//!   `Localhost` (the annotations of policy 1.0 are not checked at `latest`);
//! - sysctls (`check_sysctls.go`, policy 1.32): pod sysctls only from the safe set, with
//!   `net.ipv4.ip_local_reserved_ports` (1.27), the four `tcp_keepalive_*`/`tcp_fin_timeout` (1.29) and
//!   `net.ipv4.tcp_rmem`/`tcp_wmem` (1.32);
//! - HostProcess (`check_windowsHostProcess.go`): `windowsOptions.hostProcess` not true.
//!
//! `restricted` adds:
//! - volume types (`check_restrictedVolumes.go`, replaces the hostPath check): only `configMap`, `csi`,
//!   `downwardAPI`, `emptyDir`, `ephemeral`, `image` (allowed since 1.33, kubernetes/kubernetes#130394),
//!   `persistentVolumeClaim`, `projected`, `secret`;
//! - privilege escalation (`check_allowPrivilegeEscalation.go`): every container sets
//!   `allowPrivilegeEscalation: false`;
//! - running as non-root (`check_runAsNonRoot.go`, policy 1.35): `runAsNonRoot: true` on the pod or the container;
//!   a container's value overrides the pod's; a pod-level `false` is refused whatever the containers say;
//! - running as non-root user (`check_runAsUser.go`, policy 1.35): no `runAsUser: 0`, on the pod or a container
//!   (a pod-level 0 is refused whatever the containers say);
//! - seccomp (`check_seccompProfile_restricted.go`, replaces the baseline one): `RuntimeDefault` or `Localhost` set
//!   on the pod or on every container; a container's value overrides the pod's; a bad pod-level value is refused
//!   whatever the containers say;
//! - capabilities (`check_capabilities_restricted.go`, replaces the baseline one): `drop` includes `ALL`, `add` only
//!   `NET_BIND_SERVICE`;
//! - `/proc` mount type (`check_procMount_restricted.go`, policy 1.35, replaces the baseline one): unset or
//!   `Default`, even with `hostUsers: false`.
//!
//! Exemptions PSA makes, made here too: a pod with `spec.os.name: windows` skips the restricted privilege-escalation,
//! seccomp and capabilities checks (policy 1.25), and, because those replace the baseline seccomp and capabilities
//! checks, the baseline ones too at `restricted`. A pod with `hostUsers: false` (a user namespace) skips
//! `runAsNonRoot` and `runAsUser`, and baseline's `procMount` (policy 1.35, the relaxation unconditional since
//! kubernetes/kubernetes#132157 dropped the `UserNamespacesPodSecurityStandards` gate).
//!
//! "Containers" are the containers, the init containers and the ephemeral containers, as PSA visits them. A volume
//! with no source is an `emptyDir` (the API server's defaulting, before admission). Not modelled: the exemptions of
//! the admission configuration (usernames, runtime classes, namespaces), `enforce-version` pins other than `latest`,
//! and the API server's validation, which refuses some pods PSA would admit.

use k8s_openapi::api::core::v1::{
    AppArmorProfile, Capabilities, Container, ContainerPort, EphemeralContainer, Lifecycle,
    LifecycleHandler, Pod, PodSecurityContext, PodSpec, Probe, SELinuxOptions, SecurityContext,
    Volume,
};

/// The namespace label that names the level Pod Security Admission enforces.
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";

/// A Pod Security level, as the `pod-security.kubernetes.io/enforce` label names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// No restriction.
    Privileged,
    /// Prevents the known privilege escalations.
    Baseline,
    /// Baseline and the current hardening practice.
    Restricted,
}

impl Level {
    /// The level a label value names. A value PSA cannot parse enforces `restricted`: its `ParseLevel`
    /// (`api/helpers.go`) matches exactly `privileged`, `baseline` or `restricted` (case-sensitive, no trimming)
    /// and otherwise returns `restricted` with an error; `PolicyToEvaluate` keeps that level for `enforce` (it fails
    /// open to `privileged` only for `audit` and `warn`), and `EvaluatePod` (`admission/admission.go`) evaluates it,
    /// only recording the parse error as an audit annotation. So there is no error to return: an unknown value is
    /// `Restricted`. (PSA refuses to create a namespace with such a label, or to change one to it, so a namespace
    /// normally carries one only if it was set where PSA did not check it.) An absent label is not this function's: PSA then applies the
    /// admission configuration's default, `privileged` unless the cluster configures another.
    pub fn from_label(value: &str) -> Level {
        match value {
            "privileged" => Level::Privileged,
            "baseline" => Level::Baseline,
            _ => Level::Restricted,
        }
    }

    /// The label's value for the level.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// How long the API server has to answer the read of the namespace.
pub const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The Namespace object (its labels, its UID), read once for the whole run; `None` when it cannot be read.
pub async fn read_namespace(
    client: kube::Client,
    namespace: &str,
) -> Option<k8s_openapi::api::core::v1::Namespace> {
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
    match tokio::time::timeout(READ_TIMEOUT, api.get(namespace)).await {
        Ok(Ok(ns)) => Some(ns),
        Ok(Err(e)) => {
            tracing::info!(error = %e, "cannot read the namespace; its Pod Security level is not checked before the create");
            None
        }
        Err(_) => {
            tracing::info!(
                "no answer to the read of the namespace; its Pod Security level is not checked before the create"
            );
            None
        }
    }
}

/// The level a Namespace enforces, by its [`ENFORCE_LABEL`]. `None`: no label (the cluster's default applies, which
/// the driver cannot read); and when the namespace cannot be read, nothing is said before the create, and a refusal
/// is relayed as the API server words it.
pub fn level_of(ns: &k8s_openapi::api::core::v1::Namespace) -> Option<Level> {
    ns.metadata
        .labels
        .as_ref()?
        .get(ENFORCE_LABEL)
        .map(|v| Level::from_label(v))
}

/// One field of a pod that the level forbids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The pod's JSON path, as the API server names it (`spec.containers[0].securityContext.privileged`); for a field
    /// that must be set but is absent, the container's field that should hold it.
    pub field: String,
    /// What is wrong: the offending value and what the level wants (`hostNetwork=true (baseline)`).
    pub what: String,
}

/// Every field of `pod` that `level` forbids, in the pod's field order (the order of the Kubernetes API types:
/// `metadata.annotations`, then `spec.volumes`, `spec.initContainers`, `spec.containers`, `spec.ephemeralContainers`,
/// `spec.hostNetwork`, `spec.hostPID`, `spec.hostIPC`, `spec.securityContext`; within a container `ports`, the
/// probes, `lifecycle`, `securityContext`); empty: admitted.
pub fn violations(pod: &Pod, level: Level) -> Vec<Violation> {
    if level == Level::Privileged {
        return Vec::new();
    }
    let mut e = Eval {
        restricted: level == Level::Restricted,
        windows: false,
        user_ns: false,
        pod_sc: None,
        out: Vec::new(),
    };
    if let Some(annotations) = &pod.metadata.annotations {
        for (key, value) in annotations {
            if key.starts_with(APPARMOR_ANNOTATION_PREFIX) && !apparmor_annotation_allowed(value) {
                e.push(
                    format!("metadata.annotations[{key}]"),
                    format!(
                        "AppArmor profile {value:?} (baseline allows runtime/default, localhost/*)"
                    ),
                );
            }
        }
    }
    if let Some(spec) = &pod.spec {
        e.spec(spec);
    }
    e.out
}

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// The safe sysctls of policy 1.32 (the newest version of the check at 1.35).
const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
];

/// The SELinux types of policy 1.31, besides the empty one.
const SELINUX_TYPES: [&str; 4] = [
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// The volume sources restricted allows.
const RESTRICTED_VOLUMES: [&str; 9] = [
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

fn apparmor_annotation_allowed(value: &str) -> bool {
    value.is_empty() || value == "runtime/default" || value.starts_with("localhost/")
}

fn profile_allowed(kind: &str) -> bool {
    kind == "RuntimeDefault" || kind == "Localhost"
}

/// A volume's sources, by JSON name, in the order of the API's `VolumeSource`, and whether each is set.
fn volume_sources(v: &Volume) -> [(&'static str, bool); 30] {
    [
        ("hostPath", v.host_path.is_some()),
        ("emptyDir", v.empty_dir.is_some()),
        ("gcePersistentDisk", v.gce_persistent_disk.is_some()),
        ("awsElasticBlockStore", v.aws_elastic_block_store.is_some()),
        ("gitRepo", v.git_repo.is_some()),
        ("secret", v.secret.is_some()),
        ("nfs", v.nfs.is_some()),
        ("iscsi", v.iscsi.is_some()),
        ("glusterfs", v.glusterfs.is_some()),
        ("persistentVolumeClaim", v.persistent_volume_claim.is_some()),
        ("rbd", v.rbd.is_some()),
        ("flexVolume", v.flex_volume.is_some()),
        ("cinder", v.cinder.is_some()),
        ("cephfs", v.cephfs.is_some()),
        ("flocker", v.flocker.is_some()),
        ("downwardAPI", v.downward_api.is_some()),
        ("fc", v.fc.is_some()),
        ("azureFile", v.azure_file.is_some()),
        ("configMap", v.config_map.is_some()),
        ("vsphereVolume", v.vsphere_volume.is_some()),
        ("quobyte", v.quobyte.is_some()),
        ("azureDisk", v.azure_disk.is_some()),
        ("photonPersistentDisk", v.photon_persistent_disk.is_some()),
        ("projected", v.projected.is_some()),
        ("portworxVolume", v.portworx_volume.is_some()),
        ("scaleIO", v.scale_io.is_some()),
        ("storageos", v.storageos.is_some()),
        ("csi", v.csi.is_some()),
        ("ephemeral", v.ephemeral.is_some()),
        ("image", v.image.is_some()),
    ]
}

/// What PSA reads of a container, the same for a container, an init container and an ephemeral container.
struct Ctr<'a> {
    ports: &'a [ContainerPort],
    probes: [(&'static str, Option<&'a Probe>); 3],
    lifecycle: Option<&'a Lifecycle>,
    sc: Option<&'a SecurityContext>,
}

impl<'a> From<&'a Container> for Ctr<'a> {
    fn from(c: &'a Container) -> Self {
        Ctr {
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                ("livenessProbe", c.liveness_probe.as_ref()),
                ("readinessProbe", c.readiness_probe.as_ref()),
                ("startupProbe", c.startup_probe.as_ref()),
            ],
            lifecycle: c.lifecycle.as_ref(),
            sc: c.security_context.as_ref(),
        }
    }
}

impl<'a> From<&'a EphemeralContainer> for Ctr<'a> {
    fn from(c: &'a EphemeralContainer) -> Self {
        Ctr {
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                ("livenessProbe", c.liveness_probe.as_ref()),
                ("readinessProbe", c.readiness_probe.as_ref()),
                ("startupProbe", c.startup_probe.as_ref()),
            ],
            lifecycle: c.lifecycle.as_ref(),
            sc: c.security_context.as_ref(),
        }
    }
}

struct Eval<'a> {
    /// `restricted`, else `baseline`.
    restricted: bool,
    /// `spec.os.name: windows`: exempt from the restricted privilege-escalation, seccomp and capabilities checks.
    windows: bool,
    /// `hostUsers: false`: exempt from `runAsNonRoot`, `runAsUser` and baseline's `procMount`.
    user_ns: bool,
    pod_sc: Option<&'a PodSecurityContext>,
    out: Vec<Violation>,
}

impl<'a> Eval<'a> {
    fn push(&mut self, field: String, what: String) {
        self.out.push(Violation { field, what });
    }

    fn spec(&mut self, spec: &'a PodSpec) {
        self.windows = spec.os.as_ref().is_some_and(|os| os.name == "windows");
        self.user_ns = spec.host_users == Some(false);
        self.pod_sc = spec.security_context.as_ref();

        for (i, v) in spec.volumes.iter().flatten().enumerate() {
            self.volume(&format!("spec.volumes[{i}]"), v);
        }
        for (i, c) in spec.init_containers.iter().flatten().enumerate() {
            self.container(&format!("spec.initContainers[{i}]"), &Ctr::from(c));
        }
        for (i, c) in spec.containers.iter().enumerate() {
            self.container(&format!("spec.containers[{i}]"), &Ctr::from(c));
        }
        for (i, c) in spec.ephemeral_containers.iter().flatten().enumerate() {
            self.container(&format!("spec.ephemeralContainers[{i}]"), &Ctr::from(c));
        }
        for (name, on) in [
            ("hostNetwork", spec.host_network),
            ("hostPID", spec.host_pid),
            ("hostIPC", spec.host_ipc),
        ] {
            if on == Some(true) {
                self.push(format!("spec.{name}"), format!("{name}=true (baseline)"));
            }
        }
        if let Some(sc) = self.pod_sc {
            self.pod_context(sc);
        }
    }

    fn volume(&mut self, at: &str, v: &Volume) {
        let sources = volume_sources(v);
        if !self.restricted {
            if v.host_path.is_some() {
                self.push(
                    format!("{at}.hostPath"),
                    format!(
                        "volume {:?} of type hostPath (baseline forbids hostPath volumes)",
                        v.name
                    ),
                );
            }
            return;
        }
        // restrictedVolumes replaces the hostPath check. Like PSA, a volume with any allowed source passes; one with
        // none is an emptyDir once the API server has defaulted it.
        let allowed = |name: &str| RESTRICTED_VOLUMES.contains(&name);
        if sources.iter().any(|&(name, set)| set && allowed(name)) {
            return;
        }
        for (name, set) in sources {
            if set {
                self.push(
                    format!("{at}.{name}"),
                    format!(
                        "volume {:?} of type {name} (restricted allows {})",
                        v.name,
                        RESTRICTED_VOLUMES.join(", ")
                    ),
                );
            }
        }
    }

    fn container(&mut self, at: &str, c: &Ctr<'a>) {
        for (i, port) in c.ports.iter().enumerate() {
            if let Some(host_port) = port.host_port.filter(|p| *p != 0) {
                self.push(
                    format!("{at}.ports[{i}].hostPort"),
                    format!("hostPort={host_port} (baseline allows only 0 or unset)"),
                );
            }
        }
        for (name, probe) in c.probes {
            if let Some(p) = probe {
                let hosts = [
                    (
                        "httpGet",
                        p.http_get.as_ref().and_then(|h| h.host.as_deref()),
                    ),
                    (
                        "tcpSocket",
                        p.tcp_socket.as_ref().and_then(|t| t.host.as_deref()),
                    ),
                ];
                self.hosts(&format!("{at}.{name}"), hosts);
            }
        }
        if let Some(l) = c.lifecycle {
            for (name, handler) in [
                ("postStart", l.post_start.as_ref()),
                ("preStop", l.pre_stop.as_ref()),
            ] {
                if let Some(h) = handler {
                    self.hosts(&format!("{at}.lifecycle.{name}"), handler_hosts(h));
                }
            }
        }
        self.container_context(&format!("{at}.securityContext"), c.sc);
    }

    fn hosts(&mut self, at: &str, hosts: [(&str, Option<&str>); 2]) {
        for (name, host) in hosts {
            if let Some(host) = host.filter(|h| !h.is_empty()) {
                self.push(
                    format!("{at}.{name}.host"),
                    format!(
                        "host {host:?} (baseline forbids a host in probes and lifecycle handlers)"
                    ),
                );
            }
        }
    }

    /// A container's security context, `at` its path (`spec.containers[0].securityContext`), in the order of the
    /// API's `SecurityContext`: capabilities, privileged, seLinuxOptions, windowsOptions, runAsUser, runAsNonRoot,
    /// allowPrivilegeEscalation, procMount, seccompProfile, appArmorProfile.
    fn container_context(&mut self, at: &str, sc: Option<&SecurityContext>) {
        self.capabilities(at, sc.and_then(|sc| sc.capabilities.as_ref()));
        if let Some(sc) = sc {
            if sc.privileged == Some(true) {
                self.push(
                    format!("{at}.privileged"),
                    "privileged=true (baseline)".to_owned(),
                );
            }
            if let Some(o) = &sc.se_linux_options {
                self.selinux(&format!("{at}.seLinuxOptions"), o);
            }
            if sc.windows_options.as_ref().and_then(|w| w.host_process) == Some(true) {
                self.push(
                    format!("{at}.windowsOptions.hostProcess"),
                    "windowsOptions.hostProcess=true (baseline)".to_owned(),
                );
            }
        }
        let restricted_user = self.restricted && !self.user_ns;
        if restricted_user && sc.and_then(|sc| sc.run_as_user) == Some(0) {
            self.push(
                format!("{at}.runAsUser"),
                "runAsUser=0 (restricted)".to_owned(),
            );
        }
        if restricted_user {
            // The container's value overrides the pod's; a pod-level false is refused on the pod's field.
            match (sc.and_then(|sc| sc.run_as_non_root), self.pod_sc.and_then(|p| p.run_as_non_root)) {
                (Some(false), _) => self.push(
                    format!("{at}.runAsNonRoot"),
                    "runAsNonRoot=false (restricted wants true)".to_owned(),
                ),
                (None, None) => self.push(
                    format!("{at}.runAsNonRoot"),
                    "runAsNonRoot must be true (restricted): neither the container nor the pod sets it".to_owned(),
                ),
                _ => {}
            }
        }
        if self.restricted && !self.windows {
            match sc.and_then(|sc| sc.allow_privilege_escalation) {
                Some(false) => {}
                Some(true) => self.push(
                    format!("{at}.allowPrivilegeEscalation"),
                    "allowPrivilegeEscalation=true (restricted wants false)".to_owned(),
                ),
                None => self.push(
                    format!("{at}.allowPrivilegeEscalation"),
                    "allowPrivilegeEscalation must be false (restricted)".to_owned(),
                ),
            }
        }
        if let Some(mount) = sc
            .and_then(|sc| sc.proc_mount.as_deref())
            .filter(|m| *m != "Default")
        {
            if self.restricted {
                self.push(
                    format!("{at}.procMount"),
                    format!("procMount {mount:?} (restricted allows only Default or unset)"),
                );
            } else if !self.user_ns {
                self.push(
                    format!("{at}.procMount"),
                    format!("procMount {mount:?} (baseline allows only Default or unset, unless hostUsers is false)"),
                );
            }
        }
        self.container_seccomp(at, sc);
        self.apparmor(at, sc.and_then(|sc| sc.app_armor_profile.as_ref()));
    }

    /// `at` the security context's path.
    fn apparmor(&mut self, at: &str, profile: Option<&AppArmorProfile>) {
        if let Some(p) = profile.filter(|p| !profile_allowed(&p.type_)) {
            self.push(
                format!("{at}.appArmorProfile.type"),
                format!(
                    "appArmorProfile.type={} (baseline allows RuntimeDefault, Localhost)",
                    p.type_
                ),
            );
        }
    }

    fn capabilities(&mut self, at: &str, caps: Option<&Capabilities>) {
        if !self.restricted {
            for (i, cap) in caps
                .and_then(|c| c.add.as_deref())
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if !BASELINE_CAPABILITIES.contains(&cap.as_str()) {
                    self.push(
                        format!("{at}.capabilities.add[{i}]"),
                        format!(
                            "capability {cap:?} added (baseline allows {})",
                            BASELINE_CAPABILITIES.join(", ")
                        ),
                    );
                }
            }
            return;
        }
        // capabilities_restricted replaces the baseline check, and exempts Windows pods.
        if self.windows {
            return;
        }
        for (i, cap) in caps
            .and_then(|c| c.add.as_deref())
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            if cap != "NET_BIND_SERVICE" {
                self.push(
                    format!("{at}.capabilities.add[{i}]"),
                    format!("capability {cap:?} added (restricted allows only NET_BIND_SERVICE)"),
                );
            }
        }
        match caps.and_then(|c| c.drop.as_deref()) {
            Some(drop) if drop.iter().any(|c| c == "ALL") => {}
            Some(drop) if !drop.is_empty() => self.push(
                format!("{at}.capabilities.drop"),
                format!("capabilities.drop={drop:?} lacks \"ALL\" (restricted)"),
            ),
            _ => self.push(
                format!("{at}.capabilities.drop"),
                "capabilities.drop must include \"ALL\" (restricted)".to_owned(),
            ),
        }
    }

    fn selinux(&mut self, at: &str, o: &SELinuxOptions) {
        // In the order of the API's SELinuxOptions: user, role, type.
        for (name, value) in [("user", o.user.as_deref()), ("role", o.role.as_deref())] {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                self.push(
                    format!("{at}.{name}"),
                    format!("seLinuxOptions.{name} {value:?} (baseline forbids setting it)"),
                );
            }
        }
        if let Some(kind) = o
            .type_
            .as_deref()
            .filter(|t| !t.is_empty() && !SELINUX_TYPES.contains(t))
        {
            self.push(
                format!("{at}.type"),
                format!(
                    "seLinuxOptions.type {kind:?} (baseline allows {} or unset)",
                    SELINUX_TYPES.join(", ")
                ),
            );
        }
    }

    fn container_seccomp(&mut self, at: &str, sc: Option<&SecurityContext>) {
        let field = format!("{at}.seccompProfile.type");
        let own = sc
            .and_then(|sc| sc.seccomp_profile.as_ref())
            .map(|p| p.type_.as_str());
        if !self.restricted {
            if let Some(kind) = own.filter(|k| !profile_allowed(k)) {
                self.push(
                    field,
                    format!(
                        "seccompProfile.type={kind} (baseline allows RuntimeDefault, Localhost)"
                    ),
                );
            }
            return;
        }
        // seccompProfile_restricted replaces the baseline check, and exempts Windows pods.
        if self.windows {
            return;
        }
        match own {
            Some(kind) if !profile_allowed(kind) => self.push(
                field,
                format!("seccompProfile.type={kind} (restricted allows RuntimeDefault, Localhost)"),
            ),
            Some(_) => {}
            // A pod-level value applies; a bad one is refused on the pod's field.
            None => {
                if self
                    .pod_sc
                    .and_then(|p| p.seccomp_profile.as_ref())
                    .is_none()
                {
                    self.push(
                        field,
                        "seccompProfile.type must be RuntimeDefault or Localhost (restricted): \
                         neither the container nor the pod sets it"
                            .to_owned(),
                    );
                }
            }
        }
    }

    /// The pod's security context, in the order of the API's `PodSecurityContext`: seLinuxOptions, windowsOptions,
    /// runAsUser, runAsNonRoot, sysctls, seccompProfile, appArmorProfile.
    fn pod_context(&mut self, sc: &PodSecurityContext) {
        let at = "spec.securityContext";
        if let Some(o) = &sc.se_linux_options {
            self.selinux(&format!("{at}.seLinuxOptions"), o);
        }
        if sc.windows_options.as_ref().and_then(|w| w.host_process) == Some(true) {
            self.push(
                format!("{at}.windowsOptions.hostProcess"),
                "windowsOptions.hostProcess=true (baseline)".to_owned(),
            );
        }
        if self.restricted && !self.user_ns {
            if sc.run_as_user == Some(0) {
                self.push(
                    format!("{at}.runAsUser"),
                    "runAsUser=0 (restricted)".to_owned(),
                );
            }
            if sc.run_as_non_root == Some(false) {
                self.push(
                    format!("{at}.runAsNonRoot"),
                    "runAsNonRoot=false (restricted wants true)".to_owned(),
                );
            }
        }
        for (i, s) in sc.sysctls.iter().flatten().enumerate() {
            if !SAFE_SYSCTLS.contains(&s.name.as_str()) {
                self.push(
                    format!("{at}.sysctls[{i}].name"),
                    format!(
                        "sysctl {:?} (baseline allows only {})",
                        s.name,
                        SAFE_SYSCTLS.join(", ")
                    ),
                );
            }
        }
        // At restricted a Windows pod skips the seccomp check altogether (the restricted one replaces baseline's).
        let seccomp_exempt = self.restricted && self.windows;
        if let Some(p) = sc
            .seccomp_profile
            .as_ref()
            .filter(|p| !profile_allowed(&p.type_))
            && !seccomp_exempt
        {
            let wants = if self.restricted {
                "restricted"
            } else {
                "baseline"
            };
            self.push(
                format!("{at}.seccompProfile.type"),
                format!(
                    "seccompProfile.type={} ({wants} allows RuntimeDefault, Localhost)",
                    p.type_
                ),
            );
        }
        self.apparmor(at, sc.app_armor_profile.as_ref());
    }
}

fn handler_hosts(h: &LifecycleHandler) -> [(&'static str, Option<&str>); 2] {
    [
        (
            "httpGet",
            h.http_get.as_ref().and_then(|a| a.host.as_deref()),
        ),
        (
            "tcpSocket",
            h.tcp_socket.as_ref().and_then(|a| a.host.as_deref()),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod_of(metadata: Value, spec: Value) -> Pod {
        serde_json::from_value::<Pod>(
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}),
        )
        .expect("a valid Pod")
    }

    fn pod(spec: Value) -> Pod {
        pod_of(json!({"name": "check"}), spec)
    }

    fn fields(pod: &Pod, level: Level) -> Vec<String> {
        violations(pod, level)
            .into_iter()
            .map(|v| v.field)
            .collect()
    }

    /// Baseline-clean: one container, nothing set.
    fn minimal() -> Value {
        json!({"containers": [{"name": "app", "image": "app:1"}]})
    }

    /// Restricted-clean: the pod runs as non-root with the runtime's seccomp profile, the container drops ALL and
    /// cannot escalate.
    fn hardened() -> Value {
        json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "app", "image": "app:1", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]
        })
    }

    fn with(mut spec: Value, edit: impl FnOnce(&mut Value)) -> Pod {
        edit(&mut spec);
        pod(spec)
    }

    /// Admitted at `ok`, refused at `refused` with exactly these fields.
    #[track_caller]
    fn refused_at(p: &Pod, ok: Option<Level>, refused: Level, want: &[&str]) {
        if let Some(ok) = ok {
            assert_eq!(violations(p, ok), vec![], "at {ok:?}");
        }
        assert_eq!(fields(p, refused), want, "at {refused:?}");
    }

    const SC: &str = "spec.containers[0].securityContext";

    #[test]
    fn from_label_parses_the_three_levels_and_enforces_restricted_for_anything_else() {
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            assert_eq!(Level::from_label(level.as_str()), level);
        }
        assert_eq!(Level::Privileged.as_str(), "privileged");
        assert_eq!(Level::Baseline.as_str(), "baseline");
        assert_eq!(Level::Restricted.as_str(), "restricted");
        // ParseLevel: exact, case-sensitive, untrimmed; PolicyToEvaluate keeps restricted for enforce.
        for unknown in [
            "",
            "Privileged",
            "BASELINE",
            " baseline",
            "privileged ",
            "unrestricted",
            "latest",
        ] {
            assert_eq!(Level::from_label(unknown), Level::Restricted, "{unknown:?}");
        }
        assert!(Level::Privileged < Level::Baseline && Level::Baseline < Level::Restricted);
        assert_eq!(ENFORCE_LABEL, "pod-security.kubernetes.io/enforce");
    }

    #[test]
    fn privileged_admits_everything() {
        let p = pod_of(
            json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}),
            json!({
                "hostNetwork": true, "hostPID": true, "hostIPC": true,
                "securityContext": {"runAsUser": 0, "sysctls": [{"name": "kernel.msgmax", "value": "1"}]},
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                "containers": [{"name": "app", "ports": [{"containerPort": 80, "hostPort": 80}],
                    "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]},
                                        "procMount": "Unmasked", "seccompProfile": {"type": "Unconfined"}}}]
            }),
        );
        assert_eq!(violations(&p, Level::Privileged), vec![]);
        assert_eq!(fields(&p, Level::Baseline).len(), 11);
        assert!(fields(&p, Level::Restricted).len() > 11);
    }

    #[test]
    fn a_pod_spec_less_pod_has_nothing_to_refuse() {
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": "bare"}})).unwrap();
        assert_eq!(violations(&p, Level::Restricted), vec![]);
    }

    #[test]
    fn baseline_clean_but_not_restricted_is_admitted_at_baseline_and_refused_at_restricted() {
        let p = pod(minimal());
        refused_at(
            &p,
            Some(Level::Baseline),
            Level::Restricted,
            &[
                &format!("{SC}.capabilities.drop"),
                &format!("{SC}.runAsNonRoot"),
                &format!("{SC}.allowPrivilegeEscalation"),
                &format!("{SC}.seccompProfile.type"),
            ],
        );
        let v = violations(&p, Level::Restricted);
        assert_eq!(
            v[1].what,
            "runAsNonRoot must be true (restricted): neither the container nor the pod sets it"
        );
        assert_eq!(
            v[2].what,
            "allowPrivilegeEscalation must be false (restricted)"
        );
        assert_eq!(violations(&pod(hardened()), Level::Restricted), vec![]);
    }

    #[test]
    fn host_namespaces() {
        for name in ["hostNetwork", "hostPID", "hostIPC"] {
            let off = with(minimal(), |s| s[name] = json!(false));
            assert_eq!(
                violations(&off, Level::Restricted).len(),
                4,
                "{name}: only the restricted four"
            );
            assert_eq!(violations(&off, Level::Baseline), vec![]);
            let on = with(minimal(), |s| s[name] = json!(true));
            refused_at(
                &on,
                Some(Level::Privileged),
                Level::Baseline,
                &[&format!("spec.{name}")],
            );
            assert_eq!(
                violations(&on, Level::Baseline)[0].what,
                format!("{name}=true (baseline)")
            );
        }
    }

    #[test]
    fn privileged_containers() {
        let ok =
            with(
                minimal(),
                |s| {
                    s["initContainers"] =
                        json!([{"name": "init", "securityContext": {"privileged": false}}])
                },
            );
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p =
            with(
                minimal(),
                |s| {
                    s["initContainers"] =
                        json!([{"name": "init", "securityContext": {"privileged": true}}])
                },
            );
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &["spec.initContainers[0].securityContext.privileged"],
        );
    }

    #[test]
    fn baseline_capabilities() {
        let ok = with(
            minimal(),
            |s| {
                s["containers"][0]["securityContext"] =
                    json!({"capabilities": {"add": ["NET_BIND_SERVICE", "CHOWN", "SYS_CHROOT"]}})
            },
        );
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(minimal(), |s| {
            s["containers"][0]["securityContext"] =
                json!({"capabilities": {"add": ["CHOWN", "NET_RAW"]}})
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[&format!("{SC}.capabilities.add[1]")],
        );
        assert!(
            violations(&p, Level::Baseline)[0]
                .what
                .starts_with("capability \"NET_RAW\" added (baseline allows AUDIT_WRITE")
        );
    }

    #[test]
    fn restricted_capabilities() {
        let ok = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["capabilities"] =
                json!({"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})
        });
        assert_eq!(violations(&ok, Level::Restricted), vec![]);
        // CHOWN is in baseline's default set, not in restricted's.
        let add = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["capabilities"]["add"] =
                json!(["NET_BIND_SERVICE", "CHOWN"])
        });
        refused_at(
            &add,
            Some(Level::Baseline),
            Level::Restricted,
            &[&format!("{SC}.capabilities.add[1]")],
        );
        let drop = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["capabilities"]["drop"] = json!(["NET_RAW"])
        });
        refused_at(
            &drop,
            Some(Level::Baseline),
            Level::Restricted,
            &[&format!("{SC}.capabilities.drop")],
        );
        assert_eq!(
            violations(&drop, Level::Restricted)[0].what,
            "capabilities.drop=[\"NET_RAW\"] lacks \"ALL\" (restricted)"
        );
        // The restricted check replaces baseline's: one violation for a capability both forbid.
        let both = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["capabilities"]["add"] = json!(["SYS_ADMIN"])
        });
        assert_eq!(
            fields(&both, Level::Restricted),
            [format!("{SC}.capabilities.add[0]")]
        );
        assert!(
            violations(&both, Level::Restricted)[0]
                .what
                .contains("restricted allows only NET_BIND_SERVICE")
        );
    }

    #[test]
    fn host_path_volumes() {
        let ok = with(minimal(), |s| {
            s["volumes"] = json!([{"name": "scratch", "emptyDir": {}}])
        });
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(
            hardened(),
            |s| s["volumes"] = json!([{"name": "scratch", "emptyDir": {}}, {"name": "root", "hostPath": {"path": "/"}}]),
        );
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &["spec.volumes[1].hostPath"],
        );
        // restrictedVolumes replaces the hostPath check: the same field, once.
        assert_eq!(fields(&p, Level::Restricted), ["spec.volumes[1].hostPath"]);
    }

    #[test]
    fn restricted_volume_types() {
        let ok = with(hardened(), |s| {
            s["volumes"] = json!([
                {"name": "cm", "configMap": {"name": "cm"}},
                {"name": "csi", "csi": {"driver": "secrets-store.csi.k8s.io"}},
                {"name": "down", "downwardAPI": {}},
                {"name": "tmp", "emptyDir": {}},
                {"name": "eph", "ephemeral": {}},
                {"name": "img", "image": {"reference": "ghcr.io/jr2/data:1"}},
                {"name": "pvc", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "proj", "projected": {"sources": []}},
                {"name": "sec", "secret": {"secretName": "key"}},
                {"name": "defaulted"}
            ])
        });
        assert_eq!(violations(&ok, Level::Restricted), vec![]);
        let p = with(hardened(), |s| {
            s["volumes"] = json!([
                {"name": "tmp", "emptyDir": {}},
                {"name": "nfs", "nfs": {"server": "nfs.example", "path": "/export"}},
                {"name": "repo", "gitRepo": {"repository": "https://example.invalid/r.git"}}
            ])
        });
        refused_at(
            &p,
            Some(Level::Baseline),
            Level::Restricted,
            &["spec.volumes[1].nfs", "spec.volumes[2].gitRepo"],
        );
        assert_eq!(
            violations(&p, Level::Restricted)[0].what,
            "volume \"nfs\" of type nfs (restricted allows configMap, csi, downwardAPI, emptyDir, ephemeral, image, \
             persistentVolumeClaim, projected, secret)"
        );
    }

    #[test]
    fn host_ports() {
        let ok = with(minimal(), |s| {
            s["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 0}])
        });
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(
            minimal(),
            |s| {
                s["containers"][0]["ports"] =
                    json!([{"containerPort": 80}, {"containerPort": 8080, "hostPort": 8080}])
            },
        );
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &["spec.containers[0].ports[1].hostPort"],
        );
        assert_eq!(
            violations(&p, Level::Baseline)[0].what,
            "hostPort=8080 (baseline allows only 0 or unset)"
        );
    }

    #[test]
    fn probe_and_lifecycle_hosts() {
        let ok = with(minimal(), |s| {
            s["containers"][0]["readinessProbe"] = json!({"httpGet": {"port": 8080, "host": ""}});
            s["containers"][0]["livenessProbe"] = json!({"tcpSocket": {"port": 8080}});
        });
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(minimal(), |s| {
            s["containers"][0]["readinessProbe"] =
                json!({"httpGet": {"port": 8080, "host": "10.0.0.1"}});
            s["containers"][0]["lifecycle"] =
                json!({"preStop": {"tcpSocket": {"port": 22, "host": "node"}}});
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[
                "spec.containers[0].readinessProbe.httpGet.host",
                "spec.containers[0].lifecycle.preStop.tcpSocket.host",
            ],
        );
    }

    #[test]
    fn apparmor_annotations_and_fields() {
        let ok = pod_of(
            json!({"annotations": {
                "container.apparmor.security.beta.kubernetes.io/app": "runtime/default",
                "container.apparmor.security.beta.kubernetes.io/side": "localhost/jr2",
                "example.com/unconfined": "unconfined"
            }}),
            with_spec(minimal(), |s| {
                s["securityContext"] = json!({"appArmorProfile": {"type": "RuntimeDefault"}});
                s["containers"][0]["securityContext"] =
                    json!({"appArmorProfile": {"type": "Localhost", "localhostProfile": "jr2"}});
            }),
        );
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = pod_of(
            json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}),
            with_spec(minimal(), |s| {
                s["securityContext"] = json!({"appArmorProfile": {"type": "Unconfined"}});
                s["containers"][0]["securityContext"] =
                    json!({"appArmorProfile": {"type": "Unconfined"}});
            }),
        );
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]",
                &format!("{SC}.appArmorProfile.type"),
                "spec.securityContext.appArmorProfile.type",
            ],
        );
    }

    fn with_spec(mut spec: Value, edit: impl FnOnce(&mut Value)) -> Value {
        edit(&mut spec);
        spec
    }

    #[test]
    fn selinux_options() {
        let ok = with(minimal(), |s| {
            s["securityContext"] =
                json!({"seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"}});
            s["containers"][0]["securityContext"] =
                json!({"seLinuxOptions": {"type": "container_engine_t"}});
        });
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(minimal(), |s| {
            s["securityContext"] = json!({"seLinuxOptions": {"role": "sysadm_r"}});
            s["containers"][0]["securityContext"] =
                json!({"seLinuxOptions": {"type": "spc_t", "user": "root"}});
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[
                &format!("{SC}.seLinuxOptions.user"),
                &format!("{SC}.seLinuxOptions.type"),
                "spec.securityContext.seLinuxOptions.role",
            ],
        );
    }

    #[test]
    fn proc_mount() {
        let ok = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["procMount"] = json!("Default")
        });
        assert_eq!(violations(&ok, Level::Restricted), vec![]);
        let p = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["procMount"] = json!("Unmasked")
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[&format!("{SC}.procMount")],
        );
        // A user-namespace pod may unmask /proc at baseline, not at restricted.
        let user_ns = with(hardened(), |s| {
            s["hostUsers"] = json!(false);
            s["containers"][0]["securityContext"]["procMount"] = json!("Unmasked");
        });
        refused_at(
            &user_ns,
            Some(Level::Baseline),
            Level::Restricted,
            &[&format!("{SC}.procMount")],
        );
    }

    #[test]
    fn baseline_seccomp() {
        let ok = with(minimal(), |s| {
            s["securityContext"] =
                json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "jr2.json"}});
            s["containers"][0]["securityContext"] =
                json!({"seccompProfile": {"type": "RuntimeDefault"}});
        });
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(minimal(), |s| {
            s["securityContext"] = json!({"seccompProfile": {"type": "Unconfined"}});
            s["containers"][0]["securityContext"] =
                json!({"seccompProfile": {"type": "Unconfined"}});
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[
                &format!("{SC}.seccompProfile.type"),
                "spec.securityContext.seccompProfile.type",
            ],
        );
        assert_eq!(
            violations(&p, Level::Baseline)[0].what,
            "seccompProfile.type=Unconfined (baseline allows RuntimeDefault, Localhost)"
        );
    }

    #[test]
    fn restricted_seccomp_container_overrides_pod() {
        // The pod's profile covers a container that sets none.
        assert_eq!(violations(&pod(hardened()), Level::Restricted), vec![]);
        // A container's own profile satisfies restricted without a pod-level one.
        let own = with(hardened(), |s| {
            s["securityContext"] = json!({"runAsNonRoot": true});
            s["containers"][0]["securityContext"]["seccompProfile"] =
                json!({"type": "Localhost", "localhostProfile": "p.json"});
        });
        assert_eq!(violations(&own, Level::Restricted), vec![]);
        // A container's bad profile overrides the pod's good one.
        let bad = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"})
        });
        refused_at(
            &bad,
            None,
            Level::Restricted,
            &[&format!("{SC}.seccompProfile.type")],
        );
        // None at all: the container's field is named.
        let none = with(hardened(), |s| {
            s["securityContext"] = json!({"runAsNonRoot": true})
        });
        refused_at(
            &none,
            Some(Level::Baseline),
            Level::Restricted,
            &[&format!("{SC}.seccompProfile.type")],
        );
        // A bad pod-level profile is refused on the pod's field, whatever the containers set.
        let pod_bad = with(hardened(), |s| {
            s["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"});
            s["containers"][0]["securityContext"]["seccompProfile"] =
                json!({"type": "RuntimeDefault"});
        });
        refused_at(
            &pod_bad,
            None,
            Level::Restricted,
            &["spec.securityContext.seccompProfile.type"],
        );
    }

    #[test]
    fn sysctls() {
        let ok = with(minimal(), |s| {
            s["securityContext"] = json!({"sysctls": [
                {"name": "kernel.shm_rmid_forced", "value": "0"},
                {"name": "net.ipv4.ip_local_reserved_ports", "value": "30000"},
                {"name": "net.ipv4.tcp_keepalive_time", "value": "60"},
                {"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"},
                {"name": "net.ipv4.tcp_wmem", "value": "4096 16384 4194304"}
            ]})
        });
        assert_eq!(
            violations(&ok, Level::Restricted).len(),
            4,
            "only the restricted four"
        );
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(minimal(), |s| {
            s["securityContext"] = json!({"sysctls": [
                {"name": "net.ipv4.ping_group_range", "value": "0 0"},
                {"name": "kernel.msgmax", "value": "65536"}
            ]})
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &["spec.securityContext.sysctls[1].name"],
        );
        assert!(
            violations(&p, Level::Baseline)[0]
                .what
                .starts_with("sysctl \"kernel.msgmax\" (baseline allows only")
        );
    }

    #[test]
    fn windows_host_process() {
        let ok = with(minimal(), |s| {
            s["securityContext"] = json!({"windowsOptions": {"hostProcess": false}});
            s["containers"][0]["securityContext"] =
                json!({"windowsOptions": {"hostProcess": false}});
        });
        assert_eq!(violations(&ok, Level::Baseline), vec![]);
        let p = with(minimal(), |s| {
            s["securityContext"] = json!({"windowsOptions": {"hostProcess": true}});
            s["containers"][0]["securityContext"] =
                json!({"windowsOptions": {"hostProcess": true}});
        });
        refused_at(
            &p,
            Some(Level::Privileged),
            Level::Baseline,
            &[
                &format!("{SC}.windowsOptions.hostProcess"),
                "spec.securityContext.windowsOptions.hostProcess",
            ],
        );
    }

    #[test]
    fn allow_privilege_escalation() {
        let ok = with(hardened(), |s| {
            s["initContainers"] = json!([{"name": "init", "securityContext": {
                "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}])
        });
        assert_eq!(violations(&ok, Level::Restricted), vec![]);
        let p = with(hardened(), |s| {
            s["ephemeralContainers"] = json!([{"name": "debug", "securityContext": {
                "allowPrivilegeEscalation": true, "capabilities": {"drop": ["ALL"]}}}]);
            s["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = Value::Null;
        });
        refused_at(
            &p,
            Some(Level::Baseline),
            Level::Restricted,
            &[
                &format!("{SC}.allowPrivilegeEscalation"),
                "spec.ephemeralContainers[0].securityContext.allowPrivilegeEscalation",
            ],
        );
        let v = violations(&p, Level::Restricted);
        assert_eq!(
            v[0].what,
            "allowPrivilegeEscalation must be false (restricted)"
        );
        assert_eq!(
            v[1].what,
            "allowPrivilegeEscalation=true (restricted wants false)"
        );
    }

    #[test]
    fn run_as_non_root_container_overrides_pod() {
        // A container's true satisfies restricted without the pod's.
        let own = with(hardened(), |s| {
            s["securityContext"] = json!({"seccompProfile": {"type": "RuntimeDefault"}});
            s["containers"][0]["securityContext"]["runAsNonRoot"] = json!(true);
        });
        assert_eq!(violations(&own, Level::Restricted), vec![]);
        // A container's false overrides the pod's true.
        let bad = with(hardened(), |s| {
            s["containers"][0]["securityContext"]["runAsNonRoot"] = json!(false)
        });
        refused_at(
            &bad,
            Some(Level::Baseline),
            Level::Restricted,
            &[&format!("{SC}.runAsNonRoot")],
        );
        // A pod-level false is refused on the pod's field, whatever the containers set.
        let pod_false = with(hardened(), |s| {
            s["securityContext"]["runAsNonRoot"] = json!(false);
            s["containers"][0]["securityContext"]["runAsNonRoot"] = json!(true);
        });
        refused_at(
            &pod_false,
            Some(Level::Baseline),
            Level::Restricted,
            &["spec.securityContext.runAsNonRoot"],
        );
        // Set nowhere: the container's field is named.
        let none = with(hardened(), |s| {
            s["securityContext"] = json!({"seccompProfile": {"type": "RuntimeDefault"}})
        });
        refused_at(
            &none,
            Some(Level::Baseline),
            Level::Restricted,
            &[&format!("{SC}.runAsNonRoot")],
        );
        assert_eq!(
            violations(&none, Level::Restricted)[0].what,
            "runAsNonRoot must be true (restricted): neither the container nor the pod sets it"
        );
    }

    #[test]
    fn run_as_user_zero() {
        let ok = with(hardened(), |s| {
            s["securityContext"]["runAsUser"] = json!(1000);
            s["containers"][0]["securityContext"]["runAsUser"] = json!(65532);
        });
        assert_eq!(violations(&ok, Level::Restricted), vec![]);
        let p = with(hardened(), |s| {
            s["initContainers"] = json!([{"name": "init", "securityContext": {
                "runAsUser": 0, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]);
        });
        refused_at(
            &p,
            Some(Level::Baseline),
            Level::Restricted,
            &["spec.initContainers[0].securityContext.runAsUser"],
        );
        // PSA refuses a pod-level 0 even when every container sets its own user.
        let pod_root = with(hardened(), |s| {
            s["securityContext"]["runAsUser"] = json!(0);
            s["containers"][0]["securityContext"]["runAsUser"] = json!(1000);
        });
        refused_at(
            &pod_root,
            Some(Level::Baseline),
            Level::Restricted,
            &["spec.securityContext.runAsUser"],
        );
    }

    #[test]
    fn a_user_namespace_pod_may_run_as_root() {
        let p = with(hardened(), |s| {
            s["hostUsers"] = json!(false);
            s["securityContext"] = json!({"runAsUser": 0, "runAsNonRoot": false, "seccompProfile": {"type": "RuntimeDefault"}});
            s["containers"][0]["securityContext"]["runAsUser"] = json!(0);
        });
        assert_eq!(violations(&p, Level::Restricted), vec![]);
        let host_users = with(hardened(), |s| {
            s["hostUsers"] = json!(true);
            s["securityContext"]["runAsUser"] = json!(0);
        });
        assert_eq!(
            fields(&host_users, Level::Restricted),
            ["spec.securityContext.runAsUser"]
        );
    }

    #[test]
    fn windows_pods_skip_privilege_escalation_seccomp_and_capabilities_at_restricted() {
        let windows = |os: &str| {
            with(
                json!({"os": {"name": os}, "securityContext": {"runAsNonRoot": true},
                        "containers": [{"name": "app", "image": "app:1"}]}),
                |_| {},
            )
        };
        assert_eq!(violations(&windows("windows"), Level::Restricted), vec![]);
        assert_eq!(
            fields(&windows("linux"), Level::Restricted),
            [
                format!("{SC}.capabilities.drop"),
                format!("{SC}.allowPrivilegeEscalation"),
                format!("{SC}.seccompProfile.type"),
            ]
        );
        // Not exempt from the rest of restricted.
        let root = with(
            json!({"os": {"name": "windows"}, "containers": [{"name": "app"}]}),
            |_| {},
        );
        assert_eq!(
            fields(&root, Level::Restricted),
            [format!("{SC}.runAsNonRoot")]
        );
        // The restricted seccomp and capabilities checks replace baseline's, so at restricted a Windows pod skips
        // those too, while baseline still checks them.
        let unconfined = with(
            json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "Unconfined"}},
                   "containers": [{"name": "app", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}]}),
            |_| {},
        );
        assert_eq!(violations(&unconfined, Level::Restricted), vec![]);
        assert_eq!(
            fields(&unconfined, Level::Baseline),
            [
                format!("{SC}.capabilities.add[0]"),
                "spec.securityContext.seccompProfile.type".to_owned()
            ]
        );
    }

    #[test]
    fn violations_come_in_the_pods_field_order() {
        let p = pod_of(
            json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "unconfined"}}),
            json!({
                "hostNetwork": true,
                "securityContext": {"sysctls": [{"name": "vm.swappiness", "value": "1"}]},
                "containers": [{"name": "app", "ports": [{"containerPort": 1, "hostPort": 1}],
                                "securityContext": {"privileged": true}}],
                "initContainers": [{"name": "init", "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}],
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                "ephemeralContainers": [{"name": "debug", "securityContext": {"procMount": "Unmasked"}}]
            }),
        );
        assert_eq!(
            fields(&p, Level::Baseline),
            [
                "metadata.annotations[container.apparmor.security.beta.kubernetes.io/app]",
                "spec.volumes[0].hostPath",
                "spec.initContainers[0].securityContext.capabilities.add[0]",
                "spec.containers[0].ports[0].hostPort",
                "spec.containers[0].securityContext.privileged",
                "spec.ephemeralContainers[0].securityContext.procMount",
                "spec.hostNetwork",
                "spec.securityContext.sysctls[0].name",
            ]
        );
    }

    #[test]
    fn odd_values_do_not_panic() {
        let p = with(minimal(), |s| {
            s["containers"][0]["securityContext"] = json!({
                "capabilities": {"add": [], "drop": []},
                "seLinuxOptions": {"type": "", "user": "", "role": ""},
                "procMount": "",
                "seccompProfile": {"type": ""},
                "appArmorProfile": {"type": ""},
                "runAsUser": -1
            });
            s["securityContext"] = json!({"sysctls": [{"name": "", "value": ""}]});
            s["volumes"] = json!([{"name": ""}]);
            s["containers"][0]["ports"] = json!([{"containerPort": 0, "hostPort": -1}]);
        });
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            let _ = violations(&p, level);
        }
        assert_eq!(
            fields(&p, Level::Baseline),
            [
                "spec.containers[0].ports[0].hostPort",
                "spec.containers[0].securityContext.procMount",
                "spec.containers[0].securityContext.seccompProfile.type",
                "spec.containers[0].securityContext.appArmorProfile.type",
                "spec.securityContext.sysctls[0].name",
            ]
        );
    }
}
