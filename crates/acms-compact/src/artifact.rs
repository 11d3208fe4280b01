//! A content-addressed artifact store on disk for large tool-result bodies: a body is stored
//! once under its sha256 and the conversation keeps an `artifact://sha256/<hex>` reference.
//! Writes are atomic (temporary file, then rename), so a crash never leaves a partial body
//! under a valid name; reads verify the digest.
//!
//! This module stores and fetches bytes. Deciding what to offload is the compactor's job, and
//! re-injecting a body into a conversation is an explicit act of the host.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The URI scheme prefix of an artifact reference.
pub const ARTIFACT_SCHEME: &str = "artifact://sha256/";

/// A reference to a stored body.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
pub struct ArtifactRef {
    /// Lower-case hex sha256 of the body.
    pub digest: String,
    /// Size of the body in bytes.
    pub bytes: usize,
}

impl ArtifactRef {
    /// `artifact://sha256/<hex>`.
    pub fn uri(&self) -> String {
        format!("{ARTIFACT_SCHEME}{}", self.digest)
    }
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

    fn path_of(&self, digest: &str) -> PathBuf {
        self.dir.join("sha256").join(&digest[..2]).join(digest)
    }

    /// Stores `body`; storing the same body twice writes it once.
    pub fn put(&self, body: &[u8]) -> Result<ArtifactRef> {
        let digest = hex(&Sha256::digest(body));
        let path = self.path_of(&digest);
        if !path.exists() {
            let parent = path.parent().unwrap_or(&self.dir);
            std::fs::create_dir_all(parent)?;
            // A unique temporary name per process and call, in the same directory so the
            // rename is atomic.
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
        }
        Ok(ArtifactRef {
            digest,
            bytes: body.len(),
        })
    }

    /// Fetches the body of `uri_or_digest` (`artifact://sha256/<hex>` or the bare hex),
    /// verifying its digest.
    pub fn get(&self, uri_or_digest: &str) -> Result<Vec<u8>> {
        let digest = uri_or_digest
            .strip_prefix(ARTIFACT_SCHEME)
            .unwrap_or(uri_or_digest);
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::ArtifactCorrupt {
                digest: "(not a sha256 digest)".into(),
            });
        }
        let digest = digest.to_ascii_lowercase();
        let body = std::fs::read(self.path_of(&digest))?;
        if hex(&Sha256::digest(&body)) != digest {
            return Err(Error::ArtifactCorrupt { digest });
        }
        Ok(body)
    }
}

fn hex(bytes: &[u8]) -> String {
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
        let r = store.put(b"hello").unwrap();
        assert_eq!(
            r.digest,
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(r.bytes, 5);
        assert_eq!(store.put(b"hello").unwrap(), r);
        assert_eq!(store.get(&r.uri()).unwrap(), b"hello");
        // Corrupt the stored body: the read must notice.
        std::fs::write(store.path_of(&r.digest), b"tampered").unwrap();
        assert!(matches!(
            store.get(&r.digest),
            Err(Error::ArtifactCorrupt { .. })
        ));
        assert!(store.get("artifact://sha256/../../etc").is_err());
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
}
