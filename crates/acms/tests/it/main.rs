//! Integration tests of the facade's [`acms::Workspace`]: never-stale assembly, plans with
//! phases and child plans, decision memory in scoring and retrieval, budgets, expansion.

mod budget;
mod first_use;
mod memory;
mod plans;
mod refresh;
mod watch;

use std::path::Path;
use std::sync::Arc;

use acms::{FakeClock, Workspace, WorkspaceOptions};

pub const T0: i64 = 1_700_000_000;

/// A copy of the shop fixture opened as a workspace (indexed on open, built-in vectors),
/// with a fake clock.
pub struct Shop {
    pub dir: tempfile::TempDir,
    pub clock: FakeClock,
    pub ws: Workspace,
}

impl Default for Shop {
    fn default() -> Shop {
        Shop::new()
    }
}

impl Shop {
    pub fn new() -> Shop {
        Shop::with_config(acms::ContextConfig::default())
    }

    pub fn with_config(config: acms::ContextConfig) -> Shop {
        let dir = acms_testkit::shop();
        let clock = FakeClock::at(T0);
        let ws = open(dir.path(), config, &clock);
        Shop { dir, clock, ws }
    }

    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        self.dir.path().join(rel)
    }

    /// Rewrites `rel` with `f` applied to its text.
    pub fn edit(&self, rel: &str, f: impl FnOnce(&str) -> String) {
        let p = self.path(rel);
        let text = std::fs::read_to_string(&p).unwrap();
        std::fs::write(&p, f(&text)).unwrap();
    }
}

pub fn open(repo: &Path, config: acms::ContextConfig, clock: &FakeClock) -> Workspace {
    Workspace::open_with(
        repo,
        WorkspaceOptions {
            config: Some(config),
            clock: Arc::new(clock.clone()),
            ..WorkspaceOptions::default()
        },
    )
    .unwrap()
}
