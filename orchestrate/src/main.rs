//! `jr2-preflight`: see the library's documentation.

fn main() {}
