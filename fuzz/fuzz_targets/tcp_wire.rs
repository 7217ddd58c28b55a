#![no_main]
//! The `tcp_wire` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::tcp_wire(data));
