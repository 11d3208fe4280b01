//! Where a file sits in a repository: ordinary source, or a place whose code is rarely what
//! a task is about (tests, docs, examples, vendored and generated code), judged by its path
//! and, for generated code, by the banner its generator writes at the top.

use acms_index::{name_words as words, test_directory};

/// Where a file sits: ordinary source, or a place whose code is rarely what a task is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Source,
    Test,
    Docs,
    Example,
    Vendored,
    Generated,
}

/// The place of `path` (repository-relative, `/`-separated), by its directories and name.
pub fn place(path: &str) -> Place {
    let lower = path.to_ascii_lowercase();
    let mut parts: Vec<&str> = lower.split('/').collect();
    let name = parts.pop().unwrap_or("");
    let original_name = path.rsplit('/').next().unwrap_or("");
    let dir_is = |names: &[&str]| parts.iter().any(|p| names.contains(p));
    if dir_is(&[
        "vendor",
        "vendored",
        "_vendor",
        "third_party",
        "third-party",
        "node_modules",
        "extern",
        "externals",
    ]) {
        return Place::Vendored;
    }
    if vendored_library(name) {
        return Place::Vendored;
    }
    if name.ends_with(".min.js")
        || name.ends_with("_pb2.py")
        || name.ends_with(".pb.go")
        || name.ends_with(".generated.ts")
        || name.contains(".gen.")
        || name.ends_with(".designer.cs")
        || name.ends_with(".g.cs")
        || name.ends_with(".g.i.cs")
        || name.ends_with(".pb.cc")
        || name.ends_with(".pb.h")
        || name.starts_with("zz_generated")
        || dir_is(&["generated", "__generated__", "dist", "build"])
    {
        return Place::Generated;
    }
    if dir_is(&[
        "test",
        "tests",
        "testing",
        "__tests__",
        "spec",
        "specs",
        "test_helpers",
        "fixtures",
        "test_data",
        "testdata",
        "fuzz",
        "benches",
        "benchmarks",
        "bench",
    ]) || path.split('/').rev().skip(1).any(test_directory)
        || name.starts_with("test_")
        || test_file(original_name)
        || name == "conftest.py"
        || name == "tests.rs"
        || name.contains(".test.")
        || name.contains(".spec.")
    {
        return Place::Test;
    }
    if dir_is(&["doc", "docs", "documentation"]) || name.ends_with(".md") || name.ends_with(".rst")
    {
        return Place::Docs;
    }
    if dir_is(&["example", "examples", "samples", "demo", "demos"]) {
        return Place::Example;
    }
    // After the example rule: an example's README stays with its example.
    if project_prose(name) {
        return Place::Docs;
    }
    Place::Source
}

/// A test file by its name's last word: `_test`, `_tests`, `_spec`, `_unittest` in any language
/// (Go, C, C++, Ruby, Python), and a class named `…Test`, `…Tests` or `…Spec` in the languages
/// that name a file after its class (`JsonSerializerTest.cs`, `SessionTests.swift`). A file
/// whose whole name is one such word (`Test.java`, JUnit's own annotation) is source.
fn test_file(name: &str) -> bool {
    let Some((stem, extension)) = name.rsplit_once('.') else {
        return false;
    };
    let lower = stem.to_ascii_lowercase();
    if ["_test", "_tests", "_spec", "_unittest"]
        .iter()
        .any(|s| lower.ends_with(s) && lower.len() > s.len())
    {
        return true;
    }
    let class_per_file = ["java", "kt", "kts", "scala", "cs", "swift", "php", "groovy"]
        .contains(&extension.to_ascii_lowercase().as_str());
    class_per_file
        && words(stem).count() > 1
        && words(stem)
            .last()
            .is_some_and(|w| ["Test", "Tests", "Spec", "Specs"].contains(&w))
}

/// The place of a node whose file is at `file_place`: a test when it lies inside a test module
/// of a source file ([`in_test_module`]), else its file's place.
pub fn node_place(file_place: Place, qualified_name: &str) -> Place {
    match file_place {
        Place::Source if in_test_module(qualified_name) => Place::Test,
        p => p,
    }
}

/// Whether a Rust qualified name (`crate::serve::tests::graceful_shutdown`) lies inside a
/// test module (`tests`, `test`, `unit_tests`, `test_helpers`): the convention for unit tests
/// kept in the source file they test. Only `::` paths are read; a Python module path names
/// its test directory, which [`place`] already sees.
fn in_test_module(qualified_name: &str) -> bool {
    let Some((containers, _)) = qualified_name.rsplit_once("::") else {
        return false;
    };
    containers
        .split("::")
        .any(|p| p == "tests" || p == "test" || p.ends_with("_tests") || p.starts_with("test_"))
}

/// A project's prose file by its conventional name, bare or as text (`CHANGES`, `NEWS`,
/// `AUTHORS`, `LICENSE.txt`): sphinx keeps its changelog in a bare `CHANGES`, whose 60-line
/// chunks match any task's words (a third of a 16k window in sphinx-8627). A module with such
/// a stem (`news.py`) is code.
fn project_prose(name: &str) -> bool {
    let (stem, extension) = name.split_once('.').unwrap_or((name, ""));
    ["", "txt", "markdown", "adoc", "asciidoc", "org", "rdoc"].contains(&extension)
        && [
            "changes",
            "changelog",
            "history",
            "news",
            "release-notes",
            "release_notes",
            "releasenotes",
            "authors",
            "contributors",
            "maintainers",
            "credits",
            "thanks",
            "license",
            "licence",
            "copying",
            "notice",
            "readme",
            "contributing",
            "code_of_conduct",
            "security",
            "todo",
        ]
        .contains(&stem)
}

/// A browser library copied into a project by file: a version in its name (`jquery-3.5.1.js`,
/// `underscore-1.13.1.js`) or one of the libraries projects copy most (`jquery.js`). Their
/// thousands of short functions (`dir`, `add`, `each`) match any task's words.
fn vendored_library(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".js") else {
        return false;
    };
    let versioned = stem.rsplit_once('-').is_some_and(|(lib, version)| {
        !lib.is_empty()
            && version.contains('.')
            && version
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
    });
    versioned || ["jquery", "underscore", "lodash", "backbone"].contains(&stem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rust_test_module_is_a_test_place_and_a_function_named_test_is_not() {
        assert!(in_test_module("crate::serve::tests::graceful_shutdown"));
        assert!(in_test_module("crate::routing::strip_prefix::test::case"));
        assert!(!in_test_module("crate::serve::Serve::run"));
        assert!(
            !in_test_module("crate::routing::tests"),
            "the module itself is its file's"
        );
        assert!(
            !in_test_module("crate::harness::test"),
            "a function named test"
        );
        assert!(
            !in_test_module("sympy.core.tests.test_mul.test_x"),
            "Python paths by path"
        );
        assert!(!in_test_module("crate::testing::fixture"));
        assert!(in_test_module("crate::router::unit_tests::routes"));
        assert!(in_test_module("crate::body::test_helpers::TestClient::get"));
        assert!(!in_test_module("crate::contest::score"));
    }

    #[test]
    fn places() {
        assert_eq!(place("sympy/core/tests/test_mul.py"), Place::Test);
        assert_eq!(place("testing/test_runner.py"), Place::Test);
        assert_eq!(place("src/_pytest/python.py"), Place::Source);
        assert_eq!(place("src/router.test.ts"), Place::Test);
        assert_eq!(place("axum/src/routing/tests/mod.rs"), Place::Test);
        assert_eq!(place("docs/conf.py"), Place::Docs);
        assert_eq!(place("README.md"), Place::Docs);
        assert_eq!(place("CHANGES"), Place::Docs, "sphinx's changelog");
        assert_eq!(place("AUTHORS"), Place::Docs);
        assert_eq!(place("LICENSE.txt"), Place::Docs);
        assert_eq!(place("src/news.py"), Place::Source, "a module named news");
        assert_eq!(place("Makefile"), Place::Source, "build files stay source");
        assert_eq!(place("examples/naval/README"), Place::Example);
        assert_eq!(place("requests/packages/chardet/x.py"), Place::Source);
        assert_eq!(place("pip/_vendor/chardet/x.py"), Place::Vendored);
        assert_eq!(place("examples/hello/src/main.rs"), Place::Example);
        assert_eq!(place("sphinx/util/rst.py"), Place::Source);
        assert_eq!(place("fuzz/corpus/analyze_python/seed.py"), Place::Test);
        assert_eq!(place("crates/x/test_data/fixture.json"), Place::Test);
        assert_eq!(
            place("sphinx/themes/basic/static/jquery-3.5.1.js"),
            Place::Vendored
        );
        assert_eq!(
            place("sphinx/themes/basic/static/underscore.js"),
            Place::Vendored
        );
        assert_eq!(
            place("sphinx/themes/basic/static/doctools.js"),
            Place::Source
        );
        assert_eq!(
            place("src/adapter/bun-1.js"),
            Place::Source,
            "not a version"
        );
    }

    #[test]
    fn test_projects_source_sets_and_files_of_every_language() {
        for path in [
            "Src/Newtonsoft.Json.Tests/Linq/JTokenTests.cs",
            "Src/Newtonsoft.Json.FuzzTests/Program.cs",
            "Src/Newtonsoft.Json.TestConsole/Program.cs",
            "Tests/SessionTests.swift",
            "AlamofireTests/Helpers.swift",
            "okio/src/jvmTest/kotlin/okio/PipeTest.kt",
            "okio-wasifilesystem/src/wasmWasiTest/kotlin/okio/X.kt",
            "okio-testing-support/src/commonMain/kotlin/okio/Fake.kt",
            "test-shrinker/src/main/java/Main.java",
            "src/main/java/com/x/ParserTest.java",
            "src/ScoptSpec.scala",
            "src/Monolog/LoggerTest.php",
            "src/jv_test.c",
            "src/format_unittest.cc",
            "lib/sinatra/base_spec.rb",
            "command_test.go",
            "x/y_test.py",
        ] {
            assert_eq!(place(path), Place::Test, "{path}");
        }
        for path in [
            "src/_pytest/python.py",
            "src/_pytest/unittest.py",
            "src/main/java/org/junit/Test.java",
            "src/main/java/com/x/Contest.java",
            "latest/attest.go",
            "src/Newtonsoft.Json/JsonConvert.cs",
            "src/testament.rs",
            "lib/test.rb",
        ] {
            assert_eq!(place(path), Place::Source, "{path}");
        }
        assert_eq!(place("Forms/Main.Designer.cs"), Place::Generated);
        assert_eq!(place("obj/Api.g.cs"), Place::Generated);
        assert_eq!(place("pkg/apis/zz_generated.deepcopy.go"), Place::Generated);
    }
}
