//! The change log of a saved vector index (`vectors.delta`): the vectors upserted and the ids
//! removed since `vectors.bin` was written, so that saving a few changed vectors appends a few
//! kilobytes instead of rewriting every vector and re-dumping the HNSW graph.
//!
//! Layout, integers little-endian: a header `magic (8) | version (u32) | base (32 bytes)`,
//! where `base` is the checksum that seals the `vectors.bin` the log applies to, then batches
//! `body length (u64) | body | blake3(body)`. A body is `count (u32)` records, each
//! `kind (u8: 1 put, 0 remove) | id (u64)` and, for a put, `tag (u64) | dim f32s` (the stored
//! unit vector). One save appends one batch, so a batch is the unit of atomicity: a batch cut
//! short by a killed process (the last bytes of the file) is ignored and overwritten by the next
//! append, while a damaged batch followed by more data is corruption. A log whose base is not
//! the current `vectors.bin` (a full save was killed after its commit but before it removed the
//! log) is ignored. This module knows nothing of graphs or searches.

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use crate::error::{Error, Result};
use crate::format;

/// The change log next to `vectors.bin`.
pub const DELTA_FILE: &str = "vectors.delta";
const MAGIC: &[u8; 8] = b"ACMSVDL\n";
const VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 32;
const SUM_LEN: usize = 32;
const PUT: u8 = 1;
const REMOVE: u8 = 0;

/// One logged change.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Change {
    Put { id: u64, tag: u64, vector: Vec<f32> },
    Remove(u64),
}

/// What a log holds for the current base.
#[derive(Debug, Default)]
pub(crate) struct Log {
    pub changes: Vec<Change>,
    /// Bytes of the file up to the end of the last intact batch (where the next one goes).
    pub valid_len: u64,
}

/// Encodes one batch (`changes` in order).
pub(crate) fn encode<'a>(
    changes: impl ExactSizeIterator<Item = (u64, Option<(u64, &'a [f32])>)>,
    dim: usize,
) -> Vec<u8> {
    let count = changes.len();
    let mut body = Vec::with_capacity(4 + count * (17 + dim * 4));
    body.extend_from_slice(&(count as u32).to_le_bytes());
    for (id, put) in changes {
        match put {
            Some((tag, v)) => {
                body.push(PUT);
                body.extend_from_slice(&id.to_le_bytes());
                body.extend_from_slice(&tag.to_le_bytes());
                for x in v {
                    body.extend_from_slice(&x.to_le_bytes());
                }
            }
            None => {
                body.push(REMOVE);
                body.extend_from_slice(&id.to_le_bytes());
            }
        }
    }
    let mut batch = Vec::with_capacity(8 + body.len() + SUM_LEN);
    batch.extend_from_slice(&(body.len() as u64).to_le_bytes());
    batch.extend_from_slice(&body);
    batch.extend_from_slice(blake3::hash(&body).as_bytes());
    batch
}

/// Reads the log at `path` for the base sealed by `base`. `None` when there is no log, or it
/// belongs to another base, or even its header was cut short (nothing of it was committed).
pub(crate) fn read(path: &Path, base: &[u8; 32], dim: usize) -> Result<Option<Log>> {
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    if bytes.len() < HEADER_LEN {
        return Ok(None);
    }
    if &bytes[..8] != MAGIC {
        return Err(Error::corrupt(path, "bad magic: not an acms vector log"));
    }
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if version != VERSION {
        return Err(Error::Version {
            path: path.to_path_buf(),
            found: version,
            expected: VERSION,
        });
    }
    if &bytes[12..HEADER_LEN] != base {
        return Ok(None);
    }
    let mut log = Log {
        changes: Vec::new(),
        valid_len: HEADER_LEN as u64,
    };
    let mut pos = HEADER_LEN;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        // A batch that runs past the end of the file is the one a killed save was writing.
        let Some(len) = rest
            .get(..8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        else {
            break;
        };
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| l.checked_add(8 + SUM_LEN))
            .filter(|&e| e <= rest.len());
        let Some(end) = end else { break };
        let body = &rest[8..end - SUM_LEN];
        if blake3::hash(body).as_bytes() != &rest[end - SUM_LEN..end] {
            if pos + end == bytes.len() {
                break; // the last batch, torn: never committed
            }
            return Err(Error::corrupt(
                path,
                format!("checksum mismatch in the batch at byte {pos}"),
            ));
        }
        parse_body(path, body, dim, &mut log.changes)?;
        pos += end;
        log.valid_len = pos as u64;
    }
    Ok(Some(log))
}

fn parse_body(path: &Path, body: &[u8], dim: usize, out: &mut Vec<Change>) -> Result<()> {
    let bad = || Error::corrupt(path, "a batch does not match its record count");
    let mut r = body;
    let mut take = |n: usize| -> Result<&[u8]> {
        if r.len() < n {
            return Err(bad());
        }
        let (head, tail) = r.split_at(n);
        r = tail;
        Ok(head)
    };
    let u64_of = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let count = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    for _ in 0..count {
        let kind = take(1)?[0];
        let id = u64_of(take(8)?);
        match kind {
            PUT => {
                let tag = u64_of(take(8)?);
                let vector = take(dim * 4)?
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                out.push(Change::Put { id, tag, vector });
            }
            REMOVE => out.push(Change::Remove(id)),
            _ => return Err(Error::corrupt(path, format!("unknown record kind {kind}"))),
        }
    }
    if !r.is_empty() {
        return Err(bad());
    }
    Ok(())
}

/// Appends `batch` to the log at `path` after its first `valid_len` bytes (dropping a torn
/// tail), starting a new log for `base` when `valid_len` is 0, and makes it durable. Returns
/// the new valid length.
pub(crate) fn append(path: &Path, valid_len: u64, base: &[u8; 32], batch: &[u8]) -> Result<u64> {
    let io = |e| Error::io(path, e);
    let created = !path.exists();
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(io)?;
    let mut start = valid_len;
    if valid_len == 0 {
        f.set_len(0).map_err(io)?;
        let mut header = Vec::with_capacity(HEADER_LEN);
        header.extend_from_slice(MAGIC);
        header.extend_from_slice(&VERSION.to_le_bytes());
        header.extend_from_slice(base);
        f.write_all(&header).map_err(io)?;
        start = HEADER_LEN as u64;
    } else {
        f.set_len(valid_len).map_err(io)?;
    }
    f.seek(SeekFrom::Start(start)).map_err(io)?;
    f.write_all(batch).map_err(io)?;
    f.sync_all().map_err(io)?;
    if created {
        format::sync_dir(path.parent().unwrap_or(Path::new(".")))?;
    }
    Ok(start + batch.len() as u64)
}

/// Removes the log (after a full save made it obsolete). A log that cannot be removed is
/// harmless: its base no longer matches, so it is ignored and the next append replaces it.
pub(crate) fn discard(path: &Path) {
    let _ = fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(ids: &[u64]) -> Vec<u8> {
        let v = [0.6f32, 0.8];
        encode(
            ids.iter()
                .map(|&id| (id, (id % 2 == 0).then_some((id * 10, &v[..])))),
            2,
        )
    }

    #[test]
    fn appends_round_trip_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(DELTA_FILE);
        let base = [7u8; 32];
        let len = append(&p, 0, &base, &batch(&[2, 3])).unwrap();
        let full = append(&p, len, &base, &batch(&[4])).unwrap();
        let log = read(&p, &base, 2).unwrap().unwrap();
        assert_eq!(log.valid_len, full);
        assert_eq!(log.changes.len(), 3);
        assert_eq!(log.changes[1], Change::Remove(3));
        assert_eq!(
            log.changes[2],
            Change::Put {
                id: 4,
                tag: 40,
                vector: vec![0.6, 0.8]
            }
        );
        // Another base: ignored.
        assert!(read(&p, &[8u8; 32], 2).unwrap().is_none());
        // Cut the last batch short: only the first one counts, and the next append replaces
        // the torn bytes.
        let f = OpenOptions::new().write(true).open(&p).unwrap();
        f.set_len(full - 5).unwrap();
        drop(f);
        let log = read(&p, &base, 2).unwrap().unwrap();
        assert_eq!((log.changes.len(), log.valid_len), (2, len));
        let again = append(&p, log.valid_len, &base, &batch(&[6])).unwrap();
        let log = read(&p, &base, 2).unwrap().unwrap();
        assert_eq!((log.changes.len(), log.valid_len), (3, again));
        // A damaged batch with more data after it is corruption, not a torn write.
        let mut bytes = fs::read(&p).unwrap();
        bytes[HEADER_LEN + 12] ^= 1;
        fs::write(&p, &bytes).unwrap();
        let err = read(&p, &base, 2).unwrap_err().to_string();
        assert!(
            err.contains("vectors.delta") && err.contains("checksum"),
            "{err}"
        );
    }
}
