//! Task text rules shared with `eval/make_tasks.py`: how a docstring becomes a task sentence
//! (set 1), how a sentence loses every word built from the function's name (set 2), which
//! sentences are "meaningful" enough to make a task, and Aider's mentioned-identifier split.
//!
//! This is a port of the Python generator's functions of the same names, so TypeScript tasks
//! (generated here) follow exactly the rules Python tasks (generated there) do. It owns text
//! only: no files, no parsing, no sampling.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

/// A first sentence needs at least this many words to be a task.
pub const MIN_WORDS: usize = 5;
/// ... and at least this many words that are neither stopwords nor the function's name.
pub const MIN_CONTENT_WORDS: usize = 2;
/// Set 2 needs at least this many words left after the name words are stripped.
pub const MIN_SET2_WORDS: usize = 3;
/// Task text is cut to this many characters.
pub const MAX_QUERY_CHARS: usize = 400;

const STOPWORDS_TEXT: &str = "a an the and or but if then else of to in on at by for from with \
    without into onto as is are was were be been being it its this that these those there here \
    which who whom whose what when where why how not no nor do does did done can could should \
    would may might must shall will all any each every some such than too very so only also just \
    own same other more most less few many much one two we you they he she i me my our your \
    their them us his her return returns returned returning method function helper class \
    instance object self cls given value values";

static STOPWORDS: LazyLock<BTreeSet<&'static str>> =
    LazyLock::new(|| STOPWORDS_TEXT.split_whitespace().collect());

// The patterns below are the Python generator's, verbatim where Rust's regex allows it.
static WORD: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z][A-Za-z0-9_'-]*"));
static TOKEN: LazyLock<Regex> = LazyLock::new(|| re(r"[A-Za-z0-9_]+"));
static PLACEHOLDER: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)^(todo|fixme|xxx|tbd|hack|deprecated|internal use|private|see\b|same as|alias (for|of)|overrides?\b|implements?\b|inherited|copy of|:meta|#|docstring)",
    )
});
static ROLE: LazyLock<Regex> =
    LazyLock::new(|| re(r":[a-z]+(?::[a-z]+)?:`~?([^`<]*?)(?:\s*<[^>]*>)?`"));
static DOUBLE_TICK: LazyLock<Regex> = LazyLock::new(|| re(r"``([^`]*)``"));
static TICK: LazyLock<Regex> = LazyLock::new(|| re(r"`([^`]*)`_?"));
static STARS: LazyLock<Regex> = LazyLock::new(|| re(r"\*\*?([^*]+)\*\*?"));
static SPACES: LazyLock<Regex> = LazyLock::new(|| re(r"\s+"));
static SECTION: LazyLock<Regex> = LazyLock::new(|| re(r"^[A-Z][a-z]+( [A-Z][a-z]+)?:$"));
static SPACE_PUNCT: LazyLock<Regex> = LazyLock::new(|| re(r"\s+([,.;:?!)])"));
static EMPTY_PARENS: LazyLock<Regex> = LazyLock::new(|| re(r"\(\s*\)"));
// JSDoc inline tags: `{@link Foo}`, `{@link Foo | the foo}`, `{@linkcode Foo}`.
static JSDOC_LINK: LazyLock<Regex> =
    LazyLock::new(|| re(r"\{@\w+\s+([^}|]*?)(?:\s*\|\s*([^}]*))?\}"));

fn re(pattern: &str) -> Regex {
    // The patterns are constants of this file; a typo is caught by every test.
    Regex::new(pattern).expect("constant pattern compiles")
}

/// Identifier sub-words, lower case: `HTTPAdapter` → `[http, adapter]`,
/// `merge_setting` → `[merge, setting]`.
///
/// Python's `[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+`, written out because Rust's
/// regex has no lookahead.
pub fn subwords(identifier: &str) -> Vec<String> {
    let b = identifier.as_bytes();
    let run =
        |from: usize, f: fn(&u8) -> bool| from + b[from..].iter().take_while(|c| f(c)).count();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_uppercase() {
            let j = run(i, u8::is_ascii_uppercase);
            if j - i >= 2 && b.get(j).is_some_and(u8::is_ascii_lowercase) {
                // An acronym followed by a capitalised word: `HTTP` of `HTTPAdapter`.
                out.push(identifier[i..j - 1].to_ascii_lowercase());
                i = j - 1;
            } else if j - i == 1 && b.get(j).is_some_and(u8::is_ascii_lowercase) {
                let k = run(j, u8::is_ascii_lowercase);
                out.push(identifier[i..k].to_ascii_lowercase());
                i = k;
            } else {
                out.push(identifier[i..j].to_ascii_lowercase());
                i = j;
            }
        } else if c.is_ascii_lowercase() {
            let k = run(i, u8::is_ascii_lowercase);
            out.push(identifier[i..k].to_string());
            i = k;
        } else if c.is_ascii_digit() {
            let k = run(i, u8::is_ascii_digit);
            out.push(identifier[i..k].to_string());
            i = k;
        } else {
            // Skip one whole character (identifiers may hold non-ASCII letters).
            i += identifier[i..].chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

const INFLECTIONS: [&str; 9] = ["", "s", "es", "ed", "d", "ing", "er", "ers", "ly"];

/// True if `word` (lower case) is a name sub-word or a simple inflection of one.
pub fn is_name_word(word: &str, name_words: &BTreeSet<String>) -> bool {
    name_words.iter().any(|w| {
        if let Some(rest) = word.strip_prefix(w.as_str())
            && INFLECTIONS.contains(&rest)
        {
            return true;
        }
        // "encoding" for sub-word "encode": drop a trailing e before -ing/-ed/-er.
        if let Some(stem) = w.strip_suffix('e')
            && let Some(rest) = word.strip_prefix(stem)
        {
            return ["ing", "ed", "er", "ers"].contains(&rest);
        }
        false
    })
}

/// Drops reST / Markdown / JSDoc markup that would leak role names into the task text.
pub fn clean_markup(text: &str) -> String {
    let t = JSDOC_LINK.replace_all(text, |c: &regex::Captures<'_>| {
        c.get(2).or(c.get(1)).map_or("", |m| m.as_str()).to_string()
    });
    let t = ROLE.replace_all(&t, "$1");
    let t = DOUBLE_TICK.replace_all(&t, "$1");
    let t = TICK.replace_all(&t, "$1");
    let t = STARS.replace_all(&t, "$1");
    SPACES.replace_all(&t, " ").trim().to_string()
}

/// The first sentence of a docstring's first paragraph: up to `. ` / `? ` / `! ` or the
/// paragraph's end, which also ends at a field list or section header (`:param`, `Args:`,
/// `>>>`), as many one-line summaries are followed directly by those.
pub fn first_sentence(doc: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in doc.trim().lines() {
        let s = line.trim();
        if s.is_empty() {
            if !lines.is_empty() {
                break;
            }
            continue;
        }
        if s.starts_with(':') || s.starts_with(">>>") || s.starts_with("..") || SECTION.is_match(s)
        {
            break;
        }
        lines.push(s);
    }
    let para = clean_markup(&lines.join(" "));
    let chars: Vec<char> = para.chars().collect();
    let mut end = chars.len();
    for (p, &c) in chars.iter().enumerate() {
        if !matches!(c, '.' | '?' | '!') {
            continue;
        }
        if chars.get(p + 1).is_some_and(|n| !n.is_whitespace()) {
            continue;
        }
        // Python's (?<![.][a-z])(?<!\be\.g)(?<!\bi\.e): not the end of "e.g", "i.e", "x.y".
        let prev = |k: usize| p.checked_sub(k).map(|i| chars[i]);
        if prev(2) == Some('.') && prev(1).is_some_and(|c| c.is_ascii_lowercase()) {
            continue;
        }
        let abbrev = |a: char, b: char| {
            prev(3) == Some(a)
                && prev(2) == Some('.')
                && prev(1) == Some(b)
                && prev(4).is_none_or(|c| !(c.is_alphanumeric() || c == '_'))
        };
        if abbrev('e', 'g') || abbrev('i', 'e') {
            continue;
        }
        end = p + 1;
        break;
    }
    let sentence: String = chars[..end].iter().take(MAX_QUERY_CHARS).collect();
    sentence.trim().to_string()
}

/// Why a documented function makes no task, or `None` when its first sentence qualifies.
pub fn reject_sentence(sentence: &str, name: &str) -> Option<&'static str> {
    let words: Vec<&str> = WORD.find_iter(sentence).map(|m| m.as_str()).collect();
    if words.len() < MIN_WORDS {
        return Some("first sentence < 5 words");
    }
    if PLACEHOLDER.is_match(sentence) || sentence.contains("TODO") {
        return Some("placeholder / cross-reference");
    }
    let name_words: BTreeSet<String> = subwords(name).into_iter().collect();
    let content = words
        .iter()
        .map(|w| w.to_lowercase())
        .filter(|w| !STOPWORDS.contains(w.as_str()) && !is_name_word(w, &name_words))
        .count();
    if content < MIN_CONTENT_WORDS {
        return Some("restates the name");
    }
    None
}

/// Removes every token built from a sub-word of `name` (set 2's identifier-free text).
pub fn strip_name_words(text: &str, name: &str) -> String {
    let name_words: BTreeSet<String> = subwords(name).into_iter().collect();
    let out = TOKEN.replace_all(text, |c: &regex::Captures<'_>| {
        let tok = &c[0];
        let lower = tok.to_lowercase();
        let drop = subwords(tok)
            .iter()
            .chain(std::iter::once(&lower))
            .any(|w| is_name_word(w, &name_words));
        if drop { String::new() } else { tok.to_string() }
    });
    let out = SPACE_PUNCT.replace_all(&out, "$1");
    let out = EMPTY_PARENS.replace_all(&out, "");
    SPACES.replace_all(&out, " ").trim().to_string()
}

/// Set 2's task text, or `None` when too little is left to be a fair task.
pub fn set2_query(sentence: &str, name: &str) -> Option<String> {
    let text = strip_name_words(sentence, name);
    let words: Vec<&str> = WORD.find_iter(&text).map(|m| m.as_str()).collect();
    let content = words
        .iter()
        .filter(|w| !STOPWORDS.contains(w.to_lowercase().as_str()))
        .count();
    (words.len() >= MIN_SET2_WORDS && content >= MIN_CONTENT_WORDS).then_some(text)
}

/// Aider's `Coder.get_ident_mentions`: the set of `\W+`-separated words, sorted.
pub fn ident_mentions(text: &str) -> Vec<String> {
    let set: BTreeSet<&str> = text
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    set.into_iter().map(str::to_string).collect()
}

// ethers' doc dialect: `%%name%%` for parameters, `[[Name]]` for links.
static PERCENT_PARAM: LazyLock<Regex> = LazyLock::new(|| re(r"%%([^%]*)%%"));
static DOUBLE_BRACKET: LazyLock<Regex> = LazyLock::new(|| re(r"\[\[([^\]]*)\]\]"));

/// The text of a `/** … */` comment without its markers, leading `*`, `@tag` lines and the
/// `%%param%%` / `[[Link]]` markup some projects use.
pub fn jsdoc_body(comment: &str) -> String {
    let inner = comment
        .strip_prefix("/**")
        .unwrap_or(comment)
        .strip_suffix("*/")
        .unwrap_or(comment);
    let body = inner
        .lines()
        .map(|l| {
            let t = l.trim_start();
            let t = t.strip_prefix('*').unwrap_or(t);
            t.strip_prefix(' ').unwrap_or(t)
        })
        .filter(|l| !l.trim().starts_with('@'))
        .collect::<Vec<_>>()
        .join("\n");
    let body = PERCENT_PARAM.replace_all(&body, "$1");
    DOUBLE_BRACKET.replace_all(&body, "$1").into_owned()
}
