//! What a session writes: each line on stderr as it comes, kept for the verdict ([`Lines`]), and an error's text as
//! a line shows it ([`shown`]: secrets by their shape redacted, then escaped).

use std::io::Write;

use jr2_probe::sanitize;

/// Writes a line on stderr and keeps it for the verdict.
pub(super) struct Lines(pub(super) Vec<String>);

impl Lines {
    pub(super) fn emit(&mut self, line: String) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        self.0.push(line);
    }
}

/// An error's text as a line shows it: the secrets by their shape redacted (a key, a URL's credentials:
/// `sanitize::redact_shapes`, the one rule), then escaped.
pub fn shown(text: &str) -> String {
    sanitize::escape(&sanitize::redact_shapes(text))
}
