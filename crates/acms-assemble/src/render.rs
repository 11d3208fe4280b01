//! How fragments are rendered into the context: a header naming the repository-relative
//! path, line span, qualified name and depth, then the text at that depth (verbatim source
//! at depth 9).

use acms_core::Depth;
use acms_index::NodeRecord;

/// `# src/pkg/app.py:120-180 · App.make_response · depth 9`
pub fn header(node: &NodeRecord, depth: Depth) -> String {
    format!(
        "# {}:{}-{} · {} · depth {}",
        node.path, node.start_line, node.end_line, node.qualified_name, depth
    )
}

/// One fragment: header line, text, newline.
pub fn fragment(node: &NodeRecord, depth: Depth, text: &str) -> String {
    let mut s = header(node, depth);
    s.push('\n');
    s.push_str(text);
    if !text.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// The whole context: preamble, inherited skeleton, fragments; blank lines between parts.
pub fn context(preamble: &str, inherited: &str, fragments: &[String]) -> String {
    let mut parts: Vec<&str> = Vec::with_capacity(fragments.len() + 2);
    if !preamble.is_empty() {
        parts.push(preamble);
    }
    if !inherited.is_empty() {
        parts.push(inherited.trim_end());
    }
    parts.extend(fragments.iter().map(|f| f.trim_end()));
    let mut out = parts.join("\n\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}
