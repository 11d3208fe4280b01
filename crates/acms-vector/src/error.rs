//! The error type of `acms-vector`. Every variant that concerns a file names it, and the
//! messages say what to do next.

use std::path::PathBuf;

/// Errors of `acms-vector`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A persisted file is truncated, modified or not an acms file at all.
    #[error(
        "{path} is corrupted ({reason}): delete it and re-run `acms index` to rebuild the vectors"
    )]
    Corrupt { path: PathBuf, reason: String },
    /// A persisted file was written by a different format version.
    #[error(
        "{path} has format version {found}, this acms reads version {expected}: re-run `acms index --rebuild`"
    )]
    Version {
        path: PathBuf,
        found: u32,
        expected: u32,
    },
    /// A vector whose length is not the dimension of the index or embedder.
    #[error("vector of dimension {found} where {expected} was expected")]
    Dimension { expected: usize, found: usize },
    /// A vector with NaN or infinite components, or a zero vector where a direction is needed.
    #[error("invalid vector for id {id}: {reason}")]
    InvalidVector { id: u64, reason: &'static str },
    /// No model is installed where the configuration points: semantic search is off until one
    /// is, the other strategies work.
    #[error(
        "no embedding model in {dir}: semantic search is off (keyword and graph retrieval work); \
         run `acms model fetch` to install the default model there (`acms index` does on \
         first use)"
    )]
    NoModel { dir: PathBuf },
    /// A model directory that is incomplete or holds a file that cannot be loaded; `file` is
    /// the one at fault when it is known.
    #[error(
        "embedding model in {dir}: {}{message}; fix: run `acms model fetch` to restore \
         the model (semantic search is off until then, keyword and graph retrieval work)",
        file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default()
    )]
    Model {
        dir: PathBuf,
        file: Option<PathBuf>,
        message: String,
    },
    /// The embedding model failed on a batch of texts.
    #[error("embedding failed: {0}")]
    Embed(String),
    /// A bad index parameter.
    #[error("invalid vector index parameter: {0}")]
    Config(String),
    /// The HNSW library failed (building, dumping or reloading the graph).
    #[error("HNSW graph {path}: {message}")]
    Graph { path: PathBuf, message: String },
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(path: impl Into<PathBuf>, reason: impl Into<String>) -> Error {
        Error::Corrupt {
            path: path.into(),
            reason: reason.into(),
        }
    }
}

/// Result alias for `acms-vector`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
