#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::addressing::request_target(data));
