use std::path::PathBuf;

/// Errors of `acms-plan`. Every message says what to do next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No plan with this id (never started, or expired with its decisions).
    #[error("unknown plan {0}: use an id printed by `acms plan start` (see `acms plan history`)")]
    UnknownPlan(String),
    /// The plan has no phase of this name.
    #[error("plan {plan} has no phase `{phase}`: run the phase first (known: {known})")]
    UnknownPhase {
        plan: String,
        phase: String,
        known: String,
    },
    /// No decision with this id (never recorded, or expired from cold memory).
    #[error("unknown decision {0}: list decisions with `acms plan history`")]
    UnknownDecision(String),
    /// A fragment named in a decision is not in the phase's manifest.
    #[error(
        "fragment {fragment} is not in the manifest of phase `{phase}`: name ids from that phase's manifest"
    )]
    NotInManifest { phase: String, fragment: String },
    /// The plan was closed; closed plans are history.
    #[error("plan {0} is closed: start a new plan (or a child of it)")]
    PlanClosed(String),
    /// An argument that can never be valid (empty task, malformed id, ...).
    #[error("{0}")]
    Invalid(String),
    /// Another process held the database longer than the busy timeout.
    #[error("the plan database {path} is busy (another acms process is writing it): retry")]
    Busy { path: PathBuf },
    /// The database was written by a newer acms.
    #[error(
        "the plan database {path} has schema version {found}, newer than this acms ({supported}): upgrade acms, or move the file away to start a new one"
    )]
    NewerSchema {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// Any other SQLite failure.
    #[error("plan database {path}: {source}")]
    Database {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    /// The file is not a readable plan store (garbled header or pages, its tables gone). Never
    /// an unknown plan, and never recreated over: the plans in it may still be recoverable.
    #[error(
        "the plan database {path} is damaged ({detail}): its plans cannot be read; move it aside to start a new one (mv {path} {path}.damaged) or try `sqlite3 {path} .recover`"
    )]
    DamagedStore { path: PathBuf, detail: String },
    /// A stored row that cannot be read back (written by hand, or damaged).
    #[error("plan database {path}: damaged row: {message}")]
    Damaged { path: PathBuf, message: String },
}

/// Result alias for `acms-plan`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Maps a SQLite error on `path`, turning lock contention into [`Error::Busy`] and a
    /// garbled file into [`Error::DamagedStore`].
    pub(crate) fn db(path: &std::path::Path, source: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode::{DatabaseBusy, DatabaseCorrupt, DatabaseLocked, NotADatabase};
        match source.sqlite_error_code() {
            Some(DatabaseBusy | DatabaseLocked) => Error::Busy {
                path: path.to_path_buf(),
            },
            Some(DatabaseCorrupt) => Error::damaged_store(path, "its pages are malformed"),
            Some(NotADatabase) => Error::damaged_store(path, "it is not an SQLite database"),
            _ => Error::Database {
                path: path.to_path_buf(),
                source,
            },
        }
    }

    pub(crate) fn damaged_store(path: &std::path::Path, detail: &str) -> Error {
        Error::DamagedStore {
            path: path.to_path_buf(),
            detail: detail.to_string(),
        }
    }
}
