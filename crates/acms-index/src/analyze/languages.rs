//! The languages described as data: each is a [`Table`] row naming its grammar, comment and
//! brace syntax, control-flow kinds and qualified-name scheme, plus a query file
//! (`languages/<name>.scm`, see [`super::query`]) and an import rule. Nothing here walks a
//! tree: the walker does, reading the query's captures.

use tree_sitter::Node;

use super::common::{
    clean_comment, dirname, file_stem, first_existing, join, package_file, package_file_anywhere,
    source_set, strip_ext,
};
use super::query::QuerySpec;
use super::syntax::Def;
use super::walker::{self, DocSpan, DocStyle, Table};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, ParsedFile, ParsedImport};

fn no_classify<'t>(_: Node<'t>, _: &str, _: &str) -> Option<Def<'t>> {
    None
}

fn no_import(_: Node, _: &str, _: &mut Vec<ParsedImport>) -> bool {
    false
}

/// Every comment directly above a definition is its doc (Go, C, Ruby, shell: these
/// languages document with plain comments).
fn any_comment(_: &str) -> bool {
    true
}

/// Doc comments marked as such: `/** … */`, `///`, `//!` (C#, Kotlin, Swift, Scala, PHP).
fn marked_doc(text: &str) -> bool {
    (text.starts_with("/**") && text != "/**/") || text.starts_with("///")
}

/// Module named by its path without extension; top-level names prefixed by it (C, C++,
/// shell: the file is the unit a reader names).
fn path_names(path: &str) -> (String, String) {
    let q = strip_ext(path).to_string();
    (q.clone(), q)
}

/// Top-level names prefixed by the directory (Go: a package is a directory).
fn dir_names(path: &str) -> (String, String) {
    (strip_ext(path).to_string(), dirname(path).to_string())
}

/// Go's package doc: the comment block directly above `package`.
fn go_package_doc(root: Node, src: &str) -> Option<DocSpan> {
    let mut cursor = root.walk();
    let mut block: Option<(usize, usize)> = None;
    for child in root.named_children(&mut cursor) {
        match child.kind() {
            "comment" => {
                let adjacent =
                    block.is_some_and(|(_, end)| !src[end..child.start_byte()].contains("\n\n"));
                block = Some(match block {
                    Some((start, _)) if adjacent => (start, child.end_byte()),
                    _ => (child.start_byte(), child.end_byte()),
                });
            }
            "package_clause" => {
                let (a, b) = block?;
                if src[b..child.start_byte()].contains("\n\n") {
                    return None;
                }
                let cleaned = clean_comment(&src[a..b]);
                return (!cleaned.is_empty()).then_some((cleaned, a, b));
            }
            _ => return None,
        }
    }
    None
}

/// C# with its preprocessor lines (`#if`, `#else`, `#endif`, `#region`, …) blanked: the grammar
/// accepts them between members but not inside a base list or a switch, where
/// Newtonsoft.Json's `#if HAVE_ICONVERTIBLE` cut `JValue` short and left 800 lines of its
/// methods outside it. Both branches of an `#if`/`#else` stay, as the reader sees them.
fn csharp_without_directives(source: &str) -> Option<String> {
    const DIRECTIVES: &[&str] = &[
        "if",
        "elif",
        "else",
        "endif",
        "region",
        "endregion",
        "pragma",
        "nullable",
        "define",
        "undef",
        "warning",
        "error",
        "line",
    ];
    let is_directive = |line: &str| {
        line.trim_start().strip_prefix('#').is_some_and(|rest| {
            let word = rest.trim_start();
            DIRECTIVES.iter().any(|d| {
                word.strip_prefix(d).is_some_and(|after| {
                    !after.starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        })
    };
    if !source.lines().any(is_directive) {
        return None;
    }
    let mut out = String::with_capacity(source.len());
    for line in source.split_inclusive('\n') {
        if is_directive(line) {
            // Each char becomes as many spaces as it has bytes: every offset holds.
            for c in line.chars() {
                match c {
                    '\n' | '\r' => out.push(c),
                    c => out.extend(std::iter::repeat_n(' ', c.len_utf8())),
                }
            }
        } else {
            out.push_str(line);
        }
    }
    Some(out)
}

/// The fields every query-described language shares; each row overrides what differs.
pub(crate) const BASE: Table = Table {
    language: Language::Text,
    grammar: |_| tree_sitter_c::LANGUAGE.into(),
    sep: ".",
    comment_prefix: "//",
    braces: true,
    doc_style: DocStyle::Leading(any_comment),
    wrappers: &[],
    scopes: &[],
    attrs: &[],
    comments: &["comment"],
    body_fields: &["body", "consequence"],
    control: &[],
    jumps: &["return_statement"],
    clause_tokens: &[],
    imports: &[],
    calls: &[],
    passed: &[],
    type_idents: &[],
    idents: &[],
    classify: no_classify,
    import: no_import,
    module_names: path_names,
    module_doc: walker::no_module_doc,
    query: None,
    parse_view: walker::source_as_is,
    script: false,
};

static GO_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/go.scm"));
static C_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/c.scm"));
static CPP_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/cpp.scm"));
static CSHARP_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/csharp.scm"));
static RUBY_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/ruby.scm"));
static PHP_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/php.scm"));
static BASH_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/bash.scm"));
static KOTLIN_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/kotlin.scm"));
static SWIFT_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/swift.scm"));
static SCALA_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/scala.scm"));
static JAVA_QUERY: QuerySpec = QuerySpec::new(include_str!("languages/java.scm"));

pub(crate) static GO: Table = Table {
    language: Language::Go,
    grammar: |_| tree_sitter_go::LANGUAGE.into(),
    control: &[
        "if_statement",
        "for_statement",
        "expression_switch_statement",
        "type_switch_statement",
        "select_statement",
        "expression_case",
        "type_case",
        "default_case",
        "communication_case",
    ],
    module_names: dir_names,
    module_doc: go_package_doc,
    query: Some(&GO_QUERY),
    ..BASE
};

const C_CONTROL: &[&str] = &[
    "if_statement",
    "else_clause",
    "for_statement",
    "for_range_loop",
    "while_statement",
    "do_statement",
    "switch_statement",
    "case_statement",
    "try_statement",
    "catch_clause",
];

pub(crate) static C: Table = Table {
    language: Language::C,
    grammar: |_| tree_sitter_c::LANGUAGE.into(),
    sep: "::",
    wrappers: &["type_definition", "declaration"],
    control: C_CONTROL,
    jumps: &["return_statement", "goto_statement"],
    query: Some(&C_QUERY),
    ..BASE
};

pub(crate) static CPP: Table = Table {
    language: Language::Cpp,
    grammar: |_| tree_sitter_cpp::LANGUAGE.into(),
    sep: "::",
    wrappers: &["type_definition", "declaration", "template_declaration"],
    control: C_CONTROL,
    jumps: &["return_statement", "goto_statement", "throw_statement"],
    query: Some(&CPP_QUERY),
    ..BASE
};

/// Module named by its file stem; top-level names by the package the file declares (C#,
/// Kotlin, Scala, PHP) or nothing (Ruby, Swift: types are global to their program).
fn package_names(path: &str) -> (String, String) {
    (strip_ext(path).to_string(), String::new())
}

pub(crate) static CSHARP: Table = Table {
    language: Language::CSharp,
    grammar: |_| tree_sitter_c_sharp::LANGUAGE.into(),
    doc_style: DocStyle::Leading(marked_doc),
    attrs: &["attribute_list"],
    control: &[
        "if_statement",
        "for_statement",
        "foreach_statement",
        "while_statement",
        "do_statement",
        "switch_statement",
        "switch_section",
        "try_statement",
        "catch_clause",
        "finally_clause",
        "using_statement",
        "lock_statement",
    ],
    jumps: &["return_statement", "throw_statement", "yield_statement"],
    clause_tokens: &["else"],
    module_names: package_names,
    query: Some(&CSHARP_QUERY),
    parse_view: csharp_without_directives,
    ..BASE
};

pub(crate) static RUBY: Table = Table {
    language: Language::Ruby,
    grammar: |_| tree_sitter_ruby::LANGUAGE.into(),
    sep: "::",
    comment_prefix: "#",
    braces: false,
    body_fields: &["body", "consequence"],
    control: &[
        "if", "unless", "elsif", "else", "while", "until", "for", "case", "when", "begin",
        "rescue", "ensure",
    ],
    jumps: &["return", "next", "break"],
    module_names: package_names,
    query: Some(&RUBY_QUERY),
    ..BASE
};

pub(crate) static PHP: Table = Table {
    language: Language::Php,
    grammar: |_| tree_sitter_php::LANGUAGE_PHP.into(),
    sep: "\\",
    doc_style: DocStyle::Leading(marked_doc),
    attrs: &["attribute_list"],
    control: &[
        "if_statement",
        "else_if_clause",
        "else_clause",
        "for_statement",
        "foreach_statement",
        "while_statement",
        "do_statement",
        "switch_statement",
        "case_statement",
        "default_statement",
        "try_statement",
        "catch_clause",
        "finally_clause",
    ],
    jumps: &["return_statement", "throw_expression"],
    module_names: package_names,
    query: Some(&PHP_QUERY),
    ..BASE
};

pub(crate) static BASH: Table = Table {
    language: Language::Bash,
    grammar: |_| tree_sitter_bash::LANGUAGE.into(),
    comment_prefix: "#",
    control: &[
        "if_statement",
        "elif_clause",
        "else_clause",
        "for_statement",
        "c_style_for_statement",
        "while_statement",
        "case_statement",
        "case_item",
    ],
    jumps: &[],
    query: Some(&BASH_QUERY),
    script: true,
    ..BASE
};

/// Javadoc: `/** … */` (not the empty `/**/`).
fn javadoc(text: &str) -> bool {
    text.starts_with("/**") && text != "/**/"
}

/// A Java file is named after its class; its package prefixes the class, not the file.
fn class_file_names(path: &str) -> (String, String) {
    (file_stem(path).to_string(), String::new())
}

pub(crate) static JAVA: Table = Table {
    language: Language::Java,
    grammar: |_| tree_sitter_java::LANGUAGE.into(),
    doc_style: DocStyle::Leading(javadoc),
    comments: &["line_comment", "block_comment"],
    control: &[
        "if_statement",
        "for_statement",
        "enhanced_for_statement",
        "while_statement",
        "do_statement",
        "try_statement",
        "try_with_resources_statement",
        "catch_clause",
        "finally_clause",
        "switch_expression",
        "switch_block_statement_group",
        "switch_rule",
        "synchronized_statement",
    ],
    jumps: &["return_statement", "throw_statement", "yield_statement"],
    clause_tokens: &["else"],
    calls: &["method_invocation", "object_creation_expression"],
    type_idents: &["type_identifier"],
    idents: &["identifier"],
    module_names: class_file_names,
    query: Some(&JAVA_QUERY),
    ..BASE
};

pub(crate) static KOTLIN: Table = Table {
    language: Language::Kotlin,
    grammar: |_| tree_sitter_kotlin_ng::LANGUAGE.into(),
    doc_style: DocStyle::Leading(marked_doc),
    comments: &["line_comment", "block_comment"],
    attrs: &["annotation"],
    control: &[
        "if_expression",
        "when_expression",
        "when_entry",
        "for_statement",
        "while_statement",
        "do_while_statement",
        "try_expression",
        "catch_block",
        "finally_block",
    ],
    jumps: &["return_expression", "throw_expression"],
    clause_tokens: &["else"],
    module_names: package_names,
    query: Some(&KOTLIN_QUERY),
    ..BASE
};

pub(crate) static SWIFT: Table = Table {
    language: Language::Swift,
    grammar: |_| tree_sitter_swift::LANGUAGE.into(),
    doc_style: DocStyle::Leading(marked_doc),
    comments: &["comment", "multiline_comment"],
    attrs: &["attribute"],
    control: &[
        "if_statement",
        "guard_statement",
        "for_statement",
        "while_statement",
        "repeat_while_statement",
        "switch_statement",
        "switch_entry",
        "do_statement",
        "catch_block",
    ],
    jumps: &["control_transfer_statement"],
    clause_tokens: &["else"],
    module_names: package_names,
    query: Some(&SWIFT_QUERY),
    ..BASE
};

pub(crate) static SCALA: Table = Table {
    language: Language::Scala,
    grammar: |_| tree_sitter_scala::LANGUAGE.into(),
    doc_style: DocStyle::Leading(marked_doc),
    comments: &["comment", "block_comment"],
    attrs: &["annotation"],
    control: &[
        "if_expression",
        "match_expression",
        "case_clause",
        "for_expression",
        "while_expression",
        "try_expression",
        "catch_clause",
        "finally_clause",
    ],
    jumps: &["return_expression", "throw_expression"],
    clause_tokens: &["else"],
    module_names: package_names,
    query: Some(&SCALA_QUERY),
    ..BASE
};

/// How a language's import names a file or directory of the repository.
type Resolve = fn(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String>;

/// An analyzer described by a [`Table`] with a query.
pub(crate) struct QueryLanguage {
    pub table: &'static Table,
    resolve: Resolve,
    /// Whether a directory is one namespace whose files see each other's names without
    /// importing them (a Go package; a Java, Kotlin or Scala package, one directory by
    /// convention).
    package_is_dir: bool,
    /// Extensions of the files that implement what a header declares (C, C++).
    implementations: &'static [&'static str],
    /// Extensions of the files a dotted import names in another module's source root
    /// (Java, Kotlin, Scala); empty where imports name paths.
    package_files: &'static [&'static str],
}

impl Analyzer for QueryLanguage {
    fn language(&self) -> Language {
        self.table.language
    }

    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
        walker::analyze(self.table, path, source, limits)
    }

    fn resolve_import(
        &self,
        from_path: &str,
        module: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        (self.resolve)(from_path, module, exists)
    }

    fn resolve_import_elsewhere(
        &self,
        module: &str,
        files_with_stem: &dyn Fn(&str) -> Vec<String>,
    ) -> Vec<String> {
        if self.package_files.is_empty() {
            return Vec::new();
        }
        package_file_anywhere(module, self.package_files, files_with_stem)
    }

    fn package_dir(&self, path: &str) -> Option<String> {
        self.package_is_dir.then(|| format!("{}/", dirname(path)))
    }

    fn source_set<'p>(&self, path: &'p str) -> Option<(&'p str, &'p str)> {
        if self.package_files.is_empty() {
            return None;
        }
        source_set(path)
    }

    fn implementations(&self, header: &str, exists: &dyn Fn(&str) -> bool) -> Vec<String> {
        if self.implementations.is_empty()
            || !matches!(
                header.rsplit('.').next(),
                Some("h" | "hh" | "hpp" | "hxx" | "h++")
            )
        {
            return Vec::new();
        }
        let stem = strip_ext(header);
        self.implementations
            .iter()
            .map(|e| format!("{stem}.{e}"))
            .filter(|p| exists(p))
            .collect()
    }
}

/// A Go import path names a package directory: the longest suffix of it that is a directory
/// of the repository (`github.com/org/repo/pkg/x` → `pkg/x/`).
fn resolve_go(_from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let segs: Vec<&str> = module.split('/').filter(|s| !s.is_empty()).collect();
    (0..segs.len())
        .map(|i| format!("{}/", segs[i..].join("/")))
        .find(|d| exists(d))
}

/// `#include "x.h"` is looked up next to the including file, then from the repository's top
/// and its usual include roots.
fn resolve_include(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let dir = dirname(from);
    let candidates = [dir, "", "include", "src", "lib"]
        .into_iter()
        .filter_map(|root| join(root, module));
    first_existing(candidates, exists)
}

/// A namespace (`Acme.Web`) names the directory that holds it: the longest suffix of its
/// segments that is a directory (`Acme/Web/`), or a project directory named after it whole
/// (`Acme.Web/`), at the top or under `src/`, `source/` or `lib/`.
fn namespace_dir(module: &str, sep: char, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let segs: Vec<&str> = module.split(sep).filter(|s| !s.is_empty()).collect();
    let whole = format!("{}/", segs.join("."));
    let dirs: Vec<String> = (0..segs.len())
        .map(|i| format!("{}/", segs[i..].join("/")))
        .chain([whole])
        .collect();
    ["", "src/", "source/", "lib/"]
        .iter()
        .flat_map(|root| dirs.iter().map(move |d| format!("{root}{d}")))
        .find(|d| exists(d))
}

fn resolve_csharp(_from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    namespace_dir(module, '.', exists)
}

/// `require "a/b"` loads `a/b.rb` from the load path (`lib/`, the top); `require_relative`
/// from the requiring file's directory.
fn resolve_ruby(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let file = if module.ends_with(".rb") {
        module.to_string()
    } else {
        format!("{module}.rb")
    };
    let candidates = [dirname(from), "lib", "", "app"]
        .into_iter()
        .filter_map(|root| join(root, &file));
    first_existing(candidates, exists)
}

/// `use App\Http\Kernel` names `…/Http/Kernel.php` by PSR-4 (the prefix is mapped to a
/// source root, so every suffix of the path is tried under the usual roots); an include
/// names a file next to the including one or from the top.
fn resolve_php(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    if module.ends_with(".php") || module.contains('/') {
        let candidates = [dirname(from), ""]
            .into_iter()
            .filter_map(|root| join(root, module));
        return first_existing(candidates, exists);
    }
    let segs: Vec<&str> = module.split('\\').filter(|s| !s.is_empty()).collect();
    let candidates = (0..segs.len()).flat_map(|i| {
        let rel = segs[i..].join("/");
        ["", "src/", "app/", "lib/"].map(|root| format!("{root}{rel}.php"))
    });
    first_existing(candidates, exists)
}

/// `source lib.sh`: next to the sourcing script, or from the top.
fn resolve_source(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    let candidates = [dirname(from), ""]
        .into_iter()
        .filter_map(|root| join(root, module));
    first_existing(candidates, exists)
}

const JAVA_FILES: &[&str] = &["java"];
const KOTLIN_FILES: &[&str] = &["kt", "kts", "java"];
const SCALA_FILES: &[&str] = &["scala", "java"];

fn resolve_java(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    package_file(from, module, JAVA_FILES, exists)
}

fn resolve_kotlin(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    package_file(from, module, KOTLIN_FILES, exists)
}

fn resolve_scala(from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    package_file(from, module, SCALA_FILES, exists)
}

/// `import Foo` names a module: a SwiftPM target directory (`Sources/Foo/`) or a top-level
/// one.
fn resolve_swift(_from: &str, module: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    [format!("Sources/{module}/"), format!("{module}/")]
        .into_iter()
        .find(|d| exists(d))
}

/// An analyzer with neither a package directory nor header pairs.
const fn plain(table: &'static Table, resolve: Resolve) -> QueryLanguage {
    QueryLanguage {
        table,
        resolve,
        package_is_dir: false,
        implementations: &[],
        package_files: &[],
    }
}

/// An analyzer of a JVM language: a package is a directory whose files see each other's
/// names without importing them, and a dotted import may name a file of another module.
const fn jvm(
    table: &'static Table,
    resolve: Resolve,
    files: &'static [&'static str],
) -> QueryLanguage {
    QueryLanguage {
        table,
        resolve,
        package_is_dir: true,
        implementations: &[],
        package_files: files,
    }
}

pub(crate) static CSHARP_ANALYZER: QueryLanguage = plain(&CSHARP, resolve_csharp);
pub(crate) static RUBY_ANALYZER: QueryLanguage = plain(&RUBY, resolve_ruby);
pub(crate) static PHP_ANALYZER: QueryLanguage = plain(&PHP, resolve_php);
pub(crate) static BASH_ANALYZER: QueryLanguage = plain(&BASH, resolve_source);
pub(crate) static JAVA_ANALYZER: QueryLanguage = jvm(&JAVA, resolve_java, JAVA_FILES);
pub(crate) static KOTLIN_ANALYZER: QueryLanguage = jvm(&KOTLIN, resolve_kotlin, KOTLIN_FILES);
pub(crate) static SWIFT_ANALYZER: QueryLanguage = plain(&SWIFT, resolve_swift);
pub(crate) static SCALA_ANALYZER: QueryLanguage = jvm(&SCALA, resolve_scala, SCALA_FILES);

pub(crate) static GO_ANALYZER: QueryLanguage = QueryLanguage {
    table: &GO,
    resolve: resolve_go,
    package_is_dir: true,
    implementations: &[],
    package_files: &[],
};

pub(crate) static C_ANALYZER: QueryLanguage = QueryLanguage {
    table: &C,
    resolve: resolve_include,
    package_is_dir: false,
    implementations: &["c"],
    package_files: &[],
};

pub(crate) static CPP_ANALYZER: QueryLanguage = QueryLanguage {
    table: &CPP,
    resolve: resolve_include,
    package_is_dir: false,
    implementations: &["cpp", "cc", "cxx", "c"],
    package_files: &[],
};

/// The table of a query-described language.
pub(crate) fn table(language: Language) -> Option<&'static Table> {
    ALL.iter().find(|t| t.language == language).copied()
}

/// Every query-described language.
pub(crate) const ALL: &[&Table] = &[
    &GO, &C, &CPP, &CSHARP, &RUBY, &PHP, &BASH, &KOTLIN, &SWIFT, &SCALA, &JAVA,
];

#[cfg(test)]
mod tests;
