//! The kubelet stand-in's part in each pod's life: what the [`Scenario`] of the fake says happens to a pod just
//! created (scheduled or not, an image that never pulls, a volume that never mounts, the probe run or killed), played
//! through its [`PodCtl`].

use std::time::Duration;

use serde_json::json;

use super::pod_ctl::PodCtl;
use super::probe_run::{ProbeRun, run_probe};
use super::scenario::Scenario;

/// Plays `scenario` on a pod just created.
pub(super) async fn kubelet(ctl: PodCtl, scenario: Scenario) {
    tokio::time::sleep(Duration::from_millis(5)).await;
    match scenario {
        Scenario::Nothing => {}
        Scenario::AllOk => {
            ctl.schedule();
            ctl.start_sidecars();
            run_probe(&ctl, ProbeRun::default()).await;
        }
        Scenario::OomKilledAfterFirstResult => {
            ctl.schedule();
            ctl.start_sidecars();
            run_probe(
                &ctl,
                ProbeRun {
                    oom_after_first_result: true,
                    log_lines: None,
                },
            )
            .await;
        }
        Scenario::UnschedulableThenScheduled { messages, each } => {
            for m in &messages {
                ctl.unschedulable(m);
                tokio::time::sleep(each).await;
            }
            ctl.schedule();
            ctl.start_sidecars();
            run_probe(&ctl, ProbeRun::default()).await;
        }
        Scenario::ImagePullBackOff => {
            ctl.schedule();
            ctl.start_sidecars();
            let image = ctl.image("probe");
            let error = format!(
                "rpc error: code = NotFound desc = failed to pull and unpack image \"{image}\": failed to resolve reference \"{image}\": {image}: not found"
            );
            ctl.event(
                "Normal",
                "Pulling",
                &format!("Pulling image \"{image}\""),
                "kubelet",
            );
            // The kubelet's words (pkg/kubelet/images/image_manager.go, 1.32+): the Event says "Failed to pull
            // image", the status carries the runtime's error; the back-off's status appends the last pull error.
            let failed = format!("Failed to pull image \"{image}\": {error}");
            ctl.event("Warning", "Failed", &failed, "kubelet");
            ctl.event("Warning", "Failed", "Error: ErrImagePull", "kubelet");
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ErrImagePull", "message": error}}),
                false,
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
            let back_off = format!("Back-off pulling image \"{image}\": ErrImagePull: {error}");
            ctl.container(
                "probe",
                json!({"waiting": {"reason": "ImagePullBackOff", "message": back_off}}),
                false,
            );
            loop {
                ctl.event(
                    "Normal",
                    "BackOff",
                    &format!("Back-off pulling image \"{image}\""),
                    "kubelet",
                );
                ctl.event("Warning", "Failed", "Error: ImagePullBackOff", "kubelet");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        Scenario::CreateContainerConfigError { message } => {
            ctl.schedule();
            ctl.start_sidecars();
            let image = ctl.image("probe");
            loop {
                ctl.event(
                    "Normal",
                    "Pulled",
                    &format!("Container image \"{image}\" already present on machine"),
                    "kubelet",
                );
                ctl.event("Warning", "Failed", &format!("Error: {message}"), "kubelet");
                ctl.container(
                    "probe",
                    json!({"waiting": {"reason": "CreateContainerConfigError", "message": message}}),
                    false,
                );
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        Scenario::FailedMount { volume, secret } => {
            ctl.schedule();
            let message = format!(
                "MountVolume.SetUp failed for volume \"{volume}\" : secret \"{secret}\" not found"
            );
            loop {
                ctl.event("Warning", "FailedMount", &message, "kubelet");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        Scenario::Script(script) => script(ctl).await,
    }
}
