//! English stemming with the stems remembered per thread: a body's words repeat (`self`,
//! `return`, a file's own names), and indexing stems every one of them.

use std::cell::RefCell;
use std::collections::HashMap;

use tantivy::tokenizer::{
    Language, RawTokenizer, Stemmer, TextAnalyzer, Token, TokenFilter, TokenStream, Tokenizer,
};

/// Remembered stems per thread before the memo starts afresh.
const MEMO_CAPACITY: usize = 1 << 16;

/// Tantivy's English stemmer on one whole term: how a query term is stemmed, and what the
/// memo asks on a miss, so index and query stem alike.
pub(crate) fn stemmer() -> TextAnalyzer {
    TextAnalyzer::builder(RawTokenizer::default())
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Stems one lowercase term with `stemmer` (a raw tokenizer plus stemmer).
pub(crate) fn stem(stemmer: &mut TextAnalyzer, term: &str) -> String {
    let mut stream = stemmer.token_stream(term);
    if stream.advance() {
        stream.token().text.clone()
    } else {
        term.to_owned()
    }
}

/// A thread's stemmer (built at its first miss) and the stems it gave.
#[derive(Default)]
struct Stems {
    analyzer: Option<TextAnalyzer>,
    memo: HashMap<Box<str>, Box<str>>,
}

thread_local! {
    static STEMS: RefCell<Stems> = RefCell::default();
}

/// A token filter equal to tantivy's `Stemmer` for English, with a per-thread memo.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MemoStemmer;

impl TokenFilter for MemoStemmer {
    type Tokenizer<T: Tokenizer> = MemoStemFilter<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> MemoStemFilter<T> {
        MemoStemFilter { inner }
    }
}

#[derive(Clone)]
pub(crate) struct MemoStemFilter<T> {
    inner: T,
}

impl<T: Tokenizer> Tokenizer for MemoStemFilter<T> {
    type TokenStream<'a> = MemoStemStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        MemoStemStream {
            tail: self.inner.token_stream(text),
        }
    }
}

pub(crate) struct MemoStemStream<T> {
    tail: T,
}

impl<T: TokenStream> TokenStream for MemoStemStream<T> {
    fn advance(&mut self) -> bool {
        if !self.tail.advance() {
            return false;
        }
        let token = self.tail.token_mut();
        STEMS.with_borrow_mut(|Stems { analyzer, memo }| {
            if let Some(stem) = memo.get(token.text.as_str()) {
                token.text.clear();
                token.text.push_str(stem);
                return;
            }
            if memo.len() >= MEMO_CAPACITY {
                memo.clear();
            }
            let stemmed = stem(analyzer.get_or_insert_with(stemmer), &token.text);
            memo.insert(token.text.as_str().into(), stemmed.as_str().into());
            token.text = stemmed;
        });
        true
    }

    fn token(&self) -> &Token {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut Token {
        self.tail.token_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::CodeTokenizer;

    fn stems(mut analyzer: TextAnalyzer, text: &str) -> Vec<String> {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn remembered_stems_are_tantivys(text in "\\PC{0,120}") {
            let plain = TextAnalyzer::builder(CodeTokenizer).filter(Stemmer::new(Language::English)).build();
            let memo = || TextAnalyzer::builder(CodeTokenizer).filter(MemoStemmer).build();
            let expected = stems(plain, &text);
            // The second pass reads every stem from the memo.
            proptest::prop_assert_eq!(&stems(memo(), &text), &expected);
            proptest::prop_assert_eq!(&stems(memo(), &text), &expected);
        }
    }
}
