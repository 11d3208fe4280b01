use std::path::PathBuf;

/// Errors of `acms-index`. A bad *file* is never an error: it is a warning in the report.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The repository path does not exist or is not a directory.
    #[error("repository {0} does not exist or is not a directory")]
    RepoNotFound(PathBuf),
    /// The repository root exists but cannot be listed (permissions): indexing it would
    /// look like an empty tree and wipe the index.
    #[error("cannot read repository {path}: {source}: check its permissions")]
    RepoUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
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
    /// The store is damaged (a garbled page, a missing text): nothing read from it can be
    /// trusted until it is rebuilt.
    #[error("index store {path} is damaged ({detail}): run `acms index --rebuild <REPO>`")]
    Damaged { path: PathBuf, detail: String },
    /// `index.sqlite` exists but acms did not write it: acms neither uses nor deletes it.
    #[error(
        "{path} is not an acms index ({detail}): acms will not use or delete it; move it away or pass another `--index` directory"
    )]
    NotAnIndex { path: PathBuf, detail: String },
    /// The index folder holds something acms did not write for this user (shipped with the
    /// repository, copied from another user or machine, or older than seals).
    #[error(
        "{path} is not an index acms wrote for you ({why}): acms will not read, change or delete anything in it; remove it, or pass another `--index` directory"
    )]
    Untrusted { path: PathBuf, why: String },
    /// The per-user key that seals indexes cannot be read or created.
    #[error("the key that seals your indexes, {path}: {message}")]
    Key { path: PathBuf, message: String },
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
