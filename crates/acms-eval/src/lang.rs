//! The languages commits are mined for: which files are each one's source, and which are its
//! tests, examples or vendored code. Shared by the miner and the report's set language.

use acms::index::{Language, detect_language};

use crate::error::{Error, Result};

/// The languages commits are mined for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    TypeScript,
    Rust,
    Python,
    /// Plain JavaScript (`.js`, `.mjs`, `.cjs`, `.jsx`).
    JavaScript,
    Java,
    Go,
    C,
    Cpp,
    CSharp,
    Ruby,
    Php,
    Kotlin,
    Swift,
    Scala,
    Bash,
}

/// Every language, in the order `parse`'s error message names them.
pub const LANGS: &[Lang] = &[
    Lang::TypeScript,
    Lang::Rust,
    Lang::Python,
    Lang::JavaScript,
    Lang::Java,
    Lang::Go,
    Lang::C,
    Lang::Cpp,
    Lang::CSharp,
    Lang::Ruby,
    Lang::Php,
    Lang::Kotlin,
    Lang::Swift,
    Lang::Scala,
    Lang::Bash,
];

/// Directories whose files are tests, examples, benchmarks or docs in every language.
fn common_excluded_dir(d: &str) -> bool {
    matches!(
        d,
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
}

/// Directories of code a project carries but does not write (lower case).
fn vendored_dir(d: &str) -> bool {
    matches!(
        d,
        "vendor" | "third_party" | "thirdparty" | "third-party" | "deps" | "node_modules"
    )
}

/// `src/test/`, `src/jvmTest/`, `src/androidTest/`: the test source sets of Maven, Gradle and
/// Kotlin Multiplatform, and sbt (`dirs` lower case, the file name excluded).
fn jvm_test_source_set(dirs: &[&str]) -> bool {
    dirs.windows(2)
        .any(|w| w[0] == "src" && (w[1] == "test" || w[1].ends_with("test")))
}

impl Lang {
    pub fn parse(s: &str) -> Result<Lang> {
        Ok(match s.to_ascii_lowercase().as_str() {
            "ts" | "typescript" => Lang::TypeScript,
            "rust" | "rs" => Lang::Rust,
            "python" | "py" => Lang::Python,
            "js" | "javascript" => Lang::JavaScript,
            "java" => Lang::Java,
            "go" | "golang" => Lang::Go,
            "c" => Lang::C,
            "cpp" | "c++" | "cxx" => Lang::Cpp,
            "csharp" | "cs" | "c#" => Lang::CSharp,
            "ruby" | "rb" => Lang::Ruby,
            "php" => Lang::Php,
            "kotlin" | "kt" => Lang::Kotlin,
            "swift" => Lang::Swift,
            "scala" => Lang::Scala,
            "bash" | "sh" | "shell" => Lang::Bash,
            other => {
                return Err(Error::Argument(format!(
                    "unknown language '{other}' ({})",
                    LANGS
                        .iter()
                        .map(|l| l.flag())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        })
    }

    /// The `--lang` value that selects this language.
    pub fn flag(self) -> &'static str {
        match self {
            Lang::TypeScript => "ts",
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::JavaScript => "js",
            Lang::Java => "java",
            Lang::Go => "go",
            Lang::C => "c",
            Lang::Cpp => "cpp",
            Lang::CSharp => "csharp",
            Lang::Ruby => "ruby",
            Lang::Php => "php",
            Lang::Kotlin => "kotlin",
            Lang::Swift => "swift",
            Lang::Scala => "scala",
            Lang::Bash => "bash",
        }
    }

    /// The name a report gives the language.
    pub fn display_name(self) -> &'static str {
        match self {
            Lang::TypeScript => "TypeScript",
            Lang::Rust => "Rust",
            Lang::Python => "Python",
            Lang::JavaScript => "JavaScript",
            Lang::Java => "Java",
            Lang::Go => "Go",
            Lang::C => "C",
            Lang::Cpp => "C++",
            Lang::CSharp => "C#",
            Lang::Ruby => "Ruby",
            Lang::Php => "PHP",
            Lang::Kotlin => "Kotlin",
            Lang::Swift => "Swift",
            Lang::Scala => "Scala",
            Lang::Bash => "Bash",
        }
    }

    /// Whether `name` (lower case) has one of this language's extensions, tests and generated
    /// files included. A `.h` header is C's; C++ counts it as its own too.
    fn has_extension(self, name: &str) -> bool {
        let ext = |exts: &[&str]| exts.iter().any(|e| name.ends_with(e));
        match self {
            Lang::TypeScript => ext(&[".ts", ".tsx"]),
            Lang::Rust => ext(&[".rs"]),
            Lang::Python => ext(&[".py"]),
            Lang::JavaScript => ext(&[".js", ".mjs", ".cjs", ".jsx"]),
            Lang::Java => ext(&[".java"]),
            Lang::Go => ext(&[".go"]),
            Lang::C => ext(&[".c", ".h"]),
            Lang::Cpp => ext(&[
                ".cc", ".cpp", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp", ".tpp", ".h",
            ]),
            Lang::CSharp => ext(&[".cs"]),
            Lang::Ruby => ext(&[".rb"]),
            Lang::Php => ext(&[".php"]),
            Lang::Kotlin => ext(&[".kt", ".kts"]),
            Lang::Swift => ext(&[".swift"]),
            Lang::Scala => ext(&[".scala"]),
            Lang::Bash => ext(&[".sh", ".bash"]),
        }
    }

    /// The language acms' analyzers read this language's files as.
    fn analyzed_as(self) -> Language {
        match self {
            Lang::TypeScript => Language::TypeScript,
            Lang::Rust => Language::Rust,
            Lang::Python => Language::Python,
            Lang::JavaScript => Language::JavaScript,
            Lang::Java => Language::Java,
            Lang::Go => Language::Go,
            Lang::C => Language::C,
            Lang::Cpp => Language::Cpp,
            Lang::CSharp => Language::CSharp,
            Lang::Ruby => Language::Ruby,
            Lang::Php => Language::Php,
            Lang::Kotlin => Language::Kotlin,
            Lang::Swift => Language::Swift,
            Lang::Scala => Language::Scala,
            Lang::Bash => Language::Bash,
        }
    }

    /// The language a path's extension names, tests included (`.h` is C). For reports, not
    /// for mining: see [`Lang::is_source`].
    pub fn of_path(path: &str) -> Option<Lang> {
        let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
        if name.ends_with(".h") {
            return Some(Lang::C);
        }
        LANGS.iter().copied().find(|l| l.has_extension(&name))
    }

    /// A source file of this language that is not a test, example, benchmark, declaration,
    /// vendored or generated file, by the conventions a reader of the language expects.
    pub fn is_source(self, path: &str) -> bool {
        self.is_source_file(path, None)
    }

    /// [`Lang::is_source`], where `script` is the text of an extension-less file: such a file
    /// is this language's when its `#!` line names the interpreter (bats-core's core is
    /// `libexec/bats-core/bats-exec-test`), as acms' own `detect_language` reads it.
    pub fn is_source_file(self, path: &str, script: Option<&str>) -> bool {
        let lower = path.to_ascii_lowercase();
        let parts: Vec<&str> = lower.split('/').collect();
        let dirs = &parts[..parts.len().saturating_sub(1)];
        let name = parts.last().copied().unwrap_or("");
        // Case matters where a convention is a capitalized word: `FooTests/`, `FooTest.php`.
        let cased: Vec<&str> = path.split('/').collect();
        let cased_dirs = &cased[..cased.len().saturating_sub(1)];
        let cased_name = cased.last().copied().unwrap_or("");
        let a_script = || {
            !name.contains('.')
                && script.is_some_and(|s| detect_language(path, s) == Some(self.analyzed_as()))
        };
        if dirs.iter().any(|d| common_excluded_dir(d)) || !(self.has_extension(name) || a_script())
        {
            return false;
        }
        let vendored = dirs.iter().any(|d| vendored_dir(d));
        match self {
            Lang::TypeScript => {
                !name.ends_with(".d.ts") && !name.contains(".test.") && !name.contains(".spec.")
            }
            Lang::Rust => name != "tests.rs" && name != "build.rs",
            Lang::Python => {
                !name.starts_with("test_")
                    && !name.ends_with("_test.py")
                    && !matches!(name, "conftest.py" | "setup.py" | "conf.py")
            }
            Lang::JavaScript => {
                !vendored
                    && !dirs
                        .iter()
                        .any(|d| matches!(*d, "dist" | "build" | "coverage" | "spec"))
                    && !name.ends_with(".min.js")
                    && !name.contains(".test.")
                    && !name.contains(".spec.")
                    && !name.contains(".config.")
                    && !matches!(name, "gruntfile.js" | "gulpfile.js")
            }
            Lang::Java | Lang::Scala => !vendored && !jvm_test_source_set(dirs),
            Lang::Kotlin => {
                !vendored && !jvm_test_source_set(dirs) && !name.ends_with(".gradle.kts")
            }
            Lang::Go => !vendored && !dirs.contains(&"testdata") && !name.ends_with("_test.go"),
            Lang::C | Lang::Cpp => {
                !vendored
                    && !["_test.", "_unittest.", "-test."]
                        .iter()
                        .any(|s| name.contains(s))
            }
            Lang::CSharp => {
                !vendored
                    && !cased_dirs
                        .iter()
                        .any(|d| d.contains("Tests") || d.ends_with(".Test"))
                    && !dirs.iter().any(|d| matches!(*d, "obj" | "bin"))
                    && !name.ends_with(".designer.cs")
                    && !name.ends_with(".g.cs")
                    && !name.ends_with(".generated.cs")
            }
            Lang::Ruby => {
                !vendored
                    && !dirs.iter().any(|d| matches!(*d, "spec" | "specs"))
                    && !name.ends_with("_spec.rb")
                    && !name.ends_with("_test.rb")
            }
            Lang::Php => {
                !vendored && !cased_name.ends_with("Test.php") && !name.ends_with("_test.php")
            }
            Lang::Swift => {
                !cased_dirs.iter().any(|d| d.ends_with("Tests"))
                    && name != "package.swift"
                    && !name.starts_with("package@swift")
                    && !cased_name.ends_with("Tests.swift")
            }
            Lang::Bash => !vendored,
        }
    }
}
