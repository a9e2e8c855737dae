//! Fuzz target `run_spec`: see `jr2_probe_fuzz::run_spec`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::run_spec(data));
