//! Reading a spec or a plan from a file or stdin, bounded: `/dev/zero` or a runaway generator stops at the limit
//! instead of filling memory. Pipes and process substitutions (`--plan <(jr2 plan)`) are read like files, within a
//! deadline ([`PIPE_DEADLINE`]): a named pipe that no process writes would block its open, or its read, forever
//! (issue 25, item 11).

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
    /// A pipe that gave no end of its text in time.
    #[error("{path} is a pipe that gave no end of its text in {seconds} s")]
    NoWriter {
        /// The path.
        path: String,
        /// The deadline, in seconds.
        seconds: u64,
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

/// How long a named pipe (a FIFO, a process substitution) may take to give its whole text.
pub const PIPE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(30);

/// Reads `path` (`-`: stdin) as UTF-8 text of at most [`MIB`] bytes; a named pipe within [`PIPE_DEADLINE`].
pub fn read_text(path: &Path) -> Result<String, InputError> {
    read_text_within(path, PIPE_DEADLINE)
}

/// [`read_text`], a named pipe within `deadline`.
pub fn read_text_within(path: &Path, deadline: std::time::Duration) -> Result<String, InputError> {
    let shown = || path.display().to_string();
    let io = |source| InputError::Io {
        path: shown(),
        source,
    };
    let bytes = if path == Path::new("-") {
        read_bounded(Box::new(std::io::stdin())).map_err(io)?
    } else if is_fifo(path) {
        // Opened and read on a thread of its own, which a pipe no one writes leaves blocked: the process does not
        // wait for it.
        let (tx, rx) = std::sync::mpsc::channel();
        let owned = path.to_owned();
        std::thread::Builder::new()
            .name("read-pipe".into())
            .spawn(move || {
                let read = std::fs::File::open(&owned).and_then(|f| read_bounded(Box::new(f)));
                let _ = tx.send(read);
            })
            .map_err(io)?;
        match rx.recv_timeout(deadline) {
            Ok(read) => read.map_err(io)?,
            Err(_) => {
                return Err(InputError::NoWriter {
                    path: shown(),
                    seconds: deadline.as_secs().max(1),
                });
            }
        }
    } else {
        read_bounded(Box::new(std::fs::File::open(path).map_err(io)?)).map_err(io)?
    };
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

/// At most [`MIB`] + 1 bytes of `source`.
fn read_bounded(source: Box<dyn Read>) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    source.take(MIB + 1).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `path` is a named pipe (a FIFO; a process substitution's `/dev/fd/N` is one too).
pub fn is_fifo(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
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

    /// Issue 25, item 11: a named pipe that no process writes ends in an error within the deadline; one that is
    /// written is read.
    #[cfg(unix)]
    #[test]
    fn a_pipe_no_one_writes_ends_within_the_deadline() {
        let dir = std::env::temp_dir().join(format!("jr2-input-fifo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("plan.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        assert!(is_fifo(&fifo));
        let started = std::time::Instant::now();
        let e = read_text_within(&fifo, std::time::Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, InputError::NoWriter { .. }), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // Written: read like a file (another pipe: the thread left blocked on the first one would take its text).
        let fifo = dir.join("plan2.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::write(&fifo, "{}"))
        };
        assert_eq!(
            read_text_within(&fifo, std::time::Duration::from_secs(10)).unwrap(),
            "{}"
        );
        writer.join().unwrap().unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
