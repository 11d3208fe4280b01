//! The on-disk store: one SQLite database (`index.sqlite`) in the index directory holding
//! files (with their text), nodes (renderings and exact token counts per depth), raw
//! references and imports, and the resolved edges.
//!
//! **Architecture Invariant:** every index run is one SQLite transaction, so a run killed at
//! any point leaves the previous index readable. The derived keyword and vector indexes
//! (owned by `acms-retrieve`) record the store's `generation` to detect that they are stale.
//!
//! **Architecture Invariant:** acms only uses or deletes an `index.sqlite` it wrote, in a
//! folder it sealed for this user ([`crate::seal`]): the header carries [`APPLICATION_ID`] and
//! `meta.store_id` is the id the seal names. The repository root comes from the seal, never
//! from the store. A damaged store is an error that says to rebuild, and a text the store
//! should hold but does not is [`Error::Damaged`], never an empty string.
//!
//! This module does not parse, walk or count tokens: it stores what the builder hands it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use acms_core::{Depth, NodeId};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::model::{Language, NodeKind};
use crate::seal::{self, Standing};
use crate::{Error, Result};

/// Bumped on every incompatible change of the schema or of what is stored. 2: the store id
/// and the seal; the repository root is no longer read from the store. 3: what reading on
/// demand needs (lower-case names, roots and edges by target indexed, files' generated flag).
/// 4: a reference no longer repeats its file's path (its source node has it), a tenth of a
/// monorepo's store; a version-3 store is read as it is and migrated by its next index run.
/// 5: files' texts and the longer renderings are stored zstd-compressed (`packed`); the plain
/// texts of a version-4 store are read as they are, and its next index run marks it 5.
/// 6: edges and references keyed by their columns (`WITHOUT ROWID`, no second index by
/// source) with their kinds as small codes ([`EdgeKind::code`]), and a doc rendering equal to
/// the signature stored empty: a tenth less store on a monorepo. Older stores are read as
/// they are (kinds by name); their next index run migrates them.
const FORMAT_VERSION: u32 = 6;
/// The version before edges and references were keyed by their columns: readable as it is.
const ROWID_EDGES: u32 = 5;
/// The version before files' texts were packed: readable as it is.
const PLAIN_TEXTS: u32 = 4;
/// The version before `refs` lost its path column: readable (readers never read `refs`).
const REFS_WITH_PATH: u32 = 3;
/// The versions this build reads; an index run migrates the older ones.
const READABLE: &[u32] = &[FORMAT_VERSION, ROWID_EDGES, PLAIN_TEXTS, REFS_WITH_PATH];

use crate::seal::DB_FILE;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    path TEXT PRIMARY KEY, hash TEXT NOT NULL, language TEXT NOT NULL, size INTEGER NOT NULL,
    mtime INTEGER NOT NULL, modified INTEGER NOT NULL, generated INTEGER NOT NULL,
    content TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL,
    lname TEXT NOT NULL, qualified_name TEXT NOT NULL, parent INTEGER,
    start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL, signature TEXT NOT NULL, doc TEXT, with_doc TEXT NOT NULL,
    skeleton TEXT NOT NULL, tok0 INTEGER NOT NULL, tok2 INTEGER NOT NULL, tok4 INTEGER NOT NULL,
    tok9 INTEGER NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS nodes_path ON nodes(path);
CREATE INDEX IF NOT EXISTS nodes_lname ON nodes(lname);
CREATE INDEX IF NOT EXISTS nodes_root ON nodes(path, id) WHERE parent IS NULL;
CREATE TABLE IF NOT EXISTS refs (src INTEGER NOT NULL, name TEXT NOT NULL, kind INTEGER NOT NULL,
    PRIMARY KEY (src, name, kind)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS imports (path TEXT NOT NULL, module TEXT NOT NULL, names TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS imports_path ON imports(path);
CREATE TABLE IF NOT EXISTS edges (src INTEGER NOT NULL, dst INTEGER NOT NULL, kind INTEGER NOT NULL,
    confidence REAL NOT NULL, PRIMARY KEY (src, dst, kind)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skipped (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime INTEGER NOT NULL, verdict TEXT);
";

/// Also the warnings of the indexed files' analysis (`file_warnings`: a syntax error, a
/// secret redacted), which a run repeats for the files it does not read again: the index
/// holds what they describe. Readers never read it, so the format is unchanged.
///
/// Indexes an incremental run looks rows up by (reference names for edge resolution, edges
/// by target; both tables are keyed by source; node names use `nodes_lname`), and the
/// files' stats without their contents (`files_stat` covers [`Store::files`]: a scan of the
/// table itself reads every file's text, 200 MB on a monorepo, for the change check before
/// each assembly). Created on every open for writing, so a store written before them gets
/// them on its next run.
const LOOKUP_INDEXES: &str = "
CREATE INDEX IF NOT EXISTS files_stat ON files(path, hash, language, size, mtime, modified, generated);
DROP INDEX IF EXISTS nodes_name;
CREATE INDEX IF NOT EXISTS refs_name ON refs(name);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst);
CREATE TABLE IF NOT EXISTS file_warnings (path TEXT NOT NULL, message TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS file_warnings_path ON file_warnings(path);
";

/// A file a run walked and did not index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkippedFile {
    pub size: u64,
    pub mtime: i64,
    /// Why, when that follows from its content alone (binary, empty, a kind acms does not
    /// read: the warning, `""` for none): while its stat stays, the next run repeats the
    /// verdict without reading the file. `None` for everything else (held back, over a cap,
    /// unreadable), which each run judges again.
    pub verdict: Option<String>,
}

/// `PRAGMA application_id` of every store acms writes (`ACMS` in ASCII), so a database acms
/// did not write is recognized and left alone.
pub const APPLICATION_ID: i32 = 0x4143_4D53;

/// What the `index.sqlite` of an index directory is, judged from its header.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DbFile {
    Missing,
    /// Zero bytes (a `touch`): no data, so acms may write into it.
    Empty,
    Ours,
    Foreign(String),
}

fn inspect(path: &Path) -> DbFile {
    use std::io::Read;
    let mut head = [0u8; 100];
    let read = std::fs::File::open(path).and_then(|mut f| {
        let mut n = 0;
        while n < head.len() {
            match f.read(&mut head[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    });
    let n = match read {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return DbFile::Missing,
        Err(e) => return DbFile::Foreign(format!("cannot read it: {e}")),
    };
    if n == 0 {
        return DbFile::Empty;
    }
    if n < head.len() || !head.starts_with(b"SQLite format 3\0") {
        return DbFile::Foreign("not a SQLite database".into());
    }
    let id = i32::from_be_bytes([head[68], head[69], head[70], head[71]]);
    if id == APPLICATION_ID {
        DbFile::Ours
    } else {
        DbFile::Foreign(format!("a SQLite database with application id {id:#x}"))
    }
}

/// The seal of `index_dir` when it is acms's own; the error every other standing becomes.
fn sealed(index_dir: &Path) -> Result<(PathBuf, String)> {
    match seal::standing(index_dir)? {
        Standing::Ours { repo, store_id } => Ok((repo, store_id)),
        Standing::Vacant => Err(Error::IndexNotFound(index_dir.to_path_buf())),
        Standing::Foreign(why) => Err(Error::Untrusted {
            path: index_dir.to_path_buf(),
            why,
        }),
    }
}

/// Deletes the database files of the index at `index_dir` (a rebuild of an index this build
/// cannot read). Only in a folder sealed as acms's own, and only an `index.sqlite` acms wrote.
pub(crate) fn remove_db(index_dir: &Path) -> Result<()> {
    sealed(index_dir)?;
    let db = index_dir.join(DB_FILE);
    if let DbFile::Foreign(detail) = inspect(&db) {
        return Err(Error::NotAnIndex { path: db, detail });
    }
    for suffix in ["", "-wal", "-shm", ".stamp"] {
        let path = index_dir.join(format!("{DB_FILE}{suffix}"));
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::IndexDir { path, source }),
        }
    }
    Ok(())
}

/// File in the index directory holding the [`stamp`] of the store's files as acms's last
/// committed run left them.
const STAMP_FILE: &str = "index.sqlite.stamp";

/// Size and modification time (ns) of the database and its WAL file; `None` when a time cannot
/// be read (then no stamp is trusted). An empty WAL file is no WAL: the first reader after a
/// run creates one, and that made every run after a fresh index check the whole store (0.6 s
/// of a monorepo's first edit).
fn stamp(index_dir: &Path) -> Option<String> {
    let mut parts = Vec::with_capacity(2);
    for suffix in ["", "-wal"] {
        match std::fs::metadata(index_dir.join(format!("{DB_FILE}{suffix}"))) {
            Ok(m) if suffix == "-wal" && m.len() == 0 => parts.push("-".into()),
            Ok(m) => {
                let t = m
                    .modified()
                    .ok()?
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?;
                parts.push(format!("{} {}", m.len(), t.as_nanos()));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => parts.push("-".into()),
            Err(_) => return None,
        }
    }
    Some(parts.join(" "))
}

/// True when the store's files are exactly as acms's last committed run left them (same
/// sizes and modification times as its stamp): nothing else wrote them since, so what that
/// run checked and wrote has not been garbled by a writer since.
pub(crate) fn stamp_matches(index_dir: &Path) -> bool {
    let Ok(recorded) = std::fs::read_to_string(index_dir.join(STAMP_FILE)) else {
        return false;
    };
    stamp(index_dir).is_some_and(|now| recorded.trim_end() == now)
}

/// Records the stamp after a committed run, written beside and renamed over the previous
/// one. Best effort: without a stamp the next run checks the whole store.
pub(crate) fn record_stamp(index_dir: &Path) {
    let path = index_dir.join(STAMP_FILE);
    let Some(now) = stamp(index_dir) else {
        let _ = std::fs::remove_file(&path);
        return;
    };
    let tmp = index_dir.join(format!("{STAMP_FILE}.tmp"));
    if std::fs::write(&tmp, format!("{now}\n")).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&path);
    }
}

/// An edge kind of the UKO graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EdgeKind {
    /// Parent contains child (module → class → method).
    Contains,
    /// Module imports module (resolved to a repository file).
    Imports,
    /// A node calls or references another, resolved by name.
    Calls,
    /// A class/impl inherits or implements another.
    Inherits,
}

impl EdgeKind {
    /// Stable name used in the store.
    pub fn name(self) -> &'static str {
        match self {
            EdgeKind::Contains => "contains",
            EdgeKind::Imports => "imports",
            EdgeKind::Calls => "calls",
            EdgeKind::Inherits => "inherits",
        }
    }

    /// The code a version-6 store holds; in the names' order, so rows sort the same.
    fn code(self) -> i64 {
        match self {
            EdgeKind::Calls => 0,
            EdgeKind::Contains => 1,
            EdgeKind::Imports => 2,
            EdgeKind::Inherits => 3,
        }
    }

    /// The kind a stored value names: a code, or a name as stores before version 6 hold it.
    /// `None` for a value no run writes.
    fn from_stored(value: rusqlite::types::ValueRef<'_>) -> Option<EdgeKind> {
        use rusqlite::types::ValueRef;
        match value {
            ValueRef::Integer(0) => Some(EdgeKind::Calls),
            ValueRef::Integer(1) => Some(EdgeKind::Contains),
            ValueRef::Integer(2) => Some(EdgeKind::Imports),
            ValueRef::Integer(3) => Some(EdgeKind::Inherits),
            ValueRef::Text(t) => std::str::from_utf8(t).ok().and_then(EdgeKind::from_name),
            _ => None,
        }
    }

    fn from_name(s: &str) -> Option<EdgeKind> {
        Some(match s {
            "contains" => EdgeKind::Contains,
            "imports" => EdgeKind::Imports,
            "calls" => EdgeKind::Calls,
            "inherits" => EdgeKind::Inherits,
            _ => return None,
        })
    }
}

/// A resolved edge; `confidence` is 1.0 for structural edges and lower for name-based ones.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EdgeRecord {
    pub src: NodeId,
    pub dst: NodeId,
    pub kind: EdgeKind,
    pub confidence: f32,
}

/// A node as [`Store::file_nodes`] reads it: (id, name, kind, parent).
pub(crate) type NodeBrief = (NodeId, String, NodeKind, Option<NodeId>);

/// The key of an edge row: (source, target, kind code).
pub(crate) type EdgeKey = (i64, i64, i64);

/// An edge row as [`Store::edges_from`] reads it: (key, edge, target name).
pub(crate) type StoredEdge = (EdgeKey, Option<EdgeRecord>, Option<String>);

/// A stored file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Repository-relative, `/`-separated.
    pub path: String,
    pub hash: String,
    pub language: Language,
    pub size: u64,
    /// File system mtime (seconds), used to skip re-reading unchanged files.
    pub mtime: i64,
    /// Last change (seconds): the latest git commit touching the file when known, else mtime.
    pub modified: i64,
    /// Its head carries a generator's banner (`DO NOT EDIT`, `@generated`: see
    /// [`crate::generated_header`]).
    #[serde(default)]
    pub generated: bool,
}

/// A stored node, without its depth 2/4/9 texts (see [`Store::text`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub id: NodeId,
    pub path: String,
    pub kind: NodeKind,
    pub name: String,
    pub qualified_name: String,
    pub parent: Option<NodeId>,
    pub start_line: u32,
    pub end_line: u32,
    pub start_byte: usize,
    pub end_byte: usize,
    pub signature: String,
    pub doc: Option<String>,
    /// Exact token counts at depths 0, 2, 4, 9 (indexed by [`Depth::index`]).
    pub tokens: [u32; 4],
}

impl NodeRecord {
    /// Exact tokens of the rendering at `depth`.
    pub fn tokens_at(&self, depth: Depth) -> u32 {
        self.tokens[depth.index()]
    }
}

/// Everything stored for one file by one index run.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileRows {
    pub nodes: Vec<NodeRow>,
    pub refs: Vec<(NodeId, String, crate::model::RefKind)>,
    pub imports: Vec<crate::model::ParsedImport>,
}

/// A node as written, with all renderings.
#[derive(Debug, Clone)]
pub(crate) struct NodeRow {
    pub record: NodeRecord,
    pub with_doc: String,
    pub skeleton: String,
}

/// Store-level facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub format_version: u32,
    /// Absolute path of the indexed repository, from the folder's seal.
    pub repo_root: PathBuf,
    /// The store's random id: the seal names it, and the derived indexes record it beside the
    /// generation, so a store created again (a rebuild) never matches their old state.
    pub store_id: String,
    /// Name of the tokenizer every stored count was made with.
    pub tokenizer: String,
    /// The [`crate::ANALYZERS_VERSION`] every stored file was parsed with (empty before the
    /// version was recorded).
    pub analyzers: String,
    /// Incremented by every committed run.
    pub generation: u64,
    /// What the last run left out under `context.file.max-total-size` (empty: nothing).
    pub left_out: String,
}

/// The SQLite-backed index store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The repository the folder's seal names.
    repo: PathBuf,
    /// Files' texts unpacked lately.
    unpacked: Unpacked,
    /// Migrated from an older format when opened: its old tables' pages are free.
    migrated: bool,
}

/// The last [`Unpacked::FILES`] files' texts unpacked, by path and content hash (so a text
/// rewritten since is never served): an assembly reads many nodes of a few files, and
/// unpacking each file once per node was a fifth of a warm call.
#[derive(Default)]
struct Unpacked(std::cell::RefCell<std::collections::VecDeque<(String, String, Arc<str>)>>);

impl Unpacked {
    const FILES: usize = 32;

    fn get(&self, path: &str, hash: &str) -> Option<Arc<str>> {
        let files = self.0.borrow();
        let hit = files.iter().find(|(p, h, _)| p == path && h == hash);
        hit.map(|(_, _, text)| Arc::clone(text))
    }

    fn put(&self, path: &str, hash: &str, text: Arc<str>) {
        let mut files = self.0.borrow_mut();
        if files.len() == Self::FILES {
            files.pop_front();
        }
        files.push_back((path.to_string(), hash.to_string(), text));
    }
}

/// True for errors SQLite raises on a damaged file, and for values a schema column cannot
/// hold (a NULL or a wrong type in a `NOT NULL` column reads back only from a garbled page).
fn is_damage(e: &rusqlite::Error) -> bool {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase
        ),
        rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..) => true,
        _ => false,
    }
}

/// The first problem `PRAGMA quick_check` finds, if any.
fn quick_check(conn: &Connection) -> Option<String> {
    match conn.query_row("PRAGMA quick_check(1)", [], |r| r.get::<_, String>(0)) {
        Ok(v) if v == "ok" => None,
        Ok(v) => Some(v),
        Err(e) => Some(e.to_string()),
    }
}

impl Store {
    /// Maps a SQLite error: when the error or an integrity check says the file is damaged,
    /// [`Error::Damaged`] (which says to rebuild); otherwise [`Error::Store`].
    fn err(&self, source: rusqlite::Error) -> Error {
        if is_damage(&source) {
            return self.damaged(source.to_string());
        }
        match quick_check(&self.conn) {
            Some(detail) => self.damaged(detail),
            None => Error::Store {
                path: self.path.clone(),
                source,
            },
        }
    }

    fn damaged(&self, detail: impl Into<String>) -> Error {
        Error::Damaged {
            path: self.path.clone(),
            detail: detail.into(),
        }
    }

    /// Checks the whole file with `PRAGMA quick_check` (every page read once): an index run
    /// does this before it trusts what the store holds, unless the store is exactly as the
    /// last run left it (see [`STAMP_FILE`]).
    pub(crate) fn check_integrity(&self) -> Result<()> {
        match quick_check(&self.conn) {
            Some(detail) => Err(self.damaged(detail)),
            None => Ok(()),
        }
    }

    /// Rewrites the file compactly (`VACUUM`) when `rewritten` (a run that wrote every row:
    /// rows arrive in hash-id order and leave pages a tenth empty), when it was migrated, or
    /// when a quarter of its pages are free (a large deletion). Runs after the run's commit,
    /// in its own transaction: a killed compaction leaves the committed store. Returns
    /// whether it ran.
    pub(crate) fn compact_if_loose(&self, rewritten: bool) -> Result<bool> {
        let pragma = |name: &str| -> Result<i64> {
            self.conn
                .query_row(&format!("PRAGMA {name}"), [], |r| r.get(0))
                .map_err(|e| self.err(e))
        };
        let loose = pragma("freelist_count")? * 4 > pragma("page_count")?;
        if !(rewritten || self.migrated || loose) {
            return Ok(false);
        }
        // The WAL then holds every page once more: folded back and truncated at once.
        self.conn
            .execute_batch("VACUUM; PRAGMA wal_checkpoint(TRUNCATE);")
            .map_err(|e| self.err(e))?;
        Ok(true)
    }

    /// Opens an existing index read-only: a folder sealed as acms's own, a store carrying the
    /// sealed id, of this build's format version.
    pub fn open(index_dir: &Path) -> Result<Store> {
        let (repo, store_id) = sealed(index_dir)?;
        let path = index_dir.join(DB_FILE);
        match inspect(&path) {
            DbFile::Missing | DbFile::Empty => {
                return Err(Error::IndexNotFound(index_dir.to_path_buf()));
            }
            DbFile::Foreign(detail) => return Err(Error::NotAnIndex { path, detail }),
            DbFile::Ours => {}
        }
        let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(
            |source| Error::Store {
                path: path.clone(),
                source,
            },
        )?;
        let store = Store {
            conn,
            path,
            repo,
            unpacked: Unpacked::default(),
            migrated: false,
        };
        store.check_version(index_dir, READABLE)?;
        store.check_id(&store_id)?;
        Ok(store)
    }

    /// Opens an index for writing the index of `repo` (canonical), creating it in a vacant
    /// folder. A folder acms did not seal for this user is [`Error::Untrusted`]: nothing in it
    /// is read, changed or deleted.
    pub(crate) fn open_for_write(index_dir: &Path, repo: &Path) -> Result<Store> {
        let path = index_dir.join(DB_FILE);
        let sealed_id = match seal::standing(index_dir)? {
            Standing::Vacant => {
                std::fs::create_dir_all(index_dir).map_err(|source| Error::IndexDir {
                    path: index_dir.to_path_buf(),
                    source,
                })?;
                None
            }
            Standing::Ours { store_id, .. } => Some(store_id),
            Standing::Foreign(why) => {
                return Err(Error::Untrusted {
                    path: index_dir.to_path_buf(),
                    why,
                });
            }
        };
        let (fresh, store_id) = match (inspect(&path), sealed_id) {
            (DbFile::Foreign(detail), _) => return Err(Error::NotAnIndex { path, detail }),
            (DbFile::Ours, Some(id)) => (false, id),
            // Sealed, but killed before its store existed; or an `index.sqlite` with no seal
            // in an otherwise vacant folder cannot happen (the folder would not be vacant).
            (DbFile::Missing | DbFile::Empty, _) | (DbFile::Ours, None) => {
                (true, seal::new_store_id()?)
            }
        };
        if fresh {
            // Sealed first: a run killed before the store exists leaves a folder acms still
            // recognises as its own, and creates the store again.
            seal::seal(index_dir, repo, &store_id)?;
        }
        let conn = Connection::open(&path).map_err(|source| Error::Store {
            path: path.clone(),
            source,
        })?;
        let mut store = Store {
            conn,
            path,
            repo: repo.to_path_buf(),
            unpacked: Unpacked::default(),
            migrated: false,
        };
        // Stamped before WAL mode, so the id reaches the file's header at once.
        store
            .conn
            .execute_batch(&format!(
                "PRAGMA application_id = {APPLICATION_ID}; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            ))
            .map_err(|e| store.err(e))?;
        if fresh {
            store.conn.execute_batch(SCHEMA).map_err(|e| store.err(e))?;
            for (key, value) in [
                ("format_version", FORMAT_VERSION.to_string()),
                ("store_id", store_id),
            ] {
                store
                    .conn
                    .execute(
                        "INSERT INTO meta(key, value) VALUES (?1, ?2)",
                        params![key, value],
                    )
                    .map_err(|e| store.err(e))?;
            }
        } else {
            let found = store.check_version(index_dir, READABLE)?;
            store.check_id(&store_id)?;
            if found != FORMAT_VERSION {
                store.migrate()?;
                store.migrated = true;
            }
        }
        store
            .conn
            .execute_batch(LOOKUP_INDEXES)
            .map_err(|e| store.err(e))?;
        store.add_verdicts()?;
        Ok(store)
    }

    /// Gives a store written before the `skipped.verdict` column the column (its rows have
    /// none, so their files are read once more). Readers never ask for it, and a build
    /// without it writes rows without verdicts: the store's format is unchanged.
    fn add_verdicts(&self) -> Result<()> {
        let has: bool = self
            .conn
            .query_row(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('skipped') WHERE name = 'verdict'",
                [],
                |r| r.get(0),
            )
            .map_err(|e| self.err(e))?;
        if !has {
            self.conn
                .execute("ALTER TABLE skipped ADD COLUMN verdict TEXT", [])
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Seals the folder for the repository this store was opened for, when its seal names
    /// another (an index run of another checkout into the same folder).
    pub(crate) fn reseal(&self, index_dir: &Path) -> Result<()> {
        let store_id = self.meta_value("store_id")?.unwrap_or_default();
        match seal::standing(index_dir)? {
            Standing::Ours { repo, .. } if repo == self.repo => Ok(()),
            _ => seal::seal(index_dir, &self.repo, &store_id),
        }
    }

    /// Checks that the store carries the id its folder's seal names.
    fn check_id(&self, sealed: &str) -> Result<()> {
        match self.meta_value("store_id")? {
            Some(id) if id == sealed => Ok(()),
            _ => Err(Error::NotAnIndex {
                path: self.path.clone(),
                detail: "it is not the store this folder was sealed with (replaced since)".into(),
            }),
        }
    }

    /// The store's format version, when it is one of `accepted`.
    fn check_version(&self, index_dir: &Path, accepted: &[u32]) -> Result<u32> {
        let found = self.meta_value("format_version")?;
        let found: u32 = found.and_then(|v| v.parse().ok()).unwrap_or(0);
        if !accepted.contains(&found) {
            return Err(Error::FormatVersion {
                path: index_dir.to_path_buf(),
                found,
                expected: FORMAT_VERSION,
            });
        }
        Ok(found)
    }

    /// Versions 3–5 → 6, in one transaction (a killed migration leaves the store as it was):
    /// references without a path column (3), edges and references keyed by their columns
    /// with their kinds as codes, and doc renderings equal to the signature stored empty.
    /// Plain texts (3, 4) stay as they are: readers unpack either. The freed pages make the
    /// file loose, so the run compacts it ([`Store::compact_if_loose`]).
    fn migrate(&self) -> Result<()> {
        let edge_code = |column: &str| -> String {
            let arms: String = [
                EdgeKind::Calls,
                EdgeKind::Contains,
                EdgeKind::Imports,
                EdgeKind::Inherits,
            ]
            .iter()
            .map(|k| format!(" WHEN '{}' THEN {}", k.name(), k.code()))
            .collect();
            format!("CASE {column}{arms} END")
        };
        let sql = format!(
            "BEGIN IMMEDIATE;
             CREATE TABLE refs_v6 (src INTEGER NOT NULL, name TEXT NOT NULL, kind INTEGER NOT NULL,
                 PRIMARY KEY (src, name, kind)) WITHOUT ROWID;
             INSERT OR IGNORE INTO refs_v6
                 SELECT src, name, CASE kind WHEN 'inherits' THEN {inherits} ELSE {call} END FROM refs;
             DROP TABLE refs;
             ALTER TABLE refs_v6 RENAME TO refs;
             CREATE TABLE edges_v6 (src INTEGER NOT NULL, dst INTEGER NOT NULL, kind INTEGER NOT NULL,
                 confidence REAL NOT NULL, PRIMARY KEY (src, dst, kind)) WITHOUT ROWID;
             INSERT OR REPLACE INTO edges_v6
                 SELECT src, dst, {edge_kind}, confidence FROM edges WHERE {edge_kind} IS NOT NULL
                 ORDER BY src, dst, kind, confidence;
             DROP TABLE edges;
             ALTER TABLE edges_v6 RENAME TO edges;
             UPDATE nodes SET with_doc = '' WHERE with_doc = signature;
             UPDATE meta SET value = '{FORMAT_VERSION}' WHERE key = 'format_version';
             COMMIT;",
            inherits = ref_kind_code(crate::model::RefKind::Inherits),
            call = ref_kind_code(crate::model::RefKind::Call),
            edge_kind = edge_code("kind"),
        );
        self.conn.execute_batch(&sql).map_err(|e| {
            let _ = self.conn.execute_batch("ROLLBACK");
            self.err(e)
        })
    }

    fn meta_value(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.err(e))
    }

    /// Every row `sql` yields for `params`, each mapped by `row`, collected (a `Vec`, a map);
    /// the statement is cached on the connection.
    fn rows<T, C: FromIterator<T>>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        row: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<C> {
        let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
        let rows = stmt.query_map(params, row).map_err(|e| self.err(e))?;
        rows.collect::<rusqlite::Result<C>>()
            .map_err(|e| self.err(e))
    }

    /// Store-level facts; an index that never completed a run has generation 0.
    pub fn meta(&self) -> Result<Meta> {
        Ok(Meta {
            format_version: FORMAT_VERSION,
            repo_root: self.repo.clone(),
            store_id: self.meta_value("store_id")?.unwrap_or_default(),
            tokenizer: self.meta_value("tokenizer")?.unwrap_or_default(),
            analyzers: self.meta_value("analyzers")?.unwrap_or_default(),
            generation: self
                .meta_value("generation")?
                .and_then(|g| g.parse().ok())
                .unwrap_or(0),
            left_out: self.meta_value("left_out")?.unwrap_or_default(),
        })
    }

    /// All files.
    pub fn files(&self) -> Result<Vec<FileRecord>> {
        self.rows(
            &format!("SELECT {FILE_COLUMNS} FROM files ORDER BY path"),
            [],
            file_row,
        )
    }

    /// The file at `path`, if the index holds it.
    pub fn file(&self, path: &str) -> Result<Option<FileRecord>> {
        self.conn
            .prepare_cached(&format!("SELECT {FILE_COLUMNS} FROM files WHERE path = ?1"))
            .and_then(|mut s| s.query_row(params![path], file_row).optional())
            .map_err(|e| self.err(e))
    }

    /// The first root node of the file at `path` in source order (its module, when the file
    /// has one): what [`Store::roots`] gives for that path, without reading every root.
    pub fn first_root(&self, path: &str) -> Result<Option<NodeId>> {
        self.conn
            .prepare_cached(
                "SELECT id FROM nodes INDEXED BY nodes_root WHERE parent IS NULL AND path = ?1
                 ORDER BY seq, id LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![path], |r| r.get::<_, i64>(0))
                    .optional()
            })
            .map(|id| id.map(|id| NodeId(id as u64)))
            .map_err(|e| self.err(e))
    }

    /// The node with `id`, if the index holds it.
    pub fn node(&self, id: NodeId) -> Result<Option<NodeRecord>> {
        self.conn
            .prepare_cached(&format!("SELECT {NODE_COLUMNS} FROM nodes WHERE id = ?1"))
            .and_then(|mut s| s.query_row(params![id.0 as i64], node_row).optional())
            .map_err(|e| self.err(e))
    }

    /// The ids of the nodes whose name, lower-cased (`str::to_lowercase`), is `lname`, in path
    /// then source order (the order of [`Store::nodes`]).
    pub fn ids_named_lower(&self, lname: &str) -> Result<Vec<NodeId>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, path, seq FROM nodes WHERE lname = ?1")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![lname], |r| {
                Ok((
                    NodeId(r.get::<_, i64>(0)? as u64),
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut found: Vec<(NodeId, String, i64)> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        found.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(a.2.cmp(&b.2)));
        Ok(found.into_iter().map(|(id, _, _)| id).collect())
    }

    /// Every root node (no parent: a file's module or document node) as (path, id, kind,
    /// qualified name), in path then source order.
    pub fn roots(&self) -> Result<Vec<(String, NodeId, NodeKind, String)>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT path, id, kind, qualified_name, seq FROM nodes INDEXED BY nodes_root
                 WHERE parent IS NULL",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                let kind: String = r.get(2)?;
                Ok((
                    (
                        r.get::<_, String>(0)?,
                        NodeId(r.get::<_, i64>(1)? as u64),
                        NodeKind::from_name(&kind).unwrap_or(NodeKind::Chunk),
                        r.get::<_, String>(3)?,
                    ),
                    r.get::<_, i64>(4)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut roots: Vec<((String, NodeId, NodeKind, String), i64)> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        roots.sort_unstable_by(|a, b| a.0.0.cmp(&b.0.0).then(a.1.cmp(&b.1)));
        Ok(roots.into_iter().map(|(r, _)| r).collect())
    }

    /// Every edge with `id` at one end: (the other end, kind, confidence, outgoing).
    pub fn edges_touching(&self, id: NodeId) -> Result<Vec<(NodeId, EdgeKind, f32, bool)>> {
        let mut out = Vec::new();
        for (sql, outgoing) in [
            (
                "SELECT dst, kind, confidence FROM edges WHERE src = ?1",
                true,
            ),
            (
                "SELECT src, kind, confidence FROM edges WHERE dst = ?1",
                false,
            ),
        ] {
            let mut stmt = self.conn.prepare_cached(sql).map_err(|e| self.err(e))?;
            let rows = stmt
                .query_map(params![id.0 as i64], |r| {
                    Ok((
                        NodeId(r.get::<_, i64>(0)? as u64),
                        // As `Store::edges` reads a kind no run writes.
                        EdgeKind::from_stored(r.get_ref(1)?).unwrap_or(EdgeKind::Calls),
                        r.get::<_, f64>(2)? as f32,
                        outgoing,
                    ))
                })
                .map_err(|e| self.err(e))?;
            for row in rows {
                out.push(row.map_err(|e| self.err(e))?);
            }
        }
        Ok(out)
    }

    /// Number of nodes and of edges.
    pub fn counts(&self) -> Result<(usize, usize)> {
        Ok((self.count("nodes")?, self.count("edges")?))
    }

    /// The files the last run walked but did not index (held back, over a cap, binary, of a
    /// kind acms does not read, unreadable), with the size and mtime it saw.
    pub fn skipped(&self) -> Result<std::collections::BTreeMap<String, (u64, i64)>> {
        Ok(self
            .skipped_rows("NULL")?
            .into_iter()
            .map(|(path, f)| (path, (f.size, f.mtime)))
            .collect())
    }

    /// [`Store::skipped`] with each file's verdict (a store opened for writing only).
    /// The warnings the indexed files' analysis gave, by path.
    pub(crate) fn file_warnings(&self) -> Result<HashMap<String, Vec<String>>> {
        let mut stmt = self
            .conn
            .prepare("SELECT path, message FROM file_warnings ORDER BY rowid")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        let mut by_path: HashMap<String, Vec<String>> = HashMap::new();
        for row in rows {
            let (path, message) = row.map_err(|e| self.err(e))?;
            by_path.entry(path).or_default().push(message);
        }
        Ok(by_path)
    }

    pub(crate) fn skipped_files(&self) -> Result<std::collections::BTreeMap<String, SkippedFile>> {
        self.skipped_rows("verdict")
    }

    fn skipped_rows(
        &self,
        verdict: &str,
    ) -> Result<std::collections::BTreeMap<String, SkippedFile>> {
        self.rows(
            &format!("SELECT path, size, mtime, {verdict} FROM skipped"),
            [],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    SkippedFile {
                        size: r.get::<_, i64>(1)? as u64,
                        mtime: r.get(2)?,
                        verdict: r.get(3)?,
                    },
                ))
            },
        )
    }

    /// The stored text of the file at `path`.
    pub fn file_content(&self, path: &str) -> Result<Option<String>> {
        Ok(self.file_text(path)?.map(|t| t.to_string()))
    }

    /// The text of the file at `path`, unpacked (or as lately unpacked).
    fn file_text(&self, path: &str) -> Result<Option<Arc<str>>> {
        let hash: Option<String> = self
            .conn
            .prepare_cached("SELECT hash FROM files WHERE path = ?1")
            .and_then(|mut s| s.query_row(params![path], |r| r.get(0)).optional())
            .map_err(|e| self.err(e))?;
        let Some(hash) = hash else {
            return Ok(None);
        };
        if let Some(text) = self.unpacked.get(path, &hash) {
            return Ok(Some(text));
        }
        let text = self
            .conn
            .prepare_cached("SELECT content FROM files WHERE path = ?1")
            .and_then(|mut s| {
                s.query_row(params![path], |r| Ok(crate::packed::unpack(r.get_ref(0)?)))
                    .optional()
            })
            .map_err(|e| self.err(e))?;
        match text {
            None => Ok(None),
            Some(None) => Err(self.damaged(format!("file {path} has no readable text"))),
            Some(Some(text)) => {
                let text: Arc<str> = text.into();
                self.unpacked.put(path, &hash, Arc::clone(&text));
                Ok(Some(text))
            }
        }
    }

    /// All nodes, in path then source order.
    pub fn nodes(&self) -> Result<Vec<NodeRecord>> {
        // Read in table order and sorted here: `ORDER BY path, seq` walks the path index and
        // fetches every row by id, several times slower on a large store.
        let mut stmt = self
            .conn
            .prepare(
                "SELECT id, path, kind, name, qualified_name, parent, start_line, end_line,
                        start_byte, end_byte, signature, doc, tok0, tok2, tok4, tok9, seq
                 FROM nodes",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| Ok((node_row(r)?, r.get::<_, i64>(16)?)))
            .map_err(|e| self.err(e))?;
        let mut nodes: Vec<(NodeRecord, i64)> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        nodes.sort_unstable_by(|a, b| a.0.path.cmp(&b.0.path).then(a.1.cmp(&b.1)));
        Ok(nodes.into_iter().map(|(n, _)| n).collect())
    }

    /// Every node's id and path, in table order.
    pub(crate) fn node_paths(&self) -> Result<Vec<(NodeId, String)>> {
        self.rows("SELECT id, path FROM nodes", [], |r| {
            Ok((NodeId(r.get::<_, i64>(0)? as u64), r.get(1)?))
        })
    }

    /// The nodes of `ids` that exist, in the order of `ids` (one primary-key lookup each:
    /// what an incremental update of a few symbols reads instead of every node).
    pub fn nodes_by_id(&self, ids: &[NodeId]) -> Result<Vec<NodeRecord>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, path, kind, name, qualified_name, parent, start_line, end_line,
                        start_byte, end_byte, signature, doc, tok0, tok2, tok4, tok9
                 FROM nodes WHERE id = ?1",
            )
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(n) = stmt
                .query_row(params![id.0 as i64], node_row)
                .optional()
                .map_err(|e| self.err(e))?
            {
                out.push(n);
            }
        }
        Ok(out)
    }

    /// The rendering of node `id` at `depth`: exactly the text whose tokens were counted.
    ///
    /// [`Error::UnknownNode`] when no node has this id; [`Error::Damaged`] when the node exists
    /// but its text does not (a NULL, a missing file row, a span past the file's end, bytes
    /// that are not UTF-8): a missing text is never an empty one.
    pub fn text(&self, id: NodeId, depth: Depth) -> Result<String> {
        if depth == Depth::Full {
            return self.full_text(id);
        }
        let sql = match depth {
            Depth::Signature => "SELECT signature FROM nodes WHERE id = ?1",
            Depth::Doc => {
                "SELECT CASE WHEN with_doc = '' THEN signature ELSE with_doc END FROM nodes WHERE id = ?1"
            }
            _ => "SELECT skeleton FROM nodes WHERE id = ?1",
        };
        // Outer `None`: a NULL; inner: a value that is no text.
        let row: Option<Option<Option<String>>> = self
            .conn
            .prepare_cached(sql)
            .and_then(|mut s| {
                s.query_row(params![id.0 as i64], |r| {
                    Ok(match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Null => None,
                        value => Some(crate::packed::unpack(value)),
                    })
                })
                .optional()
            })
            .map_err(|e| self.err(e))?;
        let missing = |what: &str| {
            self.damaged(format!(
                "node {id} has no {what} at depth {}",
                depth.value()
            ))
        };
        row.ok_or(Error::UnknownNode(id))?
            .ok_or_else(|| missing("text"))?
            .ok_or_else(|| missing("valid UTF-8 text"))
    }

    /// The full text of node `id`: its span of its file's text.
    fn full_text(&self, id: NodeId) -> Result<String> {
        type Row = (Option<String>, i64, i64);
        let row: Option<Row> = self
            .conn
            .prepare_cached(
                "SELECT f.path, n.start_byte, n.end_byte
                 FROM nodes n LEFT JOIN files f ON f.path = n.path WHERE n.id = ?1",
            )
            .and_then(|mut s| {
                s.query_row(params![id.0 as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                })
                .optional()
            })
            .map_err(|e| self.err(e))?;
        let (file, start, end) = row.ok_or(Error::UnknownNode(id))?;
        let missing = |what: &str| self.damaged(format!("node {id} has no {what} at depth 9"));
        let file = file.ok_or_else(|| missing("file row"))?;
        let content = self
            .file_content(&file)?
            .ok_or_else(|| missing("file row"))?;
        let span = usize::try_from(start).ok().zip(usize::try_from(end).ok());
        span.and_then(|(a, b)| content.get(a..b))
            .map(str::to_string)
            .ok_or_else(|| missing("full span"))
    }

    /// Every node of the file at `path` with its renderings at depths 0, 2, 4, 9 (indexed by
    /// [`Depth::index`]), in source order: one read of the file for all its nodes. A node
    /// whose file text is missing or too short is [`Error::Damaged`].
    pub fn file_renderings(&self, path: &str) -> Result<Vec<(NodeRecord, [String; 4])>> {
        let content = self.file_text(path)?;
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, path, kind, name, qualified_name, parent, start_line, end_line,
                        start_byte, end_byte, signature, doc, tok0, tok2, tok4, tok9,
                        CASE WHEN with_doc = '' THEN signature ELSE with_doc END, skeleton
                 FROM nodes WHERE path = ?1 ORDER BY seq",
            )
            .map_err(|e| self.err(e))?;
        type Row = (NodeRecord, [Option<String>; 2]);
        let rows: Vec<Row> = stmt
            .query_map(params![path], |r| {
                let text = |i: usize| -> rusqlite::Result<Option<String>> {
                    Ok(crate::packed::unpack(r.get_ref(i)?))
                };
                Ok((node_row(r)?, [text(16)?, text(17)?]))
            })
            .and_then(|rows| rows.collect())
            .map_err(|e| self.err(e))?;
        let mut out = Vec::with_capacity(rows.len());
        for (n, texts) in rows {
            let [Some(doc), Some(skel)] = texts else {
                return Err(self.damaged(format!("node {} has no valid UTF-8 rendering", n.id)));
            };
            let full = content
                .as_deref()
                .and_then(|c| c.get(n.start_byte..n.end_byte))
                .ok_or_else(|| self.damaged(format!("file {path} has no text for node {}", n.id)))?
                .to_string();
            let sig = n.signature.clone();
            out.push((n, [sig, doc, skel, full]));
        }
        Ok(out)
    }

    /// All resolved edges, by source, target and kind.
    pub fn edges(&self) -> Result<Vec<EdgeRecord>> {
        let mut stmt = self
            .conn
            .prepare("SELECT src, dst, kind, confidence FROM edges")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map([], |r| {
                Ok(EdgeRecord {
                    src: NodeId(r.get::<_, i64>(0)? as u64),
                    dst: NodeId(r.get::<_, i64>(1)? as u64),
                    kind: EdgeKind::from_stored(r.get_ref(2)?).unwrap_or(EdgeKind::Calls),
                    confidence: r.get::<_, f64>(3)? as f32,
                })
            })
            .map_err(|e| self.err(e))?;
        let mut edges: Vec<EdgeRecord> = rows
            .collect::<rusqlite::Result<_>>()
            .map_err(|e| self.err(e))?;
        // The order `ORDER BY src, dst, kind` gave (ids compare as SQLite's signed integers),
        // sorted here rather than by SQLite's sorter; ties by confidence, so it never depends
        // on the order rows were written in.
        edges.sort_unstable_by(edge_order);
        Ok(edges)
    }

    /// Raw references of all files: (source node, name, kind).
    pub(crate) fn refs(&self) -> Result<Vec<(NodeId, String, crate::model::RefKind)>> {
        self.rows("SELECT src, name, kind FROM refs", [], ref_row)
    }

    /// Raw imports of all files: (importing path, module as written).
    pub(crate) fn imports(&self) -> Result<Vec<(String, String)>> {
        self.rows("SELECT path, module FROM imports", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
    }

    /// The nodes of the file at `path` in source order: (id, name, kind, parent), what an
    /// incremental run needs of a changed file's previous nodes.
    pub(crate) fn file_nodes(&self, path: &str) -> Result<Vec<NodeBrief>> {
        self.rows(
            "SELECT id, name, kind, parent FROM nodes WHERE path = ?1 ORDER BY seq",
            params![path],
            |r| {
                let kind: String = r.get(2)?;
                Ok((
                    NodeId(r.get::<_, i64>(0)? as u64),
                    r.get(1)?,
                    NodeKind::from_name(&kind).unwrap_or(NodeKind::Chunk),
                    r.get::<_, Option<i64>>(3)?.map(|p| NodeId(p as u64)),
                ))
            },
        )
    }

    /// The paths of the files that have a module node (a top-level node): what import
    /// resolution calls the files of the index.
    pub(crate) fn root_paths(&self) -> Result<Vec<String>> {
        self.rows(
            "SELECT DISTINCT path FROM nodes WHERE parent IS NULL",
            [],
            |r| r.get(0),
        )
    }

    /// The raw references made from the nodes of the file at `path`: (source node, name,
    /// kind).
    pub(crate) fn refs_of_file(
        &self,
        path: &str,
    ) -> Result<Vec<(NodeId, String, crate::model::RefKind)>> {
        self.rows(
            "SELECT r.src, r.name, r.kind FROM nodes n JOIN refs r ON r.src = n.id
                 WHERE n.path = ?1",
            params![path],
            ref_row,
        )
    }

    /// The first top-level node of the file at `path` (its module node), if it has one.
    pub(crate) fn root_of(&self, path: &str) -> Result<Option<NodeId>> {
        self.conn
            .prepare_cached(
                "SELECT id FROM nodes WHERE path = ?1 AND parent IS NULL ORDER BY seq LIMIT 1",
            )
            .and_then(|mut s| {
                s.query_row(params![path], |r| Ok(NodeId(r.get::<_, i64>(0)? as u64)))
                    .optional()
            })
            .map_err(|e| self.err(e))
    }

    /// Whether some indexed file lies under `dir` (which ends in `/`).
    pub(crate) fn has_dir(&self, dir: &str) -> Result<bool> {
        // Paths under `dir/` sort between `dir/` and `dir0` ('0' follows '/').
        let end = format!("{}0", dir.trim_end_matches('/'));
        self.conn
            .prepare_cached("SELECT 1 FROM files WHERE path >= ?1 AND path < ?2 LIMIT 1")
            .and_then(|mut s| s.query_row(params![dir, end], |_| Ok(())).optional())
            .map(|r| r.is_some())
            .map_err(|e| self.err(e))
    }

    /// Every node named `name`: (id, path, kind). Looked up by the lower-cased name's index
    /// (one index on names instead of two: 9 MB on a monorepo).
    pub(crate) fn nodes_named(&self, name: &str) -> Result<Vec<(NodeId, String, NodeKind)>> {
        self.rows(
            "SELECT id, path, kind FROM nodes WHERE lname = ?1 AND name = ?2",
            params![name.to_lowercase(), name],
            |r| {
                let kind: String = r.get(2)?;
                Ok((
                    NodeId(r.get::<_, i64>(0)? as u64),
                    r.get(1)?,
                    NodeKind::from_name(&kind).unwrap_or(NodeKind::Chunk),
                ))
            },
        )
    }

    /// Every raw reference to `name`: (path of the referring file, source node, kind).
    pub(crate) fn refs_named(
        &self,
        name: &str,
    ) -> Result<Vec<(String, NodeId, crate::model::RefKind)>> {
        self.rows(
            "SELECT n.path, r.src, r.kind FROM refs r JOIN nodes n ON n.id = r.src
                 WHERE r.name = ?1",
            params![name],
            |r| {
                Ok((
                    r.get(0)?,
                    NodeId(r.get::<_, i64>(1)? as u64),
                    ref_kind(r.get_ref(2)?),
                ))
            },
        )
    }

    /// The modules the file at `path` imports, as written.
    pub fn imports_of(&self, path: &str) -> Result<Vec<String>> {
        self.rows(
            "SELECT module FROM imports WHERE path = ?1",
            params![path],
            |r| r.get(0),
        )
    }

    /// The stored edges out of `src`: (key, the edge, the name of its target). The edge is
    /// `None` for a row whose kind this build does not know (it is never wanted), the name
    /// `None` for a target no node has. Only a store migrated to this version is written to,
    /// so every kind is a code.
    pub(crate) fn edges_from(&self, src: NodeId) -> Result<Vec<StoredEdge>> {
        self.rows(
            "SELECT e.dst, e.kind, e.confidence, n.name
                 FROM edges e LEFT JOIN nodes n ON n.id = e.dst WHERE e.src = ?1",
            params![src.0 as i64],
            |r| {
                let raw_dst: i64 = r.get(0)?;
                let code: i64 = r.get(1)?;
                let dst = NodeId(raw_dst as u64);
                let confidence = r.get::<_, f64>(2)? as f32;
                Ok((
                    (src.0 as i64, raw_dst, code),
                    EdgeKind::from_stored(r.get_ref(1)?).map(|kind| EdgeRecord {
                        src,
                        dst,
                        kind,
                        confidence,
                    }),
                    r.get(3)?,
                ))
            },
        )
    }

    /// Rows in `table` (one of the store's tables).
    pub(crate) fn count(&self, table: &str) -> Result<usize> {
        self.conn
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as usize)
            .map_err(|e| self.err(e))
    }

    /// Starts the one transaction of an index run. The store's reads see what it wrote so
    /// far (one connection): an index run reads the index it is writing.
    pub(crate) fn begin(&self) -> Result<Tx<'_>> {
        let path = self.path.clone();
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(|source| Error::Store {
                path: path.clone(),
                source,
            })?;
        Ok(Tx { tx, path })
    }
}

/// The write transaction of one index run; dropped without [`Tx::commit`] it rolls back.
pub(crate) struct Tx<'a> {
    tx: rusqlite::Transaction<'a>,
    path: PathBuf,
}

impl Tx<'_> {
    fn err(&self, source: rusqlite::Error) -> Error {
        let detail = if is_damage(&source) {
            Some(source.to_string())
        } else {
            quick_check(&self.tx)
        };
        match detail {
            Some(detail) => Error::Damaged {
                path: self.path.clone(),
                detail,
            },
            None => Error::Store {
                path: self.path.clone(),
                source,
            },
        }
    }

    pub(crate) fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.tx
            .execute(
                "INSERT INTO meta(key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Removes a file and everything derived from it.
    pub(crate) fn remove_file(&self, path: &str) -> Result<()> {
        // The references go first: they are found through the file's nodes.
        for sql in [
            "DELETE FROM refs WHERE src IN (SELECT id FROM nodes WHERE path = ?1)",
            "DELETE FROM files WHERE path = ?1",
            "DELETE FROM nodes WHERE path = ?1",
            "DELETE FROM imports WHERE path = ?1",
            "DELETE FROM file_warnings WHERE path = ?1",
        ] {
            self.tx
                .prepare_cached(sql)
                .and_then(|mut s| s.execute(params![path]))
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Replaces the list of files walked but not indexed (see [`Store::skipped`]).
    pub(crate) fn replace_skipped(
        &self,
        skipped: &std::collections::BTreeMap<String, SkippedFile>,
    ) -> Result<()> {
        self.tx
            .execute("DELETE FROM skipped", [])
            .map_err(|e| self.err(e))?;
        let mut insert = self
            .tx
            .prepare_cached(
                "INSERT INTO skipped(path, size, mtime, verdict) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(|e| self.err(e))?;
        for (path, f) in skipped {
            insert
                .execute(params![path, f.size as i64, f.mtime, f.verdict])
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Updates only the stat fields of an unchanged file.
    pub(crate) fn touch_file(&self, path: &str, mtime: i64, modified: i64) -> Result<()> {
        self.tx
            .prepare_cached("UPDATE files SET mtime = ?2, modified = ?3 WHERE path = ?1")
            .and_then(|mut s| s.execute(params![path, mtime, modified]))
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Writes a (new or changed) file with its rows, replacing what was stored for it.
    pub(crate) fn put_file(
        &self,
        file: &FileRecord,
        content: &str,
        rows: &FileRows,
        warnings: &[crate::model::Warning],
    ) -> Result<()> {
        self.remove_file(&file.path)?;
        let mut warn = self
            .tx
            .prepare_cached("INSERT INTO file_warnings(path, message) VALUES (?1, ?2)")
            .map_err(|e| self.err(e))?;
        for w in warnings {
            warn.execute(params![file.path, w.message])
                .map_err(|e| self.err(e))?;
        }
        self.tx
            .prepare_cached(
                "INSERT INTO files(path, hash, language, size, mtime, modified, generated, content)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    file.path,
                    file.hash,
                    file.language.name(),
                    file.size as i64,
                    file.mtime,
                    file.modified,
                    i64::from(file.generated),
                    crate::packed::pack(content)
                ])
            })
            .map_err(|e| self.err(e))?;
        let mut insert = self
            .tx
            .prepare_cached(
                "INSERT OR REPLACE INTO nodes(id, path, kind, name, qualified_name, parent,
                    start_line, end_line, start_byte, end_byte, signature, doc, with_doc,
                    skeleton, tok0, tok2, tok4, tok9, seq, lname)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                    ?16, ?17, ?18, ?19, ?20)",
            )
            .map_err(|e| self.err(e))?;
        for (seq, row) in rows.nodes.iter().enumerate() {
            let n = &row.record;
            insert
                .execute(params![
                    n.id.0 as i64,
                    n.path,
                    n.kind.name(),
                    n.name,
                    n.qualified_name,
                    n.parent.map(|p| p.0 as i64),
                    n.start_line,
                    n.end_line,
                    n.start_byte as i64,
                    n.end_byte as i64,
                    n.signature,
                    n.doc,
                    // Most symbols have no doc: their depth-2 rendering is the signature.
                    if row.with_doc == n.signature {
                        rusqlite::types::ToSqlOutput::from("")
                    } else {
                        crate::packed::pack_if_smaller(&row.with_doc)
                    },
                    crate::packed::pack_if_smaller(&row.skeleton),
                    n.tokens[0],
                    n.tokens[1],
                    n.tokens[2],
                    n.tokens[3],
                    seq as i64,
                    n.name.to_lowercase(),
                ])
                .map_err(|e| self.err(e))?;
        }
        let mut insert = self
            .tx
            .prepare_cached("INSERT OR IGNORE INTO refs(src, name, kind) VALUES (?1, ?2, ?3)")
            .map_err(|e| self.err(e))?;
        for (src, name, kind) in &rows.refs {
            insert
                .execute(params![src.0 as i64, name, ref_kind_code(*kind)])
                .map_err(|e| self.err(e))?;
        }
        let mut insert = self
            .tx
            .prepare_cached("INSERT INTO imports(path, module, names) VALUES (?1, ?2, ?3)")
            .map_err(|e| self.err(e))?;
        for imp in &rows.imports {
            insert
                .execute(params![file.path, imp.module, imp.names.join(",")])
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Makes the edges table hold exactly `edges` (one row per source, target and kind). A
    /// run that changed a few files changes a few edges: only the difference is written (rows
    /// that went are deleted by key, new ones inserted), not every edge again; a run that
    /// changed most of them rewrites all.
    pub(crate) fn replace_edges(&self, edges: &[EdgeRecord]) -> Result<()> {
        let mut wanted: HashMap<EdgeKey, u32> = edges
            .iter()
            .map(|e| (edge_key(e), e.confidence.to_bits()))
            .collect();
        let mut gone: Vec<EdgeKey> = Vec::new();
        {
            let mut stmt = self
                .tx
                .prepare("SELECT src, dst, kind, confidence FROM edges")
                .map_err(|e| self.err(e))?;
            let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
            while let Some(r) = rows.next().map_err(|e| self.err(e))? {
                let key: EdgeKey = (
                    r.get(0).map_err(|e| self.err(e))?,
                    r.get(1).map_err(|e| self.err(e))?,
                    r.get(2).map_err(|e| self.err(e))?,
                );
                let confidence = r.get::<_, f64>(3).map_err(|e| self.err(e))? as f32;
                if wanted.get(&key) == Some(&confidence.to_bits()) {
                    wanted.remove(&key);
                } else {
                    gone.push(key);
                }
            }
        }
        if gone.len() > edges.len() / 2 {
            self.tx
                .execute("DELETE FROM edges", [])
                .map_err(|e| self.err(e))?;
            return self.edit_edges(&[], edges);
        }
        // In the order of `edges`, as a full rewrite writes them.
        let added: Vec<EdgeRecord> = edges
            .iter()
            .filter(|e| wanted.contains_key(&edge_key(e)))
            .cloned()
            .collect();
        self.edit_edges(&gone, &added)
    }

    /// Deletes the edge rows `gone` and inserts (or, for a key deleted too, replaces) `added`:
    /// the edge difference an incremental run computed for the few sources it touched.
    pub(crate) fn edit_edges(&self, gone: &[EdgeKey], added: &[EdgeRecord]) -> Result<()> {
        let mut delete = self
            .tx
            .prepare_cached("DELETE FROM edges WHERE src = ?1 AND dst = ?2 AND kind = ?3")
            .map_err(|e| self.err(e))?;
        for (src, dst, kind) in gone {
            delete
                .execute(params![src, dst, kind])
                .map_err(|e| self.err(e))?;
        }
        let mut insert = self
            .tx
            .prepare_cached(
                "INSERT OR REPLACE INTO edges(src, dst, kind, confidence) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(|e| self.err(e))?;
        for e in added {
            let (src, dst, kind) = edge_key(e);
            insert
                .execute(params![src, dst, kind, e.confidence as f64])
                .map_err(|err| self.err(err))?;
        }
        Ok(())
    }

    pub(crate) fn commit(self) -> Result<()> {
        let path = self.path;
        self.tx
            .commit()
            .map_err(|source| Error::Store { path, source })
    }
}

/// An edge's row key.
fn edge_key(e: &EdgeRecord) -> EdgeKey {
    (e.src.0 as i64, e.dst.0 as i64, e.kind.code())
}

/// The order [`Store::edges`] returns: the order `ORDER BY src, dst, kind` gave (ids compare
/// as SQLite's signed integers; codes sort as names do), ties by confidence.
fn edge_order(a: &EdgeRecord, b: &EdgeRecord) -> std::cmp::Ordering {
    edge_key(a)
        .cmp(&edge_key(b))
        .then(a.confidence.total_cmp(&b.confidence))
}

/// A `refs` row selected as (src, name, kind).
fn ref_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(NodeId, String, crate::model::RefKind)> {
    Ok((
        NodeId(r.get::<_, i64>(0)? as u64),
        r.get(1)?,
        ref_kind(r.get_ref(2)?),
    ))
}

/// The code a version-6 store holds for a reference's kind.
fn ref_kind_code(kind: crate::model::RefKind) -> i64 {
    match kind {
        crate::model::RefKind::Call => 0,
        crate::model::RefKind::Inherits => 1,
    }
}

/// The kind a stored value names: a code, or a name as stores before version 6 hold it.
fn ref_kind(value: rusqlite::types::ValueRef<'_>) -> crate::model::RefKind {
    use rusqlite::types::ValueRef;
    match value {
        ValueRef::Integer(1) | ValueRef::Text(b"inherits") => crate::model::RefKind::Inherits,
        _ => crate::model::RefKind::Call,
    }
}

/// A `NodeRecord` from a row of `id, path, kind, name, qualified_name, parent, start_line,
/// end_line, start_byte, end_byte, signature, doc, tok0, tok2, tok4, tok9`.
/// The columns [`file_row`] reads, in its order.
const FILE_COLUMNS: &str = "path, hash, language, size, mtime, modified, generated";

fn file_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<FileRecord> {
    let lang: String = r.get(2)?;
    Ok(FileRecord {
        path: r.get(0)?,
        hash: r.get(1)?,
        language: Language::from_name(&lang).unwrap_or(Language::Text),
        size: r.get::<_, i64>(3)? as u64,
        mtime: r.get(4)?,
        modified: r.get(5)?,
        generated: r.get::<_, i64>(6)? != 0,
    })
}

/// The columns [`node_row`] reads, in its order.
const NODE_COLUMNS: &str = "id, path, kind, name, qualified_name, parent, start_line, end_line,
    start_byte, end_byte, signature, doc, tok0, tok2, tok4, tok9";

fn node_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<NodeRecord> {
    let kind: String = r.get(2)?;
    Ok(NodeRecord {
        id: NodeId(r.get::<_, i64>(0)? as u64),
        path: r.get(1)?,
        kind: NodeKind::from_name(&kind).unwrap_or(NodeKind::Chunk),
        name: r.get(3)?,
        qualified_name: r.get(4)?,
        parent: r.get::<_, Option<i64>>(5)?.map(|p| NodeId(p as u64)),
        start_line: r.get(6)?,
        end_line: r.get(7)?,
        start_byte: r.get::<_, i64>(8)? as usize,
        end_byte: r.get::<_, i64>(9)? as usize,
        signature: r.get(10)?,
        doc: r.get(11)?,
        tokens: [r.get(12)?, r.get(13)?, r.get(14)?, r.get(15)?],
    })
}

#[cfg(test)]
mod tests {
    /// A reader's empty WAL file leaves the stamp of the last run as it was; a WAL with
    /// anything in it, or a changed database file, does not.
    #[test]
    fn an_empty_wal_keeps_the_stamp() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "def f():\n    return 1\n").unwrap();
        let opts = crate::IndexOptions::new(dir.path());
        crate::index_repo(dir.path(), &opts).unwrap();
        let idx = &opts.index_dir;
        let wal = idx.join(format!("{}-wal", super::DB_FILE));
        assert!(super::stamp_matches(idx));
        let store = super::Store::open(idx).unwrap();
        store.meta().unwrap();
        drop(store);
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&wal)
            .unwrap();
        assert!(super::stamp_matches(idx), "an empty WAL");
        std::fs::write(&wal, b"x").unwrap();
        assert!(!super::stamp_matches(idx), "a WAL with content");
        std::fs::remove_file(&wal).unwrap();
        assert!(super::stamp_matches(idx));
        let db = idx.join(super::DB_FILE);
        let f = std::fs::File::options().write(true).open(&db).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
            .unwrap();
        assert!(!super::stamp_matches(idx), "a database written since");
    }

    /// Names resolve through `nodes_lname` alone: a store that still has the old exact-name
    /// index loses it on its next run, and a case variant is not taken for the name.
    #[test]
    fn node_names_need_one_index() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.py"),
            "def Run():\n    return 1\n\ndef run():\n    return Run()\n",
        )
        .unwrap();
        let opts = crate::IndexOptions::new(dir.path());
        crate::index_repo(dir.path(), &opts).unwrap();
        let db = opts.index_dir.join(super::DB_FILE);
        let indexes = || {
            let c = rusqlite::Connection::open(&db).unwrap();
            let mut st = c
                .prepare(
                    "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'nodes'",
                )
                .unwrap();
            st.query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .collect::<rusqlite::Result<Vec<String>>>()
                .unwrap()
        };
        assert!(!indexes().contains(&"nodes_name".to_string()));
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE INDEX nodes_name ON nodes(name)")
            .unwrap();
        std::fs::write(dir.path().join("b.py"), "x = 1\n").unwrap();
        crate::index_repo(dir.path(), &opts).unwrap();
        assert!(
            !indexes().contains(&"nodes_name".to_string()),
            "{:?}",
            indexes()
        );
        let store = super::Store::open(&opts.index_dir).unwrap();
        let named: Vec<String> = store
            .nodes_named("Run")
            .unwrap()
            .into_iter()
            .map(|(id, _, _)| store.node(id).unwrap().unwrap().name)
            .collect();
        assert_eq!(named, ["Run"]);
    }
}
