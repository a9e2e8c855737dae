//! The command lines of both binaries, as their tests hold them: a clap error ends in one place
//! (`jr2_probe::cli::usage_error`, issue 26, move 3), alike in `jr2-probe` and `jr2-preflight`.

use std::process::Command;

/// `bin` (the binary called `name`) ends its usage errors as both binaries must: with no subcommand, clap's help
/// and exit 2 (not a garbled `error:` line); an unknown flag of `subcommand`, one `error:` line naming that
/// subcommand's help, exit 2; `--help`, exit 0.
pub fn assert_usage_errors(bin: &str, name: &str, subcommand: &str) {
    let run = |args: &[&str]| {
        let out = Command::new(bin).args(args).output().expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("Usage: {name} <COMMAND>")),
        "{stderr}"
    );
    assert!(!stderr.starts_with("error:"), "{stderr}");
    let (code, _, stderr) = run(&[subcommand, "--no-such-flag"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: unexpected argument '--no-such-flag' found")
            && stderr.ends_with(&format!(" (see {name} {subcommand} --help)\n"))
            && stderr.lines().count() == 1,
        "{stderr}"
    );
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains(&format!("Usage: {name} <COMMAND>")),
        "{stdout}"
    );
}
