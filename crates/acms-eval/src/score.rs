//! Scoring: did a packed context (or a peer's map) make the task's target function visible?
//!
//! Two questions per result, the definitions:
//! - **symbol visible**: for acms, the manifest has the target node at any depth, or the text
//!   contains its def line; for a peer, the map names the target file and that file's block
//!   contains the def line.
//! - **code visible**: for acms, the target (or an ancestor whose span contains it) is at depth
//!   9, or every non-blank line of the function appears in the text in order; for a peer, every
//!   non-blank line appears in order inside the target file's block.
//!
//! Lines are compared with surrounding whitespace trimmed and Aider's `│` gutter removed, the
//! same way for every system. This module owns only these decisions; it runs nothing and
//! counts no tokens.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use acms::ManifestEntry;
use acms::index::{NodeKind, ParseLimits, analyzer_for, detect_language};
use serde::Serialize;

use crate::tasks::Task;

/// The target function as the scorers need it, read from the stripped corpus copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    pub path: String,
    pub name: String,
    /// The span of the engine's node for the function when found (else the task's span).
    pub start_line: u32,
    pub end_line: u32,
    /// The line that declares the function (`def name(`, `name(args) {`), trimmed.
    pub def_line: String,
    /// Every non-blank line of the function in the stripped copy, trimmed.
    pub body: Vec<String>,
    /// Whether the engine's analyzer found a node for the task (by path, name and line).
    pub resolved: bool,
}

/// One scored result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub symbol: bool,
    pub code: bool,
}

/// A line as the scorers compare it: Aider's `│` gutter dropped, whitespace trimmed.
pub fn norm(line: &str) -> &str {
    line.strip_prefix('│').unwrap_or(line).trim()
}

/// Reads the target of `task` from the stripped copy at `root`, locating the engine's node
/// for it with the same analyzer the index uses. A task whose file cannot be read still gets a
/// target (from its own span), with `resolved = false`.
pub fn resolve_target(task: &Task, root: &Path) -> Target {
    let name = task.name().to_string();
    let src = std::fs::read_to_string(root.join(&task.path)).unwrap_or_default();
    let mut span = (task.start_line, task.end_line);
    let mut resolved = false;
    if let Some(lang) = detect_language(&task.path, &src) {
        let parsed = analyzer_for(lang).analyze(&task.path, &src, &ParseLimits::default());
        let overlapping = parsed.nodes.iter().filter(|n| {
            matches!(n.kind, NodeKind::Function | NodeKind::Method)
                && n.name == name
                && n.start_line <= task.end_line
                && n.end_line >= task.start_line
        });
        if let Some(n) = overlapping.min_by_key(|n| n.start_line.abs_diff(task.start_line)) {
            span = (n.start_line, n.end_line);
            resolved = true;
        }
    }
    let lines: Vec<&str> = src.lines().collect();
    let (a, b) = (span.0.max(1) as usize, span.1 as usize);
    let fn_lines: &[&str] = lines.get(a - 1..b.min(lines.len())).unwrap_or(&[]);
    let body: Vec<String> = fn_lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    let def_line = fn_lines
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.starts_with('@') && has_word(l, &name))
        .or_else(|| body.first().map(String::as_str))
        .unwrap_or_default()
        .to_string();
    Target {
        path: task.path.clone(),
        name,
        start_line: span.0,
        end_line: span.1,
        def_line,
        body,
        resolved,
    }
}

/// `word` occurs in `line` delimited by non-identifier characters.
fn has_word(line: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '$';
    line.match_indices(word).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(ident)
            && !line[i + word.len()..].chars().next().is_some_and(ident)
    })
}

/// True if every needle occurs in `hay`, in order (as a subsequence of lines).
pub fn lines_in_order<'a>(needles: &[String], hay: impl IntoIterator<Item = &'a str>) -> bool {
    let mut it = hay.into_iter();
    needles.iter().all(|n| it.any(|h| norm(h) == n))
}

/// Splits a peer's map into per-file blocks at lines that are exactly `<corpus file path>:`;
/// both peers introduce a file that way.
pub fn file_blocks<'t>(text: &'t str, files: &HashSet<String>) -> HashMap<&'t str, Vec<&'t str>> {
    let mut blocks: HashMap<&str, Vec<&str>> = HashMap::new();
    let mut cur: Option<&str> = None;
    for line in text.lines() {
        if let Some(p) = line.strip_suffix(':')
            && files.contains(p)
        {
            blocks.entry(p).or_default();
            cur = Some(p);
            continue;
        }
        if let Some(p) = cur {
            blocks.entry(p).or_default().push(line);
        }
    }
    blocks
}

/// Scores an acms context: manifest first, then the text fallbacks.
pub fn score_acms(t: &Target, manifest: &[ManifestEntry], text: &str) -> Hit {
    let same_node = |e: &&ManifestEntry| {
        e.path == t.path
            && e.start_line == t.start_line
            && e.name.rsplit(['.', ':']).next() == Some(t.name.as_str())
    };
    let symbol = manifest.iter().any(|e| same_node(&e))
        || (!t.def_line.is_empty() && text.lines().any(|l| norm(l) == t.def_line));
    let code = manifest.iter().any(|e| {
        e.path == t.path
            && e.depth == acms::Depth::Full
            && e.start_line <= t.start_line
            && e.end_line >= t.end_line
    }) || (!t.body.is_empty() && lines_in_order(&t.body, text.lines()));
    Hit { symbol, code }
}

/// Scores a peer's map with the text-only rules.
pub fn score_peer(t: &Target, map: &str, files: &HashSet<String>) -> Hit {
    let blocks = file_blocks(map, files);
    let Some(block) = blocks.get(t.path.as_str()) else {
        return Hit::default();
    };
    let symbol = !t.def_line.is_empty() && block.iter().any(|l| norm(l) == t.def_line);
    let code = !t.body.is_empty() && lines_in_order(&t.body, block.iter().copied());
    Hit { symbol, code }
}

/// The target's depth in an acms manifest, if the target node is there.
pub fn manifest_depth(t: &Target, manifest: &[ManifestEntry]) -> Option<u8> {
    manifest
        .iter()
        .find(|e| e.path == t.path && e.start_line == t.start_line)
        .map(|e| e.depth.value())
}
