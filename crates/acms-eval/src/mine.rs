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

use crate::error::Result;
pub use crate::lang::{LANGS, Lang};
use crate::patch;
use crate::realtasks::{IssueTask, git};

/// Commits that remove more counted lines than this are refactors, not tasks.
pub const MAX_CHANGED: usize = 60;

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
            "maven-release-plugin",
        ]
        .iter()
        .any(|w| s.contains(w))
        || version_subject(&s)
}

/// `4.1.1 release`, `v2.0.0`, `1.3 released`, `Prepare 5.10.2 Release`: a release commit
/// named by its version and release words alone.
fn version_subject(s: &str) -> bool {
    let version = |w: &str| {
        let w = w.strip_prefix('v').unwrap_or(w);
        w.contains('.')
            && w.split('.').all(|p| !p.is_empty())
            && w.chars().all(|c| c.is_ascii_digit() || c == '.')
    };
    let mut versions = 0;
    for w in s.split_whitespace() {
        if version(w) {
            versions += 1;
        } else if !matches!(
            w,
            "release" | "released" | "version" | "prepare" | "preparing"
        ) {
            return false;
        }
    }
    versions == 1
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
                // A file without an analyzer (a language `detect_language` reads as text) is
                // line chunks, which name no symbol: such a commit keeps its files and lines
                // as gold, and its symbols fill in once the language has an analyzer.
                .filter(|n| {
                    !matches!(n.kind, NodeKind::Module | NodeKind::Chunk)
                        && n.start_line <= line
                        && line <= n.end_line
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

/// Mines up to `count` tasks from the history of `git_dir` before and at `rev` (newest first),
/// for `slug` (`owner/name`), scanning at most `scan` commits. A pinned `rev` (a commit id)
/// makes a set reproducible from a mirror fetched later.
pub fn mine(
    git_dir: &Path,
    slug: &str,
    rev: &str,
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
            rev,
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
        if parents.len() != 1 || housekeeping(&clean_subject(subject)) {
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
            // An extension-less file may be a script: its `#!` line says (at the commit, or
            // before it for a deletion).
            let name = path.rsplit('/').next().unwrap_or(path);
            let script = if name.contains('.') {
                None
            } else {
                let at = if st == "D" { parent } else { sha };
                git(git_dir, &["show", &format!("{at}:{path}")]).ok()
            };
            if !lang.is_source_file(path, script.as_deref()) {
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
    fn javascript_and_java_filters() {
        let js = Lang::JavaScript;
        for p in [
            "lib/router/index.js",
            "index.js",
            "src/a.mjs",
            "src/b.cjs",
            "src/App.jsx",
        ] {
            assert!(js.is_source(p), "{p}");
        }
        for p in [
            "dist/express.js",
            "build/bundle.js",
            "vendor/jquery.js",
            "node_modules/x/index.js",
            "lib/jquery.min.js",
            "lib/a.test.js",
            "lib/a.spec.mjs",
            "test/app.router.js",
            "examples/auth/index.js",
            "eslint.config.mjs",
            "src/a.ts",
        ] {
            assert!(!js.is_source(p), "{p}");
        }
        let java = Lang::Java;
        assert!(java.is_source("gson/src/main/java/com/google/gson/Gson.java"));
        assert!(!java.is_source("gson/src/test/java/com/google/gson/GsonTest.java"));
        assert!(!java.is_source("src/integrationTest/java/A.java"));
        assert!(!java.is_source("src/main/resources/A.properties"));
    }

    #[test]
    fn go_c_cpp_filters() {
        let go = Lang::Go;
        assert!(go.is_source("command.go"));
        assert!(go.is_source("doc/man_docs.go"));
        assert!(!go.is_source("command_test.go"));
        assert!(!go.is_source("internal/testdata/x.go"));
        assert!(!go.is_source("vendor/github.com/a/b.go"));
        for p in ["src/jv.c", "src/jv.h"] {
            assert!(Lang::C.is_source(p), "{p}");
        }
        for p in [
            "tests/jq_test.c",
            "vendor/decNumber/x.c",
            "deps/a.c",
            "src/x.cc",
        ] {
            assert!(!Lang::C.is_source(p), "{p}");
        }
        for p in [
            "include/fmt/format.h",
            "src/os.cc",
            "a.cpp",
            "a.cxx",
            "a.hpp",
            "a.hh",
        ] {
            assert!(Lang::Cpp.is_source(p), "{p}");
        }
        for p in [
            "test/format-test.cc",
            "third_party/gtest/gtest.cc",
            "src/parser_unittest.cpp",
            "src/a.c",
        ] {
            assert!(!Lang::Cpp.is_source(p), "{p}");
        }
    }

    #[test]
    fn dotnet_ruby_php_filters() {
        let cs = Lang::CSharp;
        assert!(cs.is_source("Src/Newtonsoft.Json/JsonConvert.cs"));
        assert!(!cs.is_source("Src/Newtonsoft.Json.Tests/JsonConvertTest.cs"));
        assert!(!cs.is_source("src/App.Tests/Foo.cs"));
        assert!(!cs.is_source("src/App/Form1.Designer.cs"));
        assert!(!cs.is_source("src/App/obj/Debug/AssemblyInfo.cs"));
        let rb = Lang::Ruby;
        assert!(rb.is_source("lib/sinatra/base.rb"));
        assert!(!rb.is_source("spec/base_spec.rb"));
        assert!(!rb.is_source("sinatra-contrib/spec/json_spec.rb"));
        assert!(!rb.is_source("test/routing_test.rb"));
        assert!(!rb.is_source("lib/x_test.rb"));
        let php = Lang::Php;
        assert!(php.is_source("src/Monolog/Logger.php"));
        assert!(php.is_source("src/Monolog/Latest.php"));
        assert!(!php.is_source("tests/Monolog/LoggerTest.php"));
        assert!(!php.is_source("src/Monolog/LoggerTest.php"));
        assert!(!php.is_source("vendor/psr/log/Logger.php"));
    }

    #[test]
    fn jvm_swift_shell_filters() {
        let kt = Lang::Kotlin;
        assert!(kt.is_source("okio/src/commonMain/kotlin/okio/Buffer.kt"));
        assert!(kt.is_source("scripts/gen.main.kts"));
        assert!(!kt.is_source("okio/src/jvmTest/kotlin/okio/BufferTest.kt"));
        assert!(!kt.is_source("app/src/test/kotlin/A.kt"));
        assert!(!kt.is_source("build.gradle.kts"));
        let swift = Lang::Swift;
        assert!(swift.is_source("Source/Core/Session.swift"));
        assert!(!swift.is_source("Tests/SessionTests.swift"));
        assert!(!swift.is_source("Source/AlamofireTests/A.swift"));
        assert!(!swift.is_source("Package.swift"));
        assert!(!swift.is_source("Package@swift-5.9.swift"));
        let scala = Lang::Scala;
        assert!(scala.is_source("core/src/main/scala/cats/Functor.scala"));
        assert!(!scala.is_source("core/src/test/scala/cats/FunctorSuite.scala"));
        let sh = Lang::Bash;
        assert!(sh.is_source("libexec/bats-core/bats-exec-file.sh"));
        assert!(sh.is_source("install.bash"));
        let exec = "#!/usr/bin/env bash\nset -e\n";
        assert!(sh.is_source_file("libexec/bats-core/bats-exec-test", Some(exec)));
        assert!(!sh.is_source_file("libexec/bats-core/bats-exec-test", None));
        assert!(!sh.is_source_file("test/fixtures/run", Some(exec)));
        assert!(!Lang::Python.is_source_file("bin/run", Some(exec)));
        assert!(Lang::Python.is_source_file("bin/isympy", Some("#!/usr/bin/env python3\n")));
        assert!(!sh.is_source("test/fixtures/a.sh"));
        assert!(!sh.is_source("bin/bats"));
    }

    #[test]
    fn languages_by_name_and_path() {
        for l in LANGS {
            assert_eq!(Lang::parse(l.flag()).unwrap(), *l);
        }
        assert_eq!(Lang::parse("c++").unwrap(), Lang::Cpp);
        assert_eq!(Lang::parse("C#").unwrap(), Lang::CSharp);
        assert!(Lang::parse("cobol").is_err());
        assert_eq!(Lang::of_path("src/jv.h"), Some(Lang::C));
        assert_eq!(Lang::of_path("src/os.cc"), Some(Lang::Cpp));
        assert_eq!(Lang::of_path("lib/a.mjs"), Some(Lang::JavaScript));
        assert_eq!(Lang::of_path("A.java"), Some(Lang::Java));
        assert_eq!(Lang::of_path("b.kts"), Some(Lang::Kotlin));
        assert_eq!(Lang::of_path("README.md"), None);
    }

    #[test]
    fn text_chunks_name_no_symbol() {
        // A file acms reads as text (no analyzer) is line chunks: its lines are outside every
        // symbol rather than inside a chunk named after lines.
        let text = "[server]\nport = 8080\nhost = \"x\"\n";
        assert_eq!(
            detect_language("conf.toml", text),
            Some(acms::index::Language::Text)
        );
        assert_eq!(symbols_at("conf.toml", text, &[1, 2]), vec![None, None]);
        // A language with an analyzer names the function around a line.
        let go = "package x\n\nfunc F() int {\n\treturn 1\n}\n";
        let at = symbols_at("x.go", go, &[4]);
        if detect_language("x.go", go) != Some(acms::index::Language::Text) {
            assert_eq!(
                at[0].as_deref().map(|q| q.ends_with('F')),
                Some(true),
                "{at:?}"
            );
        }
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
        assert!(housekeeping("4.1.1 release"));
        assert!(housekeeping("Prepare 5.10.2 Release"));
        assert!(housekeeping("Prepare 5.7"));
        assert!(!housekeeping("Prepare the parser for 5.7"));
        assert!(
            housekeeping(&clean_subject("4.1.1 release (#2068)")),
            "a PR number"
        );
        assert!(housekeeping("v2.0.0"));
        assert!(housekeeping(
            "[maven-release-plugin] prepare release gson-parent-2.13.1"
        ));
        assert!(!housekeeping("4.1 breaks the parser on empty input"));
    }
}
