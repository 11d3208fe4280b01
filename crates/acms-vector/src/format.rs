//! The sealed binary file format shared by the vector index and the embedding cache, and the
//! atomic write that persists it.
//!
//! A file is `magic (8 bytes) | format version (u32) | body | blake3(all preceding bytes)`, all
//! integers little-endian. Readers check the magic, the version and the checksum before they
//! parse a single body field, so a truncated or modified file is reported as corrupted (naming
//! the file) instead of being half-read. This module does not know what a body contains.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

const CHECKSUM_LEN: usize = 32;
/// The magic (8 bytes) and the version (4) before a body.
const MAGIC_AND_VERSION: usize = 12;

/// Builds a sealed file in memory.
pub(crate) struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    pub(crate) fn new(magic: &[u8; 8], version: u32) -> Writer {
        let mut buf = Vec::with_capacity(1 << 16);
        buf.extend_from_slice(magic);
        buf.extend_from_slice(&version.to_le_bytes());
        Writer { buf }
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    pub(crate) fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    pub(crate) fn f32s(&mut self, vs: &[f32]) {
        for v in vs {
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }

    /// A length-prefixed UTF-8 string.
    pub(crate) fn str(&mut self, s: &str) {
        self.u32(u32::try_from(s.len()).unwrap_or(u32::MAX));
        self.buf.extend_from_slice(s.as_bytes());
    }

    /// The file contents with the checksum appended.
    pub(crate) fn seal(mut self) -> Vec<u8> {
        let sum = blake3::hash(&self.buf);
        self.buf.extend_from_slice(sum.as_bytes());
        self.buf
    }
}

/// Parses the body of a sealed file; every read is bounds-checked and names the file on failure.
pub(crate) struct Reader<'a> {
    path: &'a Path,
    body: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Checks magic, version and checksum of `bytes` (the whole file at `path`) and returns a
    /// reader positioned at the start of the body.
    pub(crate) fn open(
        path: &'a Path,
        bytes: &'a [u8],
        magic: &[u8; 8],
        version: u32,
    ) -> Result<Reader<'a>> {
        Reader::open_versions(path, bytes, magic, &[version]).map(|(r, _)| r)
    }

    /// [`open`](Self::open) for a file that may be in any of `versions` (the newest first):
    /// also returns the one found.
    pub(crate) fn open_versions(
        path: &'a Path,
        bytes: &'a [u8],
        magic: &[u8; 8],
        versions: &[u32],
    ) -> Result<(Reader<'a>, u32)> {
        let min = magic.len() + 4 + CHECKSUM_LEN;
        if bytes.len() < min {
            return Err(Error::corrupt(
                path,
                format!("truncated: {} bytes, at least {min} expected", bytes.len()),
            ));
        }
        if &bytes[..8] != magic {
            return Err(Error::corrupt(
                path,
                "bad magic: not an acms file of this kind",
            ));
        }
        let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        let (content, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
        if blake3::hash(content).as_bytes() != sum {
            // A version mismatch is reported as such only when the file is intact: a flipped
            // version byte is corruption, not an old format.
            return Err(Error::corrupt(
                path,
                "checksum mismatch: the file was truncated or modified",
            ));
        }
        if !versions.contains(&found) {
            return Err(Error::Version {
                path: path.to_path_buf(),
                found,
                expected: versions.first().copied().unwrap_or_default(),
            });
        }
        let reader = Reader {
            path,
            body: &content[MAGIC_AND_VERSION..],
            pos: 0,
        };
        Ok((reader, found))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.body.len());
        match end {
            Some(end) => {
                let s = &self.body[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(Error::corrupt(
                self.path,
                format!("field of {n} bytes runs past the end of the file"),
            )),
        }
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A count that must fit in memory as `elem_size`-byte items of the remaining body; this
    /// stops a (checksummed but hostile) length from triggering a huge allocation.
    pub(crate) fn len(&mut self, elem_size: usize) -> Result<usize> {
        let n = self.u64()?;
        let remaining = (self.body.len() - self.pos) as u64;
        if n.saturating_mul(elem_size.max(1) as u64) > remaining {
            return Err(Error::corrupt(
                self.path,
                format!("count {n} does not fit in the file"),
            ));
        }
        Ok(n as usize)
    }

    pub(crate) fn f32s(&mut self, n: usize) -> Result<Vec<f32>> {
        let b = self
            .take(n.checked_mul(4).ok_or_else(|| {
                Error::corrupt(self.path, format!("vector length {n} overflows"))
            })?)?;
        Ok(b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    /// Skips `n` bytes and returns where they start in the whole file (magic included), so
    /// the caller can take them out of the file's buffer without a copy.
    pub(crate) fn skip(&mut self, n: usize) -> Result<usize> {
        let at = MAGIC_AND_VERSION + self.pos;
        self.take(n)?;
        Ok(at)
    }

    pub(crate) fn array32(&mut self) -> Result<[u8; 32]> {
        let mut a = [0u8; 32];
        a.copy_from_slice(self.take(32)?);
        Ok(a)
    }

    pub(crate) fn str(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec())
            .map_err(|_| Error::corrupt(self.path, "a string field is not UTF-8"))
    }

    /// Fails unless the whole body was consumed (a length field and the data disagree).
    pub(crate) fn finish(self) -> Result<()> {
        if self.pos == self.body.len() {
            Ok(())
        } else {
            Err(Error::corrupt(
                self.path,
                format!("{} unexpected trailing bytes", self.body.len() - self.pos),
            ))
        }
    }
}

/// Reads a whole file, naming it on failure.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).map_err(|e| Error::io(path, e))
}

/// Writes `bytes` to `path` so that a reader sees either the previous file or the new one:
/// temp file in the same directory, fsync, rename over the target, fsync the directory.
/// A process killed at any point leaves the previous file intact (plus at most a stray temp
/// file, which the next write replaces).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp: PathBuf = dir.join(format!(".{name}.tmp"));
    let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
    f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
    sync_dir(dir)
}

/// Makes a rename durable. Directories cannot be opened for sync on every platform; where
/// that fails the rename is still atomic, only its durability across power loss is weaker.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The checksum that seals `bytes` (a whole sealed file): its last 32 bytes.
pub(crate) fn seal_of(bytes: &[u8]) -> [u8; 32] {
    let mut sum = [0u8; 32];
    if let Some(tail) = bytes.len().checked_sub(CHECKSUM_LEN).map(|at| &bytes[at..]) {
        sum.copy_from_slice(tail);
    }
    sum
}

/// The checksum sealing the file at `path`, read from its end without reading the rest (it
/// identifies which save wrote the file; it verifies nothing).
pub(crate) fn read_seal(path: &Path) -> Result<[u8; 32]> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = File::open(path).map_err(|e| Error::io(path, e))?;
    f.seek(SeekFrom::End(-(CHECKSUM_LEN as i64)))
        .map_err(|e| Error::io(path, e))?;
    let mut sum = [0u8; 32];
    f.read_exact(&mut sum).map_err(|e| Error::io(path, e))?;
    Ok(sum)
}

/// blake3 of a file's contents, streamed.
pub(crate) fn hash_file(path: &Path) -> Result<[u8; 32]> {
    let f = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = blake3::Hasher::new();
    h.update_reader(f).map_err(|e| Error::io(path, e))?;
    Ok(*h.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAGIC: &[u8; 8] = b"ACMSTEST";

    fn sealed() -> Vec<u8> {
        let mut w = Writer::new(MAGIC, 3);
        w.str("id");
        w.u64(2);
        w.f32s(&[1.0, -2.5]);
        w.seal()
    }

    #[test]
    fn round_trip() {
        let bytes = sealed();
        let p = Path::new("x.bin");
        let mut r = Reader::open(p, &bytes, MAGIC, 3).unwrap();
        assert_eq!(r.str().unwrap(), "id");
        let n = r.len(4).unwrap();
        assert_eq!(r.f32s(n).unwrap(), vec![1.0, -2.5]);
        r.finish().unwrap();
    }

    fn check(bytes: &[u8], expected: &str) {
        let err = Reader::open(Path::new("x.bin"), bytes, MAGIC, 3)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("x.bin"), "{err}");
        assert!(err.contains(expected), "{err} should contain {expected}");
    }

    #[test]
    fn damage_is_reported_with_the_file_name() {
        let good = sealed();
        check(&good[..10], "truncated");
        check(&good[..good.len() - 1], "checksum mismatch");
        let mut flipped = good.clone();
        flipped[14] ^= 0x40;
        check(&flipped, "checksum mismatch");
        let mut magic = good.clone();
        magic[0] = b'X';
        check(&magic, "bad magic");
        let mut w = Writer::new(MAGIC, 2);
        w.u32(1);
        check(&w.seal(), "format version 2");
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.bin");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
