//! [`Watch`]: file events for a long-lived process, so a call that follows no change skips
//! the walk. It watches exactly the directories the last walk entered, not recursively (a
//! recursive watch would also take `.git`, `node_modules` and `target`, and a monorepo's share
//! of the kernel's watch limit), and only says "something may have changed": the walk still
//! decides what did.
//!
//! Events are read from the inotify descriptor by the call that asks, not by a thread: the
//! kernel queues an event inside the write that causes it, so a change that finished before
//! the call is always seen by it. Other systems have no watch here and walk every call.
//!
//! **Invariant:** a skipped walk is never wrong. The flag starts raised; it is lowered just
//! before a walk (what happens during the walk raises it again); a walk that enters a
//! directory not watched yet raises it (a file may have landed there before its watch did);
//! and a queue overflow raises it, a failed watch for good.

use std::path::{Path, PathBuf};

/// A watch over the directories of the last walk.
pub(crate) struct Watch {
    #[cfg(target_os = "linux")]
    inner: linux::Inotify,
}

impl Watch {
    /// Watches nothing yet, with the flag raised: the first call walks, and
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

    /// Whether anything may have changed since the last call, lowering the flag: call it
    /// right before the walk it decides on.
    pub(crate) fn take_dirty(&mut self) -> bool {
        #[cfg(target_os = "linux")]
        return self.inner.take_dirty();
        #[cfg(not(target_os = "linux"))]
        true
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
    use std::collections::{HashMap, HashSet};
    use std::ffi::OsStr;
    use std::path::{Path, PathBuf};

    use inotify::{EventMask, WatchDescriptor, WatchMask};

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
        dirty: bool,
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
                dirty: true,
                broken: None,
            })
        }

        pub(super) fn take_dirty(&mut self) -> bool {
            self.drain();
            std::mem::take(&mut self.dirty) || self.broken.is_some()
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
                        self.dirty = true;
                    } else if e.mask.contains(EventMask::Q_OVERFLOW) || !self.is_own(&e.wd, e.name)
                    {
                        self.dirty = true;
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

        fn break_with(&mut self, why: String) {
            self.broken.get_or_insert(why);
            self.dirty = true;
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
                        self.by_wd.entry(wd.clone()).or_insert_with(|| d.clone());
                        self.by_dir.insert(d.clone(), wd);
                        self.dirty = true;
                    }
                    // Removed or replaced since the walk (ENOENT, ENOTDIR): the event on its
                    // parent raised the flag already.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            || e.raw_os_error() == Some(20) =>
                    {
                        self.dirty = true
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
