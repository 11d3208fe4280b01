//! `VectorLock`: one writer of the vectors of an index at a time, across processes.
//!
//! Two `acms index` runs on the same index would otherwise both embed and the last save would
//! win (each save is atomic, so a file is never torn, but work is wasted and one run's vectors
//! silently replace the other's). The lock is an advisory `flock` on `vectors.lock` in the
//! index directory, released when the holder drops it or its process dies (a `kill -9` leaves
//! no stale lock behind). This module does not decide what a caller does when the lock is
//! taken.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use fs4::fs_std::FileExt;

use crate::error::{Error, Result};

/// The lock file inside an index directory.
pub const LOCK_FILE: &str = "vectors.lock";

/// Held while a process writes the vectors of one index.
#[derive(Debug)]
pub struct VectorLock {
    _file: File,
    path: PathBuf,
}

impl VectorLock {
    /// Takes the lock of `index_dir` (created if needed), or `None` when another process (or
    /// another holder in this one) has it. Never blocks.
    pub fn try_acquire(index_dir: &Path) -> Result<Option<VectorLock>> {
        std::fs::create_dir_all(index_dir).map_err(|e| Error::io(index_dir, e))?;
        let path = index_dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        match FileExt::try_lock_exclusive(&file) {
            Ok(true) => Ok(Some(VectorLock { _file: file, path })),
            Ok(false) => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
