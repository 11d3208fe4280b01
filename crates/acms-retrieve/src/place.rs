//! Where a file sits in a repository: ordinary source, or a place whose code is rarely what
//! a task is about (tests, docs, examples, vendored and generated code), judged by its path.

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
    ]) || name.starts_with("test_")
        || name.ends_with("_test.py")
        || name.ends_with("_test.go")
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
    Place::Source
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
    fn places() {
        assert_eq!(place("sympy/core/tests/test_mul.py"), Place::Test);
        assert_eq!(place("testing/test_runner.py"), Place::Test);
        assert_eq!(place("src/_pytest/python.py"), Place::Source);
        assert_eq!(place("src/router.test.ts"), Place::Test);
        assert_eq!(place("axum/src/routing/tests/mod.rs"), Place::Test);
        assert_eq!(place("docs/conf.py"), Place::Docs);
        assert_eq!(place("README.md"), Place::Docs);
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
}
