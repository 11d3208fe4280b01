//! The evaluation's error type: what failed and what to do about it.

use std::path::PathBuf;

/// Errors of the evaluation harness.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A helper script or peer process failed.
    #[error("{command} failed: {message}")]
    Command { command: String, message: String },
    /// A line of JSON from a script or peer did not parse.
    #[error("{origin}: bad JSON line: {message}")]
    Json { origin: String, message: String },
    #[error("unknown corpus '{0}': see scripts/fetch-corpus.sh --list")]
    UnknownCorpus(String),
    #[error("bad argument: {0}")]
    Argument(String),
    #[error(transparent)]
    Engine(#[from] acms::Error),
    #[error(transparent)]
    Assemble(#[from] acms::assemble::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Attaches a path to an I/O error.
pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
