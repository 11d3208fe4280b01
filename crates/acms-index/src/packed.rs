//! Texts as the store keeps them (format 5): a file's text zstd-compressed, a BLOB, about a
//! fifth of the source; a skeleton or doc rendering compressed when that makes it smaller.
//! A TEXT value is a text stored plain (as format 4 stored every text), read as it is.

use std::cell::RefCell;

use rusqlite::types::{ToSqlOutput, ValueRef};

/// zstd's default level: 3–5× on source code at several hundred MB/s.
const LEVEL: i32 = 3;

/// The most a stored text may declare it unpacks to. The store is untrusted input: a frame
/// claiming more is damage, not an allocation.
const MAX_TEXT_BYTES: u64 = 1 << 28;

thread_local! {
    // One context per thread, made once: making one per text was a visible share of a warm
    // assembly (ZSTD_createDCtx) and of an index run.
    static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

fn compress(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    COMPRESSOR.with_borrow_mut(|c| {
        if c.is_none() {
            *c = Some(zstd::bulk::Compressor::new(LEVEL)?);
        }
        c.as_mut()
            .map_or_else(|| zstd::bulk::compress(bytes, LEVEL), |c| c.compress(bytes))
    })
}

fn decompress(bytes: &[u8], size: usize) -> std::io::Result<Vec<u8>> {
    DECOMPRESSOR.with_borrow_mut(|d| {
        if d.is_none() {
            *d = Some(zstd::bulk::Decompressor::new()?);
        }
        d.as_mut().map_or_else(
            || zstd::bulk::decompress(bytes, size),
            |d| d.decompress(bytes, size),
        )
    })
}

/// `text` as it is written: packed, or plain in the unlikely case zstd refuses it.
pub(crate) fn pack(text: &str) -> ToSqlOutput<'_> {
    match compress(text.as_bytes()) {
        Ok(packed) => ToSqlOutput::from(packed),
        Err(_) => ToSqlOutput::from(text),
    }
}

/// `text` as it is written: packed when that is smaller (a short rendering is not).
pub(crate) fn pack_if_smaller(text: &str) -> ToSqlOutput<'_> {
    match compress(text.as_bytes()) {
        Ok(packed) if packed.len() < text.len() => ToSqlOutput::from(packed),
        _ => ToSqlOutput::from(text),
    }
}

/// The text a stored value holds; `None` for anything that is not a packed or plain UTF-8
/// text (a NULL, a damaged frame, a frame without its size or over [`MAX_TEXT_BYTES`]).
pub(crate) fn unpack(value: ValueRef<'_>) -> Option<String> {
    match value {
        ValueRef::Text(t) => String::from_utf8(t.to_vec()).ok(),
        ValueRef::Blob(b) => {
            let size = zstd::zstd_safe::get_frame_content_size(b).ok()??;
            if size > MAX_TEXT_BYTES {
                return None;
            }
            let bytes = decompress(b, size as usize).ok()?;
            String::from_utf8(bytes).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(text: &str) -> Option<String> {
        match pack(text) {
            ToSqlOutput::Owned(v) => unpack(ValueRef::from(&v)),
            ToSqlOutput::Borrowed(v) => unpack(v),
            _ => None,
        }
    }

    #[test]
    fn texts_come_back_as_they_were() {
        for text in [
            "",
            "x",
            "def f():\n    return 1\n",
            &"é∑ 🦀\r\n".repeat(5000),
        ] {
            assert_eq!(round_trip(text).as_deref(), Some(text));
        }
        assert_eq!(unpack(ValueRef::Text(b"plain")).as_deref(), Some("plain"));
        let long = "    def method(self):\n        ...\n".repeat(40);
        for text in ["", "short", long.as_str()] {
            let value = pack_if_smaller(text);
            let (packed, back) = match &value {
                ToSqlOutput::Owned(v) => (
                    matches!(v, rusqlite::types::Value::Blob(_)),
                    unpack(ValueRef::from(v)),
                ),
                ToSqlOutput::Borrowed(v) => (matches!(v, ValueRef::Blob(_)), unpack(*v)),
                _ => (false, None),
            };
            assert_eq!(back.as_deref(), Some(text));
            assert_eq!(packed, text.len() > 100, "{text:?}");
        }
    }

    /// What a damaged or hostile store may hold is no text, never a panic or a huge
    /// allocation.
    #[test]
    fn damaged_values_are_no_text() {
        let packed = zstd::bulk::compress(b"hello world", 3).unwrap();
        let mut cut = packed.clone();
        cut.truncate(packed.len() - 3);
        let not_utf8 = zstd::bulk::compress(&[0xff, 0xfe, 0x00], 3).unwrap();
        // A frame header declaring 2^40 bytes of content.
        let huge = [0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 1, 0, 0];
        for value in [
            ValueRef::Blob(&cut),
            ValueRef::Blob(&not_utf8),
            ValueRef::Blob(&huge),
            ValueRef::Blob(b"not zstd at all"),
            ValueRef::Blob(b""),
            ValueRef::Text(&[0xff, 0xfe]),
            ValueRef::Null,
            ValueRef::Integer(7),
        ] {
            assert_eq!(unpack(value), None, "{value:?}");
        }
    }
}
