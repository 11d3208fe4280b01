#![no_main]
//! The configuration parser on arbitrary TOML: an error naming the key, never a panic.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = acms_core::Config::from_toml_str(text, "fuzz.toml");
    }
});
