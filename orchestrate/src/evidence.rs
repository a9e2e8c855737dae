//! `--evidence DIR`: the bundle a failed check leaves to attach to a report, written through the one YAML writer
//! (`yaml.rs`) that the dry run uses. Nothing in it holds a secret value: the pods carry references and Stand-ins,
//! and the probe's output is redacted at the source.

use std::path::Path;
use std::time::SystemTime;

use jr2_probe::contract::verdict::rfc3339_utc;

use crate::pod::CheckPod;
use crate::run::RunResult;
use crate::verdict::DriverVerdict;
use crate::yaml;

/// Writes the evidence bundle: the pods as created (Stand-ins only), their last status, Events, the probe's lines,
/// the Custodian's log, the verdict, the run id and UTC times. Nothing in it holds a secret value: the pods carry
/// references and Stand-ins, and the probe's output is redacted at the source.
pub fn write(
    dir: &Path,
    created: &[CheckPod],
    run: &RunResult,
    verdict: &DriverVerdict,
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::write(
        dir.join("pods-as-created.yaml"),
        yaml::documents(created.iter().map(|c| &c.pod))?,
    )?;
    for pod in &run.pods {
        let d = dir.join(&pod.name);
        std::fs::create_dir_all(&d)?;
        if let Some(p) = &pod.evidence.pod {
            std::fs::write(d.join("pod-last-status.yaml"), yaml::document(p)?)?;
        }
        std::fs::write(d.join("events.yaml"), yaml::document(&pod.evidence.events)?)?;
        std::fs::write(d.join("probe.jsonl"), pod.evidence.probe_lines.join("\n"))?;
        std::fs::write(
            d.join("custodian.log"),
            pod.evidence.custodian_log.join("\n"),
        )?;
        if pod.evidence.events_forbidden {
            std::fs::write(
                d.join("events-forbidden.txt"),
                "the Events of this pod could not be read (RBAC)\n",
            )?;
        }
    }
    std::fs::write(
        dir.join("verdict.json"),
        serde_json::to_string_pretty(verdict).unwrap_or_default(),
    )?;
    std::fs::write(
        dir.join("run.txt"),
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
