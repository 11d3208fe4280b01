//! The error type of `acms-keyword`: every way opening, updating or reading the keyword index
//! can fail. Query text is never a source of errors (see `query`), so no variant names a query.

use std::path::PathBuf;

/// Errors of `acms-keyword`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The index directory could not be created.
    #[error("cannot create keyword index directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// tantivy failed while opening, writing or reading the index.
    #[error(
        "keyword index at {path}: {source} (if the files are damaged, delete the directory and re-index)"
    )]
    Tantivy {
        path: PathBuf,
        #[source]
        source: tantivy::TantivyError,
    },
    /// Another writer (usually another acms process) holds the index lock.
    #[error(
        "keyword index at {path} is being written by another process: wait for it to finish, or remove {path}/.tantivy-writer.lock if no acms process is running"
    )]
    Locked { path: PathBuf },
    /// The directory holds an index whose fields differ from this version of acms.
    #[error(
        "keyword index at {path} was written with a different schema by another acms version: run `acms index` to rebuild it"
    )]
    SchemaMismatch { path: PathBuf },
    /// The commit payload (which carries the generation) is not ours or is damaged.
    #[error(
        "keyword index at {path} has an unreadable commit payload {payload:?}: delete the directory and re-index"
    )]
    BadPayload { path: PathBuf, payload: String },
    /// Files of the index are missing or cannot be opened (deleted, cut short).
    #[error("keyword index at {path} is damaged ({detail}): run `acms index` to rebuild it")]
    Damaged { path: PathBuf, detail: String },
    /// The index's list of managed files names something outside its folder: not a list
    /// tantivy wrote, and one its cleanup would delete files by.
    #[error(
        "keyword index at {path} lists a file outside its folder ({name:?}): acms did not write it; nothing was opened or deleted; run `acms index` to rebuild it"
    )]
    ForeignFile { path: PathBuf, name: String },
    /// One `apply` call listed the same document id twice in `add`.
    #[error("document id {0} is added twice in one apply call: add each id at most once per call")]
    DuplicateId(u64),
}

/// Result alias for `acms-keyword`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
