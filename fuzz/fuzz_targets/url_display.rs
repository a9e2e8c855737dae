//! Fuzz target `url_display`: see `jr2_probe_fuzz::url_display`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::url_display(data));
