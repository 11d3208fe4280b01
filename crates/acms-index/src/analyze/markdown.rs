//! Markdown: one Section node per ATX or setext heading, spanning the heading and the text
//! under it up to the next heading of the same or a higher level; a section nests under the
//! previous higher-level heading. The first paragraph under a heading is its doc.
//!
//! Relative links (`[setup](docs/setup.md)`) outside code blocks are imports.
//!
//! Headings come from the tree-sitter block grammar, so `#` lines inside fenced code are not
//! headings. It does not parse other inline content (emphasis, inline code) or extract refs.

use std::collections::{BTreeSet, HashSet};

use tree_sitter::Node;

use super::common::{
    Clock, Lines, bounded, chunk_file, clean_name, deadline, dirname, first_existing, join,
    make_node, module_node, next_code_lines, parse, render_kept, slice, strip_ext, timeout_warning,
};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, NodeKind, ParsedFile, ParsedImport};

pub(crate) struct Markdown;

struct Heading {
    level: usize,
    text: String,
    start: usize,
    end: usize,
}

/// Headings and paragraphs of a document, in order, found with an iterative walk.
struct Outline {
    headings: Vec<Heading>,
    /// (start, end) of top-level paragraphs, candidates for docs.
    paragraphs: Vec<(usize, usize)>,
    /// (start, end) of code blocks, where `[a](b)` is not a link.
    code: Vec<(usize, usize)>,
    has_error: bool,
}

fn scan(source: &str, limits: &ParseLimits) -> Option<Outline> {
    let grammar: tree_sitter::Language = tree_sitter_md::LANGUAGE.into();
    let deadline = deadline(limits);
    let tree = parse(&grammar, source, deadline).ok()?;
    let mut clock = Clock::new(deadline);
    let root = tree.root_node();
    let mut out = Outline {
        headings: Vec::new(),
        paragraphs: Vec::new(),
        code: Vec::new(),
        has_error: root.has_error(),
    };
    let mut cursor = root.walk();
    loop {
        if clock.expired() {
            return None;
        }
        let n = cursor.node();
        let mut descend = true;
        match n.kind() {
            "atx_heading" | "setext_heading" => {
                if let Some(h) = heading(n, source) {
                    out.headings.push(h);
                }
                descend = false;
            }
            "paragraph" => {
                out.paragraphs.push((n.start_byte(), n.end_byte()));
                descend = false;
            }
            "fenced_code_block" | "indented_code_block" => {
                out.code.push((n.start_byte(), n.end_byte()));
                descend = false;
            }
            // Nothing inside these is a heading or a section paragraph.
            "html_block" | "list" | "block_quote" => {
                descend = false;
            }
            _ => {}
        }
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return Some(out);
            }
        }
    }
}

fn heading(n: Node, src: &str) -> Option<Heading> {
    let mut level = 0;
    let mut text = String::new();
    let mut c = n.walk();
    for ch in n.children(&mut c) {
        let k = ch.kind();
        if let Some(l) = k
            .strip_prefix("atx_h")
            .and_then(|r| r.strip_suffix("_marker"))
            .and_then(|d| d.parse().ok())
        {
            level = l;
        } else if k == "setext_h1_underline" {
            level = 1;
        } else if k == "setext_h2_underline" {
            level = 2;
        } else if k == "inline" || k == "paragraph" {
            text = slice(src, ch.start_byte(), ch.end_byte())
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
        }
    }
    // ATX closing hashes (`## Title ##`) are not part of the title.
    let text = text.trim_end_matches('#').trim_end().to_string();
    (level > 0).then_some(Heading {
        level,
        text,
        start: n.start_byte(),
        end: n.end_byte(),
    })
}

/// Relative link targets (`[text](docs/setup.md#linux)` → `docs/setup.md`) outside code
/// blocks, in order, without duplicates: the documents and files this one points at.
fn links(source: &str, code: &[(usize, usize)]) -> Vec<ParsedImport> {
    let mut out: Vec<ParsedImport> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut from = 0;
    while let Some(i) = source[from..].find("](") {
        let start = from + i + 2;
        from = start;
        // Code blocks are disjoint and in source order: the last one starting at or before
        // `start` is the only one that can hold it.
        let block = code.partition_point(|(a, _)| *a <= start);
        if block > 0 && (code[block - 1].0..code[block - 1].1).contains(&start) {
            continue;
        }
        let Some(len) = source[start..].find([')', ' ', '\n']) else {
            break;
        };
        let target = source[start..start + len].trim_matches(|c| c == '<' || c == '>');
        let file = target.split('#').next().unwrap_or("");
        let external = file.contains(':') || file.starts_with('/') || file.is_empty();
        if !external && seen.insert(file) {
            out.push(ParsedImport {
                module: file.to_string(),
                names: Vec::new(),
            });
        }
    }
    out
}

fn paragraph_text(lines: &Lines, (a, b): (usize, usize)) -> String {
    slice(lines.src, a, b).trim().replace("\r\n", "\n")
}

/// Where a heading sits in its document's outline, as indices into the headings.
pub(super) struct Nesting {
    /// The heading it nests under: the last earlier one of a higher level.
    pub parent: Option<usize>,
    /// The heading that ends its section: the next one of the same or a higher level.
    pub end: Option<usize>,
}

/// The outline of headings of `levels` (1 = `#`), in document order.
pub(super) fn nesting(levels: &[usize]) -> Vec<Nesting> {
    let mut open: Vec<usize> = Vec::new();
    let mut out = Vec::with_capacity(levels.len());
    for (i, &level) in levels.iter().enumerate() {
        while open.last().is_some_and(|&j| levels[j] >= level) {
            open.pop();
        }
        out.push(Nesting {
            parent: open.last().copied(),
            end: (i + 1..levels.len()).find(|&j| levels[j] <= level),
        });
        open.push(i);
    }
    out
}

/// The first paragraph in `[from, to)`, before any heading (paragraphs are in source order).
fn first_paragraph(o: &Outline, from: usize, to: usize) -> Option<(usize, usize)> {
    let i = o.paragraphs.partition_point(|(a, _)| *a < from);
    o.paragraphs.get(i).copied().filter(|(a, _)| *a < to)
}

fn analyze_md(path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
    let qname = strip_ext(path).to_string();
    let f = sections(path, source, limits, qname.clone());
    bounded(f, path, source, qname, limits)
}

fn sections(path: &str, source: &str, limits: &ParseLimits, qname: String) -> ParsedFile {
    let Some(o) = scan(source, limits) else {
        let mut f = chunk_file(path, source, qname, limits);
        f.warnings.push(timeout_warning(limits));
        return f;
    };
    let lines = Lines::new(source);
    let neutral = next_code_lines(&lines, &|_| false);
    let hs = &o.headings;
    let tree = nesting(&hs.iter().map(|h| h.level).collect::<Vec<_>>());
    let ends: Vec<usize> = tree
        .iter()
        .map(|t| t.end.map_or(source.len(), |e| hs[e].start))
        .collect();
    // Node indices: the module is 0, heading i is i + 1.
    let parents: Vec<usize> = tree.iter().map(|t| t.parent.map_or(0, |p| p + 1)).collect();
    let mut kept: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); hs.len() + 1];
    for (i, h) in hs.iter().enumerate() {
        let hl = lines.line_of(h.start)..=lines.last_line(h.start, h.end);
        kept[i + 1].extend(hl.clone());
        kept[parents[i]].extend(hl);
    }

    let doc_of = |from: usize, to: usize| first_paragraph(&o, from, to);
    let first_heading = hs.first().map_or(source.len(), |h| h.start);
    let module_doc = doc_of(0, first_heading).or_else(|| {
        hs.first()
            .and_then(|h| doc_of(h.end, hs.get(1).map_or(source.len(), |n| n.start)))
    });
    let signature = hs.first().map_or_else(
        || path.to_string(),
        |h| format!("{} {}", "#".repeat(h.level), h.text),
    );
    let with_doc = match module_doc {
        Some(p) => format!("{signature}\n\n{}", paragraph_text(&lines, p)),
        None => signature.clone(),
    };
    if let Some((a, b)) = module_doc {
        kept[0].extend(lines.line_of(a)..=lines.last_line(a, b));
    }
    let skeleton = if source.trim().is_empty() {
        signature.clone()
    } else {
        render_kept(&lines, 0, source.len(), &kept[0], &neutral)
    };
    let mut nodes = vec![module_node(
        &lines,
        path,
        qname.clone(),
        signature,
        module_doc.map(|p| paragraph_text(&lines, p)),
        with_doc,
        skeleton,
    )];
    let mut qnames = vec![qname];
    for (i, h) in hs.iter().enumerate() {
        let parent = parents[i];
        let next = hs.get(i + 1).map_or(source.len(), |n| n.start);
        let doc = doc_of(h.end, next);
        let signature = format!("{} {}", "#".repeat(h.level), h.text);
        let with_doc = match doc {
            Some(p) => format!("{signature}\n\n{}", paragraph_text(&lines, p)),
            None => signature.clone(),
        };
        if let Some((a, b)) = doc {
            kept[i + 1].extend(lines.line_of(a)..=lines.last_line(a, b));
        }
        let name = if h.text.is_empty() {
            format!("section {}", i + 1)
        } else {
            h.text.clone()
        };
        let q = clean_name(format!("{} > {name}", qnames[parent]));
        let skeleton = render_kept(&lines, h.start, ends[i], &kept[i + 1], &neutral);
        nodes.push(make_node(
            &lines,
            NodeKind::Section,
            name,
            q.clone(),
            Some(parent),
            h.start,
            ends[i],
            signature,
            doc.map(|p| paragraph_text(&lines, p)),
            with_doc,
            skeleton,
        ));
        qnames.push(q);
    }
    let mut f = ParsedFile {
        nodes,
        imports: links(source, &o.code),
        ..ParsedFile::default()
    };
    if o.has_error {
        f.warnings
            .push("syntax errors; indexed what the parser recovered".to_string());
    }
    f
}

/// The heading outline of a document.
pub(crate) fn outline(source: &str, limits: &ParseLimits) -> Option<String> {
    let o = scan(source, limits)?;
    if o.headings.is_empty() {
        return None;
    }
    let lines = Lines::new(source);
    let kept: BTreeSet<usize> = o
        .headings
        .iter()
        .flat_map(|h| lines.line_of(h.start)..=lines.last_line(h.start, h.end))
        .collect();
    let next = next_code_lines(&lines, &|_| false);
    Some(render_kept(&lines, 0, source.len(), &kept, &next))
}

impl Analyzer for Markdown {
    fn language(&self) -> Language {
        Language::Markdown
    }

    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
        analyze_md(path, source, limits)
    }

    /// Relative links (`./other.md`) resolve against the document's directory.
    fn resolve_import(
        &self,
        from_path: &str,
        module: &str,
        exists: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        let target = module.split('#').next().unwrap_or(module);
        if target.is_empty() || target.contains("://") {
            return None;
        }
        first_existing(join(dirname(from_path), target), exists)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{check_nodes, check_render};

    const SRC: &str = "# Tool\n\nA tool that does things.\n\n## Install\n\nRun the installer.\n\n```sh\n# not a heading\nmake\n```\n\n### Linux\n\nUse apt.\n\nUsage\n-----\n\nCall it.\n";

    #[test]
    fn extracts_sections() {
        check_nodes(
            Language::Markdown,
            "docs/README.md",
            SRC,
            &[
                (NodeKind::Module, "docs/README", 1, 21),
                (NodeKind::Section, "docs/README > Tool", 1, 21),
                (NodeKind::Section, "docs/README > Tool > Install", 5, 17),
                (
                    NodeKind::Section,
                    "docs/README > Tool > Install > Linux",
                    14,
                    17,
                ),
                (NodeKind::Section, "docs/README > Tool > Usage", 18, 21),
            ],
        );
    }

    #[test]
    fn renders_depths() {
        check_render(
            Language::Markdown,
            "docs/README.md",
            SRC,
            "docs/README > Tool > Install",
            "## Install",
            "## Install\n\nRun the installer.",
            "## Install\nRun the installer.\n...\n### Linux\n...",
        );
        check_render(
            Language::Markdown,
            "docs/README.md",
            SRC,
            "docs/README",
            "# Tool",
            "# Tool\n\nA tool that does things.",
            "# Tool\nA tool that does things.\n...",
        );
    }

    #[test]
    fn relative_links_are_imports() {
        let src = "# Docs\n\nSee [setup](setup.md#linux), [api](../api/README.md) and\n[site](https://x.org/a.md), [top](#docs), [again](setup.md).\n\n```md\n[not](code.md)\n```\n\n- [in list](guide/intro.md)\n";
        let f = Markdown.analyze("docs/index.md", src, &ParseLimits::default());
        let modules: Vec<&str> = f.imports.iter().map(|i| i.module.as_str()).collect();
        assert_eq!(
            modules,
            vec!["setup.md", "../api/README.md", "guide/intro.md"]
        );
        let exists = |p: &str| p == "api/README.md";
        assert_eq!(
            Markdown
                .resolve_import("docs/index.md", "../api/README.md", &exists)
                .as_deref(),
            Some("api/README.md")
        );
    }

    #[test]
    fn outline_lists_headings() {
        assert_eq!(
            outline(SRC, &ParseLimits::default()).as_deref(),
            Some("# Tool\n...\n## Install\n...\n### Linux\n...\nUsage\n-----\n...")
        );
    }
}
