#![no_main]
//! The `control_msg` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::control_msg(data));
