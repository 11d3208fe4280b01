//! Integration tests of `acms-index`: whole index runs over small repositories built in
//! temporary directories.

mod bad_input;
mod damaged;
mod hostile;
mod incremental;
mod languages;

use std::path::Path;

use acms_index::{IndexOptions, IndexReport, Store, index_repo};

/// Writes `files` (path, content) under `root`.
pub fn write_repo(root: &Path, files: &[(&str, &[u8])]) {
    for (path, content) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

/// Indexes `repo` with the default options.
pub fn index(repo: &Path) -> IndexReport {
    index_repo(repo, &IndexOptions::new(repo)).expect("index run")
}

/// The warnings of `report` for `path`.
pub fn warnings_for<'a>(report: &'a IndexReport, path: &str) -> Vec<&'a str> {
    report
        .warnings
        .iter()
        .filter(|w| w.path == path)
        .map(|w| w.message.as_str())
        .collect()
}

/// Runs `sql` on the store of `repo` behind acms's back (what another build or a user left).
pub fn alter_store(repo: &Path, sql: &str) {
    let db = rusqlite::Connection::open(repo.join(".acms").join(acms_index::DB_FILE)).unwrap();
    db.execute_batch(sql).unwrap();
}

pub fn open(repo: &Path) -> Store {
    Store::open(&repo.join(".acms")).expect("open store")
}

pub const APP_PY: &str = r#""""The application object."""
import os
from .helpers import slugify


class App(Base):
    """A tiny web app."""

    def route(self, path):
        """Register a route."""
        if not path:
            raise ValueError("empty")
        return slugify(path)

    def run(self):
        for _ in range(3):
            self.route("/")


def main():
    App().run()
"#;

pub const HELPERS_PY: &str = r#"def slugify(text):
    """Turn text into a URL slug."""
    return text.lower().replace(" ", "-")


class Base:
    pass
"#;
