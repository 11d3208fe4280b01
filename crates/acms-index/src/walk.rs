//! Walks a repository for indexable files: honours `.gitignore` / `.ignore` (the `ignore`
//! crate), skips hidden entries (`.git` among them) and the index directory, follows symlinks
//! but reports loops, and returns entries in path order so every run is deterministic.
//!
//! **Architecture Invariant:** the walk never leaves the repository. A symlink whose resolved
//! target is outside the repository root, inside a hidden directory the walk would skip, or
//! inside the index directory is not followed: it is one warning, however many files lie
//! behind it (an untrusted repository may link to `/etc` or `~/.aws`).
//!
//! Paths are stored escaped (see [`rel_path`]): control characters and invalid UTF-8 bytes
//! become `\n`, `\xNN`, …, so a file name can neither forge a line of a fragment header nor
//! collide with another name once decoded.
//!
//! Files whose path matches the secret deny list ([`Deny`]: `acms_core::secrets::DEFAULT_DENY`
//! and `context.file.deny`) are held back with the rule that matched; a repository's
//! `.acmsignore` files (gitignore syntax) leave more files out, as `.gitignore` does. The same
//! walk serves the index run and the change check before every assembly.
//!
//! This module reads no file contents.

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::UNIX_EPOCH;

use crate::escape::escape_bytes;
use crate::model::Warning;

/// The secret deny list of a run: the built-in patterns and the configuration's, in
/// gitignore syntax, matched against repository-relative paths.
pub struct Deny {
    rules: ignore::gitignore::Gitignore,
}

impl Deny {
    /// The built-in rules plus `extra` (`context.file.deny`), for the repository `repo`
    /// (canonical). A pattern that does not parse, or a negation (`!…`: the list only adds),
    /// is left out with a warning.
    pub fn new(repo: &Path, extra: &[String]) -> (Deny, Vec<Warning>) {
        let mut builder = ignore::gitignore::GitignoreBuilder::new(repo);
        let mut warnings = Vec::new();
        let defaults = acms_core::secrets::DEFAULT_DENY.iter().copied();
        for pattern in defaults.chain(extra.iter().map(String::as_str)) {
            let refused = if pattern.trim_start().starts_with('!') {
                Some("a negation cannot take a file off the deny list".to_string())
            } else {
                builder.add_line(None, pattern).err().map(|e| e.to_string())
            };
            if let Some(why) = refused {
                warnings.push(Warning::new(
                    "acms.toml",
                    format!("context.file.deny: pattern {pattern:?} ignored: {why}"),
                ));
            }
        }
        let rules = builder
            .build()
            .unwrap_or_else(|_| ignore::gitignore::Gitignore::empty());
        (Deny { rules }, warnings)
    }

    /// The pattern that holds the file `path` (under the repository) back, if any.
    fn rule(&self, path: &Path) -> Option<String> {
        self.rule_in(path, &mut HashMap::new())
    }

    /// [`rule`](Self::rule) with the verdicts on directories kept in `dirs`: a walk asks once
    /// per directory instead of once per file and ancestor.
    fn rule_in(&self, path: &Path, dirs: &mut HashMap<PathBuf, Option<String>>) -> Option<String> {
        if let ignore::Match::Ignore(glob) = self.rules.matched(path, false) {
            return Some(glob.original().to_string());
        }
        // `matched_path_or_any_parents` panics on a path outside its root.
        let parent = path.parent().filter(|p| p.starts_with(self.rules.path()))?;
        if let Some(verdict) = dirs.get(parent) {
            return verdict.clone();
        }
        let verdict = match self.rules.matched_path_or_any_parents(parent, true) {
            ignore::Match::Ignore(glob) => Some(glob.original().to_string()),
            _ => None,
        };
        dirs.insert(parent.to_path_buf(), verdict.clone());
        verdict
    }
}

/// One file found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkEntry {
    /// Repository-relative, `/`-separated, escaped (see [`rel_path`]).
    pub rel: String,
    pub abs: PathBuf,
    pub size: u64,
    pub mtime: i64,
}

/// What a walk found.
#[derive(Debug, Default, Clone)]
pub struct Walked {
    pub entries: Vec<WalkEntry>,
    /// Files the deny list holds back, with the pattern that matched (never read).
    pub held_back: Vec<(WalkEntry, String)>,
    pub warnings: Vec<Warning>,
    /// Directories (repository-relative, escaped) whose listing failed: what the index holds
    /// under them is kept as it is, never counted as removed.
    pub unreadable: Vec<String>,
    /// The directories the walk entered (absolute, the root first, then in path order): what a
    /// file watcher watches so that it sees exactly what the next walk would.
    pub dirs: Vec<PathBuf>,
    /// The resolved targets of the links the walk followed (sorted): a file under one of
    /// them is also found under another path.
    pub links: Vec<PathBuf>,
}

/// Lists the files under `repo` (canonical) in path order, with a warning for each entry it
/// cannot read or will not follow; files `deny` matches go to [`Walked::held_back`]. Runs on
/// all cores (a walk is one stat per file, a refresh runs one before every assembly); the
/// result is sorted, so it does not depend on which thread saw what first.
pub fn walk(repo: &Path, index_dir: &Path, deny: &Deny) -> Walked {
    walk_under(repo, repo, None, index_dir, deny)
}

/// [`walk`] of the directory `dir` of `repo` alone, not of the directories in it: the files a
/// walk of the repository finds there, under the same rules (the ignore files of `dir` and of
/// its parents, hidden entries, links, the deny list), with repository-relative paths. A
/// file watch's refresh lists again the directory of a file that appeared or went.
pub fn walk_dir(repo: &Path, dir: &Path, index_dir: &Path, deny: &Deny) -> Walked {
    walk_under(repo, dir, Some(1), index_dir, deny)
}

/// The walk of `root` (`repo` itself or a directory in it) down to `depth`.
fn walk_under(
    repo: &Path,
    root: &Path,
    depth: Option<usize>,
    index_dir: &Path,
    deny: &Deny,
) -> Walked {
    let index_dir = index_dir
        .canonicalize()
        .unwrap_or_else(|_| index_dir.to_path_buf());
    // The index folder is recognised by its inode first: canonicalising every directory cost
    // a refresh a fifth of its time (an lstat and a readlink per path component).
    let index_ino = std::fs::metadata(&index_dir).ok().map(|m| m.ino());
    let refused: Arc<Mutex<Vec<Warning>>> = Arc::default();
    let followed: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
    let parallel = {
        let refused = Arc::clone(&refused);
        let followed = Arc::clone(&followed);
        let repo_root = repo.to_path_buf();
        let index_dir = index_dir.clone();
        ignore::WalkBuilder::new(root)
            .max_depth(depth)
            .follow_links(true)
            .require_git(false)
            .add_custom_ignore_filename(".acmsignore")
            // Judged before the walker reads anything behind the entry (a linked directory's
            // listing, its ignore files): the walk never leaves the repository.
            .filter_entry(move |e| {
                if e.path_is_symlink() {
                    // A dangling link is let through: the walker reports it.
                    let Ok(target) = e.path().canonicalize() else {
                        return true;
                    };
                    let Some(why) = escape(&repo_root, &index_dir, &target) else {
                        if let Ok(mut f) = followed.lock() {
                            f.push(target);
                        }
                        return true;
                    };
                    if let Ok(mut w) = refused.lock() {
                        w.push(Warning::new(
                            rel_path(&repo_root, e.path()),
                            format!("skipped symlink: {why}"),
                        ));
                    }
                    return false;
                }
                // Only a directory can be the index folder; an inode match is confirmed by
                // path, since inodes repeat across file systems.
                let is_dir = e.file_type().is_none_or(|t| t.is_dir());
                !is_dir
                    || index_ino.is_none_or(|ino| e.ino() != Some(ino))
                    || e.path()
                        .canonicalize()
                        .map(|p| p != index_dir)
                        .unwrap_or(true)
            })
            .build_parallel()
    };
    let shared = Mutex::new(Walked::default());
    parallel.visit(&mut Visitors {
        repo,
        deny,
        shared: &shared,
    });
    let mut walked = shared.into_inner().unwrap_or_else(|p| p.into_inner());
    if let Ok(mut w) = refused.lock() {
        walked.warnings.append(&mut w);
    }
    if let Ok(mut f) = followed.lock() {
        walked.links.append(&mut f);
    }
    walked.links.sort();
    walked.links.dedup();
    walked.entries.sort_by(|a, b| a.rel.cmp(&b.rel));
    walked.entries.dedup_by(|a, b| a.rel == b.rel);
    walked.held_back.sort_by(|a, b| a.0.rel.cmp(&b.0.rel));
    walked.held_back.dedup_by(|a, b| a.0.rel == b.0.rel);
    walked
        .warnings
        .sort_by(|a, b| (&a.path, &a.message).cmp(&(&b.path, &b.message)));
    walked.unreadable.sort();
    walked.dirs.sort();
    walked.dirs.dedup();
    walked
}

/// Makes one [`Visitor`] per walking thread.
struct Visitors<'a> {
    repo: &'a Path,
    deny: &'a Deny,
    shared: &'a Mutex<Walked>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for Visitors<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            repo: self.repo,
            deny: self.deny,
            shared: self.shared,
            found: Walked::default(),
            dir_verdicts: HashMap::new(),
        })
    }
}

/// One thread's share of a walk, merged into the shared result when the thread ends.
struct Visitor<'a> {
    repo: &'a Path,
    deny: &'a Deny,
    shared: &'a Mutex<Walked>,
    found: Walked,
    dir_verdicts: HashMap<PathBuf, Option<String>>,
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let found = std::mem::take(&mut self.found);
        let mut shared = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        shared.entries.extend(found.entries);
        shared.held_back.extend(found.held_back);
        shared.warnings.extend(found.warnings);
        shared.unreadable.extend(found.unreadable);
        shared.dirs.extend(found.dirs);
    }
}

impl ignore::ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, result: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        let repo = self.repo;
        let entry = match result {
            Ok(e) => e,
            Err(err) => {
                self.refuse(&err);
                return ignore::WalkState::Continue;
            }
        };
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            self.found.dirs.push(entry.path().to_path_buf());
            return ignore::WalkState::Continue;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return ignore::WalkState::Continue;
        }
        let rel = rel_path(repo, entry.path());
        let md = match entry.metadata() {
            Ok(md) => md,
            Err(err) => {
                self.found
                    .warnings
                    .push(Warning::new(rel, format!("skipped: {err}")));
                return ignore::WalkState::Continue;
            }
        };
        let found = WalkEntry {
            rel,
            abs: entry.path().to_path_buf(),
            size: md.len(),
            mtime: md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs() as i64),
        };
        // A link is judged by its target's name too: `notes.txt -> id_rsa` holds a key.
        let target = entry
            .path_is_symlink()
            .then(|| entry.path().canonicalize().ok())
            .flatten();
        let rule = self
            .deny
            .rule_in(entry.path(), &mut self.dir_verdicts)
            .or_else(|| target.as_deref().and_then(|t| self.deny.rule(t)));
        match rule {
            Some(rule) => self.found.held_back.push((found, rule)),
            None => self.found.entries.push(found),
        }
        ignore::WalkState::Continue
    }
}

impl Visitor<'_> {
    /// Records an entry the walker could not read: an unreadable directory keeps what the
    /// index holds under it.
    fn refuse(&mut self, err: &ignore::Error) {
        let path = error_path(err);
        let rel = path
            .as_deref()
            .map(|p| rel_path(self.repo, p))
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| ".".into());
        let is_dir = path.as_deref().is_some_and(Path::is_dir);
        if is_dir && is_io(err) {
            self.found.warnings.push(Warning::new(
                &rel,
                format!(
                    "cannot read directory ({}); what the index holds under it is kept",
                    short_walk_error(err)
                ),
            ));
            self.found.unreadable.push(rel);
        } else {
            self.found.warnings.push(Warning::new(
                rel,
                format!("skipped: {}", short_walk_error(err)),
            ));
        }
    }
}

/// Why the canonical `target` of a link is out of bounds: outside `root`, inside a hidden
/// directory below it, or inside the index directory. `None` when it may be followed.
pub(crate) fn escape(root: &Path, index_dir: &Path, target: &Path) -> Option<String> {
    let Ok(inside) = target.strip_prefix(root) else {
        return Some("it points outside the repository".into());
    };
    if target.starts_with(index_dir) {
        return Some("it points into the index directory".into());
    }
    let hidden = inside.components().find(|c| match c {
        Component::Normal(name) => name.as_bytes().starts_with(b"."),
        _ => false,
    });
    hidden.map(|c| {
        format!(
            "it points into {}, a hidden entry the walk skips",
            escape_bytes(c.as_os_str().as_bytes())
        )
    })
}

fn is_io(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::Io(_) => true,
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_io(err),
        _ => false,
    }
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

/// `path` relative to `repo`, `/`-separated and escaped: a backslash becomes `\\`, a
/// control character (or a line or paragraph separator) `\n`, `\r`, `\t` or `\u{..}`, and
/// each byte of invalid UTF-8 `\xNN`. The mapping is injective, so distinct names stay
/// distinct, and no stored path can break a line.
pub fn rel_path(repo: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(repo).unwrap_or(path);
    rel.components()
        .map(|c| escape_bytes(c.as_os_str().as_bytes()))
        .collect::<Vec<_>>()
        .join("/")
}

/// Last commit time (unix seconds) of each repository-relative path, from `git log`, when
/// `repo` is a git work tree and git is available; empty otherwise. Recency is a scoring
/// signal, so a missing git is not an error.
///
/// Kept per repository and HEAD for the life of the process: the log of 5 000 commits costs
/// sympy's every refresh 140 ms, and a long-lived server refreshes far more often than HEAD
/// moves.
pub(crate) fn git_commit_times(repo: &Path) -> Arc<HashMap<String, i64>> {
    type Cached = (PathBuf, String, Arc<HashMap<String, i64>>);
    /// Repositories remembered: a server has one, an evaluation a few at a time.
    const KEPT: usize = 4;
    static CACHE: Mutex<Vec<Cached>> = Mutex::new(Vec::new());
    if !repo.join(".git").exists() {
        return Arc::default();
    }
    let head = git(repo, &["rev-parse", "--verify", "--quiet", "HEAD"]);
    let head = head.as_deref().map(str::trim).filter(|h| !h.is_empty());
    if let Some(head) = head
        && let Ok(cache) = CACHE.lock()
        && let Some((_, _, times)) = cache.iter().find(|(r, h, _)| r == repo && h == head)
    {
        return Arc::clone(times);
    }
    let log = git(
        repo,
        &[
            "log",
            "--no-ext-diff",
            "--no-textconv",
            "-n",
            "5000",
            "--format=%x00%ct",
            "--name-only",
            "--no-renames",
        ],
    );
    let mut times = HashMap::new();
    let mut current = 0i64;
    for line in log.as_deref().unwrap_or_default().lines() {
        if let Some(ts) = line.strip_prefix('\0') {
            current = ts.trim().parse().unwrap_or(0);
        } else if !line.is_empty() {
            // Newest commit first: keep the first time seen for a path.
            times.entry(line.to_string()).or_insert(current);
        }
    }
    let times = Arc::new(times);
    if let (Some(head), Some(_), Ok(mut cache)) = (head, &log, CACHE.lock()) {
        cache.retain(|(r, _, _)| r != repo);
        if cache.len() == KEPT {
            cache.remove(0);
        }
        cache.push((repo.to_path_buf(), head.to_string(), Arc::clone(&times)));
    }
    times
}

/// The output of `git ARGS` in `repo`, when it succeeds. The repository is untrusted and so
/// is its `.git/config`: no hook, filter, external diff or fsmonitor program it names may
/// run, and no pager or prompt may wait.
fn git(repo: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "core.fsmonitor=false",
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "diff.external=",
            "--no-pager",
        ])
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}
