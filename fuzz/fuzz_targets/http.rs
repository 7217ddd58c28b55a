#![no_main]
//! The `http` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::http(data));
