//! Language analyzers: one module per language, each turning a file's text into a
//! [`ParsedFile`]. Analysis never fails and never panics: syntax errors, parse timeouts and
//! pathological nesting degrade to warnings and line-based chunks.
//!
//! This module owns parsing only. It does not assign ids, count tokens or touch the store.

use std::time::Duration;

use crate::model::{Language, ParsedFile};

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
}

/// The language of the file at `path`, by extension, and for `.json` by content (a JSON
/// Schema has `$schema`, `definitions`/`$defs` or `properties` at the top level). `None`
/// for files acms does not index as text.
pub fn detect_language(path: &str, source: &str) -> Option<Language> {
    unimplemented!("analyzers helper: {path} {}", source.len())
}

/// The analyzer for `language`.
pub fn analyzer_for(language: Language) -> &'static dyn Analyzer {
    unimplemented!("analyzers helper: {language:?}")
}
