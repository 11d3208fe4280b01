//! Reading a task the way an engineer reads a bug report: the paths, tracebacks, dotted
//! names and identifiers in code it contains are stronger evidence than its prose, because
//! they name the code itself.
//!
//! [`read`] is a pure function of the text: it finds
//! - **frames** of tracebacks (Python `File "…", line N, in f`; IPython `…/f.py in f(…)` with
//!   its `--> N` arrow; JavaScript `at f (file:L:C)`; Rust `at path.rs:L` / `panicked at
//!   path.rs:L:C`);
//! - **paths** (`src/app.py`, `lib/router.ts:12`) and dotted module paths (`pkg.sub.mod`);
//! - **identifiers in code**: everything identifier-like inside fenced or inline code,
//!   interactive-session lines (`>>>`, `In [1]:`) and traceback lines, plus identifiers in
//!   prose that only code has (`snake_case`, `camelCase`, `Dotted.name`, `call()`) — but
//!   not the words of a code comment, nor a traceback's message beyond such names, nor the
//!   reporter's own variables (a name the code binds and reads again);
//! - the **title**: the first line, when more follows.
//!
//! Quote marks (Markdown's `> `, pytest's `INTERNALERROR> `) are removed first, so quoted
//! lines are read like any other.
//!
//! Each carries a weight in (0, 1]: how surely it names code the task is about. Resolving
//! them against an index is [`crate::Corpus::resolve_mentions`]; this module reads no index.

use std::collections::{BTreeMap, BTreeSet};

/// A traceback frame: the file, the line and the function it names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Frame {
    pub path: String,
    pub line: Option<u32>,
    pub function: Option<String>,
}

/// What a task mentions, with weights.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskReading {
    pub frames: Vec<Frame>,
    /// Path-like mentions (as written; resolved by suffix against the index's files).
    pub paths: BTreeMap<String, f32>,
    /// Identifier mentions: simple (`flatten`) or dotted (`Mul.flatten`, `a.b.c`).
    pub identifiers: BTreeMap<String, f32>,
    /// Names the task's own code defines (`def foo`, `class A`, `fn main`): usually the
    /// reporter's reproduction, so they name project code only where the project's source
    /// defines them too (a pasted method), never a test fixture that shares the name.
    pub defined: BTreeSet<String>,
    /// The task's first line when more text follows it and it is short enough to be a
    /// subject (an issue's title, a commit's subject line): the reporter's own one-line
    /// summary of what is wrong, so its words weigh more than the narrative below it.
    pub title: Option<String>,
    /// Identifiers the task mentions only as members of a module its code imports
    /// (`mkdir` and `os.mkdir` after `import os`, `array` after `import numpy as np`), with
    /// those modules' top-level packages: they name those packages' code, which is the
    /// project's only if the project is one of them.
    pub imported: BTreeMap<String, BTreeSet<String>>,
    /// The names of the operations the task's code applies with an operator (`pow` for
    /// `pi**(1/E)`, see [`OPERATIONS`]): the code the reproduction runs through is named
    /// after them, though the task never writes the name.
    pub operations: BTreeSet<&'static str>,
}

/// Weight of an identifier seen in code (a block, an inline span, a session or traceback).
pub const IN_CODE: f32 = 1.0;
/// Weight of an identifier in prose whose shape only code has (`snake_case`, `camelCase`).
const CODE_SHAPED: f32 = 0.8;

/// Longest first line still read as a title: beyond it the line is a paragraph, not a summary.
const MAX_TITLE_CHARS: usize = 200;

/// Words that are syntax or ubiquitous builtins in the languages acms reads: naming them
/// says nothing about which code a task is about.
const NOISE: &[&str] = &[
    "and",
    "any",
    "args",
    "array",
    "as",
    "assert",
    "async",
    "await",
    "bool",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "def",
    "default",
    "del",
    "dict",
    "elif",
    "else",
    "enum",
    "error",
    "except",
    "export",
    "extends",
    "false",
    "finally",
    "float",
    "for",
    "from",
    "function",
    "global",
    "if",
    "impl",
    "import",
    "in",
    "int",
    "interface",
    "is",
    "isinstance",
    "kwargs",
    "lambda",
    "len",
    "let",
    "list",
    "match",
    "mod",
    "mut",
    "new",
    "none",
    "not",
    "null",
    "number",
    "object",
    "or",
    "pass",
    "print",
    "pub",
    "raise",
    "range",
    "return",
    "self",
    "set",
    "static",
    "str",
    "string",
    "struct",
    "super",
    "this",
    "throw",
    "trait",
    "true",
    "try",
    "tuple",
    "type",
    "typeof",
    "undefined",
    "use",
    "var",
    "void",
    "where",
    "while",
    "with",
    "yield",
    "fn",
    "self",
    "cls",
    "err",
    "ok",
    "some",
    "value",
    "result",
    "test",
    "tests",
    "file",
    "line",
    "traceback",
    "recent",
    "call",
    "last",
    "most",
    "the",
    "out",
    "usr",
    "lib",
    "site",
    "packages",
    "python",
    "home",
    "users",
    "src",
    "http",
    "https",
    "www",
    "com",
    "org",
    "github",
];

/// Capitalized spellings of [`NOISE`] words that are still the languages' own (`None`,
/// `Some`, `String`). Any other capitalized spelling is a class the project may define:
/// `Mod`, `Set`, `Lambda` in sympy are not the keywords `mod`, `set`, `lambda`.
const CAPITALIZED_NOISE: &[&str] = &[
    "None", "True", "False", "Self", "Some", "Ok", "Err", "String", "Object", "Error",
];

fn is_noise(word: &str) -> bool {
    let lower = word.to_ascii_lowercase();
    let keyword =
        NOISE.contains(&lower.as_str()) && (lower == word || CAPITALIZED_NOISE.contains(&word));
    lower.len() < 3 || keyword || lower.chars().all(|c| c.is_ascii_digit())
}

fn ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '$'
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '$'
}

/// Identifier chains of `s` (`a.b.c` kept whole), with whether each is followed by `(`.
fn chains(s: &str) -> Vec<(String, bool)> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if ident_start(chars[i]) && (i == 0 || !ident_char(chars[i - 1]) && chars[i - 1] != '\\') {
            let start = i;
            loop {
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
                // A dot (or `::`) followed by another identifier continues the chain.
                if i + 1 < chars.len() && chars[i] == '.' && ident_start(chars[i + 1]) {
                    i += 1;
                    continue;
                }
                if i + 2 < chars.len()
                    && chars[i] == ':'
                    && chars[i + 1] == ':'
                    && ident_start(chars[i + 2])
                {
                    i += 2;
                    continue;
                }
                break;
            }
            let chain: String = chars[start..i].iter().collect();
            let called = chars[i..]
                .iter()
                .find(|c| !c.is_whitespace())
                .is_some_and(|c| *c == '(');
            out.push((chain, called));
        } else {
            i += 1;
        }
    }
    out
}

/// `snake_case`, `camelCase`, `PascalCase2`, `__dunder__`: a shape prose words do not have.
fn code_shaped(word: &str) -> bool {
    let inner_upper = word
        .char_indices()
        .skip(1)
        .any(|(i, c)| c.is_ascii_uppercase() && word[..i].chars().any(|p| p.is_ascii_lowercase()));
    (word.contains('_') && word.trim_matches('_').len() > 1) || inner_upper
}

const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "ts", "tsx", "js", "jsx", "mjs", "cjs", "rs", "java", "md", "rst", "json", "toml",
    "yaml", "yml", "cfg", "ini", "txt", "go", "c", "h", "cpp", "hpp", "kt", "rb",
];

/// A path-like token: has a known source extension, or at least two `/`-separated parts.
fn path_like(token: &str) -> Option<String> {
    let t = token
        .trim_matches(|c: char| "\"'`()[]{}<>,;!?".contains(c))
        .trim_end_matches('.');
    let t = t.strip_prefix("./").unwrap_or(t);
    // `path.py:12` or `path.py:12:5`: drop the position.
    let t = match t.split_once(':') {
        Some((p, rest)) if rest.chars().next().is_some_and(|c| c.is_ascii_digit()) => p,
        _ => t,
    };
    if t.len() < 4 || t.contains("://") || !t.chars().all(|c| ident_char(c) || "./-@".contains(c)) {
        return None;
    }
    let ext = t.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    let has_ext = SOURCE_EXTENSIONS.contains(&ext);
    let parts = t.split('/').filter(|p| !p.is_empty()).count();
    (has_ext
        && t.rsplit('/')
            .next()
            .is_some_and(|f| f.len() > ext.len() + 1)
        || parts >= 3)
        .then(|| t.to_string())
}

/// Whether a fenced block is an interactive session (`>>>`, `In [1]:`): then only its prompt
/// lines are code, the rest is output.
fn session_block(lines: &[&str]) -> bool {
    lines.iter().any(|l| {
        let t = l.trim_start();
        t.starts_with(">>>") || t.starts_with("In [")
    })
}

/// Whether a fenced block is a terminal's: its first line is a shell prompt (`$ pip list`) or
/// a [`banner`]. Then only its prompt lines are code; the output is read like prose, for its
/// inline `code` spans (a compiler's ``no method `foo` ``), not for every word of a package
/// table or a test run's header.
fn console_block(lines: &[&str]) -> bool {
    let Some(first) = lines.iter().map(|l| l.trim()).find(|l| !l.is_empty()) else {
        return false;
    };
    first.starts_with("$ ") || banner(first)
}

/// A test run's banner line: `===== test session starts =====`, `_____ test_foo _____`.
/// What follows it in a block is the run's output, wherever the block began.
fn banner(line: &str) -> bool {
    let t = line.trim();
    ["===", "___", "---"]
        .iter()
        .any(|rule| t.starts_with(rule) && t.ends_with(rule))
        && t.chars().any(char::is_alphanumeric)
}

/// The line that opens a Python traceback (after the exception's name, in IPython's).
const TRACEBACK: &str = "Traceback (most recent call last)";

/// Whether `line` opens a Python traceback: `Traceback (most recent call last):`, or in
/// IPython's `TypeError    Traceback (most recent call last)` (not a string that quotes it).
/// From there on a fenced block is the traceback; the lines before it are the code that
/// raised.
fn traceback_header(line: &str) -> bool {
    line.split_once(TRACEBACK)
        .is_some_and(|(before, _)| before.trim().chars().all(|c| ident_char(c) || c == '.'))
}

/// Whether a line of a traceback block quotes code: a quoted source line (indented, or
/// IPython's `--> 220` arrow) or the session's prompt that raised it. The rest — the
/// exception's message, `During handling of the above exception, another exception
/// occurred:` — is the program's prose; frames are read on their own ([`python_frame`],
/// [`ipython_frame`]).
fn traceback_code(line: &str) -> bool {
    let t = line.trim_start();
    let arrow = t.starts_with('-') && t.trim_start_matches('-').starts_with('>');
    line.starts_with(char::is_whitespace) || arrow || prompt(t)
}

/// An interactive session's prompt: `>>> f(x)`, `... g(y)`, `In [3]: h(z)`.
fn prompt(line: &str) -> bool {
    line.starts_with(">>>") || line.starts_with("...") || line.starts_with("In [")
}

/// `line` with the contents of its string literals blanked: words in strings (messages,
/// LaTeX, test data) do not name code.
fn without_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in line.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    out.push(c);
                }
            }
            None => {
                if c == '"' || c == '\'' || c == '`' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// `line` without its trailing comment (`# …`, `// …`, `/// …`), which is prose even inside a
/// code block. Run after [`without_strings`], so a `#` in a string is already gone. A comment
/// marker starts a line or follows a space and is followed by a space, another marker or the
/// end: `#[derive]`, `#!shebang` and `a//b` stay code.
fn without_comment(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let cut = (0..chars.len()).find(|&i| {
        let after_space = i == 0 || chars[i - 1].is_whitespace();
        let marker = match chars[i] {
            '#' => 1,
            '/' if chars.get(i + 1) == Some(&'/') => 2,
            _ => return false,
        };
        after_space
            && chars
                .get(i + marker)
                .is_none_or(|c| c.is_whitespace() || *c == chars[i])
    });
    chars[..cut.unwrap_or(chars.len())].iter().collect()
}

/// The identifiers a line of code binds as local names: assignment targets (`a, b = …`,
/// `let mut x = …`, `const app = …`), loop variables (`for k, v in …`), `as` aliases and the
/// parameters of a `def` / `fn` / `function` / `lambda`.
fn bound_names(line: &str) -> Vec<String> {
    let idents = |s: &str| -> Vec<String> {
        s.split(|c: char| !ident_char(c))
            .filter(|w| w.chars().next().is_some_and(ident_start))
            .map(str::to_string)
            .collect()
    };
    let mut out = Vec::new();
    let t = line.trim();
    // An assignment: the first `=` that is not part of `==`, `!=`, `<=`, `>=` or `=>`.
    let chars: Vec<char> = t.chars().collect();
    let eq = (0..chars.len()).find(|&i| {
        chars[i] == '='
            && chars.get(i + 1) != Some(&'=')
            && chars.get(i + 1) != Some(&'>')
            && (i == 0 || !"=!<>".contains(chars[i - 1]))
    });
    if let Some(i) = eq {
        let lhs: String = chars[..i].iter().collect();
        let lhs = lhs.trim_end_matches(|c: char| "+-*/%&|^@:".contains(c) || c.is_whitespace());
        let lhs = ["let mut ", "let ", "const ", "var ", "mut "]
            .iter()
            .fold(lhs.trim_start(), |l, k| l.strip_prefix(k).unwrap_or(l));
        // Targets only: no attribute, subscript, call or keyword (`self.x = …`, `f(a=1)`).
        if !lhs.is_empty()
            && lhs
                .chars()
                .all(|c| ident_char(c) || c == ',' || c == ' ' || c == '(' || c == ')')
            && (!lhs.contains('(') || lhs.starts_with('('))
            && !idents(lhs)
                .iter()
                .any(|w| DEFINING.contains(&w.as_str()) || w == "if")
        {
            out.extend(idents(lhs));
        }
    }
    if let Some(rest) = t.strip_prefix("for ")
        && let Some((vars, _)) = rest.split_once(" in ")
    {
        out.extend(idents(vars));
    }
    let words: Vec<&str> = t.split_whitespace().collect();
    for w in words.windows(2) {
        if w[0] == "as" {
            out.extend(idents(w[1]).into_iter().take(1));
        }
    }
    for keyword in ["def ", "fn ", "function ", "lambda "] {
        let Some(at) = t.find(keyword) else { continue };
        let rest = &t[at + keyword.len()..];
        let params = if keyword == "lambda " {
            rest.split(':').next().unwrap_or("")
        } else {
            let Some(open) = rest.find('(') else { continue };
            let inner = &rest[open + 1..];
            inner.split(')').next().unwrap_or("")
        };
        for p in params.split(',') {
            let p = p
                .trim()
                .trim_start_matches(['*', '&'])
                .trim_start_matches("mut ");
            if let Some(name) = idents(p).into_iter().next() {
                out.push(name);
            }
        }
    }
    out
}

/// The modules a line of Python code imports whole, by the name the code then uses for each,
/// with the module's top-level package: `import numpy as np` gives `np` → `numpy`,
/// `import os.path` gives `os` → `os`. A JavaScript `import x from 'y'` gives nothing.
fn imports(line: &str) -> Vec<(String, String)> {
    let t = line.trim().trim_start_matches(">>>").trim_start();
    let Some(rest) = t.strip_prefix("import ") else {
        return Vec::new();
    };
    if rest.contains(['\'', '"', '{']) || rest.contains(" from ") {
        return Vec::new();
    }
    let identifier = |w: &str| w.starts_with(ident_start) && w.chars().all(ident_char);
    rest.split(',')
        .filter_map(|part| {
            let mut words = part.split_whitespace();
            let top = words.next()?.split('.').next()?;
            let name = match (words.next(), words.next()) {
                (None, _) => top,
                (Some("as"), Some(alias)) => alias,
                _ => return None,
            };
            (identifier(top) && identifier(name)).then(|| (name.to_string(), top.to_string()))
        })
        .collect()
}

/// The non-empty segments of a dotted or `::` chain (`a::b.c` → `a`, `b`, `c`).
fn segments(chain: &str) -> Vec<&str> {
    chain
        .split("::")
        .flat_map(|part| part.split('.'))
        .filter(|s| !s.is_empty())
        .collect()
}

/// Sorts the names [`note_chain`] records for `chain` into those it mentions as a member of
/// an imported module (`np.array`: `array`, `np.array`) and those it mentions otherwise.
fn note_member(
    chain: &str,
    modules: &BTreeMap<String, String>,
    members: &mut BTreeMap<String, BTreeSet<String>>,
    elsewhere: &mut BTreeSet<String>,
) {
    let segments = segments(chain);
    let Some(last) = segments.last() else {
        return;
    };
    let mut names = vec![last.to_string()];
    if segments.len() >= 2 {
        names.push(segments[segments.len() - 2..].join("."));
    }
    match modules.get(segments[0]).filter(|_| segments.len() >= 2) {
        Some(package) => {
            for name in names {
                members.entry(name).or_default().insert(package.clone());
            }
        }
        None => elsewhere.extend(names),
    }
}

/// What a line of a task is to the reader.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Outside fenced blocks.
    Prose,
    /// Inside a block, code: a plain block's lines, a session's or terminal's prompts, a
    /// traceback's quoted source.
    Code,
    /// A terminal's output: read for its inline `code` spans only.
    Output,
    /// A session's output: not read.
    Hidden,
    /// A traceback's own words (its message, `During handling of …`): only code-shaped names
    /// and inline spans count.
    Message,
    /// A traceback frame inside a block, read by [`read`] on its own.
    Frame,
}

/// Every line of `text` but the fences, with its [`Kind`].
fn kinds(text: &str) -> Vec<(&str, Kind)> {
    let all: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(all.len());
    let (mut in_fence, mut session, mut console, mut traceback) = (false, false, false, false);
    for (i, line) in all.iter().copied().enumerate() {
        if is_fence(line) {
            in_fence = !in_fence;
            if in_fence {
                let block = &all[i + 1..fence_end(&all, i)];
                session = session_block(block);
                console = console_block(block);
                traceback = false;
            }
            continue;
        }
        let t = line.trim_start();
        // A block that runs a command and then prints a test run's output (a `nox` or `tox`
        // log) is a terminal's from the run's banner on.
        console |= in_fence && !session && banner(t);
        // A terminal's output is read for its quoted names only, traceback or not.
        traceback |= in_fence && !console && traceback_header(line);
        let kind = if !in_fence {
            Kind::Prose
        } else if t.starts_with("File \"") || (traceback && ipython_frame(t).is_some()) {
            Kind::Frame
        } else if console {
            if t.starts_with("$ ") {
                Kind::Code
            } else {
                Kind::Output
            }
        } else if traceback && !traceback_code(line) {
            Kind::Message
        } else if session && !prompt(t) {
            Kind::Hidden
        } else {
            Kind::Code
        };
        out.push((line, kind));
    }
    out
}

/// The prose of a task's `lines`: everything outside fenced blocks; and, apart, the messages of the
/// tracebacks inside them (`TypeError: _print_Foo() got an unexpected keyword argument`),
/// where the program names its own code in words.
fn prose(lines: &[(&str, Kind)]) -> (String, String) {
    let (mut prose, mut messages) = (String::new(), String::new());
    for &(line, kind) in lines {
        let out = match kind {
            Kind::Prose => &mut prose,
            Kind::Message => &mut messages,
            _ => continue,
        };
        // IPython's header: the exception's name, then the banner.
        out.push_str(line.split(TRACEBACK).next().unwrap_or_default());
        out.push('\n');
    }
    (prose, messages)
}

fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```") || t.starts_with("~~~")
}

/// The index of the fence that closes the block opened at `open` (or the end).
fn fence_end(all: &[&str], open: usize) -> usize {
    all[open + 1..]
        .iter()
        .position(|l| is_fence(l))
        .map_or(all.len(), |p| open + 1 + p)
}

/// The code regions of a task's `lines`: the [`Kind::Code`] lines of fenced blocks; outside them,
/// session, traceback and indented lines; and inline `code` spans.
fn code_regions<'t>(lines: &[(&'t str, Kind)]) -> Vec<&'t str> {
    let mut out = Vec::new();
    for &(line, kind) in lines {
        let t = line.trim_start();
        let code = match kind {
            Kind::Code => true,
            Kind::Frame | Kind::Hidden => continue,
            // A frame names its file and function (read by `read`), not words to search for.
            Kind::Prose if t.starts_with("File \"") => continue,
            Kind::Prose => {
                prompt(t)
                    || t.starts_with("at ")
                    || line.starts_with("    ")
                    || line.starts_with('\t')
            }
            Kind::Output | Kind::Message => false,
        };
        if code {
            out.push(line);
            continue;
        }
        // Inline `code` spans.
        let mut rest = line;
        while let Some(a) = rest.find('`') {
            let after = &rest[a + 1..];
            let Some(b) = after.find('`') else { break };
            out.push(&after[..b]);
            rest = &after[b + 1..];
        }
    }
    out
}

/// IPython's frame line: `~/…/sympy/geometry/point.py in __add__(self, other)`.
fn ipython_frame(line: &str) -> Option<Frame> {
    let (path, function) = line.trim().split_once(" in ")?;
    let source = SOURCE_EXTENSIONS
        .iter()
        .any(|e| path.strip_suffix(e).is_some_and(|p| p.ends_with('.')));
    let (function, _) = function.split_once('(')?;
    (source && !path.contains(' ') && !function.is_empty() && function.chars().all(ident_char))
        .then(|| Frame {
            path: path.to_string(),
            line: None,
            function: Some(function.to_string()),
        })
}

/// `frame` with the line of the `--> 482` arrow among the quoted lines that follow it.
fn at_arrow(mut frame: Frame, after: &[&str]) -> Frame {
    frame.line = after
        .iter()
        .map(|l| l.trim_start())
        .take_while(|l| l.starts_with('-') || l.starts_with(|c: char| c.is_ascii_digit()))
        .find_map(|l| {
            let number = l.trim_start_matches('-').strip_prefix('>')?.trim_start();
            number.split_whitespace().next()?.parse().ok()
        });
    frame
}

fn python_frame(line: &str) -> Option<Frame> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once('"')?;
    let rest = rest.trim_start().strip_prefix(',')?.trim_start();
    let rest = rest.strip_prefix("line ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let function = rest
        .split_once(", in ")
        .map(|(_, f)| f.trim().to_string())
        .filter(|f| f.chars().all(ident_char) && !f.is_empty());
    Some(Frame {
        path: path.to_string(),
        line: digits.parse().ok(),
        function,
    })
}

/// pytest's own frame line: `src/_pytest/main.py:341: in from_call` — the form of every
/// traceback that a failing test run prints, so of most reports about a test suite.
fn pytest_frame(line: &str) -> Option<Frame> {
    let (location, function) = line.trim().rsplit_once(": in ")?;
    let (path, number) = location.rsplit_once(':')?;
    let line: u32 = number.parse().ok()?;
    let source = path
        .rsplit_once('.')
        .is_some_and(|(_, ext)| SOURCE_EXTENSIONS.contains(&ext));
    (source
        && !path.contains(char::is_whitespace)
        && !function.is_empty()
        && function.chars().all(ident_char))
    .then(|| Frame {
        path: path.to_string(),
        line: Some(line),
        function: Some(function.to_string()),
    })
}

/// `at fn (path:L:C)`, `at path:L:C`, `panicked at path:L:C`.
fn at_frame(line: &str) -> Option<Frame> {
    let t = line.trim_start();
    let rest = t
        .strip_prefix("at ")
        .or_else(|| t.split_once("panicked at ").map(|(_, r)| r))?;
    let (function, loc) = match rest.split_once(" (") {
        Some((f, loc)) => (Some(f.trim().to_string()), loc.trim_end_matches([')', ','])),
        None => (None, rest.trim_end_matches([':', ','])),
    };
    let mut parts = loc.split(':');
    let path = parts.next()?.to_string();
    path_like(&path)?;
    let line = parts.next().and_then(|l| l.parse().ok());
    let function = function
        .map(|f| f.rsplit(['.', ':']).next().unwrap_or(&f).to_string())
        .filter(|f| !f.is_empty() && f.chars().all(ident_char));
    Some(Frame {
        path,
        line,
        function,
    })
}

/// Keywords that introduce a definition, in the languages acms reads.
const DEFINING: &[&str] = &[
    "def",
    "class",
    "function",
    "fn",
    "struct",
    "enum",
    "trait",
    "interface",
];

/// The names a region's identifier chains define: the chain after a defining keyword that is
/// not itself called (`function (req)` defines nothing).
fn definitions(chains: &[(String, bool)]) -> impl Iterator<Item = String> + '_ {
    chains
        .windows(2)
        .filter(|w| !w[0].1 && DEFINING.contains(&w[0].0.as_str()))
        .map(|w| w[1].0.clone())
}

fn add(map: &mut BTreeMap<String, f32>, key: &str, weight: f32) {
    let e = map.entry(key.to_string()).or_insert(0.0);
    *e = e.max(weight);
}

/// `line` without the marks that quote it: Markdown's `> ` (a reply quoting a report, a
/// quoted traceback) and a log's `INTERNALERROR> ` — the marker of a capital word and `>`
/// that pytest puts before every line of a crash in its own code. Under the marks the line
/// is read like any other: a fence opens a block, `File "…"` is a frame. A session's `>>>`
/// prompt is not a quote.
fn unquoted(line: &str) -> &str {
    let mut rest = line;
    loop {
        let t = rest.trim_start();
        let marker = t.find('>').filter(|&i| {
            let word = &t[..i];
            word.is_empty() || (word.len() >= 3 && word.chars().all(|c| c.is_ascii_uppercase()))
        });
        let Some(i) = marker else { return rest };
        let after = &t[i + 1..];
        if after.starts_with('>') || !(after.is_empty() || after.starts_with(' ')) {
            return rest;
        }
        rest = after.strip_prefix(' ').unwrap_or(after);
    }
}

/// `text` with every line [`unquoted`] (borrowed when no line is quoted).
fn without_quote_marks(text: &str) -> std::borrow::Cow<'_, str> {
    let lines: Vec<&str> = text.lines().map(unquoted).collect();
    if text.lines().zip(&lines).all(|(l, u)| l.len() == u.len()) {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(lines.join("\n"))
}

/// `text` without the lines that list an environment's installed packages: `pip freeze`'s
/// `attrs==19.3.0`, `pip list`'s and `conda list`'s `attrs   19.3.0` columns, pip's
/// `Installing collected packages: …` and `Successfully installed …`. A report pastes them to
/// say what it ran on; their names are other projects' (`typing-extensions` is not the
/// `extensions` of a `conf.py`), and a listing of two hundred packages would outvote the
/// report's own words.
pub fn without_environment(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.lines().any(lists_packages) {
        return std::borrow::Cow::Borrowed(text);
    }
    let kept: Vec<&str> = text.lines().filter(|l| !lists_packages(l)).collect();
    std::borrow::Cow::Owned(kept.join("\n"))
}

/// Whether `line` is a line of a package listing (see [`without_environment`]).
fn lists_packages(line: &str) -> bool {
    let t = line.trim();
    if [
        "Installing collected packages:",
        "Successfully installed ",
        "Requirement already satisfied:",
    ]
    .iter()
    .any(|p| t.starts_with(p))
    {
        return true;
    }
    let package = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_alphanumeric())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    };
    let version = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_digit())
            && s.contains('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".+-!_".contains(c))
    };
    let mut words = t.split_whitespace();
    let Some(first) = words.next() else {
        return false;
    };
    if let Some((name, v)) = first.split_once("==") {
        return package(name) && version(v) && words.next().is_none();
    }
    // A listing's columns are aligned with runs of spaces; a version, then at most a build
    // and a channel or a location.
    package(first)
        && t[first.len()..].starts_with("  ")
        && words.next().is_some_and(version)
        && words.count() <= 2
}

/// Binary operators and the words of the names the code implementing them has: Python runs
/// `a**b` as `__pow__` (in sympy `Pow`, `_print_Pow`, `_eval_power`), `a*b` as `__mul__`,
/// `a @ b` as `__matmul__`; Rust implements `*` as `impl Mul`. Only the operators whose names
/// are specific: `+`, `-` and `/` also join strings and paths, and their names (`add`, `sub`,
/// `div`) are everyday words.
pub const OPERATIONS: &[(&str, &[&str])] = &[
    ("**", &["pow", "power"]),
    ("*", &["mul"]),
    ("@", &["matmul"]),
];

/// Words after which `*` is unary, a wildcard or part of a type, not an operation:
/// `import *`, `return *rest`, `function* gen`, `lambda *a`, `as *const u8`, `&mut *x`.
const BEFORE_UNARY: &[&str] = &[
    "import", "return", "yield", "in", "and", "or", "not", "else", "if", "while", "match", "as",
    "mut", "const", "function", "lambda", "await",
];

/// The [`OPERATIONS`] that `code` (a line without strings and comments) applies as binary
/// operators: an operand ends before the operator (a name, a number, `)` or `]`) and one
/// starts after it; `@` also has space on both sides, as matrix products are written, so an
/// address or a package version (`hono@4.0.0`) is not one. `f(*args, **kw)`, `&**self`,
/// `@decorator` and `x *= 2` are not operations.
fn operations(code: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find(['*', '@']).map(|p| from + p) {
        let Some(&(op, words)) = OPERATIONS.iter().find(|(op, _)| code[at..].starts_with(op))
        else {
            break;
        };
        let (before, after) = (&code[..at], &code[at + op.len()..]);
        let (left, right) = (before.trim_end(), after.trim_start());
        let last_word = left
            .rsplit(|c: char| !ident_char(c))
            .next()
            .unwrap_or_default();
        let operand_before = left.ends_with(|c: char| ident_char(c) || c == ')' || c == ']')
            && !BEFORE_UNARY.contains(&last_word);
        let operand_after = right.starts_with(|c: char| ident_char(c) || c == '(' || c == '-');
        let spaced =
            before.ends_with(char::is_whitespace) && after.starts_with(char::is_whitespace);
        if operand_before && operand_after && (op != "@" || spaced) {
            out.extend_from_slice(words);
        }
        from = at + op.len();
    }
    out
}

/// Reads `text` (see the module doc).
pub fn read(text: &str) -> TaskReading {
    // The title is the reporter's own line, as written.
    let mut r = TaskReading {
        title: title(text),
        ..TaskReading::default()
    };
    let text = &*without_quote_marks(text);
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(f) = python_frame(line)
            .or_else(|| pytest_frame(line))
            .or_else(|| at_frame(line))
            .or_else(|| ipython_frame(line).map(|f| at_arrow(f, &lines[i + 1..])))
            && !r.frames.contains(&f)
        {
            r.frames.push(f);
        }
    }
    for f in &r.frames {
        add(&mut r.paths, &f.path, IN_CODE);
        if let Some(func) = &f.function
            && !is_noise(func)
            && func != "<module>"
        {
            add(&mut r.identifiers, func, IN_CODE);
        }
    }
    // How often the task's code binds each name, and how often any chain starts with it.
    let mut bound: BTreeMap<String, usize> = BTreeMap::new();
    let mut uses: BTreeMap<String, usize> = BTreeMap::new();
    let mut called = BTreeSet::new();
    // What the task's code imports whole, and the names it mentions as those modules'
    // members (`os.mkdir`) or otherwise.
    let classified = kinds(text);
    let regions = code_regions(&classified);
    let modules: BTreeMap<String, String> = regions.iter().flat_map(|r| imports(r)).collect();
    let mut members = BTreeMap::new();
    let mut elsewhere: BTreeSet<String> = r.identifiers.keys().cloned().collect();
    for region in regions {
        let code = without_comment(&without_strings(region));
        let chains = chains(&code);
        r.defined.extend(definitions(&chains));
        r.operations.extend(operations(&code));
        for name in bound_names(&code) {
            *bound.entry(name).or_default() += 1;
        }
        for (chain, call) in &chains {
            note_chain(&mut r, chain, IN_CODE);
            note_member(chain, &modules, &mut members, &mut elsewhere);
            let head = chain.split(['.', ':']).next().unwrap_or(chain);
            *uses.entry(head.to_string()).or_default() += 1;
            if *call {
                called.insert(chain.clone());
            }
        }
        for token in region.split_whitespace() {
            if let Some(p) = path_like(token) {
                add(&mut r.paths, &p, IN_CODE);
            }
        }
    }
    for token in text.split_whitespace() {
        if let Some(p) = path_like(token) {
            add(&mut r.paths, &p, CODE_SHAPED);
        }
    }
    let (prose, messages) = prose(&classified);
    for (words, weight) in [(prose, CODE_SHAPED), (messages, IN_CODE)] {
        for (chain, called) in chains(&words) {
            let dotted = chain.contains('.') || chain.contains("::");
            let shaped = called || dotted || chain.split(['.', ':']).any(code_shaped);
            if shaped {
                note_chain(&mut r, &chain, weight);
                note_member(&chain, &modules, &mut members, &mut elsewhere);
            }
        }
    }
    // A name the task's code binds and then reads (`for sym in …: f(sym)`, a parameter, an
    // assigned result) is the reporter's variable, not project code, whatever the project
    // happens to call `sym`. A name only assigned is a setting the project reads
    // (`autodoc_typehints = 'none'` in a conf.py) and still counts.
    r.identifiers.retain(|k, _| {
        let b = bound.get(k).copied().unwrap_or(0);
        b == 0 || uses.get(k).copied().unwrap_or(0) <= b || called.contains(k)
    });
    members.retain(|name, _| !elsewhere.contains(name));
    r.imported = members;
    // A dotted chain that is really a file name (`setup.py`) is a path, not a symbol.
    let paths: Vec<String> = r.paths.keys().cloned().collect();
    r.identifiers
        .retain(|k, _| !paths.iter().any(|p| p.ends_with(k.as_str())));
    r
}

/// The first non-empty line of `text` when another non-empty line follows it and it is at
/// most [`MAX_TITLE_CHARS`] long.
fn title(text: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next()?;
    (lines.next().is_some() && first.chars().count() <= MAX_TITLE_CHARS).then(|| first.to_string())
}

/// Records a chain: the whole dotted name, each of its last two segments, and (for lowercase
/// dotted chains of three or more parts) the module path it may be.
fn note_chain(r: &mut TaskReading, chain: &str, weight: f32) {
    let segments = segments(chain);
    if segments.is_empty() {
        return;
    }
    if segments.len() >= 2 {
        let tail = segments[segments.len() - 2..].join(".");
        if !is_noise(segments[segments.len() - 1]) {
            add(&mut r.identifiers, &tail, weight);
        }
        if segments.len() >= 3
            && segments
                .iter()
                .all(|s| s.chars().all(|c| !c.is_ascii_uppercase()))
        {
            add(&mut r.paths, &segments.join("/"), weight * 0.9);
        }
    }
    // Only the last segment names the thing itself: `x.foo()` mentions `foo`, not `x`; a
    // leading capitalised segment is a class (`Mul.flatten` mentions `Mul`).
    if let Some(last) = segments.last()
        && !is_noise(last)
    {
        add(&mut r.identifiers, last, weight);
    }
    if segments.len() >= 2 {
        let first = segments[0];
        if first.chars().next().is_some_and(|c| c.is_ascii_uppercase()) && !is_noise(first) {
            add(&mut r.identifiers, first, weight * 0.8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Asserts that `text` reads as exactly one frame, of `function` at `path:line`.
    fn check_frame(text: &str, path: &str, line: u32, function: &str) {
        let r = read(text);
        assert_eq!(
            r.frames,
            [Frame {
                path: path.into(),
                line: Some(line),
                function: Some(function.into()),
            }]
        );
        assert_eq!(r.identifiers.get(function), Some(&IN_CODE));
        assert!(r.paths.contains_key(path));
    }

    #[test]
    fn python_traceback_frames_name_files_and_functions() {
        check_frame(
            "Traceback (most recent call last):\n  File \"/home/u/sympy/core/mul.py\", line 250, in flatten\n    c_part.append(o)\nTypeError: bad",
            "/home/u/sympy/core/mul.py",
            250,
            "flatten",
        );
    }

    #[test]
    fn pytest_traceback_frames_name_files_and_functions() {
        check_frame(
            "```\n/usr/lib/python3.8/site-packages/_pytest/assertion/rewrite.py:695: in run\n    if self.is_rewrite_disabled(doc):\nE   TypeError: argument of type 'int' is not iterable\n../test_path_error.py:29: AssertionError\n```",
            "/usr/lib/python3.8/site-packages/_pytest/assertion/rewrite.py",
            695,
            "run",
        );
        // Prose that happens to hold ": in " is not a frame.
        assert!(read("see notes.txt: in short, it fails").frames.is_empty());
    }

    #[test]
    fn package_listings_are_not_read() {
        let text = "Fails on collect\n```\nInstalling collected packages: zipp, typing-extensions\nSuccessfully installed typing-extensions-4.6.3\nattrs==19.3.0\nPackage            Version\n------------------ -------\ntyping-extensions  4.6.3\nnumpy              1.24.2   py311  conda-forge\n```\n```\n>>> Matrix([[1, 2]])\nx  =  1.5\n```";
        let kept = without_environment(text);
        for gone in ["zipp", "typing-extensions", "attrs", "numpy"] {
            assert!(!kept.contains(gone), "{gone} in {kept}");
        }
        // The report's own lines stay, a session's output among them.
        for stays in [
            "Fails on collect",
            "Package            Version",
            ">>> Matrix([[1, 2]])",
            "x  =  1.5",
        ] {
            assert!(kept.contains(stays), "{stays} not in {kept}");
        }
        assert!(matches!(
            without_environment("no listing\nhere"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn code_identifiers_outweigh_prose_and_noise_is_skipped() {
        let r = read(
            "`ccode(sinc(x))` doesn't work; see the CCodePrinter and the get_value helper.\n```\n>>> from sympy import Piecewise\n```",
        );
        assert_eq!(r.identifiers.get("ccode"), Some(&IN_CODE));
        assert_eq!(r.identifiers.get("sinc"), Some(&IN_CODE));
        assert_eq!(r.identifiers.get("Piecewise"), Some(&IN_CODE));
        assert_eq!(r.identifiers.get("CCodePrinter"), Some(&CODE_SHAPED));
        assert_eq!(r.identifiers.get("get_value"), Some(&CODE_SHAPED));
        assert!(!r.identifiers.contains_key("from"));
        assert!(!r.identifiers.contains_key("doesn"));
        assert!(!r.identifiers.contains_key("helper"));
    }

    #[test]
    fn a_capitalized_keyword_is_a_class_name() {
        let r = read("```\n>>> Mod(x**2, x)\n>>> mod = Set(None)\n>>> f(STR, True)\n```");
        assert_eq!(r.identifiers.get("Mod"), Some(&IN_CODE));
        assert_eq!(r.identifiers.get("Set"), Some(&IN_CODE));
        assert_eq!(r.identifiers.get("STR"), Some(&IN_CODE), "a constant");
        for noise in ["mod", "None", "True"] {
            assert!(!r.identifiers.contains_key(noise), "{noise}");
        }
    }

    #[test]
    fn binary_operators_name_the_operations_they_run() {
        let r = read("```\n>>> pi**(1/E)\n>>> 2*x + y\n>>> A @ B\n```");
        assert_eq!(
            r.operations,
            ["matmul", "mul", "pow", "power"].into_iter().collect()
        );
        for code in [
            "```\nfrom sympy import *\ndef f(*args, **kw):\n    return g(*args)\n```",
            "```\n@pytest.fixture\nx *= 2\nlet y = &**self;\nprint('a*b')  # 2*3\n```",
            "```\nfunction* gen() {}\nlet p = x as *const u8;\nf(&mut *x)\n```",
            "```\n$ npm install hono@4.0.0\ngit log --author=me@example.com\n```",
            "Use **bold** and 2*x in prose.",
        ] {
            assert!(read(code).operations.is_empty(), "{code}");
        }
    }

    #[test]
    fn dotted_names_paths_and_positions() {
        let r = read(
            "Calling `Mul.flatten` breaks; see sympy/core/mul.py:120 and sympy.printing.latex",
        );
        assert!(r.identifiers.contains_key("Mul.flatten"));
        assert!(r.identifiers.contains_key("flatten"));
        assert!(r.identifiers.contains_key("Mul"));
        assert!(r.paths.contains_key("sympy/core/mul.py"));
        assert!(r.paths.contains_key("sympy/printing/latex"));
        assert!(!r.identifiers.contains_key("mul.py"));
    }

    #[test]
    fn javascript_and_rust_frames() {
        let r = read(
            "    at Router.match (src/router/trie.ts:42:7)\nthread 'main' panicked at axum/src/routing/mod.rs:310:9:",
        );
        assert_eq!(r.frames.len(), 2, "{:?}", r.frames);
        assert_eq!(r.frames[0].function.as_deref(), Some("match"));
        assert_eq!(r.frames[1].path, "axum/src/routing/mod.rs");
        assert_eq!(r.frames[1].line, Some(310));
    }

    #[test]
    fn session_output_and_strings_are_not_code() {
        let r = read(
            "```\n>>> latex(p)\n'\\\\left( a x \\\\right)'\n>>> print(\"frobnicate_all\")\n```",
        );
        assert!(r.identifiers.contains_key("latex"));
        assert!(!r.identifiers.contains_key("left"), "{:?}", r.identifiers);
        assert!(!r.identifiers.contains_key("right"));
        assert!(!r.identifiers.contains_key("frobnicate_all"));
    }

    #[test]
    fn names_the_tasks_own_code_defines_are_marked() {
        let r = read(
            "```python\n@overload\ndef foo(x: int) -> int: ...\nclass MyString(str):\n    pass\n```\nand `app.get('/', function (req) {})`, `pub fn route<T>()`, `x.__class__`",
        );
        let defined: Vec<&str> = r.defined.iter().map(String::as_str).collect();
        assert_eq!(defined, ["MyString", "foo", "route"]);
        assert!(
            r.identifiers.contains_key("foo"),
            "still read as an identifier"
        );
    }

    #[test]
    fn the_first_line_is_a_title_only_when_more_follows() {
        let r = read("\n0**-oo produces 0, the docs say zoo\nUsing SymPy 1.5.1, ...");
        assert_eq!(
            r.title.as_deref(),
            Some("0**-oo produces 0, the docs say zoo")
        );
        assert_eq!(
            read("Fix the router\n\nIt matched twice.").title.as_deref(),
            Some("Fix the router")
        );
        assert_eq!(
            read("how is the budget verified?").title,
            None,
            "a one-line question"
        );
        let long = format!("{}\nmore", "word ".repeat(60));
        assert_eq!(read(&long).title, None, "a paragraph's first line");
    }

    #[test]
    fn comments_are_prose_and_the_reporters_variables_name_nothing() {
        let r = read(
            "```python\n# Construct the matrices. (Gives array-input in codegen.)\nconstants, c_expr = ccode(expr)  # see Printer\nassert not constants, c_expr\nfor sym, value in pairs:\n    total = sym.subs(value)\nf = lambda i, j: i\ndef t44(name, *rest):\n    return name, rest\nautodoc_typehints = 'none'\n#[derive(Debug)]\nlet mut router = Router::new(); // route it\nrouter.route(app)\n```\n`const app = new Hono()`",
        );
        // Comment words, and what the code binds and reads: assigned, looped over, parameters.
        let gone = [
            "Construct",
            "Gives",
            "codegen",
            "Printer",
            "constants",
            "c_expr",
            "sym",
            "name",
            "rest",
            "router",
            "app",
        ];
        for gone in gone {
            assert!(
                !r.identifiers.contains_key(gone),
                "{gone}: {:?}",
                r.identifiers
            );
        }
        // What it calls, reads without binding, defines, or only sets (a setting's name).
        let kept = [
            "ccode",
            "expr",
            "pairs",
            "subs",
            "derive",
            "Debug",
            "Router",
            "Hono",
            "t44",
            "autodoc_typehints",
            "total",
        ];
        for kept in kept {
            assert!(
                r.identifiers.contains_key(kept),
                "{kept}: {:?}",
                r.identifiers
            );
        }
    }

    #[test]
    fn a_terminals_output_is_not_code_but_its_quoted_names_are() {
        let r = read(
            "```\n$ pip list\nPackage    Version\nattrs      19.1.0\n```\n```\n===== test session starts =====\nplatform linux -- Python 3.9\ncollected 1 item\n    def test_it(session):\nE   no method `frobnicate` found\n```",
        );
        for gone in [
            "Package",
            "attrs",
            "platform",
            "Python",
            "collected",
            "session",
        ] {
            assert!(
                !r.identifiers.contains_key(gone),
                "{gone}: {:?}",
                r.identifiers
            );
        }
        assert!(r.identifiers.contains_key("pip"), "the prompt line is code");
        assert!(
            r.identifiers.contains_key("frobnicate"),
            "{:?}",
            r.identifiers
        );
        // A block of code is still code.
        let code = read("```\nx = attrs.Factory(list)\n```");
        assert!(code.identifiers.contains_key("Factory"));
        // A log that runs the tests is the terminal's from the run's banner on.
        let log = read(
            "```\nnox > session.run_tests(reuse_venv)\n===== test session starts =====\nplatform linux -- Python 3.7.5\nCommand pytest failed with exit code 1\n```",
        );
        assert!(
            log.identifiers.contains_key("run_tests"),
            "{:?}",
            log.identifiers
        );
        for gone in ["Python", "platform", "Command", "failed"] {
            assert!(
                !log.identifiers.contains_key(gone),
                "{gone}: {:?}",
                log.identifiers
            );
        }
    }

    #[test]
    fn quoted_lines_are_read_under_their_quote_marks() {
        // pytest's crash in its own code: every line marked `INTERNALERROR>`.
        let crash = read(
            "INTERNALERROR when exception in __repr__\n```\ncollecting ... collected 1 item\nINTERNALERROR> Traceback (most recent call last):\nINTERNALERROR>   File \"/usr/lib/python3.8/site-packages/_pytest/_io/saferepr.py\", line 47, in repr_instance\nINTERNALERROR>     s = repr(x)\nINTERNALERROR> RuntimeError: No active exception to reraise\n```",
        );
        assert_eq!(
            crash.frames,
            vec![Frame {
                path: "/usr/lib/python3.8/site-packages/_pytest/_io/saferepr.py".into(),
                line: Some(47),
                function: Some("repr_instance".into()),
            }]
        );
        assert!(!crash.identifiers.contains_key("INTERNALERROR"));
        // A reply quoting a report's code block: the block is code, its prose is prose.
        let reply = read(
            "Still broken on main:\n> We call it like this:\n> ```python\n> >>> checkout(cart)\n> ```\n> which fails",
        );
        assert!(reply.identifiers.contains_key("checkout"), "{:?}", reply);
        assert!(!reply.identifiers.contains_key("fails"));
        // The title stays the line as written (proptest: `> in` then a fence).
        assert_eq!(read("> in \n```").title.as_deref(), Some("> in"));
        // Comparisons and arrows are not quotes.
        assert_eq!(unquoted("a > b"), "a > b");
        assert_eq!(unquoted("-> None"), "-> None");
        assert_eq!(unquoted(">>> f(x)"), ">>> f(x)");
        assert_eq!(unquoted("> > nested"), "nested");
    }

    #[test]
    fn a_tracebacks_messages_are_prose_but_its_frames_and_quoted_code_are_code() {
        let mixed = read(
            "```python\nimport os\nfrom shop import checkout\ncheckout(cart)\nassert \"Traceback (most recent call last)\" in out\nbasket = Basket()\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\nValueError: cart is empty\n```",
        );
        for kept in ["checkout", "Basket", "shop"] {
            assert!(
                mixed.identifiers.contains_key(kept),
                "the code before the traceback is code: {kept}: {:?}",
                mixed.identifiers
            );
        }
        assert!(!mixed.identifiers.contains_key("empty"));
        let session = read(
            "```\nIn [15]: Poly(x, domain='RR[y,z]')\nOptionError    Traceback (most recent call last)\n```",
        );
        assert!(
            session.identifiers.contains_key("domain"),
            "the prompt that raised is code: {:?}",
            session.identifiers
        );
        let r = read(
            "```\n---------------------------------------------------------------------------\nTypeError                                 Traceback (most recent call last)\n~/lib/sympy/geometry/point.py in __add__(self, other)\n    219         try:\n--> 220             s, o = Point._normalize_dimension(self, other)\n\nTypeError: \nExpecting sequence of coordinates, not `Mul`\n\nDuring handling of the above exception, another exception occurred:\n\nGeometryError                             Traceback (most recent call last)\n<ipython-input-20-6dcbddac1ee2> in <module>\n----> 1 point1 + sympify(2.0) * point2\n```\n```\nTraceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n    Mod(3 * i, 2)\nValueError: cannot reduce the remainder further\nTypeError: _print_SingularityFunction() got an unexpected keyword argument 'exp'\n```",
        );
        for gone in [
            "Expecting",
            "sequence",
            "coordinates",
            "During",
            "handling",
            "above",
            "another",
            "occurred",
            "cannot",
            "reduce",
            "remainder",
            "File",
            "ipython",
            "Traceback",
            "module",
        ] {
            assert!(
                !r.identifiers.contains_key(gone),
                "{gone}: {:?}",
                r.identifiers
            );
        }
        assert_eq!(
            r.identifiers.get("_print_SingularityFunction"),
            Some(&IN_CODE),
            "the program names its own code in its message"
        );
        assert!(
            r.frames
                .iter()
                .any(|f| f.path == "~/lib/sympy/geometry/point.py"
                    && f.function.as_deref() == Some("__add__")
                    && f.line == Some(220)),
            "{:?}",
            r.frames
        );
        for kept in [
            "__add__",
            "_normalize_dimension",
            "Mul",
            "GeometryError",
            "sympify",
            "Mod",
            "ValueError",
            "_print_SingularityFunction",
        ] {
            assert!(
                r.identifiers.contains_key(kept),
                "{kept}: {:?}",
                r.identifiers
            );
        }
    }

    #[test]
    fn members_of_imported_modules_are_marked_with_their_package() {
        let r = read(
            "```python\nimport os, numpy as np\nimport os.path\nos.mkdir(p)\nx = np.array([1])\nos.path.join(a, b)\nos.getcwd()\ngetcwd()\nimport React from 'react'\nReact.render(app)\n```",
        );
        let package = |name: &str| {
            r.imported
                .get(name)
                .map(|p| p.iter().cloned().collect::<Vec<_>>())
        };
        assert_eq!(package("mkdir"), Some(vec!["os".to_string()]));
        assert_eq!(package("os.mkdir"), Some(vec!["os".to_string()]));
        assert_eq!(package("array"), Some(vec!["numpy".to_string()]));
        assert_eq!(package("path.join"), Some(vec!["os".to_string()]));
        assert_eq!(package("getcwd"), None, "also called bare");
        assert_eq!(
            package("render"),
            None,
            "a JavaScript import names no module"
        );
        assert!(r.identifiers.contains_key("mkdir"), "still read");
        let session = read("```\n>>> import numpy as np\n>>> np.zeros(3)\n```");
        assert!(session.imported.contains_key("zeros"), "{session:?}");
    }

    proptest::proptest! {
        /// Any text is a task: reading never panics (the reader slices lines at the markers
        /// it finds, operators included), a title is one of the text's own lines, and every
        /// operation is a word of [`OPERATIONS`].
        #[test]
        fn any_text_is_read(text in "([a-zA-Z0-9_ é漢#/=(),.:`>*@\\[\\]\\-]|\n|```|>>> |def |for | in | as |let mut |\\*\\*){0,120}") {
            let r = read(&text);
            if let Some(t) = r.title {
                proptest::prop_assert!(text.lines().any(|l| l.trim() == t));
            }
            for w in &r.operations {
                proptest::prop_assert!(OPERATIONS.iter().any(|(_, words)| words.contains(w)));
            }
        }
    }

    #[test]
    fn nothing_in_plain_prose() {
        let r = read("The page renders slowly when the list is long.");
        assert!(r.identifiers.is_empty() && r.paths.is_empty() && r.frames.is_empty());
    }
}
