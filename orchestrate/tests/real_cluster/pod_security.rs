//! Pod Security: the driver's up-front evaluator (`pod_security.rs`) against the real admission, on every check pod
//! the table builds, in `restricted` and `baseline` namespaces. The real answer is the API server's server-side dry
//! run of the pods `--dry-run` prints; the driver's is its run (a refused pod is not created: one `error:` line).

use serde_json::{Value, json};

use crate::harness::*;

/// Harness pod specs whose check pods differ in what Pod Security weighs (the Custodian's security context and
/// volumes are copied as they are; the probe's and the pod's are made restricted by the driver).
fn variants() -> Vec<(&'static str, Value)> {
    let with = |f: &dyn Fn(&mut Value)| {
        let mut s = harness_spec();
        f(&mut s);
        s
    };
    vec![
        ("as jr2 renders it", harness_spec()),
        (
            "a privileged Custodian",
            with(&|s| s["containers"][1]["securityContext"]["privileged"] = json!(true)),
        ),
        (
            "a Custodian adding NET_ADMIN",
            with(&|s| {
                s["containers"][1]["securityContext"]["capabilities"] =
                    json!({"drop": ["ALL"], "add": ["NET_ADMIN"]})
            }),
        ),
        (
            "a Custodian adding CHOWN",
            with(&|s| {
                s["containers"][1]["securityContext"]["capabilities"] = json!({"add": ["CHOWN"]})
            }),
        ),
        (
            "a Custodian running as root",
            with(&|s| {
                s["containers"][1]["securityContext"]["runAsNonRoot"] = json!(false);
                s["containers"][1]["securityContext"]["runAsUser"] = json!(0);
            }),
        ),
        (
            "a Custodian with seccomp Unconfined",
            with(&|s| {
                s["containers"][1]["securityContext"]["seccompProfile"] =
                    json!({"type": "Unconfined"})
            }),
        ),
        (
            "a Custodian allowing privilege escalation",
            with(&|s| {
                s["containers"][1]["securityContext"]["allowPrivilegeEscalation"] = json!(true)
            }),
        ),
        (
            "a Custodian without runAsNonRoot",
            with(&|s| {
                s["containers"][1]["securityContext"]
                    .as_object_mut()
                    .unwrap()
                    .remove("runAsNonRoot");
            }),
        ),
        (
            "a Custodian with a procMount",
            with(&|s| s["containers"][1]["securityContext"]["procMount"] = json!("Default")),
        ),
        (
            "a Custodian mounting a hostPath",
            with(&|s| {
                s["volumes"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "host", "hostPath": {"path": "/etc"}}));
                s["containers"][1]["volumeMounts"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "host", "mountPath": "/host", "readOnly": true}));
            }),
        ),
    ]
}

fn agree_at(level: &str) {
    let ns = namespace(
        &format!("rc-psa-{level}"),
        &[("pod-security.kubernetes.io/enforce", level)],
    );
    let cluster = &env().cluster;
    let mut table = Vec::new();
    for (what, spec) in variants() {
        let plan = plan(&ns, &[("sandbox", spec, &["ok"])]);
        let path = write_plan(&plan);
        let dry = driver(
            As::User,
            &["run", "--plan", path.to_str().unwrap(), "--dry-run"],
        );
        if dry.code() == Some(2) {
            // The plan itself is refused (host access or privilege is never copied into a check pod): no pod to weigh.
            assert!(
                dry.stderr.starts_with("error: plan.placements[0].podSpec.")
                    && dry.stderr.contains("a check pod never takes host access"),
                "{what}: {}",
                dry.stderr
            );
            table.push(format!(
                "{level:<10} {what:<44} refused by the plan's validation, before any pod"
            ));
            continue;
        }
        assert_eq!(dry.code(), Some(0), "{what}: {}", dry.stderr);
        let real = cluster.server_dry_run(&ns, &dry.stdout);
        let real_refuses = real.is_err();
        let real_words = real.err().unwrap_or_default();
        if real_refuses {
            assert!(
                real_words.contains("violates PodSecurity"),
                "{what}: the API server refused for another reason: {real_words}"
            );
        }
        let run = run_plan(&plan, &[]);
        let driver_refuses = run.lines().iter().any(|l| {
            l.contains(&format!(
                "enforces Pod Security \"{level}\", which refuses the check pod"
            ))
        });
        if !driver_refuses {
            assert_eq!(
                run.code(),
                Some(0),
                "{what}: admitted by the driver, so it runs: {}",
                run.stderr
            );
        }
        table.push(format!(
            "{level:<10} {what:<44} real: {:<8} driver: {}",
            if real_refuses { "refuses" } else { "admits" },
            if driver_refuses { "refuses" } else { "admits" }
        ));
        assert_eq!(
            driver_refuses, real_refuses,
            "{what} at {level}: the driver and the real admission disagree\nreal: {real_words}\ndriver:\n{}",
            run.stderr
        );
        assert_no_pod_left(&ns);
    }
    eprintln!("{}", table.join("\n"));
    // At restricted the table must hold pods the real admission refuses and pods it admits, or it proves little (at
    // baseline, every pod the plan's validation lets through is admitted: what baseline refuses is host access).
    if level == "restricted" {
        assert!(
            table.iter().any(|l| l.contains("real: refuses"))
                && table.iter().any(|l| l.contains("real: admits")),
            "{}",
            table.join("\n")
        );
    }
}

#[test]
fn the_evaluator_and_the_real_admission_agree_at_restricted() {
    let _g = shared();
    agree_at("restricted");
}

#[test]
fn the_evaluator_and_the_real_admission_agree_at_baseline() {
    let _g = shared();
    agree_at("baseline");
}
