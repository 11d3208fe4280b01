//! Test support: copies of the `tests/data/shop` fixture repository in temporary
//! directories. Only integration tests depend on this crate.

use std::path::{Path, PathBuf};

/// The fixture repository in the source tree (never written to).
pub fn shop_source() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/shop")
}

/// A fresh copy of the fixture repository.
pub fn shop() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    copy_dir(&shop_source(), dir.path());
    dir
}

/// Copies the tree `src` into the existing directory `dst`.
pub fn copy_dir(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).expect("readable fixture") {
        let entry = entry.expect("fixture entry");
        let to = dst.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            std::fs::create_dir_all(&to).expect("create fixture dir");
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).expect("copy fixture file");
        }
    }
}
