//! Exact token counting with the configured BPE tokenizer.

use std::ops::Range;
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
    /// `count(&text[r])` for each range, 0 for a range that is not a slice of `text`. A file's
    /// nested definitions are slices of it; a counter that can share work between them
    /// overrides this.
    fn count_slices(&self, text: &str, ranges: &[Range<usize>]) -> Vec<usize> {
        each_alone(self, text, ranges)
    }
    /// The tokenizer's name, e.g. `cl100k_base`.
    fn name(&self) -> &str;
}

/// `count_slices` by counting each slice alone.
fn each_alone<C: TokenCounter + ?Sized>(c: &C, text: &str, ranges: &[Range<usize>]) -> Vec<usize> {
    ranges
        .iter()
        .map(|r| text.get(r.clone()).map_or(0, |s| c.count(s)))
        .collect()
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

impl TokenCounter for ExactCounter {
    /// `bpe-openai`'s own count — the sum of the BPE counts of the pre-tokenizer's pieces,
    /// which BPE never merges across — with short pieces' counts remembered.
    fn count(&self, text: &str) -> usize {
        if text.is_empty() {
            return 0;
        }
        let bpe = self.bpe();
        let text = bpe.normalize(text);
        with_memo(self.tokenizer, |memo| {
            bpe.split(text.as_str()).map(|p| memo.count(bpe, p)).sum()
        })
    }

    /// The text is split into pieces once, with a running sum of their counts; a slice then
    /// costs the pieces at its two ends. Each piece is a function of the text from its start
    /// (the pre-tokenizer matches anchored at each piece's start, with no look-behind), so a
    /// slice's own split meets the text's once one of its piece starts is a piece start of the
    /// text, and agrees with it up to the last piece start before the slice's trailing
    /// whitespace: a match that ends before that saw only characters the slice shares (its
    /// end-of-text alternatives need whitespace up to the end). The proptest below pins the
    /// equality.
    fn count_slices(&self, text: &str, ranges: &[Range<usize>]) -> Vec<usize> {
        let bpe = self.bpe();
        let normalized = bpe.normalize(text);
        if ranges.len() < 2 || normalized.as_str().len() != text.len() {
            // One slice gains nothing; a normalizing tokenizer would move the offsets.
            return each_alone(self, text, ranges);
        }
        with_memo(self.tokenizer, |memo| {
            let mut starts = vec![0];
            let mut sums = vec![0];
            let mut end = 0;
            for piece in bpe.split(text) {
                end += piece.len();
                starts.push(end);
                sums.push(sums[sums.len() - 1] + memo.count(bpe, piece));
            }
            let pieces = Pieces { starts, sums };
            ranges
                .iter()
                .map(|r| pieces.count_slice(bpe, memo, text, r.clone()))
                .collect()
        })
    }

    fn name(&self) -> &str {
        self.tokenizer.name()
    }
}

/// The pre-tokenizer's pieces of one text: where each starts (and where the text ends), and
/// the running sum of their counts.
struct Pieces {
    starts: Vec<usize>,
    sums: Vec<usize>,
}

impl Pieces {
    /// The count of `text[range]`, 0 when that is not a slice of `text`.
    fn count_slice(
        &self,
        bpe: &bpe_openai::Tokenizer,
        memo: &mut Memo,
        text: &str,
        range: Range<usize>,
    ) -> usize {
        let Some(slice) = text.get(range.clone()) else {
            return 0;
        };
        let Range { start: at, end } = range;
        // The last piece start of the text at or before the slice's trailing whitespace.
        let settled = at + slice.trim_end().len();
        let last = self.starts.partition_point(|&s| s <= settled) - 1;
        let mut total = 0;
        let mut pos = at;
        let mut own = bpe.split(slice);
        loop {
            if pos <= self.starts[last]
                && let Ok(i) = self.starts.binary_search(&pos)
            {
                let tail = &text[self.starts[last]..end];
                let tail: usize = bpe.split(tail).map(|p| memo.count(bpe, p)).sum();
                return total + self.sums[last] - self.sums[i] + tail;
            }
            match own.next() {
                Some(piece) => {
                    total += memo.count(bpe, piece);
                    pos += piece.len();
                }
                None => return total,
            }
        }
    }
}

/// Pre-tokenized pieces at most this long have their counts remembered (per thread): code
/// repeats its words, operators and indentation runs, and a context is counted whole several
/// times while it is verified, so most pieces are looked up rather than encoded again.
const MEMO_PIECE_BYTES: usize = 24;
/// Remembered pieces per thread before the memo starts afresh (a few MB at most).
const MEMO_CAPACITY: usize = 1 << 16;

/// Counts of short pieces, one map per thread and tokenizer.
#[derive(Default)]
struct Memo(std::collections::HashMap<Box<str>, u32>);

impl Memo {
    fn count(&mut self, bpe: &bpe_openai::Tokenizer, piece: &str) -> usize {
        if piece.len() > MEMO_PIECE_BYTES {
            return bpe.bpe.count(piece.as_bytes());
        }
        if let Some(&n) = self.0.get(piece) {
            return n as usize;
        }
        let n = bpe.bpe.count(piece.as_bytes());
        self.0.insert(piece.into(), n as u32);
        n
    }
}

thread_local! {
    /// One memo per [`Tokenizer`], in declaration order.
    static MEMO: std::cell::RefCell<[Memo; 2]> = std::cell::RefCell::default();
}

/// Runs `f` with this thread's memo of `tokenizer`, emptied first when it is full.
fn with_memo<R>(tokenizer: Tokenizer, f: impl FnOnce(&mut Memo) -> R) -> R {
    MEMO.with_borrow_mut(|memos| {
        let memo = match tokenizer {
            Tokenizer::Cl100kBase => &mut memos[0],
            Tokenizer::O200kBase => &mut memos[1],
        };
        if memo.0.len() >= MEMO_CAPACITY {
            memo.0.clear();
        }
        f(memo)
    })
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

    /// Byte offsets of `text` moved back to a character boundary.
    fn on_char(text: &str, at: usize) -> usize {
        let mut at = at.min(text.len());
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    proptest::proptest! {
        #[test]
        fn slices_are_counted_as_if_alone(
            text in "([ \t\n]{0,6}[a-zA-Z_]{0,8}[0-9]{0,5}[(){}:;.,'\"/<|>-]{0,3}(ü|漢|🦀|\r\n)?){0,40}",
            cuts in proptest::collection::vec((0usize..400, 0usize..400), 2..12),
        ) {
            let ranges: Vec<Range<usize>> = cuts
                .iter()
                .map(|&(a, b)| {
                    let (a, b) = (on_char(&text, a.min(b)), on_char(&text, a.max(b)));
                    a..b
                })
                .chain([0..text.len(), Range { start: 3, end: 1 }, 0..text.len() + 1])
                .collect();
            for t in [Tokenizer::Cl100kBase, Tokenizer::O200kBase] {
                let alone: Vec<usize> = ranges
                    .iter()
                    .map(|r| text.get(r.clone()).map_or(0, |s| t.tiktoken().count(s)))
                    .collect();
                proptest::prop_assert_eq!(t.counter().count_slices(&text, &ranges), alone);
            }
        }
    }

    #[test]
    fn nested_definitions_are_counted_as_if_alone() {
        let code = "class A:\n    def f(self):\n        return 1\n\n    def g(self, x):  \n        \
                    return x  # trailing   \n\n\n  \nx = A()\n";
        let mut ranges: Vec<Range<usize>> = std::iter::once(0..code.len()).collect();
        for (i, _) in code.match_indices("def") {
            ranges.push(i..code[i..].find("\n\n").map_or(code.len(), |e| i + e));
            ranges.push(i - 4..code.len() - 1);
        }
        for t in [Tokenizer::Cl100kBase, Tokenizer::O200kBase] {
            let alone: Vec<usize> = ranges
                .iter()
                .map(|r| t.counter().count(&code[r.clone()]))
                .collect();
            assert_eq!(t.counter().count_slices(code, &ranges), alone, "{t}");
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
