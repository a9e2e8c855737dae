//! The dry run: the YAML of the example's check pods, the images it lists, and the driver's usage errors.

use std::path::Path;
use std::process::Command;

use jr2_preflight::pod::to_yaml;
use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

mod common;
use common::{RUN_ID, check_pods, example, example_json, now};

#[test]
fn dry_run_yaml_of_the_example() {
    let pods = check_pods(&example(), RUN_ID, now());
    let yaml = to_yaml(&pods);
    assert_eq!(
        yaml.matches("\n---\n").count() + usize::from(yaml.starts_with("---\n")),
        2
    );
    // It reads back as the same pods.
    let back: Vec<Pod> = yaml
        .split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_yaml::from_str(d).unwrap())
        .collect();
    assert_eq!(back, pods);
    insta::assert_snapshot!("dry_run_example", yaml);
}

/// `jr2-preflight images` (issue 15, item 4): each image the dry-run pods reference, once, read back from the dry-run
/// YAML (not through `pod::images`); the probe image follows `--probe-image`; without a plan, the probe image alone;
/// a bad `--probe-image` is one `error:` line naming the flag, exit 2, nothing on stdout.
#[test]
fn images_lists_what_the_dry_run_pods_reference() {
    let driver = env!("CARGO_BIN_EXE_jr2-preflight");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plan.json");
    let run = |args: &[&std::ffi::OsStr]| {
        let out = Command::new(driver).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let os = std::ffi::OsStr::new;
    let dry_run = |probe_image: &str| {
        let (code, yaml, stderr) = run(&[
            os("run"),
            os("--plan"),
            example.as_os_str(),
            os("--probe-image"),
            os(probe_image),
            os("--dry-run"),
        ]);
        assert_eq!(code, Some(0), "{stderr}");
        let mut images: Vec<String> = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(&yaml) {
            let pod: Value = serde::Deserialize::deserialize(doc).unwrap();
            for key in ["initContainers", "containers"] {
                for c in pod["spec"][key].as_array().into_iter().flatten() {
                    let image = c["image"]
                        .as_str()
                        .expect("every container names its image");
                    if !images.iter().any(|i| i == image) {
                        images.push(image.to_owned());
                    }
                }
            }
        }
        images
    };
    let plan_image = example_json()["probeImage"].as_str().unwrap().to_owned();
    let want = dry_run(&plan_image);
    assert!(want.contains(&plan_image), "{want:?}");
    assert!(want.len() >= 2, "the probe and the Custodians: {want:?}");
    let (code, stdout, stderr) = run(&[os("images"), os("--plan"), example.as_os_str()]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    assert_eq!(
        stdout,
        want.iter().map(|i| format!("{i}\n")).collect::<String>()
    );

    // A mirror's probe image replaces the plan's, as in the pods.
    let mirrored = "mirror.example.com:5000/jr2/jr2-probe:0.1.0";
    let (code, stdout, stderr) = run(&[
        os("images"),
        os("--plan"),
        example.as_os_str(),
        os("--probe-image"),
        os(mirrored),
    ]);
    assert_eq!((code, stderr.as_str()), (Some(0), ""));
    assert_eq!(
        stdout,
        dry_run(mirrored)
            .iter()
            .map(|i| format!("{i}\n"))
            .collect::<String>()
    );
    assert!(stdout.lines().any(|l| l == mirrored) && !stdout.lines().any(|l| l == plan_image));

    let (code, stdout, _) = run(&[os("images")]);
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout,
        format!("{}\n", jr2_preflight::plan::DEFAULT_PROBE_IMAGE)
    );

    let (code, stdout, stderr) = run(&[os("images"), os("--probe-image"), os("jr2/Probe:1")]);
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "error: --probe-image: \"jr2/Probe:1\" is not an image reference (the path's components are lower-case letters and digits joined by '.', '_', '__' or '-')\n"
    );
    assert_eq!(stdout, "");
    let (code, stdout, stderr) = run(&[os("images"), os("--plan-file"), example.as_os_str()]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(
        stderr.starts_with("error: ") && stderr.ends_with(" (see jr2-preflight images --help)\n"),
        "{stderr}"
    );
}

/// Both binaries end a clap error in one place (`jr2_probe::cli::usage_error`, issue 26, move 3): with no subcommand,
/// clap's help and exit 2 (the driver used to join the help into one garbled `error:` line).
#[test]
fn usage_errors_end_in_one_place() {
    jr2_testkit::cli::assert_usage_errors(
        env!("CARGO_BIN_EXE_jr2-preflight"),
        "jr2-preflight",
        "run",
    );
}
