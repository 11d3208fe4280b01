use std::path::PathBuf;

/// Errors of `acms-core`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration file could not be read.
    #[error("cannot read config {path}: {source}")]
    ConfigRead {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The configuration has an unknown key or a bad value; `key` is the dotted path.
    #[error("config {origin}: key `{key}`: {message}")]
    Config {
        origin: String,
        key: String,
        message: String,
    },
    /// A tokenizer name that acms does not know.
    #[error("unknown tokenizer `{0}`: use `cl100k_base` or `o200k_base`")]
    UnknownTokenizer(String),
    /// A depth value outside 0, 2, 4, 9.
    #[error("invalid detail depth {0}: use 0, 2, 4 or 9")]
    InvalidDepth(u8),
}

/// Result alias for `acms-core`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
