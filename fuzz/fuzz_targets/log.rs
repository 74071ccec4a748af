#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| agentmem_fuzz::log(data));
