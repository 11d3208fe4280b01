//! AST-aware compaction of code inside messages: fenced code blocks and tool results that
//! show a file. A [`CodeOutliner`] keeps signatures, exported interfaces and type
//! declarations and drops bodies; when it cannot (no outliner for the language, or the code
//! does not parse) the block falls back to its first and last lines around an elision marker.
//!
//! This module rewrites text only. Which messages may be rewritten, and whether the result is
//! accepted, is decided by the compactor and its verifier.

/// Lines kept at each end by the head/tail fallback.
const HEAD_TAIL_LINES: usize = 5;
/// Prefix of an outline that replaced code.
pub const OUTLINE_MARKER: &str = "[code outline: bodies elided]";

/// Produces a signature outline of source code. The seam to the index's tree-sitter
/// analyzers.
pub trait CodeOutliner: Send + Sync {
    /// The outline of `source`, whose language is known from `path` (a file name or just an
    /// extension-bearing name such as `x.rs`). `None` when the language is unknown or the
    /// source does not parse well enough to outline.
    fn outline(&self, path: &str, source: &str) -> Option<String>;
}

/// The index's tree-sitter analyzers: language by file name, outline by
/// `acms_index::analyze::outline` (imports, signatures, type declarations; bodies dropped).
#[derive(Debug, Clone, Copy, Default)]
pub struct IndexOutliner {
    pub limits: acms_index::ParseLimits,
}

impl CodeOutliner for IndexOutliner {
    fn outline(&self, path: &str, source: &str) -> Option<String> {
        let language = acms_index::detect_language(path, source)?;
        acms_index::analyze::outline(language, source, &self.limits)
            .filter(|o| !o.trim().is_empty())
    }
}

/// An outliner that never outlines, leaving only the head/tail fallback. Used when no
/// tree-sitter analyzer is available.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoOutliner;

impl CodeOutliner for NoOutliner {
    fn outline(&self, _path: &str, _source: &str) -> Option<String> {
        None
    }
}

/// A file name standing for the language of a fence info string (```` ```rust ````), so the
/// outliner can detect the language by extension.
fn path_for_fence(info: &str) -> Option<&'static str> {
    let lang = info.split_whitespace().next()?.to_ascii_lowercase();
    Some(match lang.as_str() {
        "rust" | "rs" => "x.rs",
        "python" | "py" | "python3" => "x.py",
        "typescript" | "ts" => "x.ts",
        "tsx" => "x.tsx",
        "javascript" | "js" | "jsx" | "mjs" => "x.js",
        "java" => "x.java",
        // Shell fences are left out: in a conversation they hold commands and their output.
        "go" | "golang" => "x.go",
        "c" | "h" => "x.c",
        "cpp" | "c++" | "cc" | "cxx" | "hpp" => "x.cpp",
        "csharp" | "cs" | "c#" => "x.cs",
        "ruby" | "rb" => "x.rb",
        "php" => "x.php",
        "kotlin" | "kt" => "x.kt",
        "swift" => "x.swift",
        "scala" => "x.scala",
        _ => return None,
    })
}

/// True when `path` names a file of a language code compaction handles.
pub fn is_code_path(path: &str) -> bool {
    let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
    matches!(
        ext.as_str(),
        "rs" | "py"
            | "ts"
            | "tsx"
            | "js"
            | "jsx"
            | "mjs"
            | "java"
            | "go"
            | "c"
            | "h"
            | "cc"
            | "cpp"
            | "cxx"
            | "hpp"
            | "cs"
            | "rb"
            | "php"
            | "sh"
            | "bash"
            | "kt"
            | "swift"
            | "scala"
    )
}

/// Compacts one piece of code: the outline when it is smaller, else head/tail when the code
/// is long enough for that to help. `None` when nothing smaller is possible.
pub fn compact_code(outliner: &dyn CodeOutliner, path: Option<&str>, code: &str) -> Option<String> {
    if let Some(p) = path
        && let Some(outline) = outliner.outline(p, code)
    {
        let text = format!("{OUTLINE_MARKER}\n{}", outline.trim_end());
        if text.len() < code.len() {
            return Some(text);
        }
    }
    head_tail(code)
}

/// First and last [`HEAD_TAIL_LINES`] lines with a marker saying how many were elided, or
/// `None` when the code is too short for that to save anything.
fn head_tail(code: &str) -> Option<String> {
    let lines: Vec<&str> = code.lines().collect();
    if lines.len() <= 2 * HEAD_TAIL_LINES + 2 {
        return None;
    }
    let elided = lines.len() - 2 * HEAD_TAIL_LINES;
    let mut out = lines[..HEAD_TAIL_LINES].join("\n");
    out.push_str(&format!("\n… [{elided} lines elided] …\n"));
    out.push_str(&lines[lines.len() - HEAD_TAIL_LINES..].join("\n"));
    (out.len() < code.len()).then_some(out)
}

/// A fenced code block inside a text: byte range of its body and its info string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence<'t> {
    pub info: &'t str,
    pub body: std::ops::Range<usize>,
}

/// The ``` fenced blocks of `text` (backtick fences of three or more; an unclosed fence is
/// not a block).
pub fn fences(text: &str) -> Vec<Fence<'_>> {
    let mut out = Vec::new();
    let mut offset = 0;
    let mut open: Option<(usize, &str, usize)> = None; // (fence len, info, body start)
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let ticks = trimmed.bytes().take_while(|&b| b == b'`').count();
        match open {
            None if ticks >= 3 => {
                let info = trimmed[ticks..].trim();
                if !info.contains('`') {
                    open = Some((ticks, info, offset + line.len()));
                }
            }
            Some((n, info, start)) if ticks >= n && trimmed[ticks..].trim().is_empty() => {
                out.push(Fence {
                    info,
                    body: start..offset,
                });
                open = None;
            }
            _ => {}
        }
        offset += line.len();
    }
    out
}

/// Compacts every fenced block of `text` whose language is code; `None` when nothing changed.
pub fn compact_fences(outliner: &dyn CodeOutliner, text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    let mut changed = false;
    for f in fences(text) {
        let body = &text[f.body.clone()];
        let path = path_for_fence(f.info);
        // Only code fences: shell transcripts and data are not outlined.
        if path.is_none() && !f.info.is_empty() {
            continue;
        }
        if let Some(c) = compact_code(outliner, path, body) {
            out.push_str(&text[last..f.body.start]);
            out.push_str(&c);
            if !c.ends_with('\n') {
                out.push('\n');
            }
            last = f.body.end;
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// True when a line looks like a declaration rather than a statement. A heuristic for the
/// density report only; compaction itself uses the outliner.
pub fn is_signature_line(line: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "fn ",
        "pub ",
        "async fn",
        "def ",
        "async def",
        "class ",
        "interface ",
        "type ",
        "struct ",
        "enum ",
        "trait ",
        "impl ",
        "impl<",
        "export ",
        "function ",
        "public ",
        "private ",
        "protected ",
        "abstract ",
        "@",
        "import ",
        "use ",
        "from ",
        "package ",
        "mod ",
        "const ",
        "static ",
        "#[",
        "//",
        "#",
        "\"\"\"",
        "///",
        "/**",
        "*",
    ];
    let t = line.trim_start();
    !t.is_empty() && PREFIXES.iter().any(|p| t.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Sigs;
    impl CodeOutliner for Sigs {
        fn outline(&self, path: &str, source: &str) -> Option<String> {
            path.ends_with(".rs").then(|| {
                source
                    .lines()
                    .filter(|l| l.starts_with("fn "))
                    .map(|l| format!("{};", l.trim_end_matches(" {")))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
    }

    fn check(text: &str, expected: Option<&str>) {
        assert_eq!(compact_fences(&Sigs, text).as_deref(), expected);
    }

    #[test]
    fn fenced_blocks() {
        let body = "fn a() {\n    let x = compute_something_long();\n    x + 1\n}\nfn b() {\n    let y = compute_something_else();\n    y * 2\n}\n";
        check(
            &format!("see:\n```rust\n{body}```\nend"),
            Some(&format!(
                "see:\n```rust\n{OUTLINE_MARKER}\nfn a();\nfn b();\n```\nend"
            )),
        );
        // Short unknown-language code is left alone; shell output is never touched.
        check("```\nx\n```", None);
        let long: String = (0..30).map(|i| format!("line {i}\n")).collect();
        check(&format!("```bash\n{long}```"), None);
        let out = compact_fences(&Sigs, &format!("```\n{long}```")).unwrap();
        assert!(out.contains("… [20 lines elided] …"), "{out}");
        assert!(out.starts_with("```\nline 0\n"));
        assert!(out.ends_with("line 29\n```"), "{out}");
        // Unclosed fence: not a block.
        check(&format!("```rust\n{body}"), None);
    }

    #[test]
    fn head_tail_only_when_it_helps() {
        assert_eq!(head_tail("a\nb\nc"), None);
        let code: String = (0..13).map(|i| format!("l{i}\n")).collect();
        // Eliding three short lines costs more than it saves.
        assert_eq!(head_tail(&code), None);
        let code: String = (0..13).map(|i| format!("let value{i} = {i};\n")).collect();
        let out = head_tail(&code).unwrap();
        assert!(out.starts_with("let value0 = 0;\n"));
        assert!(
            out.contains("\n… [3 lines elided] …\nlet value8 = 8;\n"),
            "{out}"
        );
        assert!(out.ends_with("let value12 = 12;"));
    }

    #[test]
    fn index_outliner_keeps_signatures() {
        let code = "import os\n\nclass Store:\n    def get(self, key: str) -> bytes:\n        data = os.read(key)\n        return data\n\ndef helper(x):\n    y = x * 2\n    z = y + 1\n    return z\n";
        let out = compact_code(&IndexOutliner::default(), Some("a.py"), code).unwrap();
        assert!(out.starts_with(OUTLINE_MARKER), "{out}");
        assert!(out.contains("def get(self, key: str) -> bytes"), "{out}");
        assert!(out.contains("def helper(x)"), "{out}");
        assert!(!out.contains("y = x * 2"), "{out}");
        // Not code the index knows: head/tail or nothing.
        assert_eq!(IndexOutliner::default().outline("notes.txt", "hello"), None);
    }

    #[test]
    fn languages() {
        assert_eq!(path_for_fence("Rust ignore"), Some("x.rs"));
        assert_eq!(path_for_fence("text"), None);
        assert_eq!(path_for_fence("go"), Some("x.go"));
        assert!(is_code_path("cmd/main.go"));
        assert!(is_code_path("src/lib.RS"));
        assert!(!is_code_path("README.md"));
        assert!(is_signature_line("    pub fn x()"));
        assert!(!is_signature_line("    let x = 1;"));
    }
}
