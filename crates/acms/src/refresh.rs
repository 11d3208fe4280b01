//! [`ChangeTracker`]: finds files changed since the last index run without touching the
//! index — a walk with the indexer's rules (`.gitignore`, hidden entries and the index
//! directory skipped) comparing size and mtime, then the content hash only for files whose
//! stat moved. Only when something really changed does the caller run the (incremental)
//! index and derived-index update.
//!
//! Files the walk sees but the index does not hold (lock files, binaries, files over
//! `context.file.max-size`) are remembered by stat, so they cost nothing until they change —
//! and then only a cheap "is this indexable now?" check.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use acms_core::{ContentHash, ContextConfig};
use acms_index::Store;

/// What the tracker remembers of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    size: u64,
    mtime: i64,
    /// Content hash when the index holds the file; `None` for a walked but unindexed file.
    hash: Option<String>,
}

/// One file found by the walk.
struct Seen {
    rel: String,
    abs: PathBuf,
    size: u64,
    mtime: i64,
}

/// The result of one scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Files walked.
    pub files: usize,
    /// Files whose content was hashed because their stat moved.
    pub hashed: usize,
    /// Repository-relative paths that are new, changed or deleted (sorted).
    pub changed: Vec<String>,
}

/// Change detection for one repository and its index.
pub struct ChangeTracker {
    repo: PathBuf,
    index_dir: PathBuf,
    max_size: u64,
    known: HashMap<String, Known>,
}

impl ChangeTracker {
    /// A tracker in step with the index in `store` (call right after an index run, or on
    /// an index that is believed current).
    pub fn new(
        repo: &Path,
        index_dir: &Path,
        store: &Store,
        config: &ContextConfig,
    ) -> acms_index::Result<ChangeTracker> {
        let mut t = ChangeTracker {
            repo: repo.to_path_buf(),
            index_dir: index_dir
                .canonicalize()
                .unwrap_or_else(|_| index_dir.to_path_buf()),
            max_size: config.file.max_size,
            known: HashMap::new(),
        };
        t.reload(store)?;
        Ok(t)
    }

    /// Re-reads what the index holds, and remembers every other walked file by stat.
    pub fn reload(&mut self, store: &Store) -> acms_index::Result<()> {
        self.known = store
            .files()?
            .into_iter()
            .map(|f| {
                (
                    f.path,
                    Known {
                        size: f.size,
                        mtime: f.mtime,
                        hash: Some(f.hash),
                    },
                )
            })
            .collect();
        for s in self.walk() {
            self.known.entry(s.rel).or_insert(Known {
                size: s.size,
                mtime: s.mtime,
                hash: None,
            });
        }
        Ok(())
    }

    /// Files of the index (or of the walk) that changed since the last [`reload`](Self::reload).
    pub fn scan(&mut self) -> Scan {
        let mut scan = Scan::default();
        let seen = self.walk();
        scan.files = seen.len();
        let mut present = std::collections::HashSet::with_capacity(seen.len());
        for s in seen {
            present.insert(s.rel.clone());
            let known = self.known.get(&s.rel);
            if let Some(k) = known
                && k.size == s.size
                && k.mtime == s.mtime
            {
                continue;
            }
            let Ok(bytes) = std::fs::read(&s.abs) else {
                // Unreadable now: the index run will report it.
                scan.changed.push(s.rel);
                continue;
            };
            scan.hashed += 1;
            match known.map(|k| k.hash.clone()) {
                Some(Some(old)) => {
                    if ContentHash::of(&bytes).0 == old {
                        // Touched, not changed: remember the new stat so it is not re-read.
                        let k = self.known.get_mut(&s.rel).expect("known above");
                        k.size = s.size;
                        k.mtime = s.mtime;
                    } else {
                        scan.changed.push(s.rel);
                    }
                }
                // New, or changed but not indexed before: only news if it is indexable now.
                _ => {
                    if self.indexable(&s.rel, s.size, &bytes) {
                        scan.changed.push(s.rel);
                    } else {
                        self.known.insert(
                            s.rel,
                            Known {
                                size: s.size,
                                mtime: s.mtime,
                                hash: None,
                            },
                        );
                    }
                }
            }
        }
        let gone: Vec<String> = self
            .known
            .keys()
            .filter(|p| !present.contains(*p))
            .cloned()
            .collect();
        for p in gone {
            if self.known.get(&p).is_some_and(|k| k.hash.is_some()) {
                scan.changed.push(p);
            } else {
                self.known.remove(&p);
            }
        }
        scan.changed.sort();
        scan
    }

    /// Whether the indexer would index this content (the same tests it applies).
    fn indexable(&self, rel: &str, size: u64, bytes: &[u8]) -> bool {
        if size > self.max_size || bytes.is_empty() || bytes.iter().take(8192).any(|&b| b == 0) {
            return false;
        }
        let text = String::from_utf8_lossy(bytes);
        acms_index::detect_language(rel, &text).is_some()
    }

    /// The indexer's walk: `.gitignore` / `.ignore` honoured, hidden entries and the index
    /// directory skipped, symlinks followed.
    fn walk(&self) -> Vec<Seen> {
        let index_dir = self.index_dir.clone();
        let walker = ignore::WalkBuilder::new(&self.repo)
            .follow_links(true)
            .require_git(false)
            .filter_entry(move |e| {
                // Only directories can be the index directory; canonicalizing files too
                // would cost a syscall per file.
                !e.file_type().is_some_and(|t| t.is_dir())
                    || e.path()
                        .canonicalize()
                        .map(|p| p != index_dir)
                        .unwrap_or(true)
            })
            .build();
        let mut out = Vec::new();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(md) = entry.metadata() else { continue };
            let rel = entry
                .path()
                .strip_prefix(&self.repo)
                .unwrap_or(entry.path())
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            out.push(Seen {
                rel,
                abs: entry.path().to_path_buf(),
                size: md.len(),
                mtime: md
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as i64),
            });
        }
        out
    }
}
