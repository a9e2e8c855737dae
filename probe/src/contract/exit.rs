//! The exit codes of both binaries (`jr2-probe` and `jr2-preflight`), in one place.
//!
//! `jr2 up` and scripts branch on these numbers, so each is a documented constant and a variant of [`Exit`], in
//! the manner of fd's `exit_codes.rs` and nextest-metadata's `NextestExitCode`. The verdicts carry the number they
//! end with (`exitCode`), computed here and nowhere else.

/// How a run of either binary ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Exit {
    /// No model failed (warnings allowed); also `--help` and `--version`.
    Ok,
    /// A model failed, or the run could not be carried out (the cluster cannot be reached...).
    Failed,
    /// Bad input or usage, reported on one `error:` line before anything is contacted.
    Usage,
    /// Stopped by SIGINT (Ctrl-C): 128 + 2, as a shell reports it.
    Interrupted,
    /// Stopped by SIGTERM: 128 + 15.
    Terminated,
    /// Stopped by SIGHUP (the terminal or SSH session closed): 128 + 1.
    HungUp,
}

impl Exit {
    /// [`Exit::Ok`]'s code.
    pub const OK: u8 = 0;
    /// [`Exit::Failed`]'s code.
    pub const FAILED: u8 = 1;
    /// [`Exit::Usage`]'s code.
    pub const USAGE: u8 = 2;
    /// [`Exit::Interrupted`]'s code.
    pub const INTERRUPTED: u8 = 130;
    /// [`Exit::Terminated`]'s code.
    pub const TERMINATED: u8 = 143;
    /// [`Exit::HungUp`]'s code.
    pub const HUNG_UP: u8 = 129;

    /// The code the process ends with.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Ok => Self::OK,
            Exit::Failed => Self::FAILED,
            Exit::Usage => Self::USAGE,
            Exit::Interrupted => Self::INTERRUPTED,
            Exit::Terminated => Self::TERMINATED,
            Exit::HungUp => Self::HUNG_UP,
        }
    }

    /// The end of a run that finished: ok when no model failed.
    pub const fn of_run(ok: bool) -> Self {
        if ok { Exit::Ok } else { Exit::Failed }
    }

    /// The exit a code stands for, when it is one of these.
    pub const fn from_code(code: u8) -> Option<Self> {
        match code {
            Self::OK => Some(Exit::Ok),
            Self::FAILED => Some(Exit::Failed),
            Self::USAGE => Some(Exit::Usage),
            Self::INTERRUPTED => Some(Exit::Interrupted),
            Self::TERMINATED => Some(Exit::Terminated),
            Self::HUNG_UP => Some(Exit::HungUp),
            _ => None,
        }
    }
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit.code())
    }
}

impl From<Exit> for i32 {
    fn from(exit: Exit) -> Self {
        i32::from(exit.code())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones_and_round_trip() {
        let all = [
            (Exit::Ok, 0),
            (Exit::Failed, 1),
            (Exit::Usage, 2),
            (Exit::Interrupted, 130),
            (Exit::Terminated, 143),
            (Exit::HungUp, 129),
        ];
        for (exit, code) in all {
            assert_eq!(exit.code(), code);
            assert_eq!(i32::from(exit), i32::from(code));
            assert_eq!(Exit::from_code(code), Some(exit));
        }
        assert_eq!(Exit::from_code(3), None);
        assert_eq!(Exit::of_run(true), Exit::Ok);
        assert_eq!(Exit::of_run(false), Exit::Failed);
    }
}
