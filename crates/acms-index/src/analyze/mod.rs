//! Language analyzers: one module per language, each turning a file's text into a
//! [`ParsedFile`]. Analysis never fails and never panics: syntax errors, parse timeouts and
//! pathological nesting degrade to warnings and line-based chunks.
//!
//! This module owns parsing only. It does not assign ids, count tokens or touch the store.
//! Shared machinery lives in `common` (parsing under a timeout, line rendering, doc cleanup,
//! chunking) and `walker` (the table-driven tree-sitter walker used by the code languages).
//!
//! **Architecture Invariant:** work and output are linear in the size of the file. Definitions
//! nested deeper than [`MAX_DEF_DEPTH`] belong to their enclosing definition, names are cut at
//! [`MAX_NAME_BYTES`], skeleton line sets never re-add the lines of nested headers, the parse
//! timeout also bounds the walk after it, and a result whose [`Cost`] would still exceed
//! [`Cost::limit`] falls back to line chunks with a warning. The fuzz targets (`fuzz/`) check
//! this bound on arbitrary input.
//!
//! Conventions every analyzer follows:
//! - A node's span starts at its leading doc comment and attributes/decorators (Rust, Java,
//!   TS), so the depth-9 text `source[start_byte..end_byte]` includes what depth 2 shows.
//! - Qualified names: `pkg.sub.mod.Class.method` (Python, from the path), `src/app.Class.m`
//!   (TS/JS, path without extension), `crate::a::b::Type::method` (Rust, inline `mod` blocks
//!   included), `com.acme.Class.method` (Java, from `package`; the module is
//!   `com.acme.File`), `docs/guide > Install > Linux` (Markdown), `schema#/definitions/User`
//!   (JSON Schema), `path:10-69` (text chunks).
//! - A function directly inside a class, interface, struct, enum, trait or impl is a Method.
//! - Renderings start at column 0; depth 4 keeps signatures, docs, fields, control-flow
//!   headers and `return`/`raise`/`throw` lines, and replaces every other run of code lines
//!   with one `...` line at that run's indentation.

use std::time::Duration;

use crate::model::{Language, ParsedFile};

/// Definitions nested deeper than this (functions in functions in …) are not nodes of their
/// own: their text belongs to the deepest kept ancestor. Real code rarely nests past six; the
/// cap keeps the sum of all nodes' spans (each counted and indexed in full) within
/// `(MAX_DEF_DEPTH + 1) × file size`.
pub const MAX_DEF_DEPTH: usize = 12;

/// Longest name or qualified name stored, in bytes; longer ones are cut (ending in `...`).
pub const MAX_NAME_BYTES: usize = 512;

/// Bytes of [`Cost`] allowed per byte of source (see [`Cost::limit`]).
pub const GROWTH_PER_BYTE: usize = 32;

/// Bytes of [`Cost`] every file may use whatever its size (module headers, short files).
pub const GROWTH_SLACK: usize = 64 * 1024;

/// What an analysis costs downstream, in bytes: the spans whose text is counted and indexed
/// in full (depth 9), the renderings stored (depths 0, 2, 4, docs, refs, imports), and a fixed
/// overhead per node. Names are left out: each is at most [`MAX_NAME_BYTES`], and there are
/// at most `limit / NODE_OVERHEAD` nodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub spans: usize,
    pub renderings: usize,
    pub nodes: usize,
}

impl Cost {
    /// Bytes charged per node on top of its texts.
    const NODE_OVERHEAD: usize = 16;

    /// The cost of `file`.
    pub fn of(file: &ParsedFile) -> Cost {
        let mut c = Cost {
            nodes: file.nodes.len(),
            ..Cost::default()
        };
        for n in &file.nodes {
            c.spans += n.end_byte.saturating_sub(n.start_byte);
            c.renderings += n.signature.len()
                + n.with_doc.len()
                + n.skeleton.len()
                + n.doc.as_ref().map_or(0, String::len);
        }
        c.renderings += file.refs.iter().map(|r| r.name.len()).sum::<usize>();
        c.renderings += file
            .imports
            .iter()
            .map(|i| i.module.len() + i.names.iter().map(String::len).sum::<usize>())
            .sum::<usize>();
        c
    }

    /// Total bytes charged.
    pub fn total(&self) -> usize {
        self.spans + self.renderings + Self::NODE_OVERHEAD * self.nodes
    }

    /// The most a file of `source_len` bytes may cost: linear in its size.
    pub fn limit(source_len: usize) -> usize {
        GROWTH_PER_BYTE
            .saturating_mul(source_len)
            .saturating_add(GROWTH_SLACK)
    }

    /// Whether this cost is within [`Cost::limit`] for a file of `source_len` bytes.
    pub fn within(&self, source_len: usize) -> bool {
        self.total() <= Cost::limit(source_len)
    }
}

mod common;
pub(crate) use common::{file_stem, strip_ext};
mod doc_sections;
mod json_schema;
mod languages;
mod markdown;
mod python;
mod query;
mod rust;
mod syntax;
mod text;
mod typescript;
mod walker;

#[cfg(test)]
mod tests;

/// Limits applied to every parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// A parse that runs longer falls back to line chunks with a warning.
    pub timeout: Duration,
    /// Lines per chunk for the line-based fallback.
    pub chunk_lines: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            timeout: Duration::from_millis(500),
            chunk_lines: 60,
        }
    }
}

/// Extracts UKO nodes from the source of one language.
pub trait Analyzer: Send + Sync {
    /// The language this analyzer handles.
    fn language(&self) -> Language;

    /// Parses `source`, the text of the file at repository-relative `path` (`/`-separated).
    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile;

    /// Resolves an import written in the file at `from_path` to a repository-relative file
    /// path, using `exists` to test candidate paths. `None` when it points outside the repo.
    fn resolve_import(
        &self,
        from_path: &str,
        module: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<String>;

    /// The files an import that [`Analyzer::resolve_import`] did not find names in another
    /// source root of the repository (a Gradle or Maven module beside the importing one),
    /// given `files_with_stem`: the indexed files whose name without its extension is a given
    /// stem. Empty for languages whose imports name paths.
    fn resolve_import_elsewhere(
        &self,
        _module: &str,
        _files_with_stem: &dyn Fn(&str) -> Vec<String>,
    ) -> Vec<String> {
        Vec::new()
    }

    /// The directory (ending in `/`) whose files share one namespace with the file at `path`
    /// without importing each other (a Go package, a Java, Kotlin or Scala package); `None`
    /// for file-scoped languages.
    fn package_dir(&self, _path: &str) -> Option<String> {
        None
    }

    /// The source root and package directory of the file at `path` where one package spans
    /// several source roots (a Java, Kotlin or Scala package in Gradle's or Maven's
    /// `src/<set>/<lang>/`: `commonMain` and `jvmMain`, two modules' `main`); `None`
    /// elsewhere. Which roots see each other is the resolver's rule (`build.rs`).
    fn source_set<'p>(&self, _path: &'p str) -> Option<(&'p str, &'p str)> {
        None
    }

    /// The files that implement what the header `header` declares (`x.h` → `x.c`), among
    /// those `exists` accepts: a call through an include reaches the definition too.
    fn implementations(&self, _header: &str, _exists: &dyn Fn(&str) -> bool) -> Vec<String> {
        Vec::new()
    }
}

/// The language of the file at `path`, by extension, and for `.json` by content (a JSON
/// Schema has `$schema`, `definitions`/`$defs` or `properties` at the top level); an
/// extension-less script by its `#!` line. `None` for files acms does not index as text:
/// binary content (a NUL byte in the first 8 KiB) and unknown extensions.
pub fn detect_language(path: &str, source: &str) -> Option<Language> {
    let head = &source.as_bytes()[..source.len().min(8 * 1024)];
    if head.contains(&0) {
        return None;
    }
    let name = path.rsplit('/').next().unwrap_or(path);
    let ext = match name.rfind('.') {
        // Dotfiles (`.gitignore`, `.env`) are text; so are extension-less files (`Makefile`)
        // but scripts, which name their interpreter.
        Some(0) => return Some(Language::Text),
        None => return Some(by_shebang(source).unwrap_or(Language::Text)),
        Some(i) => name[i + 1..].to_ascii_lowercase(),
    };
    Some(match ext.as_str() {
        "py" | "pyi" => Language::Python,
        "ts" | "mts" | "cts" => Language::TypeScript,
        "tsx" => Language::Tsx,
        "js" | "mjs" | "cjs" | "jsx" => Language::JavaScript,
        "rs" => Language::Rust,
        "java" => Language::Java,
        "go" => Language::Go,
        "c" => Language::C,
        "h" if looks_like_cpp(source) => Language::Cpp,
        "h" => Language::C,
        "cc" | "cpp" | "cxx" | "c++" | "hh" | "hpp" | "hxx" | "h++" | "ipp" | "tpp" => {
            Language::Cpp
        }
        "cs" => Language::CSharp,
        "rb" | "rake" | "gemspec" => Language::Ruby,
        "php" => Language::Php,
        "sh" | "bash" => Language::Bash,
        "kt" | "kts" => Language::Kotlin,
        "swift" => Language::Swift,
        "scala" | "sc" => Language::Scala,
        "md" | "markdown" | "mdx" => Language::Markdown,
        "json" if json_schema::looks_like_schema(source) => Language::JsonSchema,
        "json" | "jsonc" | "json5" => Language::Text,
        e if TEXT_EXTENSIONS.contains(&e) => Language::Text,
        _ => return None,
    })
}

/// The language of a script's interpreter line (`#!/bin/sh`, `#!/usr/bin/env -S python3 -u`):
/// the commands of a project's `bin/` and `libexec/` are often its entry points, and the
/// core of a shell project (bats-core's `libexec/bats-core/bats-exec-test`) may have no
/// extension at all.
fn by_shebang(source: &str) -> Option<Language> {
    let line = source.strip_prefix("#!")?.lines().next()?;
    let mut words = line.split_whitespace();
    let mut program = words.next()?.rsplit('/').next()?;
    if program == "env" {
        program = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    }
    // `python3.12`, `bash5`: the name without its version.
    let program = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match program {
        "sh" | "bash" | "dash" | "ksh" => Language::Bash,
        "python" | "pypy" => Language::Python,
        "node" | "nodejs" => Language::JavaScript,
        "ruby" => Language::Ruby,
        "php" => Language::Php,
        _ => return None,
    })
}

/// Whether a `.h` header is C++ rather than C: a C++ keyword starts one of its lines.
fn looks_like_cpp(source: &str) -> bool {
    source.lines().take(2000).any(|l| {
        let l = l.trim_start();
        [
            "class ",
            "namespace ",
            "template<",
            "template <",
            "public:",
            "private:",
            "#include <string>",
            "#include <vector>",
            "#include <memory>",
        ]
        .iter()
        .any(|k| l.starts_with(k))
    })
}

/// Extensions indexed as plain text: configuration, docs, and languages without an analyzer.
const TEXT_EXTENSIONS: &[&str] = &[
    "adoc",
    "bat",
    "cfg",
    "clj",
    "cmake",
    "conf",
    "css",
    "dart",
    "dockerfile",
    "el",
    "env",
    "erl",
    "ex",
    "exs",
    "fish",
    "fs",
    "gradle",
    "graphql",
    "groovy",
    "hcl",
    "hs",
    "htm",
    "html",
    "ini",
    "jl",
    "less",
    "lua",
    "mk",
    "ml",
    "nim",
    "nix",
    "org",
    "pl",
    "proto",
    "properties",
    "ps1",
    "r",
    "rst",
    "sass",
    "scss",
    "sql",
    "svelte",
    "tex",
    "tf",
    "toml",
    "txt",
    "vue",
    "xml",
    "yaml",
    "yml",
    "zig",
    "zsh",
];

/// The analyzer for `language`.
pub fn analyzer_for(language: Language) -> &'static dyn Analyzer {
    match language {
        Language::Python => &python::Python,
        Language::TypeScript => &typescript::TYPESCRIPT,
        Language::Tsx => &typescript::TSX,
        Language::JavaScript => &typescript::JAVASCRIPT,
        Language::Rust => &rust::Rust,
        Language::Java => &languages::JAVA_ANALYZER,
        Language::Go => &languages::GO_ANALYZER,
        Language::C => &languages::C_ANALYZER,
        Language::Cpp => &languages::CPP_ANALYZER,
        Language::CSharp => &languages::CSHARP_ANALYZER,
        Language::Ruby => &languages::RUBY_ANALYZER,
        Language::Php => &languages::PHP_ANALYZER,
        Language::Bash => &languages::BASH_ANALYZER,
        Language::Kotlin => &languages::KOTLIN_ANALYZER,
        Language::Swift => &languages::SWIFT_ANALYZER,
        Language::Scala => &languages::SCALA_ANALYZER,
        Language::Markdown => &markdown::Markdown,
        Language::JsonSchema => &json_schema::JsonSchema,
        Language::Text => &text::Text,
    }
}

/// `source` reduced to imports, signatures and type declarations (struct, enum, interface,
/// class headers with their fields), bodies dropped, for AST-aware compaction of code
/// inside conversations. `None` when the language has no parser (plain text), the parse
/// times out, or syntax errors cover so much of the input that the outline is not trustworthy.
///
/// Code quoted in a conversation is often cut out of a larger file with its indentation
/// (a method without its class); such a snippet is de-indented first, so the outline starts
/// at column 0.
pub fn outline(language: Language, source: &str, limits: &ParseLimits) -> Option<String> {
    let dedented = common::dedent_all(source);
    let source = dedented.as_deref().unwrap_or(source);
    match language {
        Language::Python => walker::outline(&python::TABLE, source, limits),
        Language::TypeScript => walker::outline(&typescript::TABLE_TS, source, limits),
        Language::Tsx | Language::JavaScript => {
            walker::outline(&typescript::TABLE_TSX, source, limits)
        }
        Language::Rust => walker::outline(&rust::TABLE, source, limits),
        Language::Java
        | Language::Go
        | Language::C
        | Language::Cpp
        | Language::CSharp
        | Language::Ruby
        | Language::Php
        | Language::Bash
        | Language::Kotlin
        | Language::Swift
        | Language::Scala => walker::outline(languages::table(language)?, source, limits),
        Language::Markdown => markdown::outline(source, limits),
        Language::JsonSchema => json_schema::outline(source, limits),
        Language::Text => None,
    }
}
