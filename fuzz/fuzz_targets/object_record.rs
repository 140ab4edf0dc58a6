#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_targets::records::object_record(data));
