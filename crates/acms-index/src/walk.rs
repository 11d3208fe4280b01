//! Walks a repository for indexable files: honours `.gitignore` / `.ignore` (the `ignore`
//! crate), skips hidden entries (`.git` among them) and the index directory, follows symlinks
//! but reports loops, and returns entries in path order so every run is deterministic.
//!
//! This module reads no file contents.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use crate::build::Warning;

/// One file found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WalkEntry {
    /// Repository-relative, `/`-separated.
    pub rel: String,
    pub abs: PathBuf,
    pub size: u64,
    pub mtime: i64,
}

/// Lists the files under `repo` in path order, with a warning for each entry it cannot read.
pub(crate) fn walk(repo: &Path, index_dir: &Path) -> (Vec<WalkEntry>, Vec<Warning>) {
    let mut entries = Vec::new();
    let mut warnings = Vec::new();
    let index_dir = index_dir
        .canonicalize()
        .unwrap_or_else(|_| index_dir.to_path_buf());
    let walker = ignore::WalkBuilder::new(repo)
        .follow_links(true)
        .require_git(false)
        .filter_entry(move |e| {
            e.path()
                .canonicalize()
                .map(|p| p != index_dir)
                .unwrap_or(true)
        })
        .build();
    for result in walker {
        let entry = match result {
            Ok(e) => e,
            Err(err) => {
                let path = error_path(&err)
                    .map(|p| rel_path(repo, &p))
                    .unwrap_or_else(|| "(walk)".into());
                warnings.push(Warning::new(
                    path,
                    format!("skipped: {}", short_walk_error(&err)),
                ));
                continue;
            }
        };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = rel_path(repo, entry.path());
        match entry.metadata() {
            Ok(md) => entries.push(WalkEntry {
                rel,
                abs: entry.path().to_path_buf(),
                size: md.len(),
                mtime: md
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as i64),
            }),
            Err(err) => warnings.push(Warning::new(rel, format!("skipped: {err}"))),
        }
    }
    entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    entries.dedup_by(|a, b| a.rel == b.rel);
    (entries, warnings)
}

fn error_path(err: &ignore::Error) -> Option<PathBuf> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path.clone()),
        ignore::Error::Loop { child, .. } => Some(child.clone()),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        _ => None,
    }
}

fn short_walk_error(err: &ignore::Error) -> String {
    match err {
        ignore::Error::Loop { .. } => "symlink loop".into(),
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => short_walk_error(err),
        other => other.to_string(),
    }
}

/// `path` relative to `repo`, `/`-separated.
pub(crate) fn rel_path(repo: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(repo).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Last commit time (unix seconds) of each repository-relative path, from `git log`, when
/// `repo` is a git work tree and git is available; empty otherwise. Recency is a scoring
/// signal, so a missing git is not an error.
pub(crate) fn git_commit_times(repo: &Path) -> HashMap<String, i64> {
    let mut times = HashMap::new();
    if !repo.join(".git").exists() {
        return times;
    }
    let Ok(out) = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "log",
            "-n",
            "5000",
            "--format=%x00%ct",
            "--name-only",
            "--no-renames",
        ])
        .output()
    else {
        return times;
    };
    if !out.status.success() {
        return times;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut current = 0i64;
    for line in text.lines() {
        if let Some(ts) = line.strip_prefix('\0') {
            current = ts.trim().parse().unwrap_or(0);
        } else if !line.is_empty() {
            // Newest commit first: keep the first time seen for a path.
            times.entry(line.to_string()).or_insert(current);
        }
    }
    times
}
