//! A plan that cannot be run: [`PlanError`], bad input named by its typed [`Field`], worded by each front end, and
//! the exit it asks for (2) before anything reaches the cluster.

use jr2_probe::contract::Exit;
use jr2_probe::spec::input::InputError;
use thiserror::Error;

use super::field::Field;

/// A plan that cannot be run: bad input, named by its field. The caller prints `error: <this>` and exits with
/// [`PlanError::EXIT`], before contacting the cluster.
#[derive(Debug, Error)]
pub enum PlanError {
    /// The plan file cannot be read, is larger than [`MAX_PLAN_BYTES`](super::MAX_PLAN_BYTES), or is not text.
    #[error("--plan: {0}{hint}", hint = read_hint(.0))]
    Read(#[from] InputError),
    /// The plan is not JSON.
    #[error("plan: not JSON: {0}")]
    Json(String),
    /// An object of the plan gives a key twice.
    #[error("plan: {0}; a plan gives each field once")]
    Repeated(String),
    /// A field is missing, of the wrong type, unknown, or invalid.
    #[error("{field}: {message}")]
    Invalid {
        /// The field (`plan.models[2].placement`), or the flag that stands for it.
        field: Field,
        /// Why.
        message: String,
    },
}

impl PlanError {
    /// The exit for bad input.
    pub const EXIT: Exit = Exit::Usage;
    /// [`PlanError::EXIT`]'s code (2).
    pub const EXIT_CODE: u8 = Self::EXIT.code();

    /// The field the error is about, when it names one.
    pub fn field(&self) -> Option<&Field> {
        match self {
            PlanError::Invalid { field, .. } => Some(field),
            PlanError::Read(_) | PlanError::Json(_) | PlanError::Repeated(_) => None,
        }
    }
}

/// What a plan too large to read is too large for.
fn read_hint(e: &InputError) -> &'static str {
    match e {
        InputError::TooLarge { .. } => {
            "; a plan's check pods must fit the API server's limit on one object (1.5 MiB)"
        }
        _ => "",
    }
}

/// An [`PlanError::Invalid`] of `field`.
pub(super) fn invalid(field: Field, message: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        field,
        message: message.into(),
    }
}
