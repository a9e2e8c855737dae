//! Fuzz target `error_body`: see `jr2_probe_fuzz::error_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::error_response(data));
