#![no_main]
//! The `nic` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::nic(data));
