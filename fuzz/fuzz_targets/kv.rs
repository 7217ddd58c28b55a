#![no_main]
//! The `kv` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::kv(data));
