//! `--evidence DIR`: the bundle a failed check leaves to attach to a report, written through the one YAML writer
//! (`yaml.rs`) that the dry run uses. Nothing in it holds a secret value: the pods carry references and Stand-ins,
//! and the probe's output is redacted at the source.
//!
//! The bundle goes into a directory of its own that the driver creates (an existing empty one is taken, an existing
//! non-empty one, a symbolic link or a file is refused up front by [`check`], as bad input), and every file in it is
//! created new (`create_new`: `O_CREAT | O_EXCL`, which follows no symbolic link, dangling or not), so that a link
//! planted in the directory can neither overwrite its target nor create one.
//!
//! What the cluster shows back is what admission made of the pods: an injected `DB_PASSWORD`, `VAULT_TOKEN` or
//! annotation `vault.example.com/token` is redacted by its name, as the plan judges names (`redact.rs`; issue 40,
//! item 4), and every value by its shape, in every file ([`scrub`]).
//!
//! The bundle is meant to be attached to a support ticket (issue 25, item 9): every file goes through [`scrub`]
//! (the key shapes and URL credentials of `jr2_probe::sanitize::redact_shapes`, the one rule for a secret by its
//! shape, then control, bidi and invisible characters escaped line by line, so that an ESC or OSC 52 a pod wrote
//! reaches no terminal that shows the file), and it is readable by its owner only: directories 0700, files 0600.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::time::SystemTime;

use jr2_probe::contract::verdict::rfc3339_utc;

use crate::pod::CheckPod;
use crate::redact;
use crate::run::RunResult;
use crate::verdict::DriverVerdict;
use crate::yaml;

/// Whether `dir` can take the bundle: absent (it is created when the bundle is written), or an empty directory that
/// is not a symbolic link. The refusal says why, for `error: --evidence: <why>` (exit 2, nothing created).
pub fn check(dir: &Path) -> Result<(), String> {
    let shown = jr2_probe::sanitize::escape_truncate(&dir.display().to_string(), 200);
    let meta = match fs::symlink_metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    if meta.file_type().is_symlink() {
        return Err(format!(
            "{shown} is a symbolic link: name a new directory for the bundle"
        ));
    }
    if !meta.is_dir() {
        return Err(format!(
            "{shown} exists and is not a directory: name a new directory for the bundle"
        ));
    }
    match fs::read_dir(dir).map(|mut entries| entries.next().is_none()) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!(
            "{shown} is not empty: name a new directory for the bundle (or an empty one)"
        )),
        Err(e) => Err(format!("cannot read {shown}: {e}")),
    }
}

/// A directory of the bundle: created new, its owner's only (0700).
fn new_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        fs::DirBuilder::new().mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    {
        fs::create_dir(dir)
    }
}

/// Creates `dir` (its parents as needed), or takes it when [`check`] lets it (an empty directory, no link, then
/// made its owner's only).
fn make_dir(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent)?;
    }
    match new_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            check(dir).map_err(io::Error::other)?;
            #[cfg(unix)]
            fs::set_permissions(
                dir,
                <fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o700),
            )?;
            Ok(())
        }
        other => other,
    }
}

/// What a file of the bundle holds of `text`: the key shapes and URL credentials redacted, and each line escaped
/// (its line breaks kept).
pub fn scrub(text: &str) -> String {
    jr2_probe::sanitize::redact_shapes(text)
        .split('\n')
        .map(jr2_probe::sanitize::escape)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes a file that did not exist, its owner's only (0600), through [`scrub`]: an existing path, a symbolic link
/// among them, is an error.
fn new_file(path: &Path, contents: impl AsRef<str>) -> io::Result<()> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let mut f = o.open(path)?;
    f.write_all(scrub(contents.as_ref()).as_bytes())
}

/// Writes the evidence bundle into `dir`, which it creates (see [`check`]): the pods as created (Stand-ins only),
/// their last status, Events, the probe's lines, the Custodian's log, the verdict, the run id and UTC times. Every
/// file is created new. Nothing in it holds a secret value: the pods carry references and Stand-ins, and the
/// probe's output is redacted at the source.
pub fn write(
    dir: &Path,
    created: &[CheckPod],
    run: &RunResult,
    verdict: &DriverVerdict,
) -> io::Result<()> {
    make_dir(dir)?;
    new_file(
        &dir.join("pods-as-created.yaml"),
        yaml::documents(created.iter().map(|c| redact::by_name(&c.pod)))?,
    )?;
    for pod in &run.pods {
        let d = dir.join(&pod.name);
        new_dir(&d)?;
        if let Some(p) = &pod.evidence.pod {
            new_file(
                &d.join("pod-last-status.yaml"),
                yaml::document(&redact::by_name(p))?,
            )?;
        }
        new_file(
            &d.join("events.yaml"),
            yaml::document(&redact::by_name(&pod.evidence.events))?,
        )?;
        new_file(&d.join("probe.jsonl"), pod.evidence.probe_lines.join("\n"))?;
        new_file(
            &d.join("custodian.log"),
            pod.evidence.custodian_log.join("\n"),
        )?;
        if pod.evidence.events_forbidden {
            new_file(
                &d.join("events-forbidden.txt"),
                "the Events of this pod could not be read (RBAC)\n",
            )?;
        }
    }
    new_file(
        &dir.join("verdict.json"),
        serde_json::to_string_pretty(verdict).unwrap_or_default(),
    )?;
    new_file(
        &dir.join("run.txt"),
        format!(
            "run id: {}\nnamespace: {}\nstarted at (UTC): {}\nwritten at (UTC): {}\n",
            verdict.run_id,
            verdict.namespace,
            verdict.started_at,
            rfc3339_utc(SystemTime::now())
        ),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    /// A fresh directory of this test's own under the temp dir.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("jr2-evidence-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn verdict() -> DriverVerdict {
        DriverVerdict {
            schema: crate::verdict::DRIVER_VERDICT_SCHEMA.to_owned(),
            ok: false,
            exit_code: 1,
            run_id: "run0001".to_owned(),
            namespace: "demo".to_owned(),
            skipped: false,
            started_at: "2026-12-04T18:36:47Z".to_owned(),
            elapsed_ms: 1,
            models: Vec::new(),
            pods: Vec::new(),
            lines: Vec::new(),
            release: crate::verdict::Release {
                driver: "0.1.0".to_owned(),
                probe: None,
                probe_image: "registry.example.com/jr2/jr2-probe:0.1.0".to_owned(),
            },
            kube_context: None,
            cluster: None,
        }
    }

    fn empty_run() -> RunResult {
        RunResult {
            pods: Vec::new(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn a_new_directory_is_created_and_an_empty_one_taken() {
        let base = scratch("new");
        let dir = base.join("a/b/evidence");
        assert_eq!(check(&dir), Ok(()));
        write(&dir, &[], &empty_run(), &verdict()).unwrap();
        for f in ["pods-as-created.yaml", "verdict.json", "run.txt"] {
            assert!(dir.join(f).is_file(), "{f}");
        }
        let empty = base.join("empty");
        fs::create_dir(&empty).unwrap();
        assert_eq!(check(&empty), Ok(()));
        write(&empty, &[], &empty_run(), &verdict()).unwrap();
        // Written once: a second bundle into the same directory is refused, nothing overwritten.
        assert!(check(&dir).unwrap_err().contains("is not empty"));
        assert!(write(&dir, &[], &empty_run(), &verdict()).is_err());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_verdict_json_link_in_an_existing_directory_is_not_followed() {
        let base = scratch("link");
        let target = base.join("precious");
        fs::write(&target, "keep me").unwrap();
        let dir = base.join("evidence");
        fs::create_dir(&dir).unwrap();
        symlink(&target, dir.join("verdict.json")).unwrap();
        assert!(check(&dir).unwrap_err().contains("is not empty"));
        assert!(write(&dir, &[], &empty_run(), &verdict()).is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_dangling_link_creates_no_target() {
        let base = scratch("dangling");
        let dir = base.join("evidence");
        fs::create_dir(&dir).unwrap();
        let target = base.join("created-through-the-link");
        symlink(&target, dir.join("run.txt")).unwrap();
        assert!(check(&dir).unwrap_err().contains("is not empty"));
        assert!(write(&dir, &[], &empty_run(), &verdict()).is_err());
        assert!(!target.exists());
        // Even past the check (a link planted after it), the file is created new: the link is not followed.
        assert!(new_file(&dir.join("run.txt"), "x").is_err());
        assert!(!target.exists());
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_non_empty_directory_a_file_and_a_linked_directory_are_refused() {
        let base = scratch("refused");
        let full = base.join("full");
        fs::create_dir(&full).unwrap();
        fs::write(full.join("notes.txt"), "mine").unwrap();
        assert!(
            check(&full)
                .unwrap_err()
                .ends_with("is not empty: name a new directory for the bundle (or an empty one)")
        );
        assert!(write(&full, &[], &empty_run(), &verdict()).is_err());
        assert_eq!(fs::read_dir(&full).unwrap().count(), 1, "nothing written");
        let file = base.join("file");
        fs::write(&file, "").unwrap();
        assert!(check(&file).unwrap_err().contains("is not a directory"));
        let empty = base.join("empty");
        fs::create_dir(&empty).unwrap();
        let link = base.join("link");
        symlink(&empty, &link).unwrap();
        assert!(check(&link).unwrap_err().contains("symbolic link"));
        assert!(write(&link, &[], &empty_run(), &verdict()).is_err());
        assert_eq!(fs::read_dir(&empty).unwrap().count(), 0);
        fs::remove_dir_all(&base).unwrap();
    }

    /// Issue 40, item 4: what admission injected into the pod the cluster shows back is redacted, by the name's
    /// meaning (as the plan judges names) and by the value's shape, in the pod's last status and its Events.
    #[test]
    fn what_admission_injected_is_redacted_by_name_and_shape() {
        let base = scratch("injected");
        let dir = base.join("evidence");
        let injected: k8s_openapi::api::core::v1::Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "jr2-preflight-demo-harness-run0001",
                "annotations": {"vault.example.com/token": "hvs.PW4242vault"}},
            "spec": {
                "initContainers": [{"name": "mesh-init", "image": "mesh/init:1", "env": [
                    {"name": "MESH_BOOTSTRAP", "value": "eyJhbGciOiJIUzI1NiJ9.eyJtZXNoIjoiUFc0MjQyIn0.PW4242sig"}]}],
                "containers": [{"name": "probe", "image": "probe:1", "env": [
                    {"name": "DB_PASSWORD", "value": "PW4242db"},
                    {"name": "VAULT_TOKEN", "value": "PW4242token"},
                    {"name": "ANTHROPIC_API_KEY", "value": "jr2-held-ANTHROPIC_API_KEY"}]}]
            }
        }))
        .unwrap();
        let event: k8s_openapi::api::core::v1::Event = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "e1", "annotations": {"example.com/api-key": "PW4242event"}},
            "involvedObject": {"kind": "Pod", "name": "jr2-preflight-demo-harness-run0001"},
            "reason": "Injected", "message": "bootstrap eyJhbGciOiJIUzI1NiJ9.eyJtZXNoIjoiUFc0MjQyIn0.PW4242sig"
        }))
        .unwrap();
        let mut pod = interrupted_pod();
        pod.evidence.pod = Some(injected);
        pod.evidence.events = vec![event];
        let run = RunResult {
            pods: vec![pod],
            warnings: Vec::new(),
        };
        write(&dir, &[], &run, &verdict()).unwrap();
        let pod_dir = dir.join("jr2-preflight-demo-harness-run0001");
        for f in ["pod-last-status.yaml", "events.yaml"] {
            let text = fs::read_to_string(pod_dir.join(f)).unwrap();
            assert!(
                !text.contains("PW4242") && !text.contains("eyJ"),
                "{f}: {text}"
            );
            assert!(text.contains("[redacted]"), "{f}: {text}");
        }
        let status = fs::read_to_string(pod_dir.join("pod-last-status.yaml")).unwrap();
        assert!(status.contains("jr2-held-ANTHROPIC_API_KEY"), "{status}");
        fs::remove_dir_all(&base).unwrap();
    }

    /// A check pod of the demo Instance whose run was interrupted, with no evidence yet.
    fn interrupted_pod() -> crate::run::PodRun {
        crate::run::PodRun {
            name: "jr2-preflight-demo-harness-run0001".to_owned(),
            uid: None,
            node: None,
            models: Vec::new(),
            results: Vec::new(),
            outcome: crate::run::PodOutcome::Failed(crate::run::PodFailure {
                kind: crate::run::FailureKind::Interrupted,
                lines: Vec::new(),
            }),
            evidence: crate::run::Evidence::default(),
            kept: false,
            node_ahead: None,
        }
    }

    /// Issue 25, item 9: what a pod wrote is redacted by shape and escaped, and the bundle is its owner's only.
    #[test]
    fn the_bundle_is_redacted_escaped_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let base = scratch("scrubbed");
        let dir = base.join("evidence");
        let mut pod = interrupted_pod();
        pod.evidence.custodian_log = vec![
            "debug: upstream key sk-ant-api03-PW4242abcdefghijkl and AIzaSyPW4242abcdefghijklmnopqrstuvwxyz1".to_owned(),
            "\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J proxy http://corp:PW4242@proxy:3128".to_owned(),
        ];
        pod.evidence.probe_lines = vec!["raw \u{1b}[31m\u{202e}".to_owned()];
        let run = RunResult {
            pods: vec![pod],
            warnings: Vec::new(),
        };
        write(&dir, &[], &run, &verdict()).unwrap();
        let pod_dir = dir.join("jr2-preflight-demo-harness-run0001");
        let log = fs::read_to_string(pod_dir.join("custodian.log")).unwrap();
        assert!(!log.contains("PW4242"), "{log}");
        assert!(!log.contains('\u{1b}') && !log.contains('\u{7}'), "{log:?}");
        assert_eq!(log.lines().count(), 2, "{log}");
        let probe = fs::read_to_string(pod_dir.join("probe.jsonl")).unwrap();
        assert!(
            !probe.contains('\u{1b}') && !probe.contains('\u{202e}'),
            "{probe:?}"
        );
        for d in [&dir, &pod_dir] {
            assert_eq!(
                fs::metadata(d).unwrap().permissions().mode() & 0o777,
                0o700,
                "{d:?}"
            );
        }
        for f in ["verdict.json", "run.txt", "pods-as-created.yaml"] {
            let mode = fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{f}");
        }
        assert_eq!(
            fs::metadata(pod_dir.join("custodian.log"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        fs::remove_dir_all(&base).unwrap();
    }
}
