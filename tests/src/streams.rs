//! Standard streams that cannot be written, for the tests that a binary never panics on one: `/dev/full` (every
//! write is ENOSPC) and a pipe whose reader is already gone (every write is EPIPE, deterministically: the read end
//! is closed before the child starts).

/// `/dev/full`, opened for writing.
pub fn dev_full() -> std::fs::File {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
}

/// The write end of a pipe whose read end is closed.
pub fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    writer
}
