//! Fuzz target `plan`: see `jr2_probe_fuzz::plan`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::plan(data));
