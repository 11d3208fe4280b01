//! sha256 of files, atomic writes, and the stamp that lets a process trust the ONNX Runtime
//! library without hashing it again.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The sha256 of `bytes`, in hex.
pub fn sha256(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The sha256 of the file at `path`, in hex (read in 1 MiB pieces).
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// The temporary name `path` is written under before the rename: hidden, in the same
/// directory (so the rename is atomic), and with the process id (two fetches never share one).
pub fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.partial", std::process::id()))
}

/// Writes `bytes` to `path` through a temporary file, fsync and rename: a reader (or a fetch
/// killed half-way) never sees a truncated file. The directory entry is synced too.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_name(path);
    let result = (|| {
        let mut f = File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(bytes).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(|e| Error::io(path, e))?;
        sync_dir(path);
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Syncs the directory holding `path`, so a rename survives a crash (best effort: some file
/// systems refuse to open a directory for syncing).
pub(crate) fn sync_dir(path: &Path) {
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
}

/// The stamp file next to a verified library: `.<lib>.sha256-stamp` (hidden, so nothing that
/// looks for `libonnxruntime.so*` takes it for a library).
fn stamp_path(lib: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(lib.file_name().unwrap_or_default());
    name.push(".sha256-stamp");
    lib.with_file_name(name)
}

/// `size mtime-ns sha256` of a file as stat sees it now (the digest part is the caller's).
fn stat_key(path: &Path) -> Result<(u64, u128)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Ok((meta.len(), mtime))
}

/// Whether the library at `lib` has the digest `expected`. Cheap when nothing changed: the
/// stamp written by the last successful check holds the file's size, nanosecond mtime and
/// digest, and a file whose size and mtime still match it is not read again. Otherwise the
/// file is hashed, and a match writes a new stamp (best effort: a read-only directory only
/// costs the hash next time).
///
/// What the stamp does not cover: a rewrite that keeps the size and restores the mtime. The
/// stamp lives in the user's own cache, as the library does; whoever can change one can
/// change the other.
pub fn check_stamped(lib: &Path, expected: &str) -> Result<()> {
    let (size, mtime) = stat_key(lib)?;
    let stamp = stamp_path(lib);
    let wanted = format!("{size} {mtime} {expected}\n");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == wanted) {
        return Ok(());
    }
    let actual = sha256_file(lib)?;
    if actual != expected {
        return Err(Error::Digest {
            file: lib.to_path_buf(),
            expected: expected.to_string(),
            actual,
            deleted: false,
        });
    }
    let _ = write_atomic(&stamp, wanted.as_bytes());
    Ok(())
}

/// Records that `lib` as it is now has the digest `digest` (just checked by the caller); best
/// effort, like the stamp [`check_stamped`] writes.
pub fn write_stamp(lib: &Path, digest: &str) {
    if let Ok((size, mtime)) = stat_key(lib) {
        let _ = write_atomic(
            &stamp_path(lib),
            format!("{size} {mtime} {digest}\n").as_bytes(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_a_known_string() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_stamp_is_written_once_and_a_changed_file_is_hashed_again() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libx.so.1");
        std::fs::write(&lib, b"abc").unwrap();
        let good = sha256(b"abc");
        check_stamped(&lib, &good).unwrap();
        let stamp = std::fs::read_to_string(stamp_path(&lib)).unwrap();
        assert!(stamp.ends_with(&format!(" {good}\n")), "{stamp}");
        // Same size, new content and mtime: the stamp no longer matches, the hash catches it.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&lib, b"abd").unwrap();
        let err = check_stamped(&lib, &good).unwrap_err().to_string();
        assert!(
            err.contains(&good) && err.contains(&sha256(b"abd")),
            "{err}"
        );
        // A stamp for another digest does not vouch for this one.
        std::fs::write(&lib, b"abc").unwrap();
        check_stamped(&lib, &good).unwrap();
        assert!(check_stamped(&lib, &sha256(b"x")).is_err());
    }

    #[test]
    fn write_atomic_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        write_atomic(&path, b"{}").unwrap();
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.json"]);
    }
}
