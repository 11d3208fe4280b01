//! Evaluation tasks: one record type for both languages, Python tasks from
//! `eval/make_tasks.py` (which also writes the stripped copy), TypeScript tasks generated here
//! with the engine's own analyzers and JSDoc comments, deterministic sampling, and the
//! stripped corpus copy that the engine and the peers index.
//!
//! It does not run or score anything (see `harness` and `score`).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use acms::index::{Language, NodeKind, ParseLimits, analyzer_for, detect_language};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result, io};
use crate::text;

/// One docstring-to-code task: the same fields `eval/make_tasks.py` prints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    /// `<corpus>/<qualified_name>@<start_line>`.
    pub id: String,
    pub corpus: String,
    /// File path relative to the corpus root, `/`-separated.
    pub path: String,
    pub qualified_name: String,
    /// 1-based first line of the function (first decorator, if any), after the doc comment.
    pub start_line: u32,
    /// 1-based last line, inclusive.
    pub end_line: u32,
    /// `[start, end)` bytes of the removed docstring / JSDoc in the original file.
    pub docstring_span: [usize; 2],
    /// Set 1: the docstring's first sentence.
    pub query_set1: String,
    /// Set 2: set 1 without words built from the name; `None` when too little would remain.
    pub query_set2: Option<String>,
    pub mentioned_idents: Vec<String>,
    #[serde(default)]
    pub mentioned_idents_set2: Vec<String>,
}

impl Task {
    /// The function's simple name (last segment of the qualified name).
    pub fn name(&self) -> &str {
        self.qualified_name
            .rsplit(['.', ':'])
            .next()
            .unwrap_or(&self.qualified_name)
    }

    /// The query of task set `set` (1 or 2), if this task has one.
    pub fn query(&self, set: u8) -> Option<&str> {
        match set {
            1 => Some(&self.query_set1),
            2 => self.query_set2.as_deref(),
            _ => None,
        }
    }

    /// The mentioned identifiers of task set `set` (what Aider is given).
    pub fn idents(&self, set: u8) -> &[String] {
        if set == 2 {
            &self.mentioned_idents_set2
        } else {
            &self.mentioned_idents
        }
    }
}

/// Defaults shared with `eval/make_tasks.py`: the issue number as seed, 150 tasks per corpus.
pub const DEFAULT_SEED: u64 = 6;
pub const DEFAULT_CAP: usize = 150;

/// Runs `eval/make_tasks.py NAME --write-stripped OUT` and parses its JSON lines; the script
/// writes `OUT/NAME/`, the corpus with the sampled docstrings removed.
pub fn python_tasks(
    repo_root: &Path,
    corpus_dir: &Path,
    name: &str,
    stripped_parent: &Path,
    seed: u64,
    cap: usize,
) -> Result<Vec<Task>> {
    let script = repo_root.join("eval/make_tasks.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(name)
        .arg("--corpus-dir")
        .arg(corpus_dir)
        .arg("--seed")
        .arg(seed.to_string())
        .arg("--cap")
        .arg(cap.to_string())
        .arg("--write-stripped")
        .arg(stripped_parent)
        .output()
        .map_err(io(&script))?;
    if !out.status.success() {
        return Err(Error::Command {
            command: format!("python3 {} {name}", script.display()),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    parse_json_lines(&String::from_utf8_lossy(&out.stdout), "make_tasks.py")
}

/// Parses one JSON value per non-empty line.
pub fn parse_json_lines<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
) -> Result<Vec<T>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).map_err(|e| Error::Json {
                origin: origin.to_string(),
                message: e.to_string(),
            })
        })
        .collect()
}

/// Counts of the TypeScript generator's filters, for the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TsStats {
    pub files: usize,
    pub functions: usize,
    pub with_jsdoc: usize,
    pub rejected: BTreeMap<String, usize>,
    pub qualifying: usize,
}

impl TsStats {
    fn reject(&mut self, why: &str) {
        *self.rejected.entry(why.to_string()).or_default() += 1;
    }
}

// Paths whose functions never make tasks (the Python generator's list plus Jest's folder).
const EXCLUDED_DIRS: &[&str] = &[
    "tests",
    "test",
    "testing",
    "docs",
    "doc",
    "examples",
    "example",
    "benchmarks",
    "__tests__",
    "node_modules",
    "dist",
];
const TS_KEYWORDS: &[&str] = &[
    "if",
    "for",
    "while",
    "switch",
    "return",
    "catch",
    "function",
    "constructor",
    "super",
];

/// Whether a corpus-relative path is a TypeScript source the generator reads.
pub fn is_ts_source(rel: &str) -> bool {
    let mut parts: Vec<&str> = rel.split('/').collect();
    let Some(file) = parts.pop() else {
        return false;
    };
    let dirs_ok = parts
        .iter()
        .all(|p| !p.starts_with('.') && !EXCLUDED_DIRS.contains(&p.to_ascii_lowercase().as_str()));
    let ts = (file.ends_with(".ts") || file.ends_with(".tsx")) && !file.ends_with(".d.ts");
    let test = [
        ".test.ts",
        ".spec.ts",
        ".test.tsx",
        ".spec.tsx",
        ".test-d.ts",
    ]
    .iter()
    .any(|s| file.ends_with(s));
    dirs_ok && ts && !test
}

/// Every regular file under `root`, relative and `/`-separated, sorted; hidden entries skipped.
pub fn list_files(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let ft = entry.file_type().map_err(io(entry.path()))?;
            let child = rel.join(&name);
            if ft.is_dir() {
                stack.push(child);
            } else if ft.is_file() {
                out.push(child.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A documented function found in one file, before sampling.
#[derive(Debug, Clone)]
struct Candidate {
    task: Task,
    sentence_key: String,
}

/// The JSDoc comment(s) immediately preceding the definition that starts at `start`, as
/// `(comment start, comment end, text of the last comment)`.
///
/// The analyzers put a definition's span start at its leading doc comment, so the usual case
/// is a span that begins with `/**`; otherwise we search backwards from `start` over
/// whitespace and `export` / `default` / `declare` keywords.
pub fn leading_jsdoc(src: &str, start: usize) -> Option<(usize, usize, &str)> {
    let is_doc = |s: &str| s.starts_with("/**") && s != "/**/";
    if src[start..].starts_with("/**") {
        let mut a = start;
        let mut last = None;
        loop {
            let rest = &src[a..];
            if !rest.starts_with("/**") {
                break;
            }
            let end = a + rest.find("*/")? + 2;
            if !is_doc(&src[a..end]) {
                break;
            }
            last = Some((a, end));
            let skip = src[end..].len() - src[end..].trim_start().len();
            a = end + skip;
        }
        let (s, e) = last?;
        return Some((start, e, &src[s..e]));
    }
    let mut head = src[..start].trim_end();
    loop {
        let before = head;
        for kw in ["export", "default", "declare"] {
            if let Some(h) = head.strip_suffix(kw)
                && h.ends_with(|c: char| c.is_whitespace())
            {
                head = h.trim_end();
            }
        }
        if head == before {
            break;
        }
    }
    let end = head.strip_suffix("*/").map(|h| h.len() + 2)?;
    let s = src[..end].rfind("/**")?;
    is_doc(&src[s..end]).then(|| (s, end, &src[s..end]))
}

/// 1-based line of byte `at`.
fn line_of(src: &str, at: usize) -> u32 {
    1 + src.as_bytes()[..at].iter().filter(|&&b| b == b'\n').count() as u32
}

fn scan_ts_file(corpus: &str, rel: &str, src: &str, stats: &mut TsStats) -> Vec<Candidate> {
    let Some(lang) = detect_language(rel, src) else {
        return Vec::new();
    };
    if !matches!(lang, Language::TypeScript | Language::Tsx) {
        return Vec::new();
    }
    let parsed = analyzer_for(lang).analyze(rel, src, &ParseLimits::default());
    let mut out = Vec::new();
    for node in &parsed.nodes {
        if !matches!(node.kind, NodeKind::Function | NodeKind::Method) {
            continue;
        }
        // Module-level functions and class methods only, as for Python: closures are rarely
        // documented and not what a user asks for.
        let parent_ok = node
            .parent
            .and_then(|p| parsed.nodes.get(p))
            .is_some_and(|p| matches!(p.kind, NodeKind::Module | NodeKind::Class));
        if !parent_ok || node.end_byte > src.len() || node.start_byte > node.end_byte {
            continue;
        }
        stats.functions += 1;
        let Some((doc_start, doc_end, comment)) = leading_jsdoc(src, node.start_byte) else {
            continue;
        };
        stats.with_jsdoc += 1;
        if TS_KEYWORDS.contains(&node.name.as_str()) {
            stats.reject("constructor / keyword");
            continue;
        }
        let code_start = doc_end.max(node.start_byte);
        let code = &src[code_start..node.end_byte.max(code_start)];
        let compact: String = code.chars().filter(|c| !c.is_whitespace()).collect();
        // No body at all (an overload signature `function f(): T;`) or an empty one.
        // (A `=>` may sit in a signature's types; only an arrow function's own is a body.)
        let arrow = compact.contains("=>") && !compact.contains("function");
        let has_body = arrow || compact.trim_end_matches(';').ends_with('}');
        if !has_body || compact.ends_with("{}") || compact.ends_with("{};") {
            stats.reject("no body beyond the docstring");
            continue;
        }
        let sentence = text::first_sentence(&text::jsdoc_body(comment));
        if let Some(why) = text::reject_sentence(&sentence, &node.name) {
            stats.reject(why);
            continue;
        }
        let skip = code.len() - code.trim_start().len();
        let start_line = line_of(src, code_start + skip);
        let set2 = text::set2_query(&sentence, &node.name);
        let task = Task {
            id: format!("{corpus}/{}@{start_line}", node.qualified_name),
            corpus: corpus.to_string(),
            path: rel.to_string(),
            qualified_name: node.qualified_name.clone(),
            start_line,
            end_line: node.end_line.max(start_line),
            docstring_span: [doc_start, doc_end],
            mentioned_idents: text::ident_mentions(&sentence),
            mentioned_idents_set2: set2
                .as_deref()
                .map(text::ident_mentions)
                .unwrap_or_default(),
            query_set2: set2,
            query_set1: sentence.clone(),
        };
        out.push(Candidate {
            task,
            sentence_key: sentence.to_lowercase(),
        });
    }
    out
}

/// Generates the TypeScript tasks of the corpus at `root`: every module-level function or
/// class method with a meaningful JSDoc first sentence, sampled deterministically.
pub fn typescript_tasks(
    corpus: &str,
    root: &Path,
    seed: u64,
    cap: usize,
) -> Result<(Vec<Task>, TsStats)> {
    let mut stats = TsStats::default();
    let mut cands = Vec::new();
    for rel in list_files(root)?.into_iter().filter(|r| is_ts_source(r)) {
        let path = root.join(&rel);
        let bytes = std::fs::read(&path).map_err(io(&path))?;
        let Ok(src) = String::from_utf8(bytes) else {
            continue;
        };
        stats.files += 1;
        cands.extend(scan_ts_file(corpus, &rel, &src, &mut stats));
    }
    // A first sentence shared by several functions makes an ambiguous task: drop them all.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for c in &cands {
        *seen.entry(c.sentence_key.clone()).or_default() += 1;
    }
    let before = cands.len();
    cands.retain(|c| seen[&c.sentence_key] == 1);
    if before > cands.len() {
        stats
            .rejected
            .insert("duplicate first sentence".into(), before - cands.len());
    }
    stats.qualifying = cands.len();
    let tasks = cands.into_iter().map(|c| c.task).collect();
    Ok((sample(tasks, &format!("{seed}:{corpus}"), cap), stats))
}

/// At most `cap` tasks chosen by a keyed hash of their ids (deterministic, independent of
/// input order), returned in (path, line) order.
pub fn sample(tasks: Vec<Task>, key: &str, cap: usize) -> Vec<Task> {
    let mut keyed: Vec<(blake3::Hash, Task)> = tasks
        .into_iter()
        .map(|t| (blake3::hash(format!("{key}:{}", t.id).as_bytes()), t))
        .collect();
    keyed.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()).then(a.1.id.cmp(&b.1.id)));
    keyed.truncate(cap);
    let mut out: Vec<Task> = keyed.into_iter().map(|(_, t)| t).collect();
    out.sort_by(|a, b| (&a.path, a.start_line).cmp(&(&b.path, b.start_line)));
    out
}

/// `src` with each `[start, end)` span replaced by the line breaks it contains, so every line
/// number of the file still holds. Overlapping or out-of-range spans are skipped.
pub fn strip_spans(src: &str, spans: &[[usize; 2]]) -> String {
    let mut spans: Vec<[usize; 2]> = spans.to_vec();
    spans.sort();
    let mut out = String::with_capacity(src.len());
    let mut at = 0;
    for [s, e] in spans {
        if s < at || e > src.len() || s > e || !src.is_char_boundary(s) || !src.is_char_boundary(e)
        {
            continue;
        }
        out.push_str(&src[at..s]);
        out.extend(src[s..e].chars().filter(|&c| c == '\n'));
        at = e;
    }
    out.push_str(&src[at..]);
    out
}

/// Writes `out` as a copy of `root` with every task's doc span removed (line-stable).
pub fn write_stripped(root: &Path, out: &Path, tasks: &[Task]) -> Result<()> {
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(io(out))?;
    }
    let mut by_file: BTreeMap<&str, Vec<[usize; 2]>> = BTreeMap::new();
    for t in tasks {
        by_file.entry(&t.path).or_default().push(t.docstring_span);
    }
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let dir = root.join(&rel);
        std::fs::create_dir_all(out.join(&rel)).map_err(io(out.join(&rel)))?;
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let ft = entry.file_type().map_err(io(entry.path()))?;
            let child = rel.join(entry.file_name());
            if ft.is_dir() {
                // Never copy the copy into itself when `out` lies inside `root`.
                if entry.path() != out {
                    stack.push(child);
                }
            } else if ft.is_file() {
                let key = child.to_string_lossy().replace('\\', "/");
                let dest = out.join(&child);
                match by_file.get(key.as_str()) {
                    Some(spans) => {
                        let src =
                            std::fs::read_to_string(entry.path()).map_err(io(entry.path()))?;
                        std::fs::write(&dest, strip_spans(&src, spans)).map_err(io(&dest))?;
                    }
                    None => {
                        std::fs::copy(entry.path(), &dest).map_err(io(&dest))?;
                    }
                }
            }
        }
    }
    Ok(())
}
