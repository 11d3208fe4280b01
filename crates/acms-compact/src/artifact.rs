//! A content-addressed artifact store on disk for large tool-result bodies: a body is stored
//! once under its sha256 and the conversation keeps a bounded `artifact://sha256/<hex>`
//! reference. Writes are atomic (temporary file, then rename), so a crash never leaves a
//! partial body under a valid name; every read verifies the digest, so a tampered or
//! truncated body is an error, never content.
//!
//! References are strict: exactly `artifact://sha256/` followed by 64 lower-case hex digits
//! ([`ArtifactRef::parse`]); anything else (upper case, a bare digest, `..`, a path) is
//! rejected before the file system is touched, so no reference can name a file outside the
//! store.
//!
//! The store directory is not trusted either: a file under a valid name is read only when it
//! is a regular file (a symbolic link is not followed, a FIFO is not blocked on, a device is
//! not read) of at most [`MAX_BODY_BYTES`], or exactly the size a reference records.
//!
//! What is stored is decided by the offload steps: a body is redacted
//! ([`acms_core::secrets::redact`]) before it is hashed, so no secret value reaches the store,
//! and it is written only once the final output is decided and references it, so the store
//! holds no body that nothing points to.
//!
//! This module stores and fetches bytes and reports UTF-8 byte attribution
//! ([`ArtifactAttribution`]). Deciding what to offload is the assembler's job; re-injecting a
//! body into a conversation is an explicit, budget-checked act of a run (`Run::rehydrate`, in
//! `lease`, which builds on this module).

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use acms_core::secrets;
use sha2::{Digest, Sha256};

use crate::model::{Message, OFFLOAD_MARKER};
pub use crate::types::ArtifactRef;
use crate::{Error, Result};

/// The URI scheme prefix of an artifact reference.
pub const ARTIFACT_SCHEME: &str = "artifact://sha256/";

/// Byte length of a reference's identity (`artifact://sha256/` + 64 hex digits).
pub const REFERENCE_BYTES: usize = ARTIFACT_SCHEME.len() + 64;

/// The largest body the store writes or reads (256 MiB): what a damaged or planted store
/// file can make acms read is bounded.
pub const MAX_BODY_BYTES: u64 = 256 << 20;

/// True for exactly 64 lower-case hex digits.
pub fn is_digest(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl ArtifactRef {
    /// `artifact://sha256/<hex>`.
    pub fn uri(&self) -> String {
        format!("{ARTIFACT_SCHEME}{}", self.digest)
    }

    /// The digest of a reference that is exactly `artifact://sha256/<64 lower-case hex>`.
    /// The error never quotes the input (it may be a path).
    pub fn parse(reference: &str) -> Result<&str> {
        reference
            .strip_prefix(ARTIFACT_SCHEME)
            .filter(|d| is_digest(d))
            .ok_or(Error::ArtifactReference)
    }
}

/// What an artifact operation did to bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactOperation {
    /// A body moved out of the conversation into the store.
    Offload,
    /// A body brought back into the conversation from the store.
    Rehydrate,
}

/// How an artifact operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactOutcome {
    /// A new body was written and referenced.
    Written,
    /// The body was already stored; the existing reference was reused.
    Reused,
    /// The body was read, verified and placed back into context.
    Rehydrated,
    /// The body does not fit the budget the rehydration was given.
    OverBudget,
    /// The stored body does not hash to its digest (tampered or truncated).
    Corrupt,
    /// No body is stored under the digest.
    Missing,
    /// The store could not be read or written.
    Failed,
    /// The body was offloaded, but the final output no longer references it (a later step
    /// dropped its stub), so it was not written.
    Discarded,
}

/// UTF-8 byte attribution of one offload or rehydration: the bytes it observed and the
/// artifact-derived bytes it committed to context (the reference identity for an offload,
/// the body for a rehydration), or `None` when nothing artifact-derived was produced.
/// Numbers and categories only: no digest, path or content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct ArtifactAttribution {
    pub operation: ArtifactOperation,
    pub outcome: ArtifactOutcome,
    pub input_bytes: usize,
    pub output_bytes: Option<usize>,
}

/// The store: `<dir>/sha256/<first two hex>/<hex>`.
#[derive(Debug)]
pub struct ArtifactStore {
    dir: PathBuf,
    counter: AtomicU64,
}

impl ArtifactStore {
    /// A store rooted at `dir` (created on first write).
    pub fn new(dir: impl Into<PathBuf>) -> ArtifactStore {
        ArtifactStore {
            dir: dir.into(),
            counter: AtomicU64::new(0),
        }
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Only ever called with a validated digest (64 lower-case hex), so the path stays
    /// inside the store.
    fn path_of(&self, digest: &str) -> PathBuf {
        self.dir.join("sha256").join(&digest[..2]).join(digest)
    }

    /// Stores `body`; storing the same body twice writes it once.
    pub fn put(&self, body: &[u8]) -> Result<ArtifactRef> {
        self.put_reporting(body).map(|(r, _)| r)
    }

    /// Stores `body` and says whether it was written now ([`ArtifactOutcome::Written`]) or
    /// already there ([`ArtifactOutcome::Reused`]).
    pub fn put_reporting(&self, body: &[u8]) -> Result<(ArtifactRef, ArtifactOutcome)> {
        if body.len() as u64 > MAX_BODY_BYTES {
            return Err(Error::ArtifactTooLarge {
                size: body.len() as u64,
                limit: MAX_BODY_BYTES,
            });
        }
        let digest = hex(&Sha256::digest(body));
        let path = self.path_of(&digest);
        let r = ArtifactRef {
            digest,
            bytes: body.len(),
        };
        // An existing file is reused only when it is a regular file that still verifies; a
        // damaged one, a link or a FIFO in its place is replaced (never followed or read).
        if read_body(&path, body.len() as u64, true).is_ok_and(|b| b == body) {
            return Ok((r, ArtifactOutcome::Reused));
        }
        let parent = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(parent)?;
        // A unique temporary name per process and call, in the same directory so the rename
        // is atomic.
        let tmp = parent.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            self.counter.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut f = create_new(&tmp)?;
            f.write_all(body)?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(e.into());
        }
        Ok((r, ArtifactOutcome::Written))
    }

    /// Fetches the body of `reference` (exactly `artifact://sha256/<hex>`), verifying it.
    pub fn get(&self, reference: &str) -> Result<Vec<u8>> {
        self.get_digest(ArtifactRef::parse(reference)?)
    }

    /// Fetches the body of `r`, reading no more than the size it records: a file of another
    /// size is corrupt.
    pub fn get_ref(&self, r: &ArtifactRef) -> Result<Vec<u8>> {
        self.get_bounded(&r.digest, r.bytes as u64, true)
    }

    /// Fetches the body stored under `digest` (64 lower-case hex), verifying it. At most
    /// [`MAX_BODY_BYTES`] are read.
    pub fn get_digest(&self, digest: &str) -> Result<Vec<u8>> {
        self.get_bounded(digest, MAX_BODY_BYTES, false)
    }

    /// Reads `digest`'s body: a regular file (never a link, FIFO or device) of at most
    /// `limit` bytes, or exactly `limit` when `exact`, that hashes to `digest`.
    fn get_bounded(&self, digest: &str, limit: u64, exact: bool) -> Result<Vec<u8>> {
        if !is_digest(digest) {
            return Err(Error::ArtifactReference);
        }
        let body = match read_body(&self.path_of(digest), limit, exact) {
            Ok(b) => b,
            Err(Unreadable::Missing) => {
                return Err(Error::ArtifactMissing {
                    digest: digest.to_string(),
                });
            }
            Err(Unreadable::NotRegular) => {
                return Err(Error::ArtifactNotRegular {
                    digest: digest.to_string(),
                });
            }
            // Not the size the reference records: the file is not that body.
            Err(Unreadable::Size(_)) if exact => {
                return Err(Error::ArtifactCorrupt {
                    digest: digest.to_string(),
                });
            }
            Err(Unreadable::Size(size)) => return Err(Error::ArtifactTooLarge { size, limit }),
            Err(Unreadable::Io(e)) => return Err(e.into()),
        };
        if hex(&Sha256::digest(&body)) != digest {
            return Err(Error::ArtifactCorrupt {
                digest: digest.to_string(),
            });
        }
        Ok(body)
    }
}

/// Why a store file could not be read as a body.
enum Unreadable {
    Missing,
    /// A symbolic link, FIFO, device or directory: not something the store wrote.
    NotRegular,
    /// The file's size (over the limit, or not the exact size expected).
    Size(u64),
    Io(std::io::Error),
}

/// Reads the regular file at `path`, refusing before any read a link (not followed), a
/// FIFO (opened without blocking), a device, or a size over `limit` (or other than `limit`
/// when `exact`). Never reads more than `limit + 1` bytes, so a file that grows is caught.
fn read_body(path: &Path, limit: u64, exact: bool) -> std::result::Result<Vec<u8>, Unreadable> {
    let f = match open_nofollow(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unreadable::Missing),
        Err(e) if is_link_error(&e) => return Err(Unreadable::NotRegular),
        Err(e) => return Err(Unreadable::Io(e)),
    };
    let meta = f.metadata().map_err(Unreadable::Io)?;
    if !meta.is_file() {
        return Err(Unreadable::NotRegular);
    }
    let wrong = |n: u64| n > limit || (exact && n != limit);
    if wrong(meta.len()) {
        return Err(Unreadable::Size(meta.len()));
    }
    let mut body = Vec::with_capacity(meta.len() as usize);
    f.take(limit.saturating_add(1))
        .read_to_end(&mut body)
        .map_err(Unreadable::Io)?;
    if wrong(body.len() as u64) {
        return Err(Unreadable::Size(body.len() as u64));
    }
    Ok(body)
}

/// Opens `path` for reading without following a final symbolic link and without blocking
/// on a FIFO.
#[cfg(unix)]
fn open_nofollow(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// Without O_NOFOLLOW: a link is refused by its own metadata, then the file is opened.
#[cfg(not(unix))]
fn open_nofollow(path: &Path) -> std::io::Result<File> {
    if !std::fs::symlink_metadata(path)?.is_file() {
        return Err(std::io::Error::other(NOT_REGULAR));
    }
    File::open(path)
}

#[cfg(not(unix))]
const NOT_REGULAR: &str = "not a regular file";

/// True for the error opening a link with O_NOFOLLOW gives.
#[cfg(unix)]
fn is_link_error(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

#[cfg(not(unix))]
fn is_link_error(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Other && e.to_string() == NOT_REGULAR
}

/// Creates `path` for writing; fails rather than follow or truncate anything already there.
fn create_new(path: &Path) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW);
    }
    match o.open(path) {
        // A leftover of an earlier run with the same pid: it is ours to replace.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(path)?;
            o.open(path)
        }
        r => r,
    }
}

/// A tool result chosen for offload: its body redacted and hashed, not yet written. Bodies
/// are written only once the final output is decided, and only those it references
/// ([`store_referenced`]), so the store never holds a body nothing points to.
#[derive(Debug, Clone)]
pub(crate) struct PendingBody {
    pub reference: ArtifactRef,
    body: String,
}

impl PendingBody {
    /// The body `content` would be stored as, with the stub that replaces it in the
    /// conversation; `None` when it is over [`MAX_BODY_BYTES`]. Secret values are redacted
    /// first: they never reach the store, nor the stub's first lines.
    pub(crate) fn offload(content: &str) -> Option<(PendingBody, String)> {
        if content.len() as u64 > MAX_BODY_BYTES {
            return None;
        }
        let (body, kinds) = secrets::redact(content).unwrap_or_else(|| (content.into(), vec![]));
        let reference = ArtifactRef {
            digest: hex(&Sha256::digest(body.as_bytes())),
            bytes: body.len(),
        };
        let head: Vec<String> = body
            .lines()
            .take(5)
            .map(|l| l.chars().take(200).collect())
            .collect();
        let redacted = if kinds.is_empty() {
            String::new()
        } else {
            format!("; {}", secrets::summary(&kinds))
        };
        let stub = format!(
            "{OFFLOAD_MARKER}{} ({} bytes, {} lines{redacted}); first lines:]\n{}",
            reference.uri(),
            reference.bytes,
            body.lines().count(),
            head.join("\n")
        );
        Some((PendingBody { reference, body }, stub))
    }
}

/// Writes the pending bodies `messages` reference to `store`; the others are dropped
/// unwritten. Returns each pending body's outcome, in order: written or reused, failed, or
/// `None` when it was not referenced.
pub(crate) fn store_referenced(
    store: &ArtifactStore,
    messages: &[Message],
    pending: Vec<PendingBody>,
) -> Vec<Option<ArtifactOutcome>> {
    if pending.is_empty() {
        return Vec::new();
    }
    let referenced = referenced_digests(messages);
    pending
        .into_iter()
        .map(|p| {
            referenced.contains(p.reference.digest.as_str()).then(|| {
                match store.put_reporting(p.body.as_bytes()) {
                    Ok((_, outcome)) => outcome,
                    Err(_) => ArtifactOutcome::Failed,
                }
            })
        })
        .collect()
}

/// Every digest named by an `artifact://sha256/<hex>` in `messages`.
fn referenced_digests(messages: &[Message]) -> HashSet<&str> {
    let mut out = HashSet::new();
    for m in messages {
        for (at, _) in m.content.match_indices(ARTIFACT_SCHEME) {
            let start = at + ARTIFACT_SCHEME.len();
            if let Some(d) = m.content.get(start..start + 64).filter(|d| is_digest(d)) {
                out.insert(d);
            }
        }
    }
    out
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_roundtrip_and_verify() {
        let dir = tempfile::tempdir().unwrap();
        let store = ArtifactStore::new(dir.path());
        let (r, outcome) = store.put_reporting(b"hello").unwrap();
        assert_eq!(outcome, ArtifactOutcome::Written);
        assert_eq!(
            r.digest,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(r.bytes, 5);
        assert_eq!(r.uri().len(), REFERENCE_BYTES);
        assert_eq!(
            store.put_reporting(b"hello").unwrap(),
            (r.clone(), ArtifactOutcome::Reused)
        );
        assert_eq!(store.get(&r.uri()).unwrap(), b"hello");
        // Corrupt the stored body: the read must notice.
        std::fs::write(store.path_of(&r.digest), b"tampered").unwrap();
        assert!(matches!(
            store.get(&r.uri()),
            Err(Error::ArtifactCorrupt { .. })
        ));
        // Truncated: also corrupt, not content.
        std::fs::write(store.path_of(&r.digest), b"hel").unwrap();
        assert!(matches!(
            store.get_digest(&r.digest),
            Err(Error::ArtifactCorrupt { .. })
        ));
        // A damaged body is replaced by the next put of the same content.
        assert_eq!(
            store.put_reporting(b"hello").unwrap().1,
            ArtifactOutcome::Written
        );
        assert_eq!(store.get(&r.uri()).unwrap(), b"hello");
        // No temporary files are left behind.
        let leftovers = std::fs::read_dir(store.path_of(&r.digest).parent().unwrap())
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with(".tmp")
            })
            .count();
        assert_eq!(leftovers, 0);
    }

    #[test]
    fn reads_by_reference_are_bounded_by_the_recorded_size() {
        let dir = tempfile::tempdir().unwrap();
        let store = ArtifactStore::new(dir.path());
        let r = store.put(b"hello").unwrap();
        assert_eq!(store.get_ref(&r).unwrap(), b"hello");
        // A longer file under the same name is refused on its size, unread.
        std::fs::write(store.path_of(&r.digest), vec![b'x'; 1 << 20]).unwrap();
        assert!(matches!(
            store.get_ref(&r),
            Err(Error::ArtifactCorrupt { .. })
        ));
        // A reference that records another size does not match the file.
        store.put(b"hello").unwrap();
        let wrong = ArtifactRef { bytes: 4, ..r };
        assert!(matches!(
            store.get_ref(&wrong),
            Err(Error::ArtifactCorrupt { .. })
        ));
    }

    #[test]
    fn references_are_strict() {
        let good = format!("{ARTIFACT_SCHEME}{}", "a".repeat(64));
        assert!(ArtifactRef::parse(&good).is_ok());
        for bad in [
            "artifact://sha256/../../etc/passwd".to_string(),
            format!("{ARTIFACT_SCHEME}{}", "A".repeat(64)),
            format!("{ARTIFACT_SCHEME}{}", "a".repeat(63)),
            format!("{ARTIFACT_SCHEME}{}", "a".repeat(65)),
            format!("{ARTIFACT_SCHEME}{}/x", "a".repeat(64)),
            format!("{ARTIFACT_SCHEME}{}g", "a".repeat(63)),
            "a".repeat(64),
            format!("ARTIFACT://sha256/{}", "a".repeat(64)),
            format!("artifact://sha512/{}", "a".repeat(64)),
            format!(" {good}"),
            format!("{good}\n"),
            String::new(),
        ] {
            let e = ArtifactRef::parse(&bad).unwrap_err();
            assert!(matches!(e, Error::ArtifactReference), "{bad}");
            assert!(!e.to_string().contains("passwd"));
        }
        let dir = tempfile::tempdir().unwrap();
        let store = ArtifactStore::new(dir.path());
        assert!(matches!(
            store.get_digest("../../../../etc/passwd"),
            Err(Error::ArtifactReference)
        ));
        assert!(matches!(
            store.get(&good),
            Err(Error::ArtifactMissing { .. })
        ));
    }
}
