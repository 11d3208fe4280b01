//! Commit-level tasks mined from a project's history, in the same format as the SWE-bench
//! records (see [`crate::realtasks`]): the commit's message is the task, its parent the tree,
//! and the source files it modified, the functions around its changes and the lines it
//! removed are the gold.
//!
//! A commit qualifies when it has one parent, modifies (not only adds) one to three source
//! files of the language (tests, examples and benchmarks do not count, though the commit may
//! touch them too), removes at least one line that changed-line coverage counts and no more
//! than [`MAX_CHANGED`], and its message says something (release, dependency and formatting
//! commits are skipped). Deterministic: newest first, the first `count` that qualify.

use std::collections::BTreeSet;
use std::path::Path;

use acms::index::{NodeKind, ParseLimits, analyzer_for, detect_language};

use crate::error::{Error, Result};
use crate::patch;
use crate::realtasks::{IssueTask, git};

/// Commits that remove more counted lines than this are refactors, not tasks.
pub const MAX_CHANGED: usize = 60;

/// The languages commits are mined for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    TypeScript,
    Rust,
    Python,
}

impl Lang {
    pub fn parse(s: &str) -> Result<Lang> {
        match s {
            "ts" | "typescript" => Ok(Lang::TypeScript),
            "rust" | "rs" => Ok(Lang::Rust),
            "python" | "py" => Ok(Lang::Python),
            other => Err(Error::Argument(format!(
                "unknown language '{other}' (ts, rust, python)"
            ))),
        }
    }

    /// A source file of this language that is not a test, example, benchmark or declaration.
    pub fn is_source(self, path: &str) -> bool {
        let lower = path.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split('/').collect();
        let excluded_dir = parts[..parts.len().saturating_sub(1)].iter().any(|d| {
            matches!(
                *d,
                "test"
                    | "tests"
                    | "__tests__"
                    | "testing"
                    | "test_helpers"
                    | "examples"
                    | "example"
                    | "benches"
                    | "benchmarks"
                    | "bench"
                    | "docs"
                    | "fixtures"
            )
        });
        let name = parts.last().copied().unwrap_or("");
        if excluded_dir {
            return false;
        }
        match self {
            Lang::TypeScript => {
                (name.ends_with(".ts") || name.ends_with(".tsx"))
                    && !name.ends_with(".d.ts")
                    && !name.contains(".test.")
                    && !name.contains(".spec.")
            }
            Lang::Rust => name.ends_with(".rs") && name != "tests.rs" && name != "build.rs",
            Lang::Python => {
                name.ends_with(".py")
                    && !name.starts_with("test_")
                    && !name.ends_with("_test.py")
                    && !matches!(name, "conftest.py" | "setup.py" | "conf.py")
            }
        }
    }
}

/// Message subjects that are housekeeping rather than a task.
fn housekeeping(subject: &str) -> bool {
    let s = subject.to_ascii_lowercase();
    let prefixes = [
        "chore", "docs", "doc:", "ci", "style", "build", "release", "bump", "merge", "revert",
        "test", "version",
    ];
    prefixes.iter().any(|p| s.starts_with(p))
        || [
            "clippy",
            "rustfmt",
            "cargo fmt",
            "typo",
            "dependabot",
            "dependencies",
            "pre-commit",
            "changelog",
        ]
        .iter()
        .any(|w| s.contains(w))
}

/// `fix(x): y (#123)` → `fix(x): y`.
fn clean_subject(subject: &str) -> String {
    let s = subject.trim();
    match s.rfind(" (#") {
        Some(i) if s.ends_with(')') => s[..i].trim().to_string(),
        _ => s.to_string(),
    }
}

/// Whether a qualified name lies in a test module or is a test (`…::tests::…`, `….test_x`).
fn is_test_symbol(qualified: &str) -> bool {
    qualified
        .split(['.', ':', '/'])
        .any(|seg| seg == "tests" || seg == "test" || seg.starts_with("test_"))
}

/// The innermost function, method or (for a change outside any function) type around each
/// touched line of `src`, as qualified names; `None` for a line outside every symbol.
fn symbols_at(path: &str, src: &str, lines: &[u32]) -> Vec<Option<String>> {
    let Some(lang) = detect_language(path, src) else {
        return vec![None; lines.len()];
    };
    let parsed = analyzer_for(lang).analyze(path, src, &ParseLimits::default());
    lines
        .iter()
        .map(|&line| {
            parsed
                .nodes
                .iter()
                .filter(|n| {
                    n.kind != NodeKind::Module && n.start_line <= line && line <= n.end_line
                })
                .min_by_key(|n| n.end_line - n.start_line)
                .map(|n| n.qualified_name.clone())
        })
        .collect()
}

/// Drops commit-message trailers (`Signed-off-by:`, `Co-authored-by:` …).
fn clean_body(body: &str) -> String {
    body.lines()
        .filter(|l| {
            let t = l.trim_start_matches(['*', ' ', '-']).to_ascii_lowercase();
            !(t.starts_with("signed-off-by:")
                || t.starts_with("co-authored-by:")
                || t.starts_with("reviewed-by:")
                || t.starts_with("change-id:"))
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_string()
}

/// Mines up to `count` tasks from the history of `git_dir` (newest first), for `slug`
/// (`owner/name`), scanning at most `scan` commits.
pub fn mine(
    git_dir: &Path,
    slug: &str,
    lang: Lang,
    count: usize,
    scan: usize,
) -> Result<Vec<IssueTask>> {
    let log = git(
        git_dir,
        &[
            "log",
            "--no-merges",
            &format!("-n{scan}"),
            "--format=%H%x1f%P%x1f%s%x1f%b%x1e",
            "HEAD",
        ],
    )?;
    let short = slug.rsplit('/').next().unwrap_or(slug);
    let mut out = Vec::new();
    for record in log.split('\x1e') {
        if out.len() >= count {
            break;
        }
        let fields: Vec<&str> = record.trim_start_matches('\n').split('\x1f').collect();
        let [sha, parents, subject, body] = fields[..] else {
            continue;
        };
        let parents: Vec<&str> = parents.split_whitespace().collect();
        if parents.len() != 1 || housekeeping(subject) {
            continue;
        }
        let parent = parents[0];
        // Modified source files only (`M`); an added or deleted source file disqualifies.
        let status = git(
            git_dir,
            &["diff", "--name-status", "--no-renames", parent, sha],
        )?;
        let mut files = Vec::new();
        let mut qualifies = true;
        for line in status.lines() {
            let mut it = line.split('\t');
            let (Some(st), Some(path)) = (it.next(), it.next()) else {
                continue;
            };
            if !lang.is_source(path) {
                continue;
            }
            if st == "M" {
                files.push(path.to_string());
            } else {
                qualifies = false;
            }
        }
        if !qualifies || files.is_empty() || files.len() > 3 {
            continue;
        }
        let mut args = vec!["diff", "--no-renames", parent, sha, "--"];
        args.extend(files.iter().map(String::as_str));
        let diff = git(git_dir, &args)?;
        // Hunks inside tests (a Rust `mod tests`, a `test_` function) are not code to change.
        let mut symbols = BTreeSet::new();
        let mut kept_patches = Vec::new();
        for mut p in patch::parse(&diff) {
            let Some(path) = p.path().map(str::to_string) else {
                continue;
            };
            let src = git(git_dir, &["show", &format!("{parent}:{path}")])?;
            p.hunks.retain(|h| {
                let at = symbols_at(&path, &src, &h.touched_lines());
                let test_only =
                    !at.is_empty() && at.iter().all(|s| s.as_deref().is_some_and(is_test_symbol));
                if !test_only {
                    symbols.extend(
                        at.into_iter()
                            .flatten()
                            .filter(|q| !is_test_symbol(q))
                            .map(|q| format!("{path}::{q}")),
                    );
                }
                !test_only
            });
            if !p.hunks.is_empty() {
                kept_patches.push(p);
            }
        }
        let changed: usize = kept_patches.iter().map(|p| p.changed_lines().len()).sum();
        if changed == 0 || changed > MAX_CHANGED {
            continue;
        }
        let files: Vec<String> = kept_patches
            .iter()
            .filter_map(|p| p.path().map(str::to_string))
            .collect();
        let golden_patch: String = kept_patches.iter().map(|p| p.render()).collect();
        let symbols: Vec<String> = symbols.into_iter().collect();
        let subject = clean_subject(subject);
        let body = clean_body(body);
        let statement = if body.is_empty() {
            subject
        } else {
            format!("{subject}\n\n{body}")
        };
        if statement.len() < 20 {
            continue;
        }
        out.push(IssueTask {
            instance_id: format!("{short}@{}", &sha[..12.min(sha.len())]),
            repo: slug.to_string(),
            base_commit: parent.to_string(),
            problem_statement: statement,
            gold_files: files,
            gold_symbols: symbols,
            golden_patch,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_filters() {
        assert!(Lang::TypeScript.is_source("src/router/trie-router/node.ts"));
        assert!(!Lang::TypeScript.is_source("src/router/trie-router/node.test.ts"));
        assert!(!Lang::TypeScript.is_source("src/types.d.ts"));
        assert!(Lang::Rust.is_source("axum/src/routing/mod.rs"));
        assert!(!Lang::Rust.is_source("axum/src/routing/tests/mod.rs"));
        assert!(!Lang::Rust.is_source("examples/hello/src/main.rs"));
        assert!(Lang::Python.is_source("src/flask/app.py"));
        assert!(!Lang::Python.is_source("tests/test_basic.py"));
        assert!(!Lang::Python.is_source("src/flask/test_app.py"));
        assert!(!Lang::Python.is_source("docs/conf.py"));
    }

    #[test]
    fn tests_are_not_code_to_change() {
        assert!(is_test_symbol("crate::serve::tests::check"));
        assert!(is_test_symbol("pkg.mod.test_parse"));
        assert!(!is_test_symbol("crate::serve::Serve::run"));
        assert_eq!(
            clean_body("Fixes the thing.\n\nSigned-off-by: A <a@b>\n* Co-authored-by: B"),
            "Fixes the thing."
        );
    }

    #[test]
    fn subjects() {
        assert_eq!(clean_subject("fix(jsx): escape (#123)"), "fix(jsx): escape");
        assert!(housekeeping("chore: bump deps"));
        assert!(housekeeping("Fix clippy warnings"));
        assert!(housekeeping("update dev dependencies"));
        assert!(housekeeping("update pre-commit hooks"));
        assert!(!housekeeping("fix(cors): handle vary header"));
    }
}
