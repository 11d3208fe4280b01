//! The plain-text fallback: a module node plus line-based chunks of `limits.chunk_lines`
//! lines. It has no grammar, so it extracts no refs or imports and never warns.

use super::common::{chunk_file, strip_ext};
use super::{Analyzer, ParseLimits};
use crate::model::{Language, ParsedFile};

pub(crate) struct Text;

impl Analyzer for Text {
    fn language(&self) -> Language {
        Language::Text
    }

    fn analyze(&self, path: &str, source: &str, limits: &ParseLimits) -> ParsedFile {
        chunk_file(path, source, strip_ext(path).to_string(), limits)
    }

    fn resolve_import(&self, _: &str, _: &str, _: &dyn Fn(&str) -> bool) -> Option<String> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NodeKind;

    #[test]
    fn chunks_by_lines() {
        let src = (1..=7).map(|i| format!("line {i}\n")).collect::<String>();
        let limits = ParseLimits {
            chunk_lines: 3,
            ..ParseLimits::default()
        };
        let f = Text.analyze("notes/todo.txt", &src, &limits);
        let got: Vec<(NodeKind, &str, u32, u32)> = f
            .nodes
            .iter()
            .map(|n| (n.kind, n.qualified_name.as_str(), n.start_line, n.end_line))
            .collect();
        assert_eq!(
            got,
            vec![
                (NodeKind::Module, "notes/todo", 1, 7),
                (NodeKind::Chunk, "notes/todo:1-3", 1, 3),
                (NodeKind::Chunk, "notes/todo:4-6", 4, 6),
                (NodeKind::Chunk, "notes/todo:7-7", 7, 7),
            ]
        );
        assert_eq!(f.nodes[2].signature, "line 4");
        assert_eq!(f.nodes[2].skeleton, "line 4\nline 5\nline 6");
        assert_eq!(&src[f.nodes[3].start_byte..f.nodes[3].end_byte], "line 7\n");
        assert_eq!(f.nodes[0].name, "todo");
    }
}
