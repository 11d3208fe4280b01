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
//! This module stores and fetches bytes and reports UTF-8 byte attribution
//! ([`ArtifactAttribution`]). Deciding what to offload is the assembler's job; re-injecting a
//! body into a conversation is an explicit, budget-checked act ([`crate::lease::Run::rehydrate`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The URI scheme prefix of an artifact reference.
pub const ARTIFACT_SCHEME: &str = "artifact://sha256/";

/// Byte length of a reference's identity (`artifact://sha256/` + 64 hex digits).
pub const REFERENCE_BYTES: usize = ARTIFACT_SCHEME.len() + 64;

/// A reference to a stored body.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ArtifactRef {
    /// Lower-case hex sha256 of the body.
    pub digest: String,
    /// Size of the body in bytes.
    pub bytes: usize,
}

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
        let digest = hex(&Sha256::digest(body));
        let path = self.path_of(&digest);
        let r = ArtifactRef {
            digest,
            bytes: body.len(),
        };
        // An existing file is reused only when it still verifies; a damaged one is replaced.
        if std::fs::read(&path).is_ok_and(|b| hex(&Sha256::digest(&b)) == r.digest) {
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
            let mut f = std::fs::File::create(&tmp)?;
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

    /// Fetches the body stored under `digest` (64 lower-case hex), verifying it.
    pub fn get_digest(&self, digest: &str) -> Result<Vec<u8>> {
        if !is_digest(digest) {
            return Err(Error::ArtifactReference);
        }
        let body = match std::fs::read(self.path_of(digest)) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::ArtifactMissing {
                    digest: digest.to_string(),
                });
            }
            Err(e) => return Err(e.into()),
        };
        if hex(&Sha256::digest(&body)) != digest {
            return Err(Error::ArtifactCorrupt {
                digest: digest.to_string(),
            });
        }
        Ok(body)
    }
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
