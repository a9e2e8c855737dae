//! Fuzz target `sse`: see `jr2_probe_fuzz::sse`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::sse(data));
