//! How packed fragments become the context text: one block per contiguous region of a file,
//! under a header naming the repository-relative path, the line span, the symbols in it and
//! the depth; full source (depth 9) verbatim, with its original indentation.
//!
//! Two layout rules make a context read like code rather than like a list of snippets:
//! - **regions**: fragments of one file at depth 9 whose spans touch or are at most
//!   `MERGE_GAP` (3) lines apart become one block with the lines between them, so two methods of
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
const MERGE_GAP: u32 = 3;

/// `# src/pkg/app.py:120-180 · App.make_response · depth 9`: the header of a block holding
/// `node` alone (`module` is its file's module node, for the display name).
pub fn header(node: &NodeRecord, module: Option<&NodeRecord>, depth: Depth) -> String {
    format!(
        "# {}:{}-{} · {} · depth {}",
        escape(&node.path),
        node.start_line,
        node.end_line,
        escape(&display_name(node, module)),
        depth
    )
}

/// One node alone as a block (header, text, newline): what `expand` hands out.
pub fn fragment(node: &NodeRecord, depth: Depth, text: &str) -> String {
    let mut s = header(node, None, depth);
    s.push('\n');
    s.push_str(text);
    if !text.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// A path or name as it may appear in a header line: control characters (a newline in a file
/// name would forge a header) are shown escaped.
fn escape(s: &str) -> String {
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
    let sig = container
        .signature
        .lines()
        .next()
        .unwrap_or_default()
        .trim();
    format!("{indent}{sig}")
}

/// A file's text split into lines as [`str::lines`] splits it, kept as one string and the
/// lines' byte spans: a layout reads a few regions of 20–30 large files, and one allocation
/// per line of each cost more than counting the rendered context.
#[derive(Debug)]
pub struct FileLines {
    text: String,
    spans: Vec<(usize, usize)>,
}

impl FileLines {
    pub fn new(text: String) -> Self {
        let base = text.as_ptr() as usize;
        let spans = text
            .lines()
            .map(|l| (l.as_ptr() as usize - base, l.len()))
            .collect();
        Self { text, spans }
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Line `i` (0-based), without its line ending.
    pub fn get(&self, i: usize) -> Option<&str> {
        let &(at, len) = self.spans.get(i)?;
        Some(&self.text[at..at + len])
    }

    /// Lines `a..b` (0-based), clamped to the file.
    pub fn range(&self, a: usize, b: usize) -> impl Iterator<Item = &str> {
        let b = b.min(self.len());
        (a.min(b)..b).filter_map(|i| self.get(i))
    }

    /// The leading whitespace of line `line`, counted from 1 as node spans are (0 reads as
    /// 1); empty past the end of the file.
    pub fn indent(&self, line: u32) -> String {
        self.get((line.max(1) - 1) as usize)
            .map(leading_whitespace)
            .unwrap_or_default()
    }
}

fn leading_whitespace(line: &str) -> String {
    line.chars().take_while(|ch| ch.is_whitespace()).collect()
}

/// One fragment to lay out, in context order.
#[derive(Debug, Clone)]
pub struct Piece<'a> {
    pub node: &'a NodeRecord,
    /// The name shown in the block header: the qualified name without its module's prefix
    /// (the header already names the file).
    pub name: String,
    pub depth: Depth,
    /// The node's rendering at `depth`, unless `lines` is set.
    pub text: String,
    /// The node's file as lines, when depth 9 is cut from it verbatim (see the module doc).
    pub lines: Option<std::sync::Arc<FileLines>>,
    /// The leading whitespace of the node's first line in its file (shallow renderings start
    /// unindented; under a container line they are indented as in the source).
    pub indent: String,
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
    /// The depths of the pieces in the block, deepest last.
    pub depths: Vec<Depth>,
    pub text: String,
}

impl Block {
    /// Header line, text, newline.
    pub fn render(&self) -> String {
        let depths: Vec<String> = self.depths.iter().map(|d| d.to_string()).collect();
        let mut s = format!(
            "# {}:{}-{} · {} · depth {}\n",
            escape(&self.path),
            self.start_line,
            self.end_line,
            escape(&self.names.join(", ")),
            depths.join(",")
        );
        s.push_str(&self.text);
        if !self.text.ends_with('\n') {
            s.push('\n');
        }
        s
    }

    fn add_depth(&mut self, d: Depth) {
        if !self.depths.contains(&d) {
            self.depths.push(d);
            self.depths.sort();
        }
    }
}

/// The name to show for `node` given its module's qualified name.
pub fn display_name(node: &NodeRecord, module: Option<&NodeRecord>) -> String {
    let q = node.qualified_name.as_str();
    module
        .filter(|m| m.id != node.id)
        .and_then(|m| q.strip_prefix(m.qualified_name.as_str()))
        .map(|rest| rest.trim_start_matches(['.', ':', '/', '#']))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(q)
        .to_string()
}

/// Lines `start..=end` (1-based) of `lines`, joined.
fn cut(lines: &FileLines, start: u32, end: u32) -> String {
    let a = (start.max(1) - 1) as usize;
    let b = (end as usize).min(lines.len());
    if a > b {
        return String::new();
    }
    let mut out = String::new();
    for (k, l) in lines.range(a, b).enumerate() {
        if k > 0 {
            out.push('\n');
        }
        out.push_str(l);
    }
    out
}

/// A shallow rendering indented as in the source. The index stores renderings at column 0
/// whatever the nesting, every line of them: a decorated method's signature or a skeleton
/// under its class line needs all its lines moved, not the first alone.
fn indented(text: &str, indent: &str) -> String {
    if indent.is_empty() || text.starts_with(indent) {
        return text.to_string();
    }
    text.split('\n')
        .map(|l| match l.trim().is_empty() {
            true => l.to_string(),
            false => format!("{indent}{l}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Lays `pieces` (in context order) out as blocks. Neighbouring depth-9 pieces of one file
/// (at most `MERGE_GAP` lines apart) become one verbatim region; consecutive shallower
/// pieces of one file become one outline block under one header.
pub fn blocks(pieces: &[Piece<'_>]) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    // What the last block is, for deciding whether the next piece extends it.
    enum Open {
        None,
        /// A verbatim region: its container line and the file's lines.
        Region(Option<String>, std::sync::Arc<FileLines>),
        /// An outline: the container line it currently sits under.
        Outline(Option<String>),
    }
    let mut open = Open::None;
    for p in pieces {
        let n = p.node;
        let same_file = out.last().is_some_and(|b| b.path == n.path);
        if p.depth == Depth::Full
            && let Some(lines) = &p.lines
        {
            if let (true, Some(last), Open::Region(container, file)) =
                (same_file, out.last_mut(), &open)
                && n.start_line <= last.end_line.saturating_add(MERGE_GAP + 1)
                && std::sync::Arc::ptr_eq(file, lines)
            {
                last.end_line = last.end_line.max(n.end_line);
                last.start_line = last.start_line.min(n.start_line);
                last.names.push(p.name.clone());
                last.text = with_container(
                    container.as_deref(),
                    cut(file, last.start_line, last.end_line),
                    lines,
                    last.start_line,
                );
                continue;
            }
            out.push(Block {
                path: n.path.clone(),
                start_line: n.start_line,
                end_line: n.end_line,
                names: vec![p.name.clone()],
                depths: vec![Depth::Full],
                text: with_container(
                    p.container.as_deref(),
                    cut(lines, n.start_line, n.end_line),
                    lines,
                    n.start_line,
                ),
            });
            open = Open::Region(p.container.clone(), lines.clone());
            continue;
        }
        let body = if p.container.is_some() {
            indented(&p.text, &p.indent)
        } else {
            p.text.clone()
        };
        if let (true, Some(last), Open::Outline(container)) = (same_file, out.last_mut(), &mut open)
        {
            last.start_line = last.start_line.min(n.start_line);
            last.end_line = last.end_line.max(n.end_line);
            last.names.push(p.name.clone());
            last.add_depth(p.depth);
            if p.container.is_some() && p.container != *container {
                last.text.push('\n');
                last.text
                    .push_str(p.container.as_deref().unwrap_or_default());
                *container = p.container.clone();
            }
            last.text.push('\n');
            last.text.push_str(&body);
            continue;
        }
        let text = match &p.container {
            Some(c) => format!("{c}\n{body}"),
            None => body,
        };
        out.push(Block {
            path: n.path.clone(),
            start_line: n.start_line,
            end_line: n.end_line,
            names: vec![p.name.clone()],
            depths: vec![p.depth],
            text,
        });
        open = Open::Outline(p.container.clone());
    }
    out
}

/// `body` preceded by its container's line and, when the container's declaration is not the
/// line right above the region, an elision line at the body's indentation.
fn with_container(container: Option<&str>, body: String, lines: &FileLines, start: u32) -> String {
    let Some(c) = container else { return body };
    let above = lines
        .get((start.max(2) - 2) as usize)
        .map(|l| l.trim())
        .unwrap_or_default();
    if start > 1 && above == c.trim() {
        return format!("{c}\n{body}");
    }
    let indent = leading_whitespace(body.lines().next().unwrap_or_default());
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

    fn file() -> std::sync::Arc<FileLines> {
        std::sync::Arc::new(FileLines::new(
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
            .join("\n"),
        ))
    }

    fn piece<'a>(n: &'a NodeRecord, lines: &std::sync::Arc<FileLines>) -> Piece<'a> {
        Piece {
            node: n,
            name: n.qualified_name.clone(),
            depth: Depth::Full,
            text: String::new(),
            lines: Some(lines.clone()),
            indent: "    ".into(),
            container: Some("class App(Base):".into()),
        }
    }

    #[test]
    fn file_lines_split_as_str_lines_does() {
        for text in ["a\r\nb\n\nc", "a\n", "", "\n\n", "x\ny\r\n"] {
            let lines = FileLines::new(text.to_string());
            let expected: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), expected.len(), "{text:?}");
            assert_eq!(lines.range(0, 99).collect::<Vec<_>>(), expected, "{text:?}");
            assert_eq!(lines.get(expected.len()), None);
        }
        let lines = FileLines::new("a\r\nb\nc".into());
        assert_eq!(cut(&lines, 1, 2), "a\nb");
        assert_eq!(cut(&lines, 2, 9), "b\nc");
        assert_eq!(cut(&lines, 3, 2), "");
    }

    #[test]
    fn shallow_members_of_a_file_share_one_outline_block() {
        let (a, b) = (
            node(2, NodeKind::Method, "a", (2, 3)),
            node(3, NodeKind::Method, "b", (5, 6)),
        );
        let shallow = |n: &'static NodeRecord| Piece {
            node: n,
            name: n.name.clone(),
            depth: Depth::Signature,
            text: n.signature.clone(),
            lines: None,
            indent: "    ".into(),
            container: Some("class App(Base):".into()),
        };
        let (a, b): (&'static NodeRecord, &'static NodeRecord) =
            (Box::leak(Box::new(a)), Box::leak(Box::new(b)));
        let out = blocks(&[shallow(a), shallow(b)]);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].text,
            "class App(Base):\n    def a(self):\n    def b(self):"
        );
        assert_eq!(
            out[0].render(),
            "# pkg/app.py:2-6 · a, b · depth 0\nclass App(Base):\n    def a(self):\n    def b(self):\n"
        );
    }

    #[test]
    fn a_multi_line_rendering_keeps_its_layout_under_its_class_line() {
        let mut m = node(2, NodeKind::Method, "a", (2, 3));
        m.signature = "@mark(\n    reason=\"slow\",\n)\ndef a(self):".into();
        let m: &'static NodeRecord = Box::leak(Box::new(m));
        let out = blocks(&[Piece {
            node: m,
            name: m.name.clone(),
            depth: Depth::Skeleton,
            text: format!("{}\n    ...", m.signature),
            lines: None,
            indent: "    ".into(),
            container: Some("class App(Base):".into()),
        }]);
        assert_eq!(
            out[0].text,
            "class App(Base):\n    @mark(\n        reason=\"slow\",\n    )\n    def a(self):\n        ..."
        );
    }

    #[test]
    fn names_drop_their_module_prefix() {
        let mut m = node(1, NodeKind::Module, "app", (1, 13));
        m.qualified_name = "pkg.app".into();
        let mut f = node(2, NodeKind::Method, "a", (2, 3));
        f.qualified_name = "pkg.app.App.a".into();
        assert_eq!(display_name(&f, Some(&m)), "App.a");
        assert_eq!(display_name(&m, Some(&m)), "pkg.app");
        assert_eq!(display_name(&f, None), "pkg.app.App.a");
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
        assert!(
            out[1]
                .render()
                .starts_with("# pkg/app.py:12-13 · App.c · depth 9\n")
        );
    }

    #[test]
    fn control_characters_cannot_forge_a_header() {
        assert_eq!(escape("a\n# b.py:1-2"), "a\\n# b.py:1-2");
        assert_eq!(escape("plain/path.rs"), "plain/path.rs");
    }
}
