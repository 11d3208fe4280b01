//! Machinery shared by every analyzer: parsing under a timeout, line bookkeeping, rendering a
//! node from a set of kept lines (the depth-4 skeleton), doc-comment cleanup, line chunking,
//! module naming and path helpers for import resolution.
//!
//! It knows nothing about any particular grammar: the tree-sitter walker that uses these
//! pieces lives in `walker`, and the per-language node-kind tables in the language modules.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use cpu_time::ThreadTime;

use tree_sitter::{Parser, Tree};

use super::{Cost, MAX_NAME_BYTES, ParseLimits};
use crate::model::{NodeKind, ParsedFile, ParsedNode};

/// Why a parse produced no tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseFailure {
    /// The progress callback cancelled the parse after `limits.timeout`.
    Timeout,
    /// The grammar could not be loaded (an ABI mismatch); never expected in practice.
    Grammar,
}

/// Parses `source` with `grammar`, cancelling once `deadline` has passed.
pub(crate) fn parse(
    grammar: &tree_sitter::Language,
    source: &str,
    deadline: Deadline,
) -> Result<Tree, ParseFailure> {
    let mut parser = Parser::new();
    parser
        .set_language(grammar)
        .map_err(|_| ParseFailure::Grammar)?;
    let mut timed_out = false;
    let mut calls = 0u32;
    // The callback returns true to cancel; tree-sitter calls it periodically while parsing,
    // so a pathological input cannot hold an indexing worker for longer than the budget.
    // Reading a thread's CPU time is a system call: every eighth call is often enough.
    let mut progress = |_: &tree_sitter::ParseState| {
        calls = calls.wrapping_add(1);
        timed_out = timed_out || (calls.is_multiple_of(8) && deadline.passed());
        timed_out
    };
    let bytes = source.as_bytes();
    let len = bytes.len();
    let tree = parser.parse_with_options(
        &mut |i, _| if i < len { &bytes[i..] } else { &[] },
        None,
        Some(tree_sitter::ParseOptions::new().progress_callback(&mut progress)),
    );
    match tree {
        Some(tree) => Ok(tree),
        None if timed_out => Err(ParseFailure::Timeout),
        // Without a timeout, tree-sitter only returns None when it has no language.
        None => Err(ParseFailure::Timeout),
    }
}

/// When a file's analysis must stop: `limits.timeout` of the analysing thread's CPU time, so
/// other work on the same cores does not turn a file into line chunks that an idle machine
/// parses (the index of a file depends on the file, not on the machine's load); wall-clock
/// time where a thread's CPU time cannot be read. Checked on the thread that made it: the
/// parse, the walk and the queries of one file run on one worker.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Deadline {
    /// The thread's CPU time by which the analysis must be done.
    Cpu(Duration),
    Wall(Instant),
}

impl Deadline {
    /// True once the budget is spent.
    pub fn passed(&self) -> bool {
        match self {
            Deadline::Cpu(end) => ThreadTime::try_now().map_or(true, |t| t.as_duration() >= *end),
            Deadline::Wall(end) => Instant::now() >= *end,
        }
    }
}

/// The deadline of an analysis starting now: parsing and the walk that follows share one
/// `limits.timeout`.
pub(crate) fn deadline(limits: &ParseLimits) -> Deadline {
    match ThreadTime::try_now() {
        Ok(t) => Deadline::Cpu(t.as_duration().saturating_add(limits.timeout)),
        Err(_) => {
            let now = Instant::now();
            Deadline::Wall(
                now.checked_add(limits.timeout)
                    .unwrap_or_else(|| now + Duration::from_secs(86_400)),
            )
        }
    }
}

/// Checks the deadline every 4096 calls: cheap enough for a per-node call in a walk.
pub(crate) struct Clock {
    deadline: Deadline,
    ticks: u32,
}

impl Clock {
    pub fn new(deadline: Deadline) -> Clock {
        Clock { deadline, ticks: 0 }
    }

    /// True once the deadline has passed (checked on every 4096th call).
    pub fn expired(&mut self) -> bool {
        self.ticks = self.ticks.wrapping_add(1);
        self.ticks.is_multiple_of(4096) && self.deadline.passed()
    }
}

/// The warning added when a parse hit the timeout.
pub(crate) fn timeout_warning(limits: &ParseLimits) -> String {
    format!(
        "parse exceeded the {} ms timeout; indexed as line chunks",
        limits.timeout.as_millis()
    )
}

/// Line starts of a source text, for byte → line lookups and line slicing.
pub(crate) struct Lines<'s> {
    pub src: &'s str,
    starts: Vec<usize>,
}

impl<'s> Lines<'s> {
    pub fn new(src: &'s str) -> Self {
        let mut starts = vec![0];
        starts.extend(src.match_indices('\n').map(|(i, _)| i + 1));
        // A trailing newline does not open a new (empty) line.
        if starts.len() > 1 && starts.last() == Some(&src.len()) {
            starts.pop();
        }
        Lines { src, starts }
    }

    pub fn count(&self) -> usize {
        self.starts.len()
    }

    /// 0-based line containing byte `b` (clamped to the text).
    pub fn line_of(&self, b: usize) -> usize {
        match self.starts.binary_search(&b) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        }
    }

    /// 0-based line of the last byte of `[start, end)` (the start line when empty).
    pub fn last_line(&self, start: usize, end: usize) -> usize {
        if end > start {
            self.line_of(end - 1)
        } else {
            self.line_of(start)
        }
    }

    pub fn start(&self, line: usize) -> usize {
        self.starts.get(line).copied().unwrap_or(self.src.len())
    }

    /// Text of a line without its terminator (`\n` or `\r\n`).
    pub fn text(&self, line: usize) -> &'s str {
        let a = self.start(line);
        let b = self.start(line + 1).min(self.src.len());
        let t = &self.src[a..b];
        let t = t.strip_suffix('\n').unwrap_or(t);
        t.strip_suffix('\r').unwrap_or(t)
    }
}

/// The lines a rendering keeps. Ranges are added in (mostly) ascending order during a walk;
/// a range that overlaps the previous one only adds its new lines, so nested headers that span
/// the same lines (an `if` whose condition holds another `if`) cost their length once, not
/// once per level.
#[derive(Debug, Default, Clone)]
pub(crate) struct LineSet {
    pub set: BTreeSet<usize>,
    last: Option<(usize, usize)>,
}

impl LineSet {
    pub fn insert(&mut self, l: usize) {
        self.set.insert(l);
    }

    pub fn extend(&mut self, lines: impl IntoIterator<Item = usize>) {
        self.set.extend(lines);
    }

    /// Adds lines `a..=b`.
    pub fn insert_range(&mut self, a: usize, b: usize) {
        if b < a {
            return;
        }
        match self.last {
            Some((lo, hi)) if a >= lo && b <= hi => {}
            Some((lo, hi)) if a >= lo && a <= hi.saturating_add(1) => {
                self.set.extend(hi + 1..=b);
                self.last = Some((lo, b));
            }
            _ => {
                self.set.extend(a..=b);
                self.last = Some((a, b));
            }
        }
    }
}

/// Largest char boundary `<= i` in `s`.
fn floor_char(s: &str, i: usize) -> usize {
    let mut i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// `s[a..b]`, clamped to char boundaries so recovery trees can never make us panic.
pub(crate) fn slice(s: &str, a: usize, b: usize) -> &str {
    let a = floor_char(s, a);
    let b = floor_char(s, b).max(a);
    &s[a..b]
}

/// Removes up to `col` leading whitespace characters.
fn strip_indent(line: &str, col: usize) -> &str {
    let n = line
        .char_indices()
        .take(col)
        .take_while(|(_, c)| *c == ' ' || *c == '\t')
        .count();
    &line[n..]
}

/// `src[a..b]` with every line after the first de-indented by the column of `a`, trailing
/// whitespace trimmed, and `\r` dropped: renderings start at column 0 whatever the nesting.
pub(crate) fn dedent_slice(lines: &Lines, a: usize, b: usize) -> String {
    let a = floor_char(lines.src, a);
    block_at(lines, a, b, a - lines.start(lines.line_of(a)))
}

/// `src[a..b]` laid out relative to column `base`: the first line is indented by its own
/// column minus `base`, later lines lose up to `base` leading whitespace characters.
pub(crate) fn block_at(lines: &Lines, a: usize, b: usize, base: usize) -> String {
    let src = lines.src;
    let a = floor_char(src, a);
    let col = a - lines.start(lines.line_of(a));
    let mut out = " ".repeat(col.saturating_sub(base));
    for (i, line) in slice(src, a, b).split('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if i > 0 {
            out.push('\n');
            out.push_str(strip_indent(line, base).trim_end());
        } else {
            out.push_str(line.trim_end());
        }
    }
    out.trim_end().to_string()
}

/// `text` with the indentation common to all its non-blank lines removed, or `None` when
/// there is none.
pub(crate) fn dedent_all(text: &str) -> Option<String> {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()?;
    if indent == 0 {
        return None;
    }
    let out: Vec<&str> = text
        .split('\n')
        .map(|l| {
            l.get(indent..)
                .filter(|_| !l.trim().is_empty())
                .unwrap_or(l.trim_start_matches([' ', '\t']))
        })
        .collect();
    Some(out.join("\n"))
}

/// For each 0-based line, the first line at or after it that holds code: not blank and not
/// `neutral` (comment-only). One entry past the end holds `lines.count()`. Rendering uses it to
/// decide in O(1) whether a run of elided lines needs a `...` marker, which keeps skeletons of
/// deeply nested definitions linear in what they keep rather than in their span.
pub(crate) fn next_code_lines(lines: &Lines, neutral: &dyn Fn(usize) -> bool) -> Vec<usize> {
    let n = lines.count();
    let mut next = vec![n; n + 1];
    for l in (0..n).rev() {
        next[l] = if !lines.text(l).trim().is_empty() && !neutral(l) {
            l
        } else {
            next[l + 1]
        };
    }
    next
}

/// Renders `[a, b)` keeping only the 0-based lines in `kept`; every run of elided lines that
/// holds some code becomes one `...` marker at the indentation of its first code line. Blank
/// and comment-only lines (per `next_code`, from [`next_code_lines`]) never cause a marker.
pub(crate) fn render_kept(
    lines: &Lines,
    a: usize,
    b: usize,
    kept: &BTreeSet<usize>,
    next_code: &[usize],
) -> String {
    let src = lines.src;
    let a = floor_char(src, a);
    let b = floor_char(src, b).max(a);
    let first = lines.line_of(a);
    let last = lines.last_line(a, b);
    let col = a - lines.start(first);
    let line = |l: usize| -> &str {
        let ls = lines.start(l).max(a);
        let le = (lines.start(l) + lines.text(l).len()).min(b).max(ls);
        let text = &src[floor_char(src, ls)..floor_char(src, le)];
        let text = text.strip_suffix('\r').unwrap_or(text);
        if l > first {
            strip_indent(text, col)
        } else {
            text
        }
    };
    let mut out: Vec<String> = Vec::new();
    // Emits a marker when the elided run [from, to) holds code.
    let gap = |out: &mut Vec<String>, from: usize, to: usize| {
        let c = next_code.get(from).copied().unwrap_or(usize::MAX);
        if c < to {
            let indent: String = line(c).chars().take_while(|c| c.is_whitespace()).collect();
            out.push(format!("{indent}..."));
        }
    };
    let mut cursor = first;
    for &k in kept.range(first..=last) {
        gap(&mut out, cursor, k);
        out.push(line(k).trim_end().to_string());
        cursor = k + 1;
    }
    gap(&mut out, cursor, last + 1);
    out.join("\n")
}

/// True for a line made only of closing punctuation (`}`, `});`, `]`), which a brace language
/// needs to keep so a skeleton still reads as balanced code.
pub(crate) fn is_closing_line(text: &str) -> bool {
    let t = text.trim();
    !t.is_empty() && t.chars().all(|c| matches!(c, '}' | ')' | ']' | ';' | ','))
}

/// Cleans a `///`, `//!`, `/** */` or `/* */` comment (one or several, joined by newlines)
/// down to its prose.
pub(crate) fn clean_comment(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut in_block = false;
    for raw in text.lines() {
        let mut l = raw.trim();
        if !in_block {
            if let Some(rest) = l.strip_prefix("/*") {
                in_block = true;
                l = rest.trim_start_matches(['*', '!']);
            } else {
                l = l.trim_start_matches('/').trim_start_matches('!');
                out.push(l.strip_prefix(' ').unwrap_or(l).trim_end().to_string());
                continue;
            }
        } else if let Some(rest) = l.strip_prefix('*')
            && !rest.starts_with('/')
        {
            l = rest;
        }
        if let Some(before) = l.strip_suffix("*/") {
            in_block = false;
            l = before.trim_end_matches('*');
        }
        out.push(l.strip_prefix(' ').unwrap_or(l).trim_end().to_string());
    }
    trim_blank_lines(out)
}

/// Cleans a Python string literal used as a docstring: drops the prefix and quotes, then
/// dedents like `inspect.cleandoc`.
pub(crate) fn clean_docstring(text: &str) -> String {
    let t = text.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let body = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| t.strip_prefix(q).map(|r| r.strip_suffix(q).unwrap_or(r)))
        .unwrap_or(t);
    let mut lines: Vec<&str> = body.lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let first = lines.remove(0).trim().to_string();
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = vec![first];
    out.extend(lines.iter().map(|l| {
        let l = l.trim_end();
        l.get(indent..).unwrap_or(l.trim_start()).to_string()
    }));
    trim_blank_lines(out)
}

fn trim_blank_lines(mut lines: Vec<String>) -> String {
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let start = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    lines[start..].join("\n")
}

/// File name without its directory and final extension (`app` for `src/app.ts`).
pub(crate) fn file_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

/// Path without its final extension (`src/app` for `src/app.ts`).
pub(crate) fn strip_ext(path: &str) -> &str {
    let stem_len = file_stem(path).len();
    let dir_len = path.rfind('/').map_or(0, |i| i + 1);
    &path[..dir_len + stem_len]
}

/// Directory part of a `/`-separated path (`""` at the top).
pub(crate) fn dirname(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// Joins and normalizes `dir` + `rel` (`.` and `..` segments); `None` when it escapes the root.
pub(crate) fn join(dir: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in rel.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// The first of `candidates` that exists.
pub(crate) fn first_existing(
    candidates: impl IntoIterator<Item = String>,
    exists: &dyn Fn(&str) -> bool,
) -> Option<String> {
    candidates.into_iter().find(|c| !c.is_empty() && exists(c))
}

/// The file a dotted package path names (`a.b.C` → `<root>/a/b/C.<ext>`, Java, Kotlin, Scala),
/// trying every directory above the importing file as the source root (the deepest that holds
/// the target wins) and, for `a.b.C.method` or `a.b.C.Inner`, the shorter paths too. When no
/// file matches, the package directory of at least two segments it names (`a.b` of
/// `import a.b.*`, or Kotlin's `a.b.topLevelFunction` → `<root>/a/b/`): the files there are
/// what the import brings in.
pub(crate) fn package_file(
    from_path: &str,
    module: &str,
    extensions: &[&str],
    exists: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let segs: Vec<&str> = module.split('.').filter(|s| !s.is_empty()).collect();
    let mut roots = Vec::new();
    let mut d = dirname(from_path);
    loop {
        roots.push(d.to_string());
        if d.is_empty() {
            break;
        }
        d = dirname(d);
    }
    let under = |root: &str, rel: &str| {
        if root.is_empty() {
            rel.to_string()
        } else {
            format!("{root}/{rel}")
        }
    };
    let mut candidates = Vec::new();
    for n in (1..=segs.len()).rev() {
        let rel = segs[..n].join("/");
        for root in &roots {
            for ext in extensions {
                candidates.push(under(root, &format!("{rel}.{ext}")));
            }
        }
    }
    // The package itself (`a.b` of `import a.b.*`), or the package of a lower-case member
    // (`a.b.topLevelFunction`); a capitalized last segment names a type, whose file is the
    // only answer (in another module, when not here).
    let member = segs
        .last()
        .is_some_and(|s| s.starts_with(|c: char| c.is_lowercase()));
    let packages = [Some(segs.len()), member.then(|| segs.len() - 1)];
    for n in packages.into_iter().flatten().filter(|&n| n >= 2) {
        let rel = segs[..n].join("/");
        for root in &roots {
            candidates.push(under(root, &format!("{rel}/")));
        }
    }
    first_existing(candidates, exists)
}

/// The source root and package directory of a file in a Gradle or Maven source set, by the
/// last `src/<set>/<java|kotlin|scala>/` of its directory: `okio/src/jvmMain/kotlin/` and
/// `okio/` for `okio/src/jvmMain/kotlin/okio/Okio.kt`. `None` outside such a layout and for
/// the default package (a file directly in the root).
pub(crate) fn source_set(path: &str) -> Option<(&str, &str)> {
    let dir = dirname(path);
    let root_end = std::iter::once(0)
        .chain(dir.match_indices('/').map(|(i, _)| i + 1))
        .filter_map(|start| {
            let rest: Vec<&str> = dir[start..].splitn(4, '/').collect();
            let is_root = rest.len() == 4
                && rest[0] == "src"
                && matches!(rest[2], "java" | "kotlin" | "scala");
            is_root.then(|| start + rest[..3].iter().map(|s| s.len() + 1).sum::<usize>())
        })
        .max()?;
    Some((&path[..root_end], &path[root_end..=dir.len()]))
}

/// Most files one dotted import may name in other source roots: Kotlin's `expect` declaration
/// and its `actual`s (`commonMain`, `jvmMain`, `nativeMain`…) are one declaration to a reader;
/// a name found in more places than this is too common to say which one is meant.
const MAX_SOURCE_ROOTS: usize = 6;

/// The files a dotted package path names in any source root of the repository (another
/// Gradle or Maven module, whose root no directory above the importing file is): for the
/// longest prefix of at least two segments that matches, the files `files_with_stem` gives for
/// its last segment whose path ends in the prefix (`okio.FileMetadata` →
/// `…/okio/FileMetadata.kt`). At most [`MAX_SOURCE_ROOTS`] of them, or none.
pub(crate) fn package_file_anywhere(
    module: &str,
    extensions: &[&str],
    files_with_stem: &dyn Fn(&str) -> Vec<String>,
) -> Vec<String> {
    let segs: Vec<&str> = module.split('.').filter(|s| !s.is_empty()).collect();
    for n in (2..=segs.len()).rev() {
        let stem = segs[n - 1];
        let dir = segs[..n - 1].join("/");
        let names_it = |path: &str| {
            extensions.iter().any(|ext| {
                let rel = format!("{dir}/{stem}.{ext}");
                path.strip_suffix(rel.as_str())
                    .is_some_and(|above| above.is_empty() || above.ends_with('/'))
            })
        };
        let found: Vec<String> = files_with_stem(stem)
            .into_iter()
            .filter(|p| names_it(p))
            .collect();
        if !found.is_empty() {
            return if found.len() <= MAX_SOURCE_ROOTS {
                found
            } else {
                Vec::new()
            };
        }
    }
    Vec::new()
}

/// `name` with control characters escaped (a name shows in one-line fragment headers) and cut
/// to [`MAX_NAME_BYTES`] on a char boundary, so names stay linear in the nesting that builds
/// them.
pub(crate) fn clean_name(name: String) -> String {
    let needs_escape = name
        .chars()
        .any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}');
    let mut name = if needs_escape {
        let mut out = String::with_capacity(name.len() + 8);
        crate::escape::push_escaped(&mut out, &name);
        out
    } else {
        name
    };
    if name.len() > MAX_NAME_BYTES {
        let cut = floor_char(&name, MAX_NAME_BYTES - 3);
        name.truncate(cut);
        name.push_str("...");
    }
    name
}

/// Builds a node from a span; line numbers and char boundaries are derived here so every
/// analyzer upholds the same span invariants.
#[allow(clippy::too_many_arguments)]
pub(crate) fn make_node(
    lines: &Lines,
    kind: NodeKind,
    name: String,
    qualified_name: String,
    parent: Option<usize>,
    start: usize,
    end: usize,
    signature: String,
    doc: Option<String>,
    with_doc: String,
    skeleton: String,
) -> ParsedNode {
    let start = floor_char(lines.src, start);
    let end = floor_char(lines.src, end).max(start);
    ParsedNode {
        kind,
        name: clean_name(name),
        qualified_name: clean_name(qualified_name),
        parent,
        start_line: lines.line_of(start) as u32 + 1,
        end_line: lines.last_line(start, end) as u32 + 1,
        start_byte: start,
        end_byte: end,
        signature,
        doc,
        with_doc,
        skeleton,
    }
}

/// The module node for a file whose renderings are computed by the caller.
pub(crate) fn module_node(
    lines: &Lines,
    path: &str,
    qualified_name: String,
    signature: String,
    doc: Option<String>,
    with_doc: String,
    skeleton: String,
) -> ParsedNode {
    make_node(
        lines,
        NodeKind::Module,
        file_stem(path).to_string(),
        qualified_name,
        None,
        0,
        lines.src.len(),
        signature,
        doc,
        with_doc,
        skeleton,
    )
}

/// Line-based chunks of `limits.chunk_lines` lines under a module node: the plain-text
/// analyzer, and the fallback when a parse times out.
pub(crate) fn chunk_file(
    path: &str,
    source: &str,
    qualified_name: String,
    limits: &ParseLimits,
) -> ParsedFile {
    let lines = Lines::new(source);
    let per = limits.chunk_lines.max(1);
    let first_line = (0..lines.count())
        .map(|l| lines.text(l).trim())
        .find(|t| !t.is_empty())
        .map(|t| truncate_chars(t, 120));
    let signature = first_line.clone().unwrap_or_else(|| path.to_string());
    let mut nodes = vec![module_node(
        &lines,
        path,
        qualified_name.clone(),
        signature.clone(),
        None,
        signature.clone(),
        String::new(),
    )];
    if source.trim().is_empty() {
        nodes[0].skeleton = signature;
        return ParsedFile {
            nodes,
            ..ParsedFile::default()
        };
    }
    let mut chunk_sigs = Vec::new();
    let mut l = 0;
    while l < lines.count() {
        let last = (l + per).min(lines.count()) - 1;
        if let Some(chunk) = line_chunk(&lines, &qualified_name, l, last) {
            chunk_sigs.push(chunk.signature.clone());
            nodes.push(chunk);
        }
        l = last + 1;
    }
    nodes[0].skeleton = chunk_sigs.join("\n...\n");
    ParsedFile {
        nodes,
        ..ParsedFile::default()
    }
}

/// Lines `first..=last` (0-based) as a chunk under the module `module` (node 0), signed by
/// its first non-blank line; `None` when they are all blank.
fn line_chunk(lines: &Lines, module: &str, first: usize, last: usize) -> Option<ParsedNode> {
    let sig = (first..=last)
        .map(|i| lines.text(i).trim())
        .find(|t| !t.is_empty())
        .map(|t| truncate_chars(t, 120))?;
    let end = lines.start(last + 1).min(lines.src.len());
    Some(make_node(
        lines,
        NodeKind::Chunk,
        format!("lines {}-{}", first + 1, last + 1),
        format!("{module}:{}-{}", first + 1, last + 1),
        Some(0),
        lines.start(first),
        end,
        sig.clone(),
        None,
        sig,
        chunk_skeleton(lines, first, last),
    ))
}

/// Chunks of at most `limits.chunk_lines` lines over the code outside `file`'s top-level
/// definitions: in a script, that code is the program (the argument loop, the dispatch),
/// which the module's renderings show only whole.
pub(crate) fn add_top_level_chunks(file: &mut ParsedFile, source: &str, limits: &ParseLimits) {
    let lines = Lines::new(source);
    let count = lines.count();
    let mut covered = vec![false; count];
    for n in file.nodes.iter().filter(|n| n.parent == Some(0)) {
        let (a, b) = (
            (n.start_line as usize).saturating_sub(1),
            n.end_line as usize,
        );
        covered[a.min(count)..b.min(count)].fill(true);
    }
    let module = file.nodes[0].qualified_name.clone();
    let per = limits.chunk_lines.max(1);
    let mut l = 0;
    while l < count {
        if covered[l] || lines.text(l).trim().is_empty() {
            l += 1;
            continue;
        }
        let mut last = l;
        while last + 1 < count && !covered[last + 1] && last + 1 - l < per {
            last += 1;
        }
        // A run ends at its last non-blank line.
        while lines.text(last).trim().is_empty() {
            last -= 1;
        }
        file.nodes.extend(line_chunk(&lines, &module, l, last));
        l = last + 1;
    }
}

/// `file` when its [`Cost`] is within the linear bound for `source`; otherwise line chunks,
/// with a warning that says what was kept. Chunks always fit (their spans are disjoint and
/// their renderings are cut from their own lines), which the fuzz targets check.
pub(crate) fn bounded(
    file: ParsedFile,
    path: &str,
    source: &str,
    qualified_name: String,
    limits: &ParseLimits,
) -> ParsedFile {
    let cost = Cost::of(&file);
    if cost.within(source.len()) {
        return file;
    }
    let mut chunks = chunk_file(path, source, qualified_name, limits);
    chunks.warnings.push(format!(
        "analysis would store {} bytes for a {}-byte file (limit {}); indexed as {} line chunks",
        cost.total(),
        source.len(),
        Cost::limit(source.len()),
        chunks.nodes.len() - 1
    ));
    chunks
}

/// The first few non-blank lines of a chunk, then a marker: a chunk has no structure to
/// outline, so depth 4 is its opening.
fn chunk_skeleton(lines: &Lines, first: usize, last: usize) -> String {
    const HEAD: usize = 8;
    let body: Vec<&str> = (first..=last)
        .map(|l| lines.text(l).trim_end())
        .filter(|t| !t.trim().is_empty())
        .collect();
    let mut out: Vec<String> = body.iter().take(HEAD).map(|s| s.to_string()).collect();
    if body.len() > HEAD {
        out.push("...".to_string());
    }
    out.join("\n")
}

pub(crate) fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

/// Names too common to be worth a reference edge: builtins, keywords, std types. Sorted
/// (bytewise) for binary search.
const NOISE: &[&str] = &[
    "Arc",
    "Array",
    "Boolean",
    "Box",
    "Cell",
    "Clone",
    "Copy",
    "Debug",
    "Default",
    "Display",
    "Drop",
    "Eq",
    "Err",
    "Error",
    "Exception",
    "False",
    "Fn",
    "FnMut",
    "FnOnce",
    "From",
    "Hash",
    "HashMap",
    "HashSet",
    "Integer",
    "Into",
    "Iterator",
    "JSON",
    "List",
    "Map",
    "Math",
    "None",
    "Number",
    "Object",
    "Ok",
    "Option",
    "Ord",
    "Override",
    "PartialEq",
    "PartialOrd",
    "Promise",
    "Rc",
    "RefCell",
    "Result",
    "Self",
    "Send",
    "Set",
    "Sized",
    "Some",
    "String",
    "Sync",
    "System",
    "True",
    "Vec",
    "abs",
    "afterAll",
    "afterEach",
    "all",
    "any",
    "append",
    "as_mut",
    "as_ptr",
    "as_ref",
    "as_str",
    "assert",
    "assert_eq",
    "assert_ne",
    "bail",
    "beforeAll",
    "beforeEach",
    "bool",
    "boolean",
    "cast",
    "catch",
    "clone",
    "cloned",
    "collect",
    "console",
    "contains",
    "copied",
    "debug_assert",
    "describe",
    "dict",
    "endswith",
    "entries",
    "enumerate",
    "eprintln",
    "equals",
    "expect",
    "extend",
    "filter",
    "filter_map",
    "float",
    "forEach",
    "format",
    "get",
    "getattr",
    "hasattr",
    "hashCode",
    "includes",
    "insert",
    "int",
    "into",
    "into_iter",
    "is_empty",
    "is_none",
    "is_null",
    "is_some",
    "isinstance",
    "it",
    "items",
    "iter",
    "iter_mut",
    "join",
    "keys",
    "len",
    "length",
    "list",
    "log",
    "map",
    "map_err",
    "map_or",
    "max",
    "min",
    "new",
    "next",
    "number",
    "object",
    "ok",
    "ok_or",
    "open",
    "panic",
    "peek",
    "pop",
    "print",
    "println",
    "push",
    "range",
    "remove",
    "replace",
    "repr",
    "require",
    "self",
    "set",
    "setattr",
    "size",
    "slice",
    "sorted",
    "split",
    "startswith",
    "str",
    "string",
    "strip",
    "sum",
    "super",
    "test",
    "then",
    "then_some",
    "this",
    "toBe",
    "toEqual",
    "toString",
    "to_owned",
    "to_str",
    "to_string",
    "trim",
    "tuple",
    "type",
    "undefined",
    "unreachable",
    "unwrap",
    "unwrap_or",
    "unwrap_or_default",
    "unwrap_or_else",
    "update",
    "values",
    "vec",
    "void",
    "write",
    "writeln",
    "zip",
];

/// True for names not worth a reference edge (see `NOISE`) and one-letter names, which are
/// almost always generic parameters or loop variables.
pub(crate) fn is_noise_name(name: &str) -> bool {
    name.chars().count() < 2 || NOISE.binary_search(&name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_list_is_sorted_for_binary_search() {
        // `is_noise_name` relies on the list being sorted.
        assert!(NOISE.windows(2).all(|w| w[0] < w[1]));
        for p in NOISE {
            assert!(is_noise_name(p), "{p}");
        }
        assert!(!is_noise_name("make_response"));
    }

    fn check_comment(input: &str, expected: &str) {
        assert_eq!(clean_comment(input), expected, "{input:?}");
    }

    #[test]
    fn comments_are_cleaned() {
        check_comment("/// Adds.\n/// More.", "Adds.\nMore.");
        check_comment("//! Crate doc.", "Crate doc.");
        check_comment("/** One line. */", "One line.");
        check_comment("/**\n * Two\n * lines.\n */", "Two\nlines.");
        check_comment("/**\n   No stars\n */", "No stars");
    }

    fn check_docstring(input: &str, expected: &str) {
        assert_eq!(clean_docstring(input), expected, "{input:?}");
    }

    #[test]
    fn docstrings_are_cleaned() {
        check_docstring("\"\"\"Short.\"\"\"", "Short.");
        check_docstring("r'''Raw.'''", "Raw.");
        check_docstring(
            "\"\"\"Title.\n\n    Body line.\n      Indented.\n    \"\"\"",
            "Title.\n\nBody line.\n  Indented.",
        );
    }

    #[test]
    fn paths_join_and_strip() {
        assert_eq!(join("a/b", "../c").as_deref(), Some("a/c"));
        assert_eq!(join("a", "../../c"), None);
        assert_eq!(file_stem("src/app.test.ts"), "app.test");
        assert_eq!(strip_ext("src/app.ts"), "src/app");
        assert_eq!(strip_ext("Makefile"), "Makefile");
        assert_eq!(dirname("a/b/c.py"), "a/b");
    }

    #[test]
    fn kept_lines_render_with_collapsed_markers() {
        let src = "fn f() {\n    a();\n    b();\n\n    if x {\n        c();\n    }\n}\n";
        let lines = Lines::new(src);
        let kept: BTreeSet<usize> = [0, 4, 6, 7].into_iter().collect();
        let next = next_code_lines(&lines, &|_| false);
        let out = render_kept(&lines, 0, src.len(), &kept, &next);
        assert_eq!(out, "fn f() {\n    ...\n    if x {\n        ...\n    }\n}");
    }
}
