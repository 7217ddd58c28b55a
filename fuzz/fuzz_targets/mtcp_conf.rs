#![no_main]
//! The `mtcp_conf` target of `nicemu-fuzzing` under libFuzzer.
libfuzzer_sys::fuzz_target!(|data: &[u8]| nicemu_fuzzing::mtcp_conf(data));
