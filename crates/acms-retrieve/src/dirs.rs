//! Where the derived indexes live inside an index directory: the keyword index and the
//! vectors. Below both `derived` (which refreshes them) and `embedding` (which writes the
//! vectors), so neither has to ask the other.

use std::path::{Path, PathBuf};

/// Where the keyword index lives inside an index directory.
pub fn keyword_dir(index_dir: &Path) -> PathBuf {
    index_dir.join("keyword")
}

/// Where the vectors live inside an index directory.
pub fn vector_dir(index_dir: &Path) -> PathBuf {
    index_dir.join("vectors")
}
