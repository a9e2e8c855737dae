//! Fuzz target `secret_shape`: see `jr2_probe_fuzz::secret_shape`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| jr2_probe_fuzz::secret_shape(data));
