#![no_main]
//! The conversation readers (`acms_compact::format`) on arbitrary input: reading never
//! panics, and what is read writes back to a document that reads again in the same format.

use acms_compact::format::{self, Format};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for format in [None, Some(Format::OpenAi), Some(Format::Anthropic)] {
        if let Ok(doc) = format::read(text, format) {
            let written = format::write(&doc, &doc.conversation);
            if let Err(e) = format::read(&written, Some(doc.format)) {
                panic!("{format:?}: the written document does not read back: {e}\n{written}");
            }
        }
    }
});
