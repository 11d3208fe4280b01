//! Real-issue tasks: what a coding agent actually gets (an issue text, or a commit's message)
//! against the tree the fix was made on, with the fix itself as the gold standard.
//!
//! One JSON-lines format for every set — the SWE-bench Lite records of
//! `eval/tasks/swebench-lite-dev.jsonl` and the commit sets mined by [`crate::mine`]:
//! `instance_id`, `repo` (`owner/name`), `base_commit`, `problem_statement`, `gold_files`,
//! `gold_symbols` (`path::Class.method`), `golden_patch` (unified diff).
//!
//! This module owns loading a set, finding a task's repository among the local git
//! repositories, exporting the base tree (cached), and locating the gold symbols in it with the
//! engine's own analyzers. It runs and scores nothing (see [`crate::issues`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use acms::index::{NodeKind, ParseLimits, analyzer_for, detect_language};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::patch::{self, FilePatch};

/// One real task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueTask {
    pub instance_id: String,
    /// `owner/name` on GitHub.
    pub repo: String,
    pub base_commit: String,
    pub problem_statement: String,
    pub gold_files: Vec<String>,
    /// `path::Qualified.name`; a `:N` suffix (a line, not a symbol) is ignored.
    #[serde(default)]
    pub gold_symbols: Vec<String>,
    pub golden_patch: String,
}

/// The named task sets and their files under `eval/tasks/`.
pub const SETS: &[(&str, &str, &str)] = &[
    ("swe", "swebench-lite-dev.jsonl", "Python"),
    ("hono", "hono.jsonl", "TypeScript"),
    ("axum", "axum.jsonl", "Rust"),
];

/// The file of a named set (or the path itself, for a set given as a file).
pub fn set_file(repo_root: &Path, set: &str) -> Result<PathBuf> {
    if let Some((_, file, _)) = SETS.iter().find(|(n, _, _)| *n == set) {
        return Ok(repo_root.join("eval/tasks").join(file));
    }
    let p = PathBuf::from(set);
    if p.is_file() {
        return Ok(p);
    }
    Err(Error::Argument(format!(
        "unknown task set '{set}' (known: {}, or a .jsonl file)",
        SETS.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
    )))
}

/// The name a set's result files carry: a named set's name, a set given as a file its file
/// stem (`/tmp/vue.jsonl` → `vue`), so a path never becomes part of a file name.
pub fn set_name(set: &str) -> &str {
    if SETS.iter().any(|(n, _, _)| *n == set) {
        return set;
    }
    Path::new(set)
        .file_stem()
        .and_then(|s| s.to_str())
        .filter(|s| !s.is_empty())
        .unwrap_or("set")
}

/// The language a set is in, for the report: a named set's, else the language most of its
/// tasks' gold files are in (a mined set is one language; C++ wins over its C headers).
pub fn set_language(set: &str, tasks: &[IssueTask]) -> String {
    if let Some(s) = SETS.iter().find(|(n, _, _)| *n == set) {
        return s.2.to_string();
    }
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for path in tasks.iter().flat_map(|t| &t.gold_files) {
        if let Some(lang) = crate::lang::Lang::of_path(path) {
            *counts.entry(lang.display_name()).or_default() += 1;
        }
    }
    if counts.contains_key("C++") {
        counts.remove("C");
    }
    counts
        .into_iter()
        .max_by_key(|&(name, n)| (n, std::cmp::Reverse(name)))
        .map_or_else(|| "?".to_string(), |(name, _)| name.to_string())
}

/// Loads a set's tasks.
pub fn load(path: &Path) -> Result<Vec<IssueTask>> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    crate::tasks::parse_json_lines(&text, &path.display().to_string())
}

/// Finds the bare or non-bare git repository of `owner/name` under `repos`: the layouts
/// `owner+name/repo` (the fetch tool's), `owner+name`, `owner/name`, `name`, `name.git`.
pub fn find_repo(repos: &Path, slug: &str) -> Result<PathBuf> {
    let (owner, name) = slug.split_once('/').unwrap_or(("", slug));
    let plus = format!("{owner}+{name}");
    let candidates = [
        repos.join(&plus).join("repo"),
        repos.join(&plus),
        repos.join(owner).join(name),
        repos.join(name),
        repos.join(format!("{name}.git")),
    ];
    for c in candidates {
        let git_dir = if c.join(".git").exists() {
            c.join(".git")
        } else {
            c.clone()
        };
        if git_dir.join("HEAD").is_file() && git_dir.join("objects").is_dir() {
            return Ok(git_dir);
        }
    }
    Err(Error::Argument(format!(
        "no git repository for {slug} under {}: clone it there (e.g. `git clone --bare \
         https://github.com/{slug} {}/{name}.git`)",
        repos.display(),
        repos.display()
    )))
}

/// Runs git with `--git-dir`, returning stdout.
pub fn git(git_dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::Command {
            command: format!("git {}", args.join(" ")),
            message: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(Error::Command {
            command: format!("git --git-dir {} {}", git_dir.display(), args.join(" ")),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The base tree of a task, exported once into `<trees>/<owner+name>/<commit>` (`git archive`
/// piped into `tar`; a marker file is written last, so an interrupted export is redone).
pub fn export_tree(git_dir: &Path, trees: &Path, slug: &str, commit: &str) -> Result<PathBuf> {
    let dir = trees.join(slug.replace('/', "+")).join(commit);
    let marker = dir.join(".acms-tree");
    if marker.is_file() {
        return Ok(dir);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(io(&dir))?;
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    // A mirror may lack its largest blobs (a test's big JSON file, a committed build-tool
    // archive); the tree is exported without them rather than not at all.
    let excluded: Vec<String> = missing_paths(git_dir, commit)?
        .iter()
        .map(|p| format!(":(exclude,literal){p}"))
        .collect();
    let mut archive = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["archive", "--format=tar", commit])
        .args(if excluded.is_empty() {
            Vec::new()
        } else {
            let mut a = vec!["--".to_string(), ".".to_string()];
            a.extend(excluded);
            a
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Command {
            command: "git archive".into(),
            message: e.to_string(),
        })?;
    let stdout = archive.stdout.take().ok_or_else(|| Error::Command {
        command: "git archive".into(),
        message: "no stdout".into(),
    })?;
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(&dir)
        .stdin(stdout)
        .output()
        .map_err(|e| Error::Command {
            command: "tar -x".into(),
            message: e.to_string(),
        })?;
    let archived = archive.wait_with_output().map_err(|e| Error::Command {
        command: "git archive".into(),
        message: e.to_string(),
    })?;
    if !archived.status.success() || !tar.status.success() {
        return Err(Error::Command {
            command: format!("git archive {commit} | tar -x ({slug})"),
            message: format!(
                "{} {}",
                String::from_utf8_lossy(&archived.stderr).trim(),
                String::from_utf8_lossy(&tar.stderr).trim()
            ),
        });
    }
    std::fs::write(&marker, commit).map_err(io(&marker))?;
    Ok(dir)
}

/// The paths of `commit`'s tree whose blobs `git_dir` does not have.
pub fn missing_paths(git_dir: &Path, commit: &str) -> Result<Vec<String>> {
    let objects = git(
        git_dir,
        &[
            "rev-list",
            "--objects",
            "--missing=print",
            &format!("{commit}^{{tree}}"),
        ],
    )?;
    let missing: std::collections::HashSet<&str> = objects
        .lines()
        .filter_map(|l| l.strip_prefix('?'))
        .collect();
    if missing.is_empty() {
        return Ok(Vec::new());
    }
    let tree = git(git_dir, &["ls-tree", "-r", "-z", commit])?;
    Ok(tree
        .split('\0')
        .filter_map(|entry| {
            let (meta, path) = entry.split_once('\t')?;
            let sha = meta.split_whitespace().nth(2)?;
            missing.contains(sha).then(|| path.to_string())
        })
        .collect())
}

/// A gold symbol located in the base tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GoldSymbol {
    /// As the task names it (`path::Class.method`).
    pub spec: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// The declaration line (`def method(self, x):`), trimmed: visible means this line is in
    /// the context.
    pub def_line: String,
}

/// What the scorer needs of one task, read from its base tree.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Gold {
    pub files: Vec<String>,
    pub symbols: Vec<GoldSymbol>,
    /// Gold symbols the analyzer could not find in the tree (named, not scored).
    pub unresolved: Vec<String>,
    /// Per gold file: the removed lines that count for coverage (trimmed).
    pub changed: BTreeMap<String, Vec<String>>,
}

impl Gold {
    /// Number of changed lines over all files.
    pub fn changed_count(&self) -> usize {
        self.changed.values().map(Vec::len).sum()
    }
}

/// A symbol of a file as the analyzer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolSpan {
    pub qualified_name: String,
    pub kind: NodeKind,
    pub start_line: u32,
    pub end_line: u32,
    /// The declaration line, trimmed (decorators and attributes skipped).
    pub def_line: String,
}

/// The analyzer's symbol nodes of one file of the tree.
pub fn file_symbols(root: &Path, path: &str) -> Vec<SymbolSpan> {
    let Ok(src) = std::fs::read_to_string(root.join(path)) else {
        return Vec::new();
    };
    let Some(lang) = detect_language(path, &src) else {
        return Vec::new();
    };
    let parsed = analyzer_for(lang).analyze(path, &src, &ParseLimits::default());
    let lines: Vec<&str> = src.lines().collect();
    parsed
        .nodes
        .iter()
        .filter(|n| n.kind != NodeKind::Module)
        .map(|n| {
            let def = (n.start_line as usize..=n.end_line as usize)
                .filter_map(|i| lines.get(i.wrapping_sub(1)))
                .map(|l| l.trim())
                .find(|l| declaration(l))
                .unwrap_or_default()
                .to_string();
            SymbolSpan {
                qualified_name: n.qualified_name.clone(),
                kind: n.kind,
                start_line: n.start_line,
                end_line: n.end_line,
                def_line: def,
            }
        })
        .collect()
}

/// Whether a trimmed line of a symbol's span can be its declaration: not blank, and neither a
/// decorator or attribute (`@cached`, `#[derive(Debug)]`) nor a doc comment above it (Rust's
/// `///`, a JSDoc block), which the analyzer includes in a node's span.
fn declaration(line: &str) -> bool {
    !line.is_empty()
        && !["@", "#[", "//", "/*", "*"]
            .iter()
            .any(|p| line.starts_with(p))
}

/// `module.Class.method` matches `Class.method` (a suffix at a dot boundary).
fn names_match(qualified: &str, wanted: &str) -> bool {
    qualified == wanted
        || qualified
            .strip_suffix(wanted)
            .is_some_and(|head| head.ends_with('.') || head.ends_with("::"))
}

/// The one symbol of a file whose name is `wanted` with definitions the analyzer now nests it
/// in (`lib/xhr.dispatch.onabort` when the task names `lib/xhr.dispatch` …
/// `lib/xhr.default.dispatch.onabort`): a task's names come from the analyzer that mined it,
/// and a new enclosing node must not unscore its symbols. `module` is the file's module name.
fn nested_match<'s>(
    symbols: &'s [SymbolSpan],
    module: &str,
    wanted: &str,
) -> Option<&'s SymbolSpan> {
    let tail = wanted.strip_prefix(module)?.strip_prefix('.')?;
    let mut found = symbols.iter().filter(|s| {
        s.qualified_name
            .strip_prefix(module)
            .and_then(|rest| rest.strip_suffix(tail))
            .is_some_and(|between| between.starts_with('.') && between.ends_with('.'))
    });
    match (found.next(), found.next()) {
        (Some(s), None) => Some(s),
        _ => None,
    }
}

/// Locates the task's gold symbols and changed lines in its base tree at `root`.
pub fn resolve_gold(task: &IssueTask, root: &Path) -> Gold {
    let patches: Vec<FilePatch> = patch::parse(&task.golden_patch);
    let mut gold = Gold {
        files: task.gold_files.clone(),
        ..Gold::default()
    };
    for p in &patches {
        if let Some(path) = p.path()
            && task.gold_files.iter().any(|g| g == path)
        {
            let lines: Vec<String> = p.changed_lines().into_iter().map(|(_, l)| l).collect();
            if !lines.is_empty() {
                gold.changed
                    .entry(path.to_string())
                    .or_default()
                    .extend(lines);
            }
        }
    }
    let mut by_file: BTreeMap<&str, Vec<SymbolSpan>> = BTreeMap::new();
    for spec in &task.gold_symbols {
        let Some((path, name)) = spec.split_once("::") else {
            gold.unresolved.push(spec.clone());
            continue;
        };
        if name
            .rsplit_once(':')
            .is_some_and(|(_, n)| n.parse::<u32>().is_ok())
        {
            // A line reference (`Class:32`), not a symbol: nothing to score.
            continue;
        }
        let symbols = by_file
            .entry(path)
            .or_insert_with(|| file_symbols(root, path));
        let module = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
        let found = symbols
            .iter()
            .find(|s| names_match(&s.qualified_name, name))
            .or_else(|| nested_match(symbols, module, name));
        match found {
            Some(s) => gold.symbols.push(GoldSymbol {
                spec: spec.clone(),
                path: path.to_string(),
                start_line: s.start_line,
                end_line: s.end_line,
                def_line: s.def_line.clone(),
            }),
            None => gold.unresolved.push(spec.clone()),
        }
    }
    gold
}

#[cfg(test)]
mod tests {
    use super::{
        IssueTask, SymbolSpan, declaration, export_tree, git, missing_paths, names_match,
        nested_match, set_language, set_name,
    };

    #[test]
    fn a_tree_whose_mirror_lacks_a_blob_is_exported_without_it() {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("w");
        std::fs::create_dir_all(work.join("src")).unwrap();
        std::fs::write(work.join("src/a.go"), "package a\n").unwrap();
        std::fs::write(work.join("big.json"), "[1, 2, 3]\n").unwrap();
        let run = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .current_dir(&work)
                .args([
                    "-c",
                    "user.name=t",
                    "-c",
                    "user.email=t@t",
                    "-c",
                    "commit.gpgsign=false",
                ])
                .args(args)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q"]);
        run(&["add", "."]);
        run(&["commit", "-qm", "init"]);
        let git_dir = work.join(".git");
        let head = git(&git_dir, &["rev-parse", "HEAD"])
            .unwrap()
            .trim()
            .to_string();
        assert!(missing_paths(&git_dir, &head).unwrap().is_empty());
        let blob = git(&git_dir, &["rev-parse", "HEAD:big.json"]).unwrap();
        let blob = blob.trim();
        std::fs::remove_file(git_dir.join("objects").join(&blob[..2]).join(&blob[2..])).unwrap();
        assert_eq!(missing_paths(&git_dir, &head).unwrap(), vec!["big.json"]);
        let tree = export_tree(&git_dir, &tmp.path().join("trees"), "o/w", &head).unwrap();
        assert!(tree.join("src/a.go").is_file());
        assert!(!tree.join("big.json").exists());
    }

    #[test]
    fn a_mined_set_is_in_the_language_of_its_gold_files() {
        let task = |files: &[&str]| IssueTask {
            instance_id: "x@1".into(),
            repo: "o/x".into(),
            base_commit: "1".into(),
            problem_statement: "fix it".into(),
            gold_files: files.iter().map(|f| f.to_string()).collect(),
            gold_symbols: Vec::new(),
            golden_patch: String::new(),
        };
        assert_eq!(set_language("hono", &[]), "TypeScript");
        assert_eq!(
            set_language("jq.jsonl", &[task(&["src/jv.c", "src/jv.h"])]),
            "C"
        );
        let fmt = [
            task(&["include/fmt/base.h"]),
            task(&["src/os.cc", "include/fmt/os.h"]),
        ];
        assert_eq!(set_language("fmt.jsonl", &fmt), "C++");
        assert_eq!(set_language("g.jsonl", &[task(&["command.go"])]), "Go");
        assert_eq!(set_language("none.jsonl", &[task(&["README.md"])]), "?");
    }

    #[test]
    fn a_set_given_as_a_file_is_named_by_its_stem() {
        assert_eq!(set_name("swe"), "swe");
        assert_eq!(set_name("/tmp/vue/vue.jsonl"), "vue");
        assert_eq!(set_name("tasks.jsonl"), "tasks");
        assert_eq!(set_name("/"), "set");
    }

    #[test]
    fn the_declaration_line_is_below_decorators_attributes_and_doc_comments() {
        for above in [
            "@property",
            "#[must_use]",
            "/// Returns the body.",
            "//! Crate doc",
            "/**",
            "* @param x",
            "*/",
        ] {
            assert!(!declaration(above), "{above}");
        }
        for decl in [
            "pub struct MultipartError {",
            "def f(self):",
            "export function app() {",
            "class A:",
        ] {
            assert!(declaration(decl), "{decl}");
        }
    }

    #[test]
    fn a_name_found_under_a_new_enclosing_definition() {
        let span = |q: &str| SymbolSpan {
            qualified_name: q.into(),
            kind: acms::index::NodeKind::Function,
            start_line: 1,
            end_line: 2,
            def_line: String::new(),
        };
        let symbols = [
            span("lib/xhr.default"),
            span("lib/xhr.default.dispatch"),
            span("lib/xhr.default.dispatch.onabort"),
            span("lib/xhr.a.run"),
            span("lib/xhr.b.run"),
        ];
        let found = |wanted| nested_match(&symbols, "lib/xhr", wanted).map(|s| &s.qualified_name);
        assert_eq!(
            found("lib/xhr.dispatch.onabort").map(String::as_str),
            Some("lib/xhr.default.dispatch.onabort")
        );
        assert_eq!(found("lib/xhr.run"), None, "two candidates: none");
        assert_eq!(found("lib/xhr.ispatch.onabort"), None, "at a boundary only");
        assert_eq!(found("other.dispatch"), None);
    }

    #[test]
    fn suffix_at_a_boundary() {
        assert!(names_match("sympy.core.mul.Mul.flatten", "Mul.flatten"));
        assert!(names_match("Mul.flatten", "Mul.flatten"));
        assert!(!names_match("sympy.core.mul.XMul.flatten", "Mul.flatten"));
        assert!(names_match(
            "crate::routing::Router::route",
            "Router::route"
        ));
    }
}
