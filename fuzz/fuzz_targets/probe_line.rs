//! Fuzz target `probe_line`: see `jr2_probe_fuzz::probe_line`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::probe_line(data));
