//! Sizes: the [`Meter`] that measures text in the unit its estimator declares — exact tokens
//! with a named tokenizer (`acms_core::TokenCounter`), estimated tokens, UTF-8 bytes, or the
//! opaque units of a custom [`Estimator`] — and [`Measured`], a conversation with the size of
//! each message cached so tiers only count what they change.
//!
//! The size of a conversation is the sum of its messages' sizes, each measured on
//! [`Message::render`] plus a fixed per-message framing overhead. Providers tokenize each
//! message separately between role delimiters, so this sum is what is sent, not an estimate.
//!
//! **Invariant:** a size is never labelled tokens unless a tokenizer counted it
//! ([`Unit::ExactTokens`]) or an estimator declared it an estimate of tokens
//! ([`Unit::EstimatedTokens`]); a custom estimator cannot claim exact tokens.

use std::ops::Range;
use std::sync::Arc;

use acms_core::{ExactCounter, TokenCounter, Tokenizer};

use crate::model::{Conversation, Message};
pub use crate::types::Unit;

/// A custom size estimator (tests, or a host with its own notion of size). It declares its
/// unit; [`Meter::custom`] refuses [`Unit::ExactTokens`], which only a tokenizer may claim.
pub trait Estimator: Send + Sync + std::fmt::Debug {
    /// The unit its sizes are in.
    fn unit(&self) -> Unit;
    /// The size of `text`.
    fn measure(&self, text: &str) -> usize;
    /// Fixed size added per message (framing).
    fn per_message(&self) -> usize {
        0
    }
}

/// Tokens a chat-completions request spends framing one message (role delimiters), as in
/// OpenAI's published counting recipe.
const TOKENS_PER_MESSAGE: usize = 3;

/// Bytes per estimated token: the padded ~3 bytes a token of code and prose takes, so the
/// estimate errs on the large side.
const BYTES_PER_ESTIMATED_TOKEN: usize = 3;

#[derive(Debug, Clone)]
enum Kind {
    Exact(ExactCounter),
    Estimated,
    Bytes,
    Custom(Arc<dyn Estimator>),
}

/// Measures text and messages in one unit.
#[derive(Debug, Clone)]
pub struct Meter {
    kind: Kind,
}

impl Meter {
    /// Exact token counts with `tokenizer`.
    pub fn tokens(tokenizer: Tokenizer) -> Meter {
        Meter {
            kind: Kind::Exact(tokenizer.counter()),
        }
    }

    /// Estimated tokens: UTF-8 bytes / 3 (`BYTES_PER_ESTIMATED_TOKEN`), rounded up.
    pub fn estimated_tokens() -> Meter {
        Meter {
            kind: Kind::Estimated,
        }
    }

    /// UTF-8 byte counts.
    pub fn bytes() -> Meter {
        Meter { kind: Kind::Bytes }
    }

    /// Sizes from a custom `estimator`, in the unit it declares. Only a tokenizer counts
    /// exact tokens, so an estimator that claims [`Unit::ExactTokens`] is refused.
    pub fn custom(estimator: Arc<dyn Estimator>) -> crate::Result<Meter> {
        if estimator.unit() == Unit::ExactTokens {
            return Err(crate::Error::Config(
                "a custom estimator cannot report exact tokens: use Meter::tokens with a tokenizer, or declare estimated tokens".into(),
            ));
        }
        Ok(Meter {
            kind: Kind::Custom(estimator),
        })
    }

    /// The unit sizes are reported in.
    pub fn unit(&self) -> Unit {
        match &self.kind {
            Kind::Exact(_) => Unit::ExactTokens,
            Kind::Estimated => Unit::EstimatedTokens,
            Kind::Bytes => Unit::Utf8Bytes,
            Kind::Custom(e) => e.unit(),
        }
    }

    /// The tokenizer's name, when counting exact tokens.
    pub fn tokenizer(&self) -> Option<&'static str> {
        match &self.kind {
            Kind::Exact(c) => Some(c.tokenizer().name()),
            _ => None,
        }
    }

    /// The size of `text`.
    pub fn text(&self, text: &str) -> usize {
        match &self.kind {
            Kind::Exact(c) => c.count(text),
            Kind::Estimated => text.len().div_ceil(BYTES_PER_ESTIMATED_TOKEN),
            Kind::Bytes => text.len(),
            Kind::Custom(e) => e.measure(text),
        }
    }

    /// `min(self.text(text), cap)`, counting no more of a long `text` than that needs
    /// (sizes are monotone in prefix length: a prefix at the cap settles it).
    pub fn text_capped(&self, text: &str, cap: usize) -> usize {
        let probe = floor_boundary(text, cap.saturating_mul(4));
        if probe < text.len() && self.text(&text[..probe]) >= cap {
            return cap;
        }
        self.text(text).min(cap)
    }

    /// Fixed framing size of one message.
    pub fn per_message(&self) -> usize {
        match &self.kind {
            Kind::Exact(_) | Kind::Estimated => TOKENS_PER_MESSAGE,
            Kind::Bytes => 0,
            Kind::Custom(e) => e.per_message(),
        }
    }

    /// The size of one message as sent.
    pub fn message(&self, message: &Message) -> usize {
        self.text(&message.render()) + self.per_message()
    }

    /// The longest prefix of `text` (cut at a char boundary, preferably a line end) whose size
    /// is at most `max` (possibly empty).
    pub fn truncate<'t>(&self, text: &'t str, max: usize) -> &'t str {
        let total = self.text(text);
        if total <= max {
            return text;
        }
        // Counts are monotone in prefix length. Bracket the cut around the proportional
        // guess (galloping out from it), then binary search inside the bracket: a few counts
        // of about the cut's length instead of a search over the whole text.
        // Invariants: `lo` fits (the empty prefix does), `hi` does not (the whole text).
        let (mut lo, mut hi) = (0usize, text.len());
        let fits = |n: usize| self.text(&text[..n]) <= max;
        let guess = floor_boundary(
            text,
            (text.len() as u128 * max as u128 / total as u128) as usize,
        );
        let mut step = (text.len() / 256).max(8);
        if fits(guess) {
            lo = guess;
            loop {
                let probe = floor_boundary(text, lo.saturating_add(step));
                if probe <= lo || probe >= hi {
                    break;
                }
                if fits(probe) {
                    lo = probe;
                    step = step.saturating_mul(2);
                } else {
                    hi = probe;
                    break;
                }
            }
        } else {
            hi = guess;
            loop {
                let probe = floor_boundary(text, hi.saturating_sub(step));
                if probe <= lo {
                    break;
                }
                if fits(probe) {
                    lo = probe;
                    break;
                }
                hi = probe;
                step = step.saturating_mul(2);
            }
        }
        longest_fitting_prefix(text, lo, hi.saturating_sub(1).max(lo), fits)
    }
}

/// The longest prefix of `text` that `fits`, searched between the boundaries `lo` (fits)
/// and `hi`, cut back to its last line break when that keeps more than half of it.
fn longest_fitting_prefix(
    text: &str,
    mut lo: usize,
    mut hi: usize,
    mut fits: impl FnMut(usize) -> bool,
) -> &str {
    while lo < hi {
        let mid = floor_boundary(text, lo + (hi - lo).div_ceil(2));
        if mid <= lo {
            break;
        }
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let cut = floor_boundary(text, lo);
    let prefix = &text[..cut];
    match prefix.rfind('\n') {
        Some(nl) if nl > cut / 2 => &prefix[..nl],
        _ => prefix,
    }
}

pub(crate) fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Per-message sizes remembered by content, for one [`Meter`]. An agent resends the same
/// history on every provider call; only new or changed messages are counted again. Keys are
/// 128 bits of blake3 over the canonical rendering, so a stale size cannot be returned for
/// different text in practice. Bounded: cleared when it holds `capacity` entries.
#[derive(Debug)]
pub struct SizeCache {
    map: std::sync::RwLock<std::collections::HashMap<u128, usize>>,
    capacity: usize,
}

impl Default for SizeCache {
    fn default() -> SizeCache {
        SizeCache::new(200_000)
    }
}

impl SizeCache {
    /// A cache of at most `capacity` entries.
    pub fn new(capacity: usize) -> SizeCache {
        SizeCache {
            map: Default::default(),
            capacity: capacity.max(1),
        }
    }

    /// The size of each of `messages` with `meter` (which must be the same meter on every
    /// call of this cache).
    pub fn measure(&self, messages: &[Message], meter: &Meter) -> Vec<usize> {
        // Keys hash the canonical rendering piece by piece: no rendered copy of a message
        // is made unless it has to be counted.
        let keys: Vec<u128> = messages.iter().map(key).collect();
        let mut sizes: Vec<Option<usize>> = {
            let map = self.map.read().unwrap_or_else(|e| e.into_inner());
            keys.iter().map(|k| map.get(k).copied()).collect()
        };
        let mut fresh = Vec::new();
        for (i, s) in sizes.iter_mut().enumerate() {
            if s.is_none() {
                let n = meter.message(&messages[i]);
                *s = Some(n);
                fresh.push((keys[i], n));
            }
        }
        self.remember(fresh);
        sizes.into_iter().map(|s| s.unwrap_or(0)).collect()
    }

    /// The size of `text` alone (no framing), cached by content like messages.
    pub fn text(&self, text: &str, meter: &Meter) -> usize {
        // A leading 0xff byte keeps text keys apart from message renderings (valid UTF-8
        // never contains it).
        let mut h = blake3::Hasher::new();
        h.update(&[0xff]);
        h.update(text.as_bytes());
        let key = key_of(h);
        if let Some(n) = self.known(key) {
            return n;
        }
        let n = meter.text(text);
        self.remember(vec![(key, n)]);
        n
    }

    /// [`Meter::truncate`], remembered by text and `max` (one entry per pair).
    pub fn truncate<'t>(&self, text: &'t str, max: usize, meter: &Meter) -> &'t str {
        // Keyed apart from sizes by a leading 0xfe byte and the cap.
        let mut h = blake3::Hasher::new();
        h.update(&[0xfe]);
        h.update(&(max as u64).to_le_bytes());
        h.update(text.as_bytes());
        let key = key_of(h);
        if let Some(cut) = self.known(key).filter(|&c| text.is_char_boundary(c)) {
            return &text[..cut];
        }
        let out = meter.truncate(text, max);
        self.remember(vec![(key, out.len())]);
        out
    }

    /// The size of one message (cached like [`SizeCache::measure`]).
    pub fn message(&self, message: &Message, meter: &Meter) -> usize {
        self.measure(std::slice::from_ref(message), meter)[0]
    }

    /// The value remembered under `key`.
    fn known(&self, key: u128) -> Option<usize> {
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        map.get(&key).copied()
    }

    /// Remembers `fresh` entries; the cache is emptied first when they would take it over
    /// its capacity.
    fn remember(&self, fresh: Vec<(u128, usize)>) {
        if fresh.is_empty() {
            return;
        }
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        if map.len() + fresh.len() > self.capacity {
            map.clear();
        }
        map.extend(fresh);
    }
}

/// 128 bits of blake3 over `m`'s canonical rendering ([`Message::render`]), hashed in pieces
/// (the same bytes, without building the string).
fn key(m: &Message) -> u128 {
    let mut h = blake3::Hasher::new();
    h.update(m.role.name().as_bytes());
    if let Some(id) = &m.tool_call_id {
        h.update(b" ");
        h.update(id.as_bytes());
    }
    h.update(b"\n");
    h.update(m.content.as_bytes());
    for call in &m.tool_calls {
        h.update(b"\n<tool_call ");
        h.update(call.id.as_bytes());
        h.update(b" ");
        h.update(call.name.as_bytes());
        h.update(b">\n");
        h.update(call.arguments.as_bytes());
    }
    key_of(h)
}

fn key_of(h: blake3::Hasher) -> u128 {
    let mut k = [0u8; 16];
    k.copy_from_slice(&h.finalize().as_bytes()[..16]);
    u128::from_le_bytes(k)
}

/// A borrowed conversation with its sizes: what the tiers read, so a reducer works on the
/// assembler's state without copying it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct View<'a> {
    pub messages: &'a [Message],
    pub sizes: &'a [usize],
    pub total: usize,
}

impl View<'_> {
    /// The size of the messages in `group` (a range of [`crate::model::groups`]).
    pub(crate) fn group_size(&self, group: Range<usize>) -> usize {
        self.sizes[group].iter().sum()
    }

    /// A copy of the groups `keep` selects, in order, with their sizes; `insert` (messages
    /// with their sizes) goes in before group `at` (where a summary replaces what it covers).
    pub(crate) fn select_groups(
        &self,
        groups: &[Range<usize>],
        keep: impl Fn(usize) -> bool,
        insert: Option<(usize, Vec<(Message, usize)>)>,
    ) -> Measured {
        let (at, mut insert) = insert.map_or((None, Vec::new()), |(at, m)| (Some(at), m));
        let mut messages = Vec::with_capacity(self.messages.len() + insert.len());
        let mut sizes = Vec::with_capacity(self.messages.len() + insert.len());
        for (g, range) in groups.iter().enumerate() {
            if Some(g) == at {
                for (m, size) in insert.drain(..) {
                    messages.push(m);
                    sizes.push(size);
                }
            }
            if keep(g) {
                messages.extend(self.messages[range.clone()].iter().cloned());
                sizes.extend_from_slice(&self.sizes[range.clone()]);
            }
        }
        Measured::from_parts(messages, sizes)
    }
}

/// A conversation with each message's size cached.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    pub messages: Vec<Message>,
    pub sizes: Vec<usize>,
    pub total: usize,
}

impl Measured {
    /// Measures every message of `conversation`.
    pub fn new(conversation: &Conversation, meter: &Meter) -> Measured {
        Measured::from_messages(conversation.messages.clone(), meter)
    }

    /// Measures `messages`.
    pub fn from_messages(messages: Vec<Message>, meter: &Meter) -> Measured {
        let sizes: Vec<usize> = messages.iter().map(|m| meter.message(m)).collect();
        let total = sizes.iter().sum();
        Measured {
            messages,
            sizes,
            total,
        }
    }

    /// Builds from messages whose sizes are already known.
    pub(crate) fn from_parts(messages: Vec<Message>, sizes: Vec<usize>) -> Measured {
        let total = sizes.iter().sum();
        Measured {
            messages,
            sizes,
            total,
        }
    }

    /// A borrowed view.
    pub(crate) fn view(&self) -> View<'_> {
        View {
            messages: &self.messages,
            sizes: &self.sizes,
            total: self.total,
        }
    }

    /// The conversation, without sizes.
    pub fn conversation(&self) -> Conversation {
        Conversation::new(self.messages.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    #[test]
    fn sizes_are_per_message_sums() {
        let conv = Conversation::new(vec![
            Message::text(Role::System, "be brief"),
            Message::text(Role::User, "hello world"),
        ]);
        let t = Meter::tokens(Tokenizer::Cl100kBase);
        let m = Measured::new(&conv, &t);
        assert_eq!(m.total, m.sizes.iter().sum::<usize>());
        assert_eq!(m.sizes[1], t.text("user\nhello world") + TOKENS_PER_MESSAGE);
        let cache = SizeCache::new(10);
        let with_calls = [
            Message::calls(
                "x",
                vec![crate::model::ToolCall {
                    id: "c1".into(),
                    name: "read_file".into(),
                    arguments: "{}".into(),
                }],
            ),
            Message::tool_result("c1", "out"),
        ];
        for msg in conv.messages.iter().chain(&with_calls) {
            let h = blake3::hash(msg.render().as_bytes());
            let mut k = [0u8; 16];
            k.copy_from_slice(&h.as_bytes()[..16]);
            assert_eq!(key(msg), u128::from_le_bytes(k));
        }
        assert_eq!(cache.measure(&conv.messages, &t), m.sizes);
        assert_eq!(cache.measure(&conv.messages, &t), m.sizes);
        let b = Measured::new(&conv, &Meter::bytes());
        assert_eq!(
            b.total,
            "system\nbe brief".len() + "user\nhello world".len()
        );
    }

    #[test]
    fn truncate_fits() {
        let t = Meter::tokens(Tokenizer::Cl100kBase);
        let text = "line one here\nline two is here\nline three é ü\n".repeat(50);
        for max in [0, 1, 5, 17, 100, 10_000] {
            let p = t.truncate(&text, max);
            assert!(t.text(p) <= max, "{max}");
            assert!(text.starts_with(p));
        }
        let b = Meter::bytes();
        assert!(b.truncate("ééé", 3).len() <= 3);
        let cache = SizeCache::new(100);
        for max in [0, 1, 5, 17, 100, 10_000, 100_000] {
            for _ in 0..2 {
                assert_eq!(cache.truncate(&text, max, &t), t.truncate(&text, max));
                assert_eq!(
                    cache.text(&text[..max.min(text.len())], &t),
                    t.text(&text[..max.min(text.len())])
                );
            }
            assert_eq!(t.text_capped(&text, max), t.text(&text).min(max));
            assert_eq!(b.text_capped(&text, max), text.len().min(max));
        }
    }

    /// The cut searched over the whole text, as truncation did before it bracketed the
    /// proportional guess: both must find the same longest fitting prefix.
    fn whole_text_search<'t>(m: &Meter, text: &'t str, max: usize) -> &'t str {
        if m.text(text) <= max {
            return text;
        }
        longest_fitting_prefix(text, 0, text.len(), |mid| m.text(&text[..mid]) <= max)
    }

    #[test]
    fn truncate_finds_the_longest_fitting_prefix() {
        let code = (0..400)
            .map(|i| format!("fn f_{i}(x: u32) -> u32 {{ x * {i} }} // é ü 漢字 {i}\n"))
            .collect::<String>();
        let prose = "word ".repeat(3000);
        for m in [
            Meter::tokens(Tokenizer::Cl100kBase),
            Meter::bytes(),
            Meter::estimated_tokens(),
        ] {
            for text in [code.as_str(), prose.as_str(), "ééééé"] {
                let total = m.text(text);
                for max in [
                    0,
                    1,
                    2,
                    7,
                    total / 10,
                    total / 3,
                    total / 2,
                    total - 1,
                    total,
                ] {
                    assert_eq!(
                        m.truncate(text, max),
                        whole_text_search(&m, text, max),
                        "{max}"
                    );
                }
            }
        }
    }
}
