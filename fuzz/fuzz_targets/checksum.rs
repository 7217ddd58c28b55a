#![no_main]
//! The `checksum` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::checksum(data));
