//! [`ChangeTracker`]: finds files changed since the last index run without touching the
//! index — the indexer's own walk ([`acms_index::walk`]: `.gitignore`, `.acmsignore`, hidden
//! entries, the index directory, links out of the repository and the secret deny list) compared
//! by size and mtime, then by content hash only for files whose stat moved. Only when
//! something really changed does the caller run the (incremental) index and derived-index
//! update.
//!
//! Files the index does not hold are known from the store too: the last run recorded every
//! file it walked and did not index (held back, over a cap, binary, of a kind acms does not
//! read) with its stat, so they cost nothing until they change. A file neither list knows is
//! new since the last run — news when the indexer would index it.
//!
//! A long-lived process can [`watch`](ChangeTracker::watch) as well: then a scan walks only
//! when a file event (or a directory it has not watched yet) says the files a walk finds may
//! have changed, so a warm call costs nothing per file; after events on files alone, it looks
//! at those files alone, their directories listed again, in that walk ([`crate::watch`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use acms_core::{ContentHash, ContextConfig};
use acms_index::{Deny, Store, WalkEntry};

use crate::watch::{News, Watch};

/// Files named by the watch that are looked at alone; more (a checkout, a formatter run)
/// walk, which then costs little more than looking them up.
const MAX_NAMED_FILES: usize = 256;

/// What the tracker remembers of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Known {
    size: u64,
    mtime: i64,
    /// Content hash when the index holds the file; `None` for a walked but unindexed file.
    hash: Option<String>,
}

/// The result of one scan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// Files walked (0 when the file watch saw nothing and nothing was walked).
    pub files: usize,
    /// Whether the file watch said nothing changed, so nothing was walked.
    pub unchanged_by_watch: bool,
    /// Whether only the files the watch named were looked at (`files` of them).
    pub named_by_watch: bool,
    /// Why a watch was asked for but every scan walks (none could be had, or it failed).
    pub watch_off: Option<String>,
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
    deny: Deny,
    known: HashMap<String, Known>,
    watch: Option<Result<Watch, String>>,
    /// The walk of the last scan that found a change, for the index run it calls for.
    last_walk: Option<acms_index::Walked>,
    /// With a watch: the last walk, kept in step with the files the watch names since.
    walked: Option<acms_index::Walked>,
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
        let repo = repo.canonicalize().unwrap_or_else(|_| repo.to_path_buf());
        let (deny, _) = Deny::new(&repo, &config.file.deny);
        let mut t = ChangeTracker {
            repo,
            index_dir: index_dir.to_path_buf(),
            max_size: config.file.max_size,
            deny,
            known: HashMap::new(),
            watch: None,
            last_walk: None,
            walked: None,
        };
        t.reload(store)?;
        Ok(t)
    }

    /// Re-reads what the index holds and what its last run walked without indexing.
    pub fn reload(&mut self, store: &Store) -> acms_index::Result<()> {
        let skipped = store.skipped()?;
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
        for (path, (size, mtime)) in skipped {
            self.known.entry(path).or_insert(Known {
                size,
                mtime,
                hash: None,
            });
        }
        Ok(())
    }

    /// From now on, walk only when file events say something may have changed (for a
    /// process that lives across many calls; a one-shot one would pay for the watches and
    /// walk anyway). When no watcher can be had, every scan walks and says why.
    pub fn watch(&mut self) {
        if self.watch.is_none() {
            self.watch = Some(Watch::start(&self.index_dir));
        }
    }

    /// Whether a working file watch decides when [`ChangeTracker::scan`] walks.
    pub fn watching(&self) -> bool {
        matches!(self.watch, Some(Ok(_)))
    }

    /// Files of the index (or of the walk) that changed since the last [`reload`](Self::reload).
    pub fn scan(&mut self) -> Scan {
        let mut scan = Scan::default();
        self.last_walk = None;
        match &mut self.watch {
            Some(Ok(w)) => match w.take_news() {
                News::Nothing => {
                    scan.unchanged_by_watch = true;
                    return scan;
                }
                News::Files(files) => {
                    if let Some(scan) = self.scan_named(&files) {
                        return scan;
                    }
                }
                News::Anything => scan.watch_off = w.broken(),
            },
            Some(Err(why)) => scan.watch_off = Some(why.clone()),
            None => {}
        }
        let walked = acms_index::walk(&self.repo, &self.index_dir, &self.deny);
        if let Some(Ok(w)) = &mut self.watch {
            w.follow(&walked.dirs);
            scan.watch_off = w.broken();
        }
        scan.files = walked.entries.len() + walked.held_back.len();
        let mut present = std::collections::HashSet::with_capacity(scan.files);
        for s in &walked.entries {
            present.insert(s.rel.clone());
            self.look_at(s, &mut scan);
        }
        for (s, _) in &walked.held_back {
            present.insert(s.rel.clone());
            self.look_at_held(s, &mut scan);
        }
        let gone: Vec<String> = self
            .known
            .keys()
            .filter(|p| !present.contains(*p))
            .cloned()
            .collect();
        for p in gone {
            self.forget(p, &mut scan);
        }
        scan.changed.sort();
        if !scan.changed.is_empty() {
            self.last_walk = Some(walked.clone());
        }
        if self.watching() {
            self.walked = Some(walked);
        }
        scan
    }

    /// Looks at `files` alone, the only files the watch says changed, appeared or went since
    /// the last scan: in the last walk, with their directories listed again under the walk's
    /// rules ([`acms_index::walk_dir`]). `None` (walk instead) when one of them is a link now
    /// or lies under a link's target (its link is found too), when a directory cannot be
    /// listed, or when they are many.
    fn scan_named(&mut self, files: &[PathBuf]) -> Option<Scan> {
        let mut walked = self.walked.take()?;
        let linked = |f: &PathBuf| {
            walked.links.iter().any(|l| f.starts_with(l))
                || std::fs::symlink_metadata(f).is_ok_and(|m| !m.is_file())
        };
        if files.len() > MAX_NAMED_FILES || files.iter().any(linked) {
            return None;
        }
        let dirs: std::collections::BTreeSet<&Path> =
            files.iter().filter_map(|f| f.parent()).collect();
        for dir in dirs {
            let listed = acms_index::walk_dir(&self.repo, dir, &self.index_dir, &self.deny);
            if !listed.unreadable.is_empty() {
                return None;
            }
            relist(&mut walked, &self.repo, dir, listed);
        }
        let mut scan = Scan {
            files: files.len(),
            named_by_watch: true,
            ..Scan::default()
        };
        for f in files {
            if let Some(entry) = walked.entries.iter().find(|e| e.abs == *f) {
                self.look_at(entry, &mut scan);
            } else if let Some((entry, _)) = walked.held_back.iter().find(|(e, _)| e.abs == *f) {
                self.look_at_held(entry, &mut scan);
            } else {
                self.forget(acms_index::rel_path(&self.repo, f), &mut scan);
            }
        }
        scan.changed.sort();
        scan.changed.dedup();
        if !scan.changed.is_empty() {
            self.last_walk = Some(walked.clone());
        }
        self.walked = Some(walked);
        Some(scan)
    }

    /// The walk of the last scan, when it found a change: the index run it calls for need
    /// not walk again ([`acms_index::IndexOptions::walked`]).
    pub fn take_walk(&mut self) -> Option<acms_index::Walked> {
        self.last_walk.take()
    }

    /// Compares one walked file with what is known of it.
    fn look_at(&mut self, s: &WalkEntry, scan: &mut Scan) {
        let known = self.known.get(&s.rel);
        if let Some(k) = known
            && k.size == s.size
            && k.mtime == s.mtime
        {
            return;
        }
        let Ok(bytes) = std::fs::read(&s.abs) else {
            // Unreadable now: the index run reports it, and records it if it cannot read it
            // either.
            scan.changed.push(s.rel.clone());
            return;
        };
        scan.hashed += 1;
        match known.map(|k| k.hash.clone()) {
            Some(Some(old)) => {
                if ContentHash::of(&bytes).0 == old {
                    // Touched, not changed: remember the new stat so it is not re-read.
                    if let Some(k) = self.known.get_mut(&s.rel) {
                        k.size = s.size;
                        k.mtime = s.mtime;
                    }
                } else {
                    scan.changed.push(s.rel.clone());
                }
            }
            // New since the last run, or changed but not indexed then: news only if the
            // indexer would index it now.
            _ => {
                if s.size <= self.max_size && acms_index::indexable(&s.rel, &bytes) {
                    scan.changed.push(s.rel.clone());
                } else {
                    self.remember(s);
                }
            }
        }
    }

    /// A file the deny list holds back now: news only when the index still holds it (the
    /// run removes it).
    fn look_at_held(&mut self, s: &WalkEntry, scan: &mut Scan) {
        if self.known.get(&s.rel).is_some_and(|k| k.hash.is_some()) {
            scan.changed.push(s.rel.clone());
        } else {
            self.remember(s);
        }
    }

    /// A file a walk no longer finds: news when the index holds it (the run removes it),
    /// otherwise forgotten.
    fn forget(&mut self, rel: String, scan: &mut Scan) {
        match self.known.get(&rel) {
            Some(k) if k.hash.is_some() => scan.changed.push(rel),
            Some(_) => {
                self.known.remove(&rel);
            }
            None => {}
        }
    }

    /// Remembers a file the index does not hold, by stat.
    fn remember(&mut self, s: &WalkEntry) {
        self.known.insert(
            s.rel.clone(),
            Known {
                size: s.size,
                mtime: s.mtime,
                hash: None,
            },
        );
    }
}

/// Replaces what `walked` holds of the files directly in `dir` (entries, held back, the
/// walk's warnings about them) with `listed`, a new listing of that directory.
fn relist(walked: &mut acms_index::Walked, repo: &Path, dir: &Path, listed: acms_index::Walked) {
    let in_dir = |abs: &Path| abs.parent() == Some(dir);
    walked.entries.retain(|e| !in_dir(&e.abs));
    walked.entries.extend(listed.entries);
    walked.entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    walked.held_back.retain(|(e, _)| !in_dir(&e.abs));
    walked.held_back.extend(listed.held_back);
    walked.held_back.sort_by(|a, b| a.0.rel.cmp(&b.0.rel));
    let dir_rel = acms_index::rel_path(repo, dir);
    let rel_in_dir = |rel: &str| rel.rsplit_once('/').map_or("", |(parent, _)| parent) == dir_rel;
    walked.warnings.retain(|w| !rel_in_dir(&w.path));
    walked.warnings.extend(listed.warnings);
    walked
        .warnings
        .sort_by(|a, b| (&a.path, &a.message).cmp(&(&b.path, &b.message)));
    walked.links.extend(listed.links);
    walked.links.sort();
    walked.links.dedup();
}
