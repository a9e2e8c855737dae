//! The README's "Code" table names a room for every source file of the workspace (issue 26, move 5): a file added
//! without a room, or a room left naming a file that is gone, fails here, as `images/test` holds the README's
//! commands to the code.
//!
//! A row's first cell lists backticked paths: the first is from the repository's root, a folder (`probe/src/spec/`)
//! or a file (`probe/src/catalog.rs`); the next ones are beside the first (`target.rs`, `kube/`). A folder covers
//! every file under it.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, as a path from the root with `/`.
fn sources(root: &Path, dir: &str, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = format!("{dir}/{name}");
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            sources(root, &path, out);
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The paths each row of the table covers: folders end in `/`.
fn rooms(readme: &str) -> Vec<String> {
    let table = readme
        .split("\n## Code\n")
        .nth(1)
        .expect("README.md has a \"## Code\" section");
    let mut covered = Vec::new();
    for line in table.lines().filter(|l| l.starts_with("| `")) {
        let cell = line.split(" | ").next().unwrap_or_default();
        let paths: Vec<&str> = cell.split('`').skip(1).step_by(2).collect();
        let Some(first) = paths.first() else { continue };
        let base = if first.ends_with('/') {
            first
                .trim_end_matches('/')
                .rsplit_once('/')
                .map_or("", |(b, _)| b)
        } else {
            first.rsplit_once('/').map_or("", |(b, _)| b)
        };
        covered.push((*first).to_owned());
        for p in &paths[1..] {
            covered.push(format!("{base}/{p}"));
        }
    }
    covered
}

#[test]
fn every_source_file_has_a_room_and_every_room_exists() {
    let root = root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let covered = rooms(&readme);
    assert!(covered.len() > 20, "the table was read: {covered:?}");
    let mut files = Vec::new();
    for dir in [
        "probe/src",
        "orchestrate/src",
        "tests/src",
        "tests/custodian/src",
    ] {
        sources(&root, dir, &mut files);
    }
    files.sort();
    let homeless: Vec<&String> = files
        .iter()
        .filter(|f| {
            !covered
                .iter()
                .any(|c| *f == c || (c.ends_with('/') && f.starts_with(c.as_str())))
        })
        .collect();
    assert!(
        homeless.is_empty(),
        "source files no row of README.md's Code table names: {homeless:#?}"
    );
    let gone: Vec<&String> = covered
        .iter()
        .filter(|c| c.contains("/src") || c.starts_with("tests/custodian"))
        .filter(|c| !root.join(c.trim_end_matches('/')).exists())
        .collect();
    assert!(gone.is_empty(), "rooms that name nothing: {gone:#?}");
}
