//! [`Watch`]: file events for a long-lived process, so a call that follows no change skips
//! the walk, and a call that follows only events on files looks at those files alone. It
//! watches exactly the directories the last walk entered, not recursively (a recursive watch
//! would also take `.git`, `node_modules` and `target`, and a monorepo's share of the
//! kernel's watch limit). It says which files may have changed, appeared or gone
//! ([`News::Files`]: the scan then decides whether a walk is needed after all) or that
//! anything may have ([`News::Anything`]): then the walk decides what did.
//!
//! Events are read from the inotify descriptor by the call that asks, not by a thread: the
//! kernel queues an event inside the write that causes it, so a change that finished before
//! the call is always seen by it. Other systems have no watch here and walk every call.
//!
//! **Invariant:** a skipped walk is never wrong. What a walk finds changes only when a file
//! appears or goes, an ignore file changes, or a directory changes: every event on a
//! directory or an ignore file asks for a walk, and so does an event the watch cannot tie to
//! one file of one directory (a directory reached by two paths), a queue overflow, and a
//! failed watch (for good); a file that appeared or went is named, and the scan lists its
//! directory again under the walk's rules (`acms_index::walk_dir`). The
//! news starts as "anything"; it is taken just before the scan it decides on (what happens
//! during a walk is news again); and a walk that enters a directory not watched yet asks for
//! another (a file may have landed there before its watch did).

use std::path::{Path, PathBuf};

/// What may have changed since the news was last taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum News {
    Nothing,
    /// Only these files, each in a watched directory: their contents or stat, or whether
    /// they exist. No directory and no ignore file changed.
    Files(Vec<PathBuf>),
    /// Anything: walk.
    Anything,
}

/// A watch over the directories of the last walk.
pub(crate) struct Watch {
    #[cfg(target_os = "linux")]
    inner: linux::Inotify,
}

impl Watch {
    /// Watches nothing yet, with news of anything: the first call walks, and
    /// [`follow`](Self::follow) then watches what it walked. `index_dir`'s own writes are not
    /// news.
    pub(crate) fn start(index_dir: &Path) -> Result<Watch, String> {
        #[cfg(target_os = "linux")]
        {
            linux::Inotify::start(index_dir).map(|inner| Watch { inner })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = index_dir;
            Err("file events are read on Linux only".into())
        }
    }

    /// What may have changed since the last call: call it right before the scan it decides
    /// on.
    pub(crate) fn take_news(&mut self) -> News {
        #[cfg(target_os = "linux")]
        return self.inner.take_news();
        #[cfg(not(target_os = "linux"))]
        News::Anything
    }

    /// Why events are not trusted (every call walks), once they are not.
    pub(crate) fn broken(&self) -> Option<String> {
        #[cfg(target_os = "linux")]
        return self.inner.broken.clone();
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// Watches the directories a walk entered (absolute; [`acms_index::Walked::dirs`]) and
    /// forgets those it no longer did.
    pub(crate) fn follow(&mut self, dirs: &[PathBuf]) {
        #[cfg(target_os = "linux")]
        self.inner.follow(dirs);
        #[cfg(not(target_os = "linux"))]
        let _ = dirs;
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::{BTreeSet, HashMap, HashSet};
    use std::ffi::OsStr;
    use std::path::{Path, PathBuf};

    use inotify::{EventMask, WatchDescriptor, WatchMask};

    use super::News;

    /// Files whose changes change what a walk finds: the ignore files it honours.
    const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".acmsignore"];

    /// Events on one file of a directory (its content, stat or presence), not on the
    /// directory itself nor on a directory in it.
    fn on_a_file(mask: EventMask) -> bool {
        let file_events = EventMask::MODIFY
            | EventMask::CLOSE_WRITE
            | EventMask::ATTRIB
            | EventMask::CREATE
            | EventMask::DELETE
            | EventMask::MOVED_FROM
            | EventMask::MOVED_TO;
        file_events.contains(mask)
    }

    /// What changes a directory's listing or a file's content; reads are not asked for.
    fn mask() -> WatchMask {
        WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::ATTRIB
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
    }

    pub(super) struct Inotify {
        fd: inotify::Inotify,
        /// The index directory's parent and name: writes there are acms's own.
        index_dir: PathBuf,
        by_dir: HashMap<PathBuf, WatchDescriptor>,
        by_wd: HashMap<WatchDescriptor, PathBuf>,
        /// Directories watched under two paths (a link inside the repository): an event
        /// there names a file under one path only.
        aliased: HashSet<WatchDescriptor>,
        /// A walk is needed.
        walk: bool,
        /// Files events named: changed, appeared or gone (absolute, as the walk names them).
        files: BTreeSet<PathBuf>,
        pub(super) broken: Option<String>,
    }

    impl Inotify {
        pub(super) fn start(index_dir: &Path) -> Result<Inotify, String> {
            let fd = inotify::Inotify::init().map_err(|e| format!("no inotify instance: {e}"))?;
            Ok(Inotify {
                fd,
                index_dir: index_dir
                    .canonicalize()
                    .unwrap_or_else(|_| index_dir.to_path_buf()),
                by_dir: HashMap::new(),
                by_wd: HashMap::new(),
                aliased: HashSet::new(),
                walk: true,
                files: BTreeSet::new(),
                broken: None,
            })
        }

        pub(super) fn take_news(&mut self) -> News {
            self.drain();
            let files = std::mem::take(&mut self.files);
            if std::mem::take(&mut self.walk) || self.broken.is_some() {
                News::Anything
            } else if files.is_empty() {
                News::Nothing
            } else {
                News::Files(files.into_iter().collect())
            }
        }

        /// Reads every queued event without waiting.
        fn drain(&mut self) {
            let mut buffer = [0u8; 16 * 1024];
            loop {
                let events = match self.fd.read_events(&mut buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                    Err(e) => {
                        self.break_with(format!("reading file events failed: {e}"));
                        return;
                    }
                };
                let mut any = false;
                for e in events {
                    any = true;
                    if e.mask.contains(EventMask::IGNORED) {
                        // The directory is gone (or was unwatched): the next walk says what
                        // replaced it.
                        if self.by_wd.remove(&e.wd).is_some() {
                            self.by_dir.retain(|_, wd| *wd != e.wd);
                        }
                        self.walk = true;
                    } else if e.mask.contains(EventMask::Q_OVERFLOW) {
                        self.walk = true;
                    } else if !self.is_own(&e.wd, e.name) {
                        match self.named_file(&e.wd, e.mask, e.name) {
                            Some(file) => {
                                self.files.insert(file);
                            }
                            None => self.walk = true,
                        }
                    }
                }
                if !any {
                    return;
                }
            }
        }

        /// Whether the event on `name` in the directory `wd` is the index's own write.
        fn is_own(&self, wd: &WatchDescriptor, name: Option<&OsStr>) -> bool {
            match (self.by_wd.get(wd), name) {
                (Some(dir), Some(name)) => dir.join(name).starts_with(&self.index_dir),
                _ => false,
            }
        }

        /// The file an event names when it is about that file alone, in a directory watched
        /// under one path, and the file is no ignore file.
        fn named_file(
            &self,
            wd: &WatchDescriptor,
            mask: EventMask,
            name: Option<&OsStr>,
        ) -> Option<PathBuf> {
            let (dir, name) = (self.by_wd.get(wd)?, name?);
            let plain = on_a_file(mask)
                && !self.aliased.contains(wd)
                && !IGNORE_FILES.iter().any(|f| name == *f);
            plain.then(|| dir.join(name))
        }

        fn break_with(&mut self, why: String) {
            self.broken.get_or_insert(why);
            self.walk = true;
        }

        pub(super) fn follow(&mut self, dirs: &[PathBuf]) {
            if self.broken.is_some() {
                return;
            }
            let now: HashSet<&PathBuf> = dirs.iter().collect();
            let gone: Vec<PathBuf> = self
                .by_dir
                .keys()
                .filter(|d| !now.contains(d))
                .cloned()
                .collect();
            for d in gone {
                let Some(wd) = self.by_dir.remove(&d) else {
                    continue;
                };
                // Kept while another path (a link inside the repository) reaches it.
                if !self.by_dir.values().any(|w| *w == wd) {
                    self.by_wd.remove(&wd);
                    self.aliased.remove(&wd);
                    // Often gone with its directory already.
                    let _ = self.fd.watches().remove(wd);
                }
            }
            for d in dirs {
                if self.by_dir.contains_key(d) {
                    continue;
                }
                match self.fd.watches().add(d, mask()) {
                    Ok(wd) => {
                        // Two paths can be one directory (a link inside the repository): the
                        // kernel hands back the same descriptor for both.
                        if self.by_wd.get(&wd).is_some_and(|first| first != d) {
                            self.aliased.insert(wd.clone());
                        }
                        self.by_wd.entry(wd.clone()).or_insert_with(|| d.clone());
                        self.by_dir.insert(d.clone(), wd);
                        self.walk = true;
                    }
                    // Removed or replaced since the walk (ENOENT, ENOTDIR): the event on its
                    // parent raised the flag already.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            || e.raw_os_error() == Some(20) =>
                    {
                        self.walk = true
                    }
                    Err(e) => {
                        let why = if e.raw_os_error() == Some(28) {
                            // ENOSPC: the per-user limit on watches.
                            format!(
                                "the system's limit on watched directories is reached at {} \
                                 (raise fs.inotify.max_user_watches)",
                                self.by_dir.len()
                            )
                        } else {
                            format!("cannot watch {}: {e}", d.display())
                        };
                        self.break_with(why);
                        return;
                    }
                }
            }
        }
    }
}
