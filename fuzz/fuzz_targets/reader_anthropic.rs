//! Fuzz target `reader_anthropic`: a 200's body through the stream judge of `AnthropicMessages`, as the probe
//! reads it (`jr2_probe_fuzz::replay`).
#![no_main]

use jr2_probe::api::ApiKind;

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::replay(ApiKind::AnthropicMessages, data));
