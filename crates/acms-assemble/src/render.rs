//! How packed fragments become the context text: one block per contiguous region of a file,
//! under a header naming the repository-relative path, the line span, the symbols in it and
//! the depth; full source (depth 9) verbatim, with its original indentation.
//!
//! Two layout rules make a context read like code rather than like a list of snippets:
//! - **regions**: fragments of one file at depth 9 whose spans touch or are at most
//!   [`MERGE_GAP`] lines apart become one block with the lines between them, so two methods of
//!   a class read as the class does;
//! - **container lines**: a fragment inside a class (impl, trait, struct, interface, enum)
//!   that is not itself shown starts with that container's declaration line, so a method is
//!   never shown without the class it belongs to.
//!
//! This module only lays text out; it reads nothing and counts no tokens (the engine verifies
//! the exact count of the final text).

use acms_core::Depth;
use acms_index::{NodeKind, NodeRecord};

/// Fragments at depth 9 at most this many lines apart are shown as one region.
pub const MERGE_GAP: u32 = 3;

/// `# src/pkg/app.py:120-180 · App.make_response · depth 9`
pub fn header(node: &NodeRecord, depth: Depth) -> String {
    format!(
        "# {}:{}-{} · {} · depth {}",
        escape(&node.path),
        node.start_line,
        node.end_line,
        node.qualified_name,
        depth
    )
}

/// A path or name as it may appear in a header line: control characters (a newline in a file
/// name would forge a header) are shown escaped.
pub fn escape(s: &str) -> String {
    if !s.chars().any(char::is_control) {
        return s.to_string();
    }
    s.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// The nearest enclosing type-like node of `node` (its class, impl, trait …), if any.
pub fn container<'c>(
    node: &NodeRecord,
    lookup: impl Fn(acms_core::NodeId) -> Option<&'c NodeRecord>,
) -> Option<&'c NodeRecord> {
    let parent = lookup(node.parent?)?;
    matches!(
        parent.kind,
        NodeKind::Class
            | NodeKind::Struct
            | NodeKind::Enum
            | NodeKind::Interface
            | NodeKind::Trait
            | NodeKind::Impl
    )
    .then_some(parent)
}

/// The line that introduces `container` in a member's block: its declaration's first line,
/// indented as in the source.
pub fn container_line(container: &NodeRecord, indent: &str) -> String {
    let sig = container.signature.lines().next().unwrap_or_default().trim();
    format!("{indent}{sig}")
}

/// One fragment to lay out, in context order.
#[derive(Debug, Clone)]
pub struct Piece<'a> {
    pub node: &'a NodeRecord,
    pub depth: Depth,
    /// The node's rendering at `depth`; for depth 9 ignored in favour of `lines`.
    pub text: String,
    /// The node's file as lines (depth 9 only): regions are cut from it verbatim.
    pub lines: Option<std::sync::Arc<Vec<String>>>,
    /// The declaration line of its container, when the container is not shown itself.
    pub container: Option<String>,
}

/// One block of the context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub names: Vec<String>,
    pub depth: Depth,
    pub text: String,
}

impl Block {
    /// Header line, text, newline.
    pub fn render(&self) -> String {
        let mut s = format!(
            "# {}:{}-{} · {} · depth {}\n",
            escape(&self.path),
            self.start_line,
            self.end_line,
            self.names.join(", "),
            self.depth
        );
        s.push_str(&self.text);
        if !self.text.ends_with('\n') {
            s.push('\n');
        }
        s
    }
}

/// Lines `start..=end` (1-based) of `lines`, joined.
fn cut(lines: &[String], start: u32, end: u32) -> String {
    let a = (start.max(1) - 1) as usize;
    let b = (end as usize).min(lines.len());
    lines.get(a..b).unwrap_or(&[]).join("\n")
}

/// Lays `pieces` (in context order) out as blocks, merging depth-9 pieces of one file that
/// are at most [`MERGE_GAP`] lines apart and following one another in context order.
pub fn blocks(pieces: &[Piece<'_>]) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    // For the block being extended: its pieces' container line and the file's lines.
    let mut open: Option<(Option<String>, std::sync::Arc<Vec<String>>)> = None;
    for p in pieces {
        let n = p.node;
        if p.depth == Depth::Full
            && let Some(lines) = &p.lines
        {
            if let (Some(last), Some((container, file))) = (out.last_mut(), open.as_ref())
                && last.depth == Depth::Full
                && last.path == n.path
                && n.start_line <= last.end_line.saturating_add(MERGE_GAP + 1)
                && std::sync::Arc::ptr_eq(file, lines)
            {
                if n.end_line > last.end_line {
                    last.end_line = n.end_line;
                }
                if n.start_line < last.start_line {
                    last.start_line = n.start_line;
                }
                last.names.push(n.qualified_name.clone());
                last.text = with_container(container.as_deref(), cut(file, last.start_line, last.end_line), lines, last.start_line);
                continue;
            }
            let text = with_container(
                p.container.as_deref(),
                cut(lines, n.start_line, n.end_line),
                lines,
                n.start_line,
            );
            out.push(Block {
                path: n.path.clone(),
                start_line: n.start_line,
                end_line: n.end_line,
                names: vec![n.qualified_name.clone()],
                depth: Depth::Full,
                text,
            });
            open = Some((p.container.clone(), lines.clone()));
            continue;
        }
        open = None;
        let text = match &p.container {
            Some(c) => format!("{c}\n{}", p.text),
            None => p.text.clone(),
        };
        out.push(Block {
            path: n.path.clone(),
            start_line: n.start_line,
            end_line: n.end_line,
            names: vec![n.qualified_name.clone()],
            depth: p.depth,
            text,
        });
    }
    out
}

/// `body` preceded by its container's line and, when the container's declaration is not the
/// line right above the region, an elision line at the body's indentation.
fn with_container(container: Option<&str>, body: String, lines: &[String], start: u32) -> String {
    let Some(c) = container else { return body };
    let above = lines
        .get((start.max(2) - 2) as usize)
        .map(|l| l.trim())
        .unwrap_or_default();
    if start > 1 && above == c.trim() {
        return format!("{c}\n{body}");
    }
    let indent: String = body
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take_while(|ch| ch.is_whitespace())
        .collect();
    format!("{c}\n{indent}...\n{body}")
}

/// The whole context: preamble, inherited skeleton, blocks; blank lines between parts.
pub fn context(preamble: &str, inherited: &str, blocks: &[String]) -> String {
    let mut parts: Vec<&str> = Vec::with_capacity(blocks.len() + 2);
    if !preamble.is_empty() {
        parts.push(preamble);
    }
    if !inherited.is_empty() {
        parts.push(inherited.trim_end());
    }
    parts.extend(blocks.iter().map(|f| f.trim_end()));
    let mut out = parts.join("\n\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use acms_core::NodeId;

    fn node(id: u64, kind: NodeKind, name: &str, lines: (u32, u32)) -> NodeRecord {
        NodeRecord {
            id: NodeId(id),
            path: "pkg/app.py".into(),
            kind,
            name: name.into(),
            qualified_name: format!("App.{name}"),
            parent: Some(NodeId(1)),
            start_line: lines.0,
            end_line: lines.1,
            start_byte: 0,
            end_byte: 0,
            signature: format!("def {name}(self):"),
            doc: None,
            tokens: [1; 4],
        }
    }

    fn file() -> std::sync::Arc<Vec<String>> {
        std::sync::Arc::new(
            [
                "class App(Base):",
                "    def a(self):",
                "        return 1",
                "",
                "    def b(self):",
                "        return 2",
                "",
                "",
                "",
                "",
                "",
                "    def c(self):",
                "        return 3",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        )
    }

    fn piece<'a>(n: &'a NodeRecord, lines: &std::sync::Arc<Vec<String>>) -> Piece<'a> {
        Piece {
            node: n,
            depth: Depth::Full,
            text: String::new(),
            lines: Some(lines.clone()),
            container: Some("class App(Base):".into()),
        }
    }

    #[test]
    fn neighbouring_methods_become_one_region_under_their_class_line() {
        let f = file();
        let (a, b, c) = (
            node(2, NodeKind::Method, "a", (2, 3)),
            node(3, NodeKind::Method, "b", (5, 6)),
            node(4, NodeKind::Method, "c", (12, 13)),
        );
        let out = blocks(&[piece(&a, &f), piece(&b, &f), piece(&c, &f)]);
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!((out[0].start_line, out[0].end_line), (2, 6));
        assert_eq!(out[0].names, ["App.a", "App.b"]);
        assert_eq!(
            out[0].text,
            "class App(Base):\n    def a(self):\n        return 1\n\n    def b(self):\n        return 2"
        );
        // Far from the first region: its own block, with the class line and an elision.
        assert_eq!(
            out[1].text,
            "class App(Base):\n    ...\n    def c(self):\n        return 3"
        );
        assert!(out[1].render().starts_with("# pkg/app.py:12-13 · App.c · depth 9\n"));
    }

    #[test]
    fn control_characters_cannot_forge_a_header() {
        assert_eq!(escape("a\n# b.py:1-2"), "a\\n# b.py:1-2");
        assert_eq!(escape("plain/path.rs"), "plain/path.rs");
    }
}
