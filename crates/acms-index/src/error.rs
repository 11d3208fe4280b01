use std::path::PathBuf;

/// Errors of `acms-index`. A bad *file* is never an error: it is a warning in the report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The repository path does not exist or is not a directory.
    #[error("repository {0} does not exist or is not a directory")]
    RepoNotFound(PathBuf),
    /// No index at the given directory.
    #[error("no acms index at {0}: run `acms index <REPO>` first")]
    IndexNotFound(PathBuf),
    /// The index directory cannot be created or written.
    #[error("cannot write index directory {path}: {source}")]
    IndexDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The on-disk format differs from this build's.
    #[error(
        "index at {path} has format v{found}, this acms reads v{expected}: run `acms index --rebuild <REPO>`"
    )]
    FormatVersion {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    /// The SQLite store failed.
    #[error("index store {path}: {source}")]
    Store {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// A node id that is not in the index.
    #[error("node {0} is not in the index")]
    UnknownNode(acms_core::NodeId),
    #[error(transparent)]
    Core(#[from] acms_core::Error),
}

/// Result alias for `acms-index`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
