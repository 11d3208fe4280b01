//! Sections of a module doc: a crate doc that is a whole Markdown chapter (`//! # Feature
//! flags`) gets one Section node per heading, as a Markdown file does, so a task about one
//! part of it (a row of the feature table) gets that part, not the chapter as one fragment.
//! Only comment docs count: a docstring is reStructuredText by convention, and its indented
//! examples hold `# comments`. A doc without headings has no sections.

use std::collections::BTreeSet;

use super::common::{Lines, clean_comment, make_node, next_code_lines, render_kept};
use super::markdown::nesting;
use crate::model::{NodeKind, ParsedNode};

/// A heading line of the doc.
struct Heading {
    level: usize,
    text: String,
    line: usize,
}

/// The text of a comment doc line without its marker (`//!`, `///`, a block comment's `*`)
/// and the one space after it; `None` for a line without a marker.
fn prose(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let t = ["//!", "///", "/*!", "*"]
        .iter()
        .find_map(|m| t.strip_prefix(m))?;
    Some(t.strip_prefix(' ').unwrap_or(t))
}

/// The ATX headings (`# Title` … `###### Title`) of lines `first..=last`, outside fenced code.
fn headings(lines: &Lines, first: usize, last: usize) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut fence: Option<&str> = None;
    for l in first..=last {
        let Some(t) = prose(lines.text(l)).map(str::trim_end) else {
            continue;
        };
        if let Some(f) = fence {
            if t.trim_start().starts_with(f) {
                fence = None;
            }
            continue;
        }
        if let Some(f) = ["```", "~~~"]
            .into_iter()
            .find(|f| t.trim_start().starts_with(f))
        {
            fence = Some(f);
            continue;
        }
        let level = t.chars().take_while(|&c| c == '#').count();
        let Some(rest) = t[level..].strip_prefix(' ') else {
            continue;
        };
        let text = rest.trim().trim_end_matches('#').trim();
        if (1..=6).contains(&level) && !text.is_empty() {
            out.push(Heading {
                level,
                text: text.to_string(),
                line: l,
            });
        }
    }
    out
}

/// What [`doc_sections`] finds in a module doc.
#[derive(Default)]
pub(crate) struct DocSections {
    /// One Section node per heading, in source order, nested by level.
    pub nodes: Vec<ParsedNode>,
    /// The heading lines, which the module's skeleton keeps as an outline.
    pub heading_lines: Vec<usize>,
    /// The first heading's line, where the module's own doc stops.
    pub first_line: Option<usize>,
}

/// The sections of the doc at source bytes `a..b`, for a file whose module node (index 0) is
/// named `module`; `first_index` is the index the first section will have in the file's nodes.
pub(crate) fn doc_sections(
    lines: &Lines,
    a: usize,
    b: usize,
    module: &str,
    first_index: usize,
) -> DocSections {
    let (first, last) = (lines.line_of(a), lines.last_line(a, b));
    let hs = headings(lines, first, last);
    if hs.is_empty() {
        return DocSections::default();
    }
    let any_line = next_code_lines(lines, &|_| false);
    let tree = nesting(&hs.iter().map(|h| h.level).collect::<Vec<_>>());
    let mut nodes: Vec<ParsedNode> = Vec::with_capacity(hs.len());
    for (i, (h, t)) in hs.iter().zip(&tree).enumerate() {
        let parent = t.parent.map_or(0, |j| first_index + j);
        let parent_name = t.parent.map_or(module, |j| &nodes[j].qualified_name);
        let qualified_name = format!("{parent_name} > {}", h.text);
        let end_line = t.end.map_or(last, |e| hs[e].line - 1);
        let start = lines.start(h.line);
        let end = (lines.start(end_line) + lines.text(end_line).len()).max(start);
        // The first paragraph under the heading is the section's doc.
        let paragraph: Vec<usize> = (h.line + 1..=end_line)
            .skip_while(|&l| prose(lines.text(l)).is_some_and(|t| t.trim().is_empty()))
            .take_while(|&l| {
                let t = prose(lines.text(l)).unwrap_or("").trim();
                !t.is_empty() && !t.starts_with('#')
            })
            .collect();
        let signature = lines.text(h.line).trim_end().to_string();
        let raw: Vec<&str> = paragraph
            .iter()
            .map(|&l| lines.text(l).trim_end())
            .collect();
        let doc = (!raw.is_empty()).then(|| clean_comment(&raw.join("\n")));
        let with_doc = std::iter::once(signature.as_str())
            .chain(raw.iter().copied())
            .collect::<Vec<_>>()
            .join("\n");
        let mut kept: BTreeSet<usize> = paragraph.iter().copied().collect();
        kept.insert(h.line);
        kept.extend(
            hs[i + 1..]
                .iter()
                .take_while(|n| n.line <= end_line)
                .map(|n| n.line),
        );
        let skeleton = render_kept(lines, start, end, &kept, &any_line);
        nodes.push(make_node(
            lines,
            NodeKind::Section,
            h.text.clone(),
            qualified_name,
            Some(parent),
            start,
            end,
            signature,
            doc,
            with_doc,
            skeleton,
        ));
    }
    DocSections {
        nodes,
        heading_lines: hs.iter().map(|h| h.line).collect(),
        first_line: hs.first().map(|h| h.line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_outside_fences_become_nested_sections() {
        let src = "//! The crate.\n//!\n//! # Usage\n//!\n//! Call it.\n//!\n//! ```\n//! # fn hidden() {}\n//! ```\n//!\n//! ## Details\n//! More.\n//!\n//! # Feature flags\n//! `a` | yes\n\nfn main() {}\n";
        let lines = Lines::new(src);
        let doc_end = src.find("\n\nfn").unwrap();
        let s = doc_sections(&lines, 0, doc_end, "crate", 1);
        let names: Vec<(&str, Option<usize>, u32, u32)> = s
            .nodes
            .iter()
            .map(|n| {
                (
                    n.qualified_name.as_str(),
                    n.parent,
                    n.start_line,
                    n.end_line,
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("crate > Usage", Some(0), 3, 13),
                ("crate > Usage > Details", Some(1), 11, 13),
                ("crate > Feature flags", Some(0), 14, 15),
            ]
        );
        assert_eq!(s.first_line, Some(2));
        assert_eq!(s.heading_lines, [2, 10, 13]);
        let usage = &s.nodes[0];
        assert_eq!(usage.signature, "//! # Usage");
        assert_eq!(usage.doc.as_deref(), Some("Call it."));
        assert_eq!(usage.with_doc, "//! # Usage\n//! Call it.");
        assert!(
            usage.skeleton.contains("//! ## Details"),
            "{}",
            usage.skeleton
        );
        assert!(!usage.skeleton.contains("hidden"), "{}", usage.skeleton);
    }

    #[test]
    fn a_doc_without_headings_has_no_sections() {
        let src = "//! Just prose.\n//! #not a heading, #[attr]\n//!     # indented\nfn f() {}\n";
        let lines = Lines::new(src);
        let s = doc_sections(&lines, 0, src.find("fn").unwrap(), "crate", 1);
        assert!(s.nodes.is_empty() && s.first_line.is_none());
        let docstring = "\"\"\"Module.\n\n# Not a section\n\"\"\"\n";
        let lines = Lines::new(docstring);
        assert!(
            doc_sections(&lines, 0, docstring.len(), "m", 1)
                .nodes
                .is_empty()
        );
    }
}
