#![no_main]
//! The shell analyzer (query-described) on arbitrary input: no panic, no hang, linear output.

use acms_index::Language;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acms_fuzz::check_analyzer(Language::Bash, data);
});
