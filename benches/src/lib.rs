//! Shared helpers for the benchmarks: where the real corpora live once
//! `scripts/fetch-corpus.sh` has fetched them.

use std::path::PathBuf;

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ sits in the workspace root")
        .to_path_buf()
}

/// Directory the corpus `name` is fetched into (`ACMS_CORPUS_DIR`, else `<root>/.cache/corpora`).
pub fn corpus_dir(name: &str) -> PathBuf {
    std::env::var_os("ACMS_CORPUS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".cache/corpora"))
        .join(name)
}
