//! Session facts extracted from the conversation itself, with no model call: user requests,
//! files touched, errors and what followed them (the most recent one verbatim), tool usage
//! counts, the current state, and the files read most recently. Tier 2 renders them as its
//! summary, the deterministic summarizer as nine sections, and restoration re-injects the
//! recent files.
//!
//! Tool semantics are inferred from names and argument keys (`path`, `file_path`, ...), since
//! transcripts carry no schema; an unrecognized tool is still counted. A text-only agent
//! (mini-swe-agent, SWE-agent without function calling) writes its command in a fenced block
//! or a `<command>` element and gets the output back as a user message: such a reply is read
//! for errors as a tool result would be.
//!
//! An error is what a command reported — a traceback, a line stating an error from its first
//! column, a failing test, a non-zero exit, a result the transcript flags — never a line of a
//! file a call printed (`cat`, `sed -n`, a read tool): source code names exceptions all the
//! time.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::model::{Message, Role, ToolCall, call_of, is_cleared};

/// How a tool call touched a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    Other,
    Read,
    Write,
}

/// One error seen in a tool result, and the assistant's next words after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorFact {
    pub tool: String,
    /// The command that failed (its first line, at most 100 characters), when known.
    pub command: Option<String>,
    pub first_line: String,
    pub followed_by: Option<String>,
    /// The result's error lines, verbatim (trimmed, at most 200 characters each).
    pub lines: Vec<String>,
    /// Traceback frames as `path:line in function`.
    pub frames: Vec<String>,
    /// How it failed (the last exception line, else the last test status line), verbatim
    /// up to 1000 characters (a longer one ends in ` […]`).
    pub last_line: Option<String>,
}

/// What the summary tiers know about a span of conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFacts {
    /// Every user request, verbatim, oldest first.
    pub user_requests: Vec<String>,
    /// Files touched, in order of last access, with the strongest access seen (write > read).
    pub files: Vec<(String, Access)>,
    pub errors: Vec<ErrorFact>,
    pub tool_counts: BTreeMap<String, usize>,
    /// The last assistant text.
    pub current_state: Option<String>,
    /// Files written, with the functions and classes the writing call defines.
    pub edits: Vec<(String, Vec<String>)>,
    /// Commands that ran tests, verbatim (first 200 characters).
    pub tests_run: Vec<String>,
    /// Tests reported failing.
    pub failing_tests: Vec<String>,
}

/// A file's content as last returned by a read-like tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    pub path: String,
    pub content: String,
}

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "filename",
    "file",
    "target_file",
    "notebook_path",
];

/// The file a tool call names, if any.
pub fn call_path(call: &ToolCall) -> Option<String> {
    let v: Value = serde_json::from_str(&call.arguments).ok()?;
    PATH_KEYS
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
        .map(str::to_string)
}

/// Keys whose string value is a shell command or script.
const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "input", "code"];

/// The shell command or script a tool call runs, if its arguments carry one.
pub fn call_command(call: &ToolCall) -> Option<String> {
    let v: Value = serde_json::from_str(&call.arguments).ok()?;
    COMMAND_KEYS
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .filter(|c| !c.trim().is_empty())
        .map(str::to_string)
}

/// File extensions that make a bare word a file name.
const FILE_EXTENSIONS: &[&str] = &[
    "py", "rs", "js", "ts", "tsx", "jsx", "java", "go", "c", "h", "cc", "cpp", "rb", "toml", "cfg",
    "ini", "json", "yaml", "yml", "txt", "md", "rst", "sh", "html", "css",
];

/// Words of a command that name files: containing `/` with a dotted last segment, or ending
/// in a known extension. Shell quoting and punctuation are stripped.
fn command_paths(command: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in command.split(|c: char| {
        c.is_whitespace()
            || matches!(
                c,
                '\'' | '"'
                    | '`'
                    | '<'
                    | '>'
                    | '|'
                    | ';'
                    | '&'
                    | '('
                    | ')'
                    | '='
                    | ','
                    | ':'
                    | '['
                    | ']'
                    | '{'
                    | '}'
            )
    }) {
        let w = word.trim_end_matches(['.', '!', '?']);
        if w.len() < 3 || w.len() > 200 || w.contains("://") {
            continue;
        }
        let last = w.rsplit('/').next().unwrap_or(w);
        let ext = last.rsplit_once('.');
        let named = match ext {
            Some((stem, e)) if !stem.is_empty() => {
                (w.contains('/')
                    && e.len() <= 5
                    && e.chars().all(|c| c.is_ascii_alphanumeric())
                    && e.chars().next().is_some_and(|c| c.is_ascii_alphabetic()))
                    || FILE_EXTENSIONS.contains(&e)
            }
            _ => false,
        };
        if named && !out.iter().any(|p| p == w) {
            out.push(w.to_string());
        }
        if out.len() >= 24 {
            break;
        }
    }
    out
}

/// Words in a command that mean it writes files.
const COMMAND_WRITES: &[&str] = &[
    "sed -i",
    ">",
    "tee ",
    "patch",
    "git apply",
    "mv ",
    "cp ",
    "rm ",
    "str_replace",
    "create",
    "insert",
];

/// How a command touches the files it names.
fn command_access(command: &str) -> Access {
    let lower = command.to_ascii_lowercase();
    if COMMAND_WRITES.iter().any(|w| lower.contains(w)) {
        Access::Write
    } else {
        Access::Read
    }
}

/// Functions and classes a text defines (`def f`, `class C`, `fn f`, `function f`),
/// anywhere on a line (one-line scripts define them too).
fn definitions(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    for pair in words.windows(2) {
        if matches!(pair[0], "def" | "class" | "fn" | "function")
            && pair[1].starts_with(|c: char| c.is_alphabetic() || c == '_')
            && !out.iter().any(|d| d == pair[1])
        {
            out.push(pair[1].to_string());
        }
    }
    out
}

/// What an error line states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ErrorKind {
    /// `FooWarning: …`: reported, but not a failure.
    Warning,
    /// A test's status (`FAILED …`, `FAIL: …`, `ERROR: …`, `test result: FAILED`, pytest's
    /// `E   assert …`).
    Status,
    /// The failure itself: `FooError: …` / `FooException`, `error: …` / `error[E0…]`, a
    /// panic, pytest's `E   FooError…`.
    Exception,
}

/// What a line states from its first column, if it states an error. An indented line is
/// code or a quote (a docstring's `Raises:` list, a diff's context), not what a command
/// reported.
fn error_kind(line: &str) -> Option<ErrorKind> {
    if line.starts_with(char::is_whitespace) {
        return None;
    }
    let t = line.trim_end();
    if t.is_empty() {
        return None;
    }
    if t.contains("panicked at ") {
        return Some(ErrorKind::Exception);
    }
    // Case-insensitive `error:` / `error[` without lowercasing the line.
    let b = t.as_bytes();
    if b.len() >= 6 && b[..5].eq_ignore_ascii_case(b"error") && matches!(b[5], b':' | b'[') {
        return Some(ErrorKind::Exception);
    }
    if let Some(rest) = t.strip_prefix("E  ") {
        let exception = rest.contains("Error") || rest.contains("Exception");
        return Some(if exception {
            ErrorKind::Exception
        } else {
            ErrorKind::Status
        });
    }
    if t.starts_with("FAILED ")
        || t.starts_with("FAIL: ")
        || t.starts_with("ERROR: ")
        || t.starts_with("test result: FAILED")
    {
        return Some(ErrorKind::Status);
    }
    // An identifier (dotted) ending in Error/Exception/Warning, then `:` or the end.
    let ident = exception_name(t)?;
    if ident.ends_with("Error") || ident.ends_with("Exception") {
        Some(ErrorKind::Exception)
    } else if ident.ends_with("Warning") {
        Some(ErrorKind::Warning)
    } else {
        None
    }
}

/// The dotted identifier `t` starts with (possibly empty), when `:` or the end follows it:
/// how an exception line begins (`httpx.ReadTimeout: timed out`).
fn exception_name(t: &str) -> Option<&str> {
    let end = t
        .char_indices()
        .find(|(_, c)| !(c.is_alphanumeric() || *c == '_' || *c == '.'))
        .map_or(t.len(), |(i, _)| i);
    let rest = &t[end..];
    (rest.is_empty() || rest.starts_with(':')).then_some(&t[..end])
}

/// What each line of `text` states, if it states an error ([`error_kind`]); the line that
/// ends a Python traceback (the first one at the first column after the frames) states an
/// exception whatever its name (`httpx.ReadTimeout: timed out`, `KeyboardInterrupt`).
fn error_kinds(text: &str) -> impl Iterator<Item = (&str, Option<ErrorKind>)> {
    let mut in_traceback = false;
    text.lines().map(move |line| {
        let t = line.trim_end();
        if t.starts_with("Traceback (most recent call last):") {
            in_traceback = true;
            return (line, None);
        }
        if in_traceback && !t.is_empty() && !t.starts_with(char::is_whitespace) {
            in_traceback = false;
            if exception_name(t).is_some_and(|name| !name.is_empty()) {
                return (line, Some(ErrorKind::Exception));
            }
        }
        (line, error_kind(line))
    })
}

/// The line that says how a result failed: its last exception line, else its last test
/// status line (a warning is not a failure).
fn failure_line(text: &str) -> Option<&str> {
    let mut exception = None;
    let mut status = None;
    for (l, kind) in error_kinds(text) {
        match kind {
            Some(ErrorKind::Exception) => exception = Some(l),
            Some(ErrorKind::Status) => status = Some(l),
            _ => {}
        }
    }
    exception.or(status)
}

/// A traceback frame line `File "p", line n, in f` as `p:n in f`.
fn frame(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(", line ")?;
    let (n, func) = rest.split_once(", in ")?;
    Some(format!("{path}:{n} in {}", func.trim()))
}

/// Test names on a line (`test_x`, `TestX`).
fn test_names(line: &str) -> Vec<String> {
    line.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| {
            (w.starts_with("test_") && w.len() > 5)
                || (w.starts_with("Test")
                    && w.len() > 4
                    && w[4..].starts_with(|c: char| c.is_ascii_uppercase()))
        })
        .map(str::to_string)
        .collect()
}

/// True for a command that runs tests.
fn runs_tests(command: &str) -> bool {
    [
        "pytest",
        "runtests",
        "tox",
        "cargo test",
        "npm test",
        "go test",
        "unittest",
        "nosetests",
        "jest",
        "mvn test",
        "gradle test",
    ]
    .iter()
    .any(|k| command.contains(k))
}

fn cap200(s: &str) -> String {
    s.chars().take(200).collect()
}

fn push_unique(v: &mut Vec<String>, s: String) {
    v.retain(|x| *x != s);
    v.push(s);
}

/// How a tool call's name says it touches files.
pub fn call_access(call: &ToolCall) -> Access {
    let n = call.name.to_ascii_lowercase();
    if [
        "write", "edit", "create", "patch", "replace", "apply", "insert",
    ]
    .iter()
    .any(|k| n.contains(k))
    {
        Access::Write
    } else if ["read", "view", "cat", "open", "show", "get_file"]
        .iter()
        .any(|k| n.contains(k))
    {
        Access::Read
    } else {
        Access::Other
    }
}

/// True when a tool result reports a failure: flagged by the transcript, or its opening text
/// reads like an error, a failed test run or a stack trace. The output of a call that prints
/// files ([`prints_files`]) only counts when flagged: source code mentions errors all the
/// time.
pub fn looks_like_error(m: &Message, call: Option<&ToolCall>) -> bool {
    if m.is_error {
        return true;
    }
    if call.is_some_and(prints_files) {
        return false;
    }
    error_words(&m.content)
}

/// Shell commands (and SWE-agent tools) that print files or find things in them: their
/// output is file content.
const PRINTERS: &[&str] = &[
    "cat",
    "head",
    "tail",
    "nl",
    "less",
    "more",
    "bat",
    "grep",
    "egrep",
    "rg",
    "ls",
    "find",
    "wc",
    "cd",
    "pwd",
    "echo",
    "open",
    "goto",
    "scroll_up",
    "scroll_down",
    "search_file",
    "search_dir",
    "find_file",
    "view",
];

/// The simple commands of a shell script: its lines outside heredoc bodies, split at `|`,
/// `&&`, `||` and `;`, trimmed (quoting is not parsed: a split inside quotes only adds
/// segments).
pub fn command_segments(script: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut heredoc: Option<String> = None;
    for line in script.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        if let Some((_, rest)) = line.split_once("<<") {
            let word: String = rest
                .trim_start_matches('-')
                .trim_start()
                .chars()
                .filter(|c| !matches!(c, '\'' | '"'))
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !word.is_empty() {
                heredoc = Some(word);
            }
        }
        out.extend(
            line.split("&&")
                .flat_map(|s| s.split("||"))
                .flat_map(|s| s.split([';', '|']))
                .map(str::trim)
                .filter(|s| !s.is_empty()),
        );
    }
    out
}

/// True when a simple command writes a file through a redirection (`> f`, `>> f`, a
/// heredoc into a file); `2>&1` and `>/dev/null` do not count.
fn redirects(segment: &str) -> bool {
    let s = segment
        .replace("2>&1", "")
        .replace("&>/dev/null", "")
        .replace("2>/dev/null", "")
        .replace(">/dev/null", "")
        .replace("> /dev/null", "");
    s.contains('>')
}

/// True when `command` only prints files: every simple command of it
/// ([`command_segments`]) is a file printer (`sed` only without `-i`) that redirects
/// nothing into a file.
fn command_prints_files(command: &str) -> bool {
    let segments = command_segments(command);
    !segments.is_empty()
        && segments.iter().all(|seg| {
            let word = seg.split_whitespace().next().unwrap_or("");
            let word = word.rsplit('/').next().unwrap_or(word);
            let prints = match word {
                "sed" => !seg.contains(" -i"),
                "awk" => true,
                w => PRINTERS.contains(&w),
            };
            prints && !redirects(seg)
        })
}

/// True when `call` prints files: a read-like tool (by name), or a command that only
/// prints files (`command_prints_files`; `str_replace_editor view` included).
pub fn prints_files(call: &ToolCall) -> bool {
    let n = call.name.to_ascii_lowercase();
    if call_access(call) == Access::Read
        || ["goto", "scroll", "search", "find_file"]
            .iter()
            .any(|k| n.contains(k))
    {
        return true;
    }
    call_command(call).is_some_and(|c| command_prints_files(&c))
}

/// The command of a text-only agent's turn: the body of its last fenced block (the
/// language tag skipped) or `<command>` element.
pub fn text_command(text: &str) -> Option<&str> {
    if let Some(end) = text.rfind("</command>") {
        let start = text[..end].rfind("<command>")? + "<command>".len();
        return Some(text[start..end].trim());
    }
    let close = text.rfind("```")?;
    let open = text[..close].rfind("```")?;
    let body = text[open + 3..close]
        .split_once('\n')
        .map_or("", |(_, b)| b);
    Some(body.trim()).filter(|b| !b.is_empty())
}

/// The exit status a result reports (mini-swe-agent's `<returncode>N</returncode>`).
fn exit_code(text: &str) -> Option<i64> {
    let rest = text.trim_start().strip_prefix("<returncode>")?;
    let (n, _) = rest.split_once("</returncode>")?;
    n.trim().parse().ok()
}

/// How a failing command is named: its first line, at most 100 characters.
fn command_label(command: &str) -> String {
    command
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(100)
        .collect()
}

/// True when the opening text (first 2000 characters) mentions an error, a failure, a
/// traceback or a panic.
fn error_words(text: &str) -> bool {
    // The first 2000 characters, lowercased in one copy.
    let end = text.char_indices().nth(2000).map_or(text.len(), |(i, _)| i);
    let head = text[..end].to_ascii_lowercase();
    [
        "error",
        "traceback",
        "failed",
        "panicked",
        "exception",
        "fatal:",
    ]
    .iter()
    .any(|k| head.contains(k))
}

/// True for a blank line or one of mini-swe-agent's wrapper tags.
fn is_wrapper(l: &str) -> bool {
    let returncode = l.starts_with("<returncode>") && l.ends_with("</returncode>");
    l.is_empty() || returncode || matches!(l, "<output>" | "</output>" | "<warning>" | "</warning>")
}

/// The first line with content: blank lines and mini-swe-agent's wrapper tags
/// (`<returncode>0</returncode>`, `<output>`) say nothing.
fn first_line(text: &str, max_chars: usize) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !is_wrapper(l))
        .unwrap_or("");
    let mut s: String = line.chars().take(max_chars).collect();
    if line.chars().count() > max_chars {
        s.push('…');
    }
    s
}

/// What a tool result's text says, whatever call produced it: the part of fact extraction
/// that reads the whole text, so it can be cached by content ([`FactCache`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResultFacts {
    /// Error lines and traceback frames (`error_lines`).
    pub lines: Vec<String>,
    pub frames: Vec<String>,
    /// Test names on failing lines, in order (repeats kept).
    pub failing_tests: Vec<String>,
    /// The opening text reads like an error.
    pub error_words: bool,
    /// The first non-empty line (200 characters).
    pub first_line: String,
    pub line_count: usize,
    /// How it failed (the last exception line, else the last test status line), verbatim
    /// up to 1000 characters (a longer one ends in ` […]`).
    pub last_line: Option<String>,
    /// The exit status the text reports, if any.
    pub exit_code: Option<i64>,
}

/// The facts of one tool result's `text`.
fn result_facts(text: &str) -> ResultFacts {
    let (lines, frames) = error_lines(text);
    let last_line = failure_line(text).map(|l| cap(l.trim(), Some(1000)));
    let failing_tests = lines
        .iter()
        .filter(|l| {
            l.contains("FAIL") || l.contains("ERROR") || l.contains("Error") || l.contains("failed")
        })
        .flat_map(|l| test_names(l))
        .collect();
    ResultFacts {
        lines,
        frames,
        failing_tests,
        error_words: error_words(text),
        first_line: first_line(text, 200),
        line_count: text.lines().count(),
        last_line,
        exit_code: exit_code(text),
    }
}

/// [`ResultFacts`] remembered by content (128 bits of blake3): an agent resends its history
/// on every call, and the same old results are cleared and summarized again each time.
/// Bounded: cleared when it holds `capacity` entries.
#[derive(Debug)]
pub struct FactCache {
    map: RwLock<HashMap<u128, Arc<ResultFacts>>>,
    capacity: usize,
}

impl Default for FactCache {
    fn default() -> FactCache {
        FactCache::new(50_000)
    }
}

impl FactCache {
    pub fn new(capacity: usize) -> FactCache {
        FactCache {
            map: Default::default(),
            capacity: capacity.max(1),
        }
    }

    /// The facts of `text`, extracted once per distinct text.
    pub fn get(&self, text: &str) -> Arc<ResultFacts> {
        let h = blake3::hash(text.as_bytes());
        let mut k = [0u8; 16];
        k.copy_from_slice(&h.as_bytes()[..16]);
        let key = u128::from_le_bytes(k);
        if let Some(f) = self.map.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Arc::clone(f);
        }
        let f = Arc::new(result_facts(text));
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= self.capacity {
            map.clear();
        }
        map.insert(key, Arc::clone(&f));
        f
    }
}

/// Extracts the facts of `messages`; `calls` maps call ids of the whole conversation.
pub fn extract<'m>(
    messages: impl IntoIterator<Item = &'m Message>,
    calls: &HashMap<&str, &ToolCall>,
) -> SessionFacts {
    extract_with(messages, calls, &mut |m| Arc::new(result_facts(&m.content)))
}

/// [`extract`] with each tool result's [`ResultFacts`] from `result` (a cache).
pub fn extract_with<'m>(
    messages: impl IntoIterator<Item = &'m Message>,
    calls: &HashMap<&str, &ToolCall>,
    result: &mut dyn FnMut(&'m Message) -> Arc<ResultFacts>,
) -> SessionFacts {
    let mut facts = SessionFacts::default();
    let mut files: Vec<(String, Access)> = Vec::new();
    let mut pending_error: Option<usize> = None;
    // The command of the assistant text turn just before (a text-only agent's action).
    let mut text_action: Option<String> = None;
    for m in messages {
        let action = text_action.take();
        match m.role {
            Role::User if m.is_user_request() => {
                facts.user_requests.push(m.content.clone());
                // The environment's reply to a text-only agent's command: what it printed
                // is read for errors unless the command only prints files.
                if let Some(cmd) = action.filter(|c| !command_prints_files(c)) {
                    let rf = result(m);
                    let failed = rf.exit_code.is_some_and(|c| c != 0);
                    if failed || !rf.lines.is_empty() || !rf.frames.is_empty() {
                        let tool = cmd.split_whitespace().next().unwrap_or("command");
                        facts.errors.push(error_fact(tool, Some(&cmd), &rf));
                        pending_error = Some(facts.errors.len() - 1);
                    }
                }
            }
            Role::Assistant => {
                if m.tool_calls.is_empty() {
                    text_action = text_command(&m.content).map(str::to_string);
                }
                for c in &m.tool_calls {
                    *facts.tool_counts.entry(c.name.clone()).or_default() += 1;
                    let mut touched: Vec<(String, Access)> = Vec::new();
                    if let Some(p) = call_path(c) {
                        touched.push((p, call_access(c)));
                    }
                    let command = call_command(c);
                    if let Some(cmd) = &command {
                        let access = command_access(cmd).max(call_access(c));
                        for p in command_paths(cmd) {
                            touched.push((p, access));
                        }
                        if runs_tests(cmd) {
                            push_unique(
                                &mut facts.tests_run,
                                cap200(cmd.lines().next().unwrap_or("")),
                            );
                        }
                    }
                    let body = command.clone().unwrap_or_else(|| c.arguments.clone());
                    let writes = touched.iter().any(|(_, a)| *a == Access::Write)
                        || command_access(&body) == Access::Write;
                    if writes {
                        let defs = definitions(&body);
                        let target = touched
                            .iter()
                            .find(|(_, a)| *a == Access::Write)
                            .or(touched.first())
                            .map(|(p, _)| p.clone())
                            .unwrap_or_else(|| c.name.clone());
                        if !defs.is_empty() || touched.iter().any(|(_, a)| *a == Access::Write) {
                            facts.edits.retain(|(f, _)| *f != target);
                            facts.edits.push((target, defs));
                        }
                    }
                    for (p, access) in touched {
                        let prev = files.iter().position(|(f, _)| *f == p);
                        let strongest = match prev {
                            Some(i) => {
                                let (_, a) = files.remove(i);
                                a.max(access)
                            }
                            None => access,
                        };
                        files.push((p, strongest));
                    }
                }
                if !m.content.trim().is_empty() {
                    if let Some(e) = pending_error.take() {
                        facts.errors[e].followed_by = Some(first_line(&m.content, 200));
                    }
                    facts.current_state = Some(m.content.chars().take(600).collect());
                }
            }
            Role::Tool if !is_cleared(&m.content) => {
                let call = call_of(m, calls);
                // What a call that prints files returned is file content: an error only
                // when the transcript flags it.
                if call.is_some_and(prints_files) && !m.is_error {
                    continue;
                }
                let rf = result(m);
                for t in &rf.failing_tests {
                    push_unique(&mut facts.failing_tests, t.clone());
                }
                // `looks_like_error`, with the text part from the facts.
                let looks = m.is_error || rf.error_words || rf.exit_code.is_some_and(|c| c != 0);
                if looks || !rf.lines.is_empty() {
                    let tool = call.map_or("tool", |c| c.name.as_str());
                    let command = call.and_then(|c| call_command(c).or_else(|| call_path(c)));
                    facts.errors.push(error_fact(tool, command.as_deref(), &rf));
                    pending_error = Some(facts.errors.len() - 1);
                }
            }
            _ => {}
        }
    }
    facts.files = files;
    facts
}

fn error_fact(tool: &str, command: Option<&str>, rf: &ResultFacts) -> ErrorFact {
    ErrorFact {
        tool: tool.to_string(),
        command: command.map(command_label).filter(|c| !c.is_empty()),
        first_line: rf.first_line.clone(),
        followed_by: None,
        lines: rf.lines.clone(),
        frames: rf.frames.clone(),
        last_line: rf.last_line.clone(),
    }
}

/// The error lines (verbatim, deduplicated, at most 12) and traceback frames (at most 40,
/// the innermost last) of a tool result. How the result ended is kept apart
/// ([`ResultFacts::last_line`]), so the cap never hides it.
fn error_lines(text: &str) -> (Vec<String>, Vec<String>) {
    let mut lines: Vec<String> = Vec::new();
    let mut frames: Vec<String> = Vec::new();
    for (line, kind) in error_kinds(text) {
        // Most lines of a result are neither: skip them on their first bytes.
        let t = line.trim_start();
        if t.is_empty() {
            continue;
        }
        if let Some(f) = frame(t) {
            push_unique(&mut frames, f);
        } else if kind.is_some() {
            let l = cap200(line.trim());
            if !lines.contains(&l) && lines.len() < 12 {
                lines.push(l);
            }
        }
    }
    let keep = frames.len().saturating_sub(40);
    frames.drain(..keep);
    (lines, frames)
}

/// The latest content of files read in `messages`, most recent last, one entry per path,
/// skipping results already cleared or offloaded.
pub fn recent_reads(messages: &[Message], calls: &HashMap<&str, &ToolCall>) -> Vec<FileRead> {
    recent_reads_of(messages, calls)
        .into_iter()
        .map(|(path, content)| FileRead {
            path,
            content: content.to_string(),
        })
        .collect()
}

/// [`recent_reads`] without copying the contents: `(path, content)` borrowed from `messages`.
pub fn recent_reads_of<'m>(
    messages: impl IntoIterator<Item = &'m Message>,
    calls: &HashMap<&str, &ToolCall>,
) -> Vec<(String, &'m str)> {
    // Latest read per path, in order of that read.
    let mut latest: HashMap<String, (usize, &'m str)> = HashMap::new();
    for (n, m) in messages
        .into_iter()
        .filter(|m| m.role == Role::Tool && !m.is_error)
        .enumerate()
    {
        let Some(call) = call_of(m, calls) else {
            continue;
        };
        if call_access(call) != Access::Read
            || is_cleared(&m.content)
            || m.content.starts_with("[Tool result offloaded")
        {
            continue;
        }
        if let Some(path) = call_path(call) {
            latest.insert(path, (n, m.content.as_str()));
        }
    }
    let mut reads: Vec<(usize, String, &'m str)> = latest
        .into_iter()
        .map(|(path, (n, content))| (n, path, content))
        .collect();
    reads.sort_unstable_by_key(|(n, _, _)| *n);
    reads
        .into_iter()
        .map(|(_, path, content)| (path, content))
        .collect()
}

/// Caps each text item of a summary at `max_chars` (`None`: verbatim).
fn cap(text: &str, max_chars: Option<usize>) -> String {
    match max_chars {
        Some(n) if text.chars().count() > n => {
            let mut s: String = text.chars().take(n).collect();
            s.push_str(" […]");
            s
        }
        _ => text.to_string(),
    }
}

/// How much of the ledger to keep: each level keeps less, the most recent facts first.
#[derive(Debug, Clone, Copy)]
struct LedgerCaps {
    files: usize,
    edits: usize,
    tests: usize,
    errors: usize,
    lines_per_error: usize,
    frames_per_error: usize,
}

const LEDGER_LEVELS: [LedgerCaps; 6] = [
    LedgerCaps {
        files: 400,
        edits: 200,
        tests: 100,
        errors: 200,
        lines_per_error: 12,
        frames_per_error: 40,
    },
    LedgerCaps {
        files: 200,
        edits: 100,
        tests: 50,
        errors: 60,
        lines_per_error: 6,
        frames_per_error: 16,
    },
    LedgerCaps {
        files: 120,
        edits: 60,
        tests: 30,
        errors: 30,
        lines_per_error: 4,
        frames_per_error: 8,
    },
    LedgerCaps {
        files: 60,
        edits: 30,
        tests: 15,
        errors: 15,
        lines_per_error: 2,
        frames_per_error: 4,
    },
    LedgerCaps {
        files: 30,
        edits: 15,
        tests: 8,
        errors: 8,
        lines_per_error: 1,
        frames_per_error: 2,
    },
    LedgerCaps {
        files: 10,
        edits: 5,
        tests: 4,
        errors: 3,
        lines_per_error: 1,
        frames_per_error: 0,
    },
];

/// The number of ledger detail levels ([`SessionFacts::render_ledger`]).
pub const LEDGER_LEVEL_COUNT: usize = LEDGER_LEVELS.len();

fn last<T>(v: &[T], n: usize) -> &[T] {
    &v[v.len().saturating_sub(n)..]
}

impl SessionFacts {
    /// True when there is nothing for a ledger.
    pub fn ledger_is_empty(&self) -> bool {
        self.files.is_empty()
            && self.edits.is_empty()
            && self.tests_run.is_empty()
            && self.failing_tests.is_empty()
            && self
                .errors
                .iter()
                .all(|e| e.lines.is_empty() && e.frames.is_empty())
    }

    /// The most recent failure that stated an error line.
    pub fn last_error(&self) -> Option<&ErrorFact> {
        self.errors.iter().rev().find(|e| e.last_line.is_some())
    }

    /// The `## Last error` section: the most recent failure's last error line verbatim, the
    /// command that failed and its innermost frame; empty when there is none. Every ledger
    /// and summary level carries it whole: it is what the agent was working on.
    pub fn render_last_error(&self) -> String {
        let Some(e) = self.last_error() else {
            return String::new();
        };
        let Some(line) = &e.last_line else {
            return String::new();
        };
        let what = match &e.command {
            // A text-only agent's command is named by its first word: no need to repeat it.
            Some(c) if c.starts_with(&e.tool) => format!("`{c}`"),
            Some(c) => format!("{} `{c}`", e.tool),
            None => e.tool.clone(),
        };
        let mut s = format!("\n## Last error\n- [{what}] {line}\n");
        if let Some(f) = e.frames.last() {
            s.push_str(&format!("  at {f}\n"));
        }
        s
    }

    /// The structured ledger: the last error, files touched, edits made, tests run and
    /// failing, errors seen (error lines with their traceback frames). `level` (0 =
    /// everything, up to [`LEDGER_LEVEL_COUNT`]` - 1`) keeps fewer, most recent first; the
    /// last error is kept at every level.
    pub fn render_ledger(&self, level: usize) -> String {
        let caps = LEDGER_LEVELS[level.min(LEDGER_LEVELS.len() - 1)];
        let mut s = self.render_last_error();
        if !self.files.is_empty() {
            s.push_str("\n## Files touched\n");
            for (f, a) in last(&self.files, caps.files) {
                let a = match a {
                    Access::Read => "read",
                    Access::Write => "modified",
                    Access::Other => "used",
                };
                s.push_str(&format!("- {f} ({a})\n"));
            }
        }
        let edits: Vec<&(String, Vec<String>)> = last(&self.edits, caps.edits).iter().collect();
        if !edits.is_empty() {
            s.push_str("\n## Edits made\n");
            for (f, defs) in edits {
                if defs.is_empty() {
                    s.push_str(&format!("- {f}\n"));
                } else {
                    s.push_str(&format!("- {f}: {}\n", defs.join(", ")));
                }
            }
        }
        if !self.tests_run.is_empty() || !self.failing_tests.is_empty() {
            s.push_str("\n## Tests run\n");
            for t in last(&self.tests_run, caps.tests) {
                s.push_str(&format!("- `{t}`\n"));
            }
            let failing = last(&self.failing_tests, caps.tests * 4);
            if !failing.is_empty() {
                s.push_str(&format!("- failing: {}\n", failing.join(", ")));
            }
        }
        let errors: Vec<&ErrorFact> = self
            .errors
            .iter()
            .filter(|e| !e.lines.is_empty() || !e.frames.is_empty())
            .collect();
        let errors = last(&errors, caps.errors);
        if !errors.is_empty() {
            s.push_str("\n## Errors seen\n");
            let mut seen: Vec<&str> = Vec::new();
            for e in errors {
                let lines: Vec<&String> = e
                    .lines
                    .iter()
                    .filter(|l| !seen.contains(&l.as_str()))
                    .collect();
                let frames = last(&e.frames, caps.frames_per_error);
                if lines.is_empty() && frames.is_empty() {
                    continue;
                }
                let lines = last(&lines, caps.lines_per_error);
                s.push_str(&format!("- [{}]", e.tool));
                for l in lines {
                    s.push_str(&format!(" {l}\n"));
                    seen.push(l);
                }
                if lines.is_empty() {
                    s.push('\n');
                }
                for f in frames {
                    s.push_str(&format!("  at {f}\n"));
                }
            }
        }
        s
    }

    /// The tier 2 summary when no other form fits: the header, how much was compacted and
    /// the last error.
    pub fn render_minimal_summary(&self, compacted_messages: usize) -> String {
        format!(
            "{} of {compacted_messages} earlier messages, built from the session without a model call; only the last error fits the limit]\n{}",
            crate::model::SUMMARY_MARKER,
            self.render_last_error()
        )
    }

    /// Renders the tier 2 summary; `item_cap` bounds each quoted item when the whole form
    /// does not fit (a cut item ends in ` […]`). The user requests are quoted as the span
    /// holds them, which tier 1 may already have shortened (code outlines say so), so the
    /// section does not claim they are verbatim.
    pub fn render_summary(&self, compacted_messages: usize, item_cap: Option<usize>) -> String {
        let mut s = format!(
            "{} of {compacted_messages} earlier messages, built from the session without a model call]\n",
            crate::model::SUMMARY_MARKER
        );
        s.push_str("\n## User requests (oldest first; ` […]` marks a cut)\n");
        if self.user_requests.is_empty() {
            s.push_str("- (none in the compacted span)\n");
        }
        for r in &self.user_requests {
            s.push_str(&format!("- {}\n", cap(r, item_cap)));
        }
        let level = match item_cap {
            None => 0,
            Some(n) if n >= 2000 => 1,
            Some(n) if n >= 400 => 3,
            Some(_) => 5,
        };
        if self.ledger_is_empty() {
            s.push_str("\n## Files touched\n- (none)\n");
        } else {
            s.push_str(&self.render_ledger(level));
        }
        let fixes: Vec<&ErrorFact> = self
            .errors
            .iter()
            .filter(|e| e.followed_by.is_some())
            .collect();
        if !fixes.is_empty() {
            s.push_str("\n## Errors and what followed\n");
            for e in last(&fixes, LEDGER_LEVELS[level].errors) {
                s.push_str(&format!(
                    "- {}: {}\n",
                    e.tool,
                    cap(&e.first_line, item_cap.or(Some(200)))
                ));
                if let Some(f) = &e.followed_by {
                    s.push_str(&format!("  then: {}\n", cap(f, item_cap.or(Some(200)))));
                }
            }
        }
        s.push_str("\n## Tool usage\n");
        if self.tool_counts.is_empty() {
            s.push_str("- (none)\n");
        }
        for (name, n) in &self.tool_counts {
            s.push_str(&format!("- {name}: {n}\n"));
        }
        s.push_str("\n## Current state\n");
        match &self.current_state {
            Some(c) => s.push_str(&cap(c, item_cap)),
            None => s.push_str("(no assistant text in the compacted span)"),
        }
        s.push('\n');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::calls_by_id;

    fn call(id: &str, name: &str, path: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: format!(r#"{{"path":"{path}"}}"#),
        }
    }

    #[test]
    fn commands_that_print_files() {
        for (command, prints) in [
            ("cat httpx/_exceptions.py", true),
            ("sed -n '1,40p' a.py | nl -ba", true),
            ("cd /repo && grep -rn TimeoutException . | head -20", true),
            ("cat a.py 2>&1", true),
            ("sed -i 's/a/b/' a.py", false),
            (
                "cat <<'EOF' > t.py\nraise ValueError('x')\nEOF\npython t.py",
                false,
            ),
            ("python t.py 2>&1 | tail -20", false),
            ("ls && python -m pytest", false),
        ] {
            assert_eq!(command_prints_files(command), prints, "{command}");
        }
    }

    #[test]
    fn text_agent_replies_are_read_for_errors() {
        let msgs = vec![
            Message::text(Role::User, "fix t.py"),
            Message::text(
                Role::Assistant,
                "THOUGHT: run it\n\n```bash\npython t.py\n```",
            ),
            Message::text(
                Role::User,
                "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"t.py\", line 1, in <module>\nKeyboardInterrupt\n</output>",
            ),
            Message::text(Role::Assistant, "THOUGHT: look\n\n```bash\ncat t.py\n```"),
            Message::text(
                Role::User,
                "<returncode>0</returncode>\n<output>\nValueError: in a file\n</output>",
            ),
        ];
        let f = extract(&msgs, &calls_by_id(&msgs));
        assert_eq!(f.errors.len(), 1, "{:?}", f.errors);
        let e = &f.errors[0];
        assert_eq!(e.tool, "python");
        assert_eq!(e.first_line, "Traceback (most recent call last):");
        assert_eq!(e.last_line.as_deref(), Some("KeyboardInterrupt"));
        assert_eq!(e.followed_by.as_deref(), Some("THOUGHT: look"));
        assert_eq!(
            f.render_last_error(),
            "\n## Last error\n- [`python t.py`] KeyboardInterrupt\n  at t.py:1 in <module>\n"
        );
    }

    #[test]
    fn extracts_facts() {
        let msgs = vec![
            Message::text(Role::User, "fix the parser"),
            Message::calls("", vec![call("1", "read_file", "src/a.rs")]),
            Message::tool_result("1", "fn a() {}"),
            Message::calls("", vec![call("2", "run_tests", "")]),
            Message::tool_result("2", "test result: FAILED. 1 failed"),
            Message::text(
                Role::Assistant,
                "The test fails because a() is empty.\nMore.",
            ),
            Message::calls("", vec![call("3", "edit_file", "src/a.rs")]),
            Message::tool_result("3", "ok"),
        ];
        let calls = calls_by_id(&msgs);
        let f = extract(&msgs, &calls);
        // Facts read through the cache (twice: extracted, then remembered) are the same.
        let cache = FactCache::new(100);
        for _ in 0..2 {
            let cached = extract_with(&msgs, &calls, &mut |m| cache.get(&m.content));
            assert_eq!(cached, f);
        }
        assert_eq!(f.user_requests, vec!["fix the parser"]);
        assert_eq!(f.files, vec![("src/a.rs".to_string(), Access::Write)]);
        assert_eq!(f.errors.len(), 1);
        assert_eq!(f.errors[0].tool, "run_tests");
        assert_eq!(
            f.errors[0].followed_by.as_deref(),
            Some("The test fails because a() is empty.")
        );
        assert_eq!(f.tool_counts["read_file"], 1);
        let reads = recent_reads(&msgs, &calls);
        assert_eq!(reads.len(), 1);
        assert_eq!(reads[0].path, "src/a.rs");
        let s = f.render_summary(8, None);
        assert!(s.starts_with(crate::model::SUMMARY_MARKER));
        assert!(s.contains("- fix the parser\n"));
        assert!(s.contains("- run_tests: 1\n"));
    }
}
