//! The files a kubeconfig run reads, bounded before kube reads them (issue 25, item 11).
//!
//! kube reads a kubeconfig, and the files it names (`certificate-authority`, `client-certificate`, `client-key`,
//! `tokenFile`), whole and with no limit: `--kubeconfig /dev/zero` (or `KUBECONFIG=/dev/zero`, or a
//! `certificate-authority: /dev/zero`) took about 2.1 GB before the process ran out of memory, and a named pipe no
//! one writes blocked the run forever. Each is checked first: a regular file (following links), of at most
//! [`MAX_KUBECONFIG_BYTES`] (a kubeconfig) or [`MAX_REFERENCED_BYTES`] (a certificate, a key, a token). A path that
//! does not exist is left to kube, which says so in its own words.

use std::path::{Path, PathBuf};

use kube::config::Kubeconfig;

/// The largest kubeconfig read (kubectl's own are a few KiB; a merged one of many clusters, a few hundred).
pub const MAX_KUBECONFIG_BYTES: u64 = 4 << 20;
/// The largest certificate, key or token file a kubeconfig may name.
pub const MAX_REFERENCED_BYTES: u64 = 1 << 20;

/// Why a file a kubeconfig run would read is not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FileError {
    /// Not a regular file: a device, a pipe, a directory.
    #[error("{what} {path} is not a regular file")]
    NotAFile {
        /// What it is to the kubeconfig (`kubeconfig`, `certificate-authority`...).
        what: &'static str,
        /// The path, escaped.
        path: String,
    },
    /// Larger than its bound.
    #[error("{what} {path} is larger than {limit} KiB")]
    TooLarge {
        /// What it is to the kubeconfig.
        what: &'static str,
        /// The path, escaped.
        path: String,
        /// The bound, in KiB.
        limit: u64,
    },
}

/// `path` is a regular file of at most `max` bytes, or absent.
pub fn check_file(path: &Path, what: &'static str, max: u64) -> Result<(), FileError> {
    let shown = || jr2_probe::sanitize::escape_truncate(&path.display().to_string(), 200);
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    if !meta.is_file() {
        return Err(FileError::NotAFile {
            what,
            path: shown(),
        });
    }
    if meta.len() > max {
        return Err(FileError::TooLarge {
            what,
            path: shown(),
            limit: max >> 10,
        });
    }
    Ok(())
}

/// The kubeconfig files kube would read: `explicit`, else each of `KUBECONFIG`'s, else `~/.kube/config`.
pub fn check_kubeconfigs(explicit: Option<&Path>) -> Result<(), FileError> {
    let paths: Vec<PathBuf> = match explicit {
        Some(p) => vec![p.to_owned()],
        None => match std::env::var_os("KUBECONFIG") {
            Some(value) => std::env::split_paths(&value)
                .filter(|p| !p.as_os_str().is_empty())
                .collect(),
            None => Vec::new(),
        },
    };
    let paths = if paths.is_empty() {
        std::env::home_dir()
            .map(|h| h.join(".kube").join("config"))
            .into_iter()
            .collect()
    } else {
        paths
    };
    for p in &paths {
        check_file(p, "kubeconfig", MAX_KUBECONFIG_BYTES)?;
    }
    Ok(())
}

/// The files `file` names (made absolute by kube's read): each cluster's `certificate-authority`, each user's
/// `client-certificate`, `client-key` and `tokenFile`.
pub fn check_referenced(file: &Kubeconfig) -> Result<(), FileError> {
    for c in file.clusters.iter().filter_map(|c| c.cluster.as_ref()) {
        if let Some(p) = &c.certificate_authority {
            check_file(Path::new(p), "certificate-authority", MAX_REFERENCED_BYTES)?;
        }
    }
    for a in file.auth_infos.iter().filter_map(|a| a.auth_info.as_ref()) {
        for (what, p) in [
            ("client-certificate", &a.client_certificate),
            ("client-key", &a.client_key),
            ("tokenFile", &a.token_file),
        ] {
            if let Some(p) = p {
                check_file(Path::new(p), what, MAX_REFERENCED_BYTES)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_pipes_are_not_read() {
        let e = check_file(Path::new("/dev/zero"), "kubeconfig", MAX_KUBECONFIG_BYTES).unwrap_err();
        assert_eq!(e.to_string(), "kubeconfig /dev/zero is not a regular file");
        assert!(check_kubeconfigs(Some(Path::new("/dev/zero"))).is_err());
        assert_eq!(
            check_file(Path::new("/nonexistent/kubeconfig"), "kubeconfig", 1),
            Ok(()),
            "kube says it is missing, in its words"
        );
        let dir = std::env::temp_dir().join(format!("jr2-kubeconfig-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big");
        std::fs::write(&big, vec![b'x'; 2048]).unwrap();
        assert!(matches!(
            check_file(&big, "tokenFile", 1024),
            Err(FileError::TooLarge { limit: 1, .. })
        ));
        let yaml = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n    certificate-authority: /dev/zero\nusers:\n- name: u\n  user:\n    tokenFile: /dev/zero\ncontexts: []\n";
        let file = Kubeconfig::from_yaml(yaml).unwrap();
        assert_eq!(
            check_referenced(&file).unwrap_err().to_string(),
            "certificate-authority /dev/zero is not a regular file"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}
