//! Exact token counting with the configured BPE tokenizer.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tiktoken_rs::CoreBPE;

/// Counts tokens exactly as a provider's tokenizer would.
///
/// BPE counts are not additive: `count(a + b)` may differ from `count(a) + count(b)`, so a
/// budget is only ever checked on the final text.
pub trait TokenCounter: Send + Sync {
    /// The exact number of tokens in `text`.
    fn count(&self, text: &str) -> usize;
    /// The tokenizer's name, e.g. `cl100k_base`.
    fn name(&self) -> &str;
}

/// The tokenizers acms counts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Tokenizer {
    /// GPT-3.5/GPT-4 tokenizer (the default).
    #[default]
    #[serde(rename = "cl100k_base", alias = "cl100k")]
    Cl100kBase,
    /// GPT-4o and later tokenizer.
    #[serde(rename = "o200k_base", alias = "o200k")]
    O200kBase,
}

impl Tokenizer {
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::Cl100kBase => "cl100k_base",
            Tokenizer::O200kBase => "o200k_base",
        }
    }

    /// The counter acms uses for this tokenizer (`bpe-openai`: the same counts as tiktoken,
    /// about 2.5x faster, and counting dominates indexing); tables are built once per process.
    pub fn counter(self) -> ExactCounter {
        ExactCounter { tokenizer: self }
    }

    /// The reference counter (`tiktoken-rs`), against which [`ExactCounter`] is tested.
    pub fn tiktoken(self) -> TiktokenCounter {
        TiktokenCounter { tokenizer: self }
    }
}

impl std::str::FromStr for Tokenizer {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Tokenizer> {
        match s {
            "cl100k_base" | "cl100k" => Ok(Tokenizer::Cl100kBase),
            "o200k_base" | "o200k" => Ok(Tokenizer::O200kBase),
            other => Err(crate::Error::UnknownTokenizer(other.to_string())),
        }
    }
}

impl std::fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The default [`TokenCounter`], backed by `bpe-openai`. Its counts equal tiktoken's
/// `encode_ordinary` (pinned by tests against [`TiktokenCounter`] on random and real text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExactCounter {
    tokenizer: Tokenizer,
}

impl ExactCounter {
    fn bpe(&self) -> &'static bpe_openai::Tokenizer {
        match self.tokenizer {
            Tokenizer::Cl100kBase => bpe_openai::cl100k_base(),
            Tokenizer::O200kBase => bpe_openai::o200k_base(),
        }
    }

    /// The tokenizer this counter uses.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }

    /// Builds the tables now (about 20 ms, once per process) rather than at the first count.
    pub fn prepare(&self) {
        self.bpe();
    }
}

/// Pre-tokenized pieces at most this long have their counts remembered (per thread): code
/// repeats its words, operators and indentation runs, and a context is counted whole several
/// times while it is verified, so most pieces are looked up rather than encoded again.
const MEMO_PIECE_BYTES: usize = 24;
/// Remembered pieces per thread before the memo starts afresh (a few MB at most).
const MEMO_CAPACITY: usize = 1 << 16;

thread_local! {
    /// One memo per [`Tokenizer`], in declaration order.
    static MEMO: std::cell::RefCell<[std::collections::HashMap<Box<str>, u32>; 2]> =
        std::cell::RefCell::default();
}

impl TokenCounter for ExactCounter {
    /// `bpe-openai`'s own count — the sum of the BPE counts of the pre-tokenizer's pieces,
    /// which BPE never merges across — with short pieces' counts remembered.
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let bpe = self.bpe();
        let text = bpe.normalize(text);
        MEMO.with_borrow_mut(|memos| {
            let memo = match self.tokenizer {
                Tokenizer::Cl100kBase => &mut memos[0],
                Tokenizer::O200kBase => &mut memos[1],
            };
            if memo.len() >= MEMO_CAPACITY {
                memo.clear();
            }
            bpe.split(text.as_str())
                .map(|piece| {
                    if piece.len() > MEMO_PIECE_BYTES {
                        return bpe.bpe.count(piece.as_bytes());
                    }
                    if let Some(&n) = memo.get(piece) {
                        return n as usize;
                    }
                    let n = bpe.bpe.count(piece.as_bytes());
                    memo.insert(piece.into(), n as u32);
                    n
                })
                .sum()
        })
    }

    fn name(&self) -> &str {
        self.tokenizer.name()
    }
}

/// [`TokenCounter`] backed by `tiktoken-rs`: the reference implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TiktokenCounter {
    tokenizer: Tokenizer,
}

impl TiktokenCounter {
    fn bpe(&self) -> &'static CoreBPE {
        static CL100K: OnceLock<CoreBPE> = OnceLock::new();
        static O200K: OnceLock<CoreBPE> = OnceLock::new();
        // The BPE tables ship inside tiktoken-rs, so building them cannot fail at run time.
        match self.tokenizer {
            Tokenizer::Cl100kBase => CL100K
                .get_or_init(|| tiktoken_rs::cl100k_base().expect("bundled cl100k_base tables")),
            Tokenizer::O200kBase => {
                O200K.get_or_init(|| tiktoken_rs::o200k_base().expect("bundled o200k_base tables"))
            }
        }
    }

    /// The tokenizer this counter uses.
    pub fn tokenizer(&self) -> Tokenizer {
        self.tokenizer
    }
}

impl TokenCounter for TiktokenCounter {
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        // Special-token strings in source code are plain text to a provider's user content.
        self.bpe().encode_ordinary(text).len()
    }

    fn name(&self) -> &str {
        self.tokenizer.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        let c = Tokenizer::Cl100kBase.counter();
        assert_eq!(c.count(""), 0);
        assert_eq!(c.count("hello world"), 2);
        let o = Tokenizer::O200kBase.counter();
        assert_eq!(o.count("hello world"), 2);
        assert_eq!("o200k".parse::<Tokenizer>().unwrap(), Tokenizer::O200kBase);
        assert!("gpt2".parse::<Tokenizer>().is_err());
    }

    const SAMPLES: &[&str] = &[
        "def f(a, b) -> int:\n    return a + b\n",
        "<|endoftext|> special-token text is plain text here",
        "  indented\r\n\ttabs\n\n\n   trailing   ",
        "ünïcödé 漢字 🦀 emoji, ﬁligatures",
        "getUserName(HTTPServer2, snake_case_name)",
        "'''quotes''' \"\"\" /** jsdoc */ // comment",
        "1234567890 3.14159 0xdeadbeef",
    ];

    #[test]
    fn the_fast_counter_agrees_with_tiktoken() {
        for t in [Tokenizer::Cl100kBase, Tokenizer::O200kBase] {
            for s in SAMPLES {
                assert_eq!(t.counter().count(s), t.tiktoken().count(s), "{t} {s:?}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn the_fast_counter_agrees_with_tiktoken_on_any_text(
            s in "\\PC{0,200}",
            code in "[ a-zA-Z0-9_(){}:;.,\n\t'\"<|>]{0,200}",
        ) {
            for t in [Tokenizer::Cl100kBase, Tokenizer::O200kBase] {
                proptest::prop_assert_eq!(t.counter().count(&s), t.tiktoken().count(&s));
                proptest::prop_assert_eq!(t.counter().count(&code), t.tiktoken().count(&code));
            }
        }
    }

    #[test]
    fn remembered_piece_counts_give_the_same_counts() {
        // The second count of each text reads every short piece from the memo.
        let code = SAMPLES.concat().repeat(40);
        for t in [Tokenizer::Cl100kBase, Tokenizer::O200kBase] {
            let first = t.counter().count(&code);
            assert_eq!(first, t.tiktoken().count(&code), "{t}");
            assert_eq!(t.counter().count(&code), first, "{t}");
        }
    }

    #[test]
    fn counts_are_not_additive() {
        // Why budgets are verified on the final text: concatenation merges tokens.
        let c = Tokenizer::Cl100kBase.counter();
        let (a, b) = ("hel", "lo");
        assert_ne!(c.count(a) + c.count(b), c.count(&format!("{a}{b}")));
    }
}
