//! Fuzz target `model_id`: see `jr2_probe_fuzz::model_id`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::model_id(data));
