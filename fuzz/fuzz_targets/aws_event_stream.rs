//! Fuzz target `aws_event_stream`: see `jr2_probe_fuzz::aws_event_stream`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::aws_event_stream(data));
