//! The code-aware tokenizer: how identifiers and prose become index terms.
//!
//! A *word* is a maximal run of alphanumeric characters and underscores (so `make_response` and
//! `getUserName` are one word each). Every word yields its lowercased whole form (the
//! *compound*, so an exact identifier lookup matches exactly) followed by its *parts*, split on
//! underscores, lower→upper case changes (`getUser` → get, user), the end of an upper-case run
//! (`HTTPServer` → http, server) and letter↔digit changes (`utf8` → utf, 8). A word that has a
//! single part yields one term only. Terms longer than [`MAX_TERM_BYTES`] are dropped: they are
//! base64 blobs or generated names that no one types, and they would bloat the dictionary.
//!
//! This module owns only term extraction. Stop words and stemming are tantivy filters stacked
//! on top (see `schema`), and which terms a query keeps is decided in `query`.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Longest term, in bytes, that the tokenizer emits.
pub const MAX_TERM_BYTES: usize = 64;

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Whether a sub-word boundary falls between `prev` and `cur`; `next` follows `cur`.
fn is_boundary(prev: char, cur: char, next: Option<char>) -> bool {
    if prev.is_numeric() != cur.is_numeric() {
        return true;
    }
    if cur.is_uppercase() {
        // `getUser`: a lower-case (or uncased) letter followed by an upper-case one.
        if !prev.is_uppercase() && !prev.is_numeric() {
            return true;
        }
        // `HTTPServer`: the last capital of a run starts the next word when a lower-case
        // letter follows it.
        if prev.is_uppercase() && next.is_some_and(char::is_lowercase) {
            return true;
        }
    }
    false
}

/// Pushes the byte ranges (offset by `base`) of the parts of `word` onto `out`.
fn split_ranges(word: &str, base: usize, out: &mut Vec<(usize, usize)>) {
    let mut start: Option<usize> = None;
    let mut prev: Option<char> = None;
    let mut chars = word.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '_' {
            if let Some(s) = start.take() {
                out.push((base + s, base + i));
            }
            prev = None;
            continue;
        }
        match (start, prev) {
            (Some(s), Some(p)) => {
                if is_boundary(p, c, chars.peek().map(|&(_, n)| n)) {
                    out.push((base + s, base + i));
                    start = Some(i);
                }
            }
            _ => start = Some(i),
        }
        prev = Some(c);
    }
    if let Some(s) = start {
        out.push((base + s, base + word.len()));
    }
}

/// The lowercased parts of one identifier: `HTTPServer2` → `["http", "server", "2"]`.
///
/// Characters that are neither alphanumeric nor `_` are treated as separators too, so any
/// string is accepted.
pub fn split_identifier(word: &str) -> Vec<String> {
    let mut ranges = Vec::new();
    for (start, end) in words(word) {
        split_ranges(&word[start..end], start, &mut ranges);
    }
    ranges
        .into_iter()
        .map(|(s, e)| word[s..e].to_lowercase())
        .collect()
}

/// All terms the tokenizer emits for `text`, in order (compounds before their parts).
pub fn code_terms(text: &str) -> Vec<String> {
    let mut tokenizer = CodeTokenizer;
    let mut stream = tokenizer.token_stream(text);
    let mut terms = Vec::new();
    while stream.advance() {
        terms.push(stream.token().text.clone());
    }
    terms
}

/// Byte ranges of the words of `text`.
fn words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut cursor = 0;
    std::iter::from_fn(move || {
        let rest = &text[cursor..];
        let start = cursor + rest.find(is_word_char)?;
        let end = text[start..]
            .find(|c: char| !is_word_char(c))
            .map_or(text.len(), |e| start + e);
        cursor = end;
        Some((start, end))
    })
}

/// The tantivy tokenizer described in the module doc. It lowercases, so no `LowerCaser` is
/// needed after it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CodeTokenizer;

/// Token stream of [`CodeTokenizer`].
pub struct CodeTokenStream<'a> {
    text: &'a str,
    cursor: usize,
    /// Parts of the current word still to emit, as absolute byte ranges.
    parts: Vec<(usize, usize)>,
    next_part: usize,
    token: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = CodeTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> CodeTokenStream<'a> {
        CodeTokenStream {
            text,
            cursor: 0,
            parts: Vec::new(),
            next_part: 0,
            token: Token::default(),
        }
    }
}

impl CodeTokenStream<'_> {
    fn emit(&mut self, start: usize, end: usize) {
        self.token.text.clear();
        let word = &self.text[start..end];
        if word.is_ascii() {
            // Most code is ASCII: a byte copy lowercased in place, not a char at a time.
            self.token.text.push_str(word);
            self.token.text.make_ascii_lowercase();
        } else {
            for c in word.chars() {
                self.token.text.extend(c.to_lowercase());
            }
        }
        self.token.offset_from = start;
        self.token.offset_to = end;
        // Token::default() starts at usize::MAX, so the first token gets position 0.
        self.token.position = self.token.position.wrapping_add(1);
    }
}

impl TokenStream for CodeTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if let Some(&(s, e)) = self.parts.get(self.next_part) {
                self.next_part += 1;
                if e - s <= MAX_TERM_BYTES {
                    self.emit(s, e);
                    return true;
                }
                continue;
            }
            let Some(offset) = self.text[self.cursor..].find(is_word_char) else {
                self.cursor = self.text.len();
                return false;
            };
            let start = self.cursor + offset;
            let end = self.text[start..]
                .find(|c: char| !is_word_char(c))
                .map_or(self.text.len(), |e| start + e);
            self.cursor = end;
            self.parts.clear();
            self.next_part = 0;
            split_ranges(&self.text[start..end], start, &mut self.parts);
            if self.parts.is_empty() {
                // Only underscores: nothing anyone would search for.
                continue;
            }
            if self.parts.len() == 1 && self.parts[0] == (start, end) {
                // The word is its own single part: emit it once, via the parts path.
                continue;
            }
            if end - start <= MAX_TERM_BYTES {
                self.emit(start, end);
                return true;
            }
        }
    }

    fn token(&self) -> &Token {
        &self.token
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &[&str]) {
        assert_eq!(code_terms(input), expected, "terms of {input:?}");
    }

    #[test]
    fn terms() {
        check("getUserName", &["getusername", "get", "user", "name"]);
        check("HTTPServer2", &["httpserver2", "http", "server", "2"]);
        check("make_response", &["make_response", "make", "response"]);
        check("IOError", &["ioerror", "io", "error"]);
        check("__init__", &["__init__", "init"]);
        check("utf8", &["utf8", "utf", "8"]);
        check("x86_64", &["x86_64", "x", "86", "64"]);
        check("render", &["render"]);
        check("URL", &["url"]);
        check("2024", &["2024"]);
        check("", &[]);
        check("___ ::: ,,,", &[]);
        check(
            "fn make_response(req: &Request) -> Response",
            &[
                "fn",
                "make_response",
                "make",
                "response",
                "req",
                "request",
                "response",
            ],
        );
        check("src/http/server.rs", &["src", "http", "server", "rs"]);
        check("Größe straße", &["größe", "straße"]);
        check("日本語 テキスト", &["日本語", "テキスト"]);
        check("ΑλφαΒήτα", &["αλφαβήτα", "αλφα", "βήτα"]);
    }

    #[test]
    fn long_terms_are_dropped_but_their_parts_kept() {
        let long = "a".repeat(MAX_TERM_BYTES + 1);
        check(&long, &[]);
        let compound = format!("{}_{}", "b".repeat(40), "c".repeat(40));
        let b = "b".repeat(40);
        let c = "c".repeat(40);
        check(&compound, &[b.as_str(), c.as_str()]);
    }

    #[test]
    fn split() {
        let cases: &[(&str, &[&str])] = &[
            ("getUserName", &["get", "user", "name"]),
            ("HTTPServer2", &["http", "server", "2"]),
            ("make_response", &["make", "response"]),
            ("a.b-c d", &["a", "b", "c", "d"]),
            ("", &[]),
        ];
        for (input, expected) in cases {
            assert_eq!(split_identifier(input), *expected, "parts of {input:?}");
        }
    }

    #[test]
    fn offsets_point_at_the_source_text() {
        let text = "let getUserName = 1;";
        let mut tokenizer = CodeTokenizer;
        let mut stream = tokenizer.token_stream(text);
        let mut seen = Vec::new();
        while stream.advance() {
            let t = stream.token();
            seen.push((text[t.offset_from..t.offset_to].to_string(), t.position));
        }
        let expected: Vec<(String, usize)> = [
            ("let", 0),
            ("getUserName", 1),
            ("get", 2),
            ("User", 3),
            ("Name", 4),
            ("1", 5),
        ]
        .iter()
        .map(|&(s, p)| (s.to_string(), p))
        .collect();
        assert_eq!(seen, expected);
    }

    proptest::proptest! {
        #[test]
        fn terms_are_lowercase_short_and_nonempty(text in "\\PC{0,200}") {
            for term in code_terms(&text) {
                proptest::prop_assert!(!term.is_empty());
                proptest::prop_assert!(term.len() <= MAX_TERM_BYTES * 3, "{term}");
                proptest::prop_assert_eq!(term.to_lowercase(), term.clone());
            }
        }

        #[test]
        fn parts_concatenate_to_the_word(word in "[A-Za-z0-9]{1,30}") {
            let joined: String = split_identifier(&word).concat();
            proptest::prop_assert_eq!(joined, word.to_lowercase());
        }
    }
}
