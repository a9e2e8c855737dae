//! Reading a spec or a plan from a file or stdin, bounded: `/dev/zero` or a runaway generator stops at the limit
//! instead of filling memory. Pipes and process substitutions (`--plan <(jr2 plan)`) are read like files.

use std::io::Read;
use std::path::Path;

/// Why an input file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It cannot be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path (`-`: stdin).
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// It holds more than the limit.
    #[error("{path} is larger than {limit}")]
    TooLarge {
        /// The path (`-`: stdin).
        path: String,
        /// The limit, in words (`1 MiB`).
        limit: &'static str,
    },
    /// It is not UTF-8.
    #[error("{path} is not UTF-8 text (at byte {at})")]
    NotUtf8 {
        /// The path (`-`: stdin).
        path: String,
        /// The first byte that is not.
        at: usize,
    },
}

/// One mebibyte, the limit of a run spec and of a plan.
pub const MIB: u64 = 1024 * 1024;

/// Reads `path` (`-`: stdin) as UTF-8 text of at most [`MIB`] bytes.
pub fn read_text(path: &Path) -> Result<String, InputError> {
    let shown = || path.display().to_string();
    let io = |source| InputError::Io {
        path: shown(),
        source,
    };
    let source: Box<dyn Read> = if path == Path::new("-") {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(io)?)
    };
    let mut bytes = Vec::new();
    source.take(MIB + 1).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > MIB {
        return Err(InputError::TooLarge {
            path: shown(),
            limit: "1 MiB",
        });
    }
    String::from_utf8(bytes).map_err(|e| InputError::NotUtf8 {
        path: shown(),
        at: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_zero_stops_at_the_limit() {
        let e = read_text(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.to_string(), "/dev/zero is larger than 1 MiB");
    }

    #[test]
    fn a_missing_file_and_bytes_that_are_not_text() {
        let e = read_text(Path::new("/nonexistent/plan.json")).unwrap_err();
        assert!(matches!(e, InputError::Io { .. }), "{e}");
        let path = std::env::temp_dir().join(format!("jr2-input-{}", std::process::id()));
        std::fs::write(&path, b"{\"a\": \"\xff\"}").unwrap();
        let e = read_text(&path).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{} is not UTF-8 text (at byte 7)", path.display())
        );
        std::fs::write(&path, "{}").unwrap();
        assert_eq!(read_text(&path).unwrap(), "{}");
        std::fs::remove_file(&path).ok();
    }
}
