//! Sizes: the [`Meter`] that measures text in the configured [`Unit`] (exact tokens with
//! `acms_core::TokenCounter`, or UTF-8 bytes), and [`Measured`], a conversation with the size
//! of each message cached so tiers only count what they change.
//!
//! The size of a conversation is the sum of its messages' sizes, each measured on
//! [`Message::render`] plus a fixed per-message framing overhead. Providers tokenize each
//! message separately between role delimiters, so this sum is what is sent, not an estimate.

use acms_core::{ExactCounter, TokenCounter, Tokenizer};

use crate::model::{Conversation, Message};

/// The unit a limit is expressed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    Tokens,
    Bytes,
}

/// Tokens a chat-completions request spends framing one message (role delimiters), as in
/// OpenAI's published counting recipe.
pub const TOKENS_PER_MESSAGE: usize = 3;

/// Measures text and messages in one unit.
#[derive(Debug, Clone, Copy)]
pub struct Meter {
    counter: Option<ExactCounter>,
}

impl Meter {
    /// Exact token counts with `tokenizer`.
    pub fn tokens(tokenizer: Tokenizer) -> Meter {
        Meter {
            counter: Some(tokenizer.counter()),
        }
    }

    /// UTF-8 byte counts.
    pub fn bytes() -> Meter {
        Meter { counter: None }
    }

    /// The unit sizes are reported in.
    pub fn unit(&self) -> Unit {
        if self.counter.is_some() {
            Unit::Tokens
        } else {
            Unit::Bytes
        }
    }

    /// The tokenizer's name, when counting tokens.
    pub fn tokenizer(&self) -> Option<&'static str> {
        self.counter.map(|c| c.tokenizer().name())
    }

    /// The size of `text`.
    pub fn text(&self, text: &str) -> usize {
        match &self.counter {
            Some(c) => c.count(text),
            None => text.len(),
        }
    }

    /// The size of one message as sent.
    pub fn message(&self, message: &Message) -> usize {
        let framing = if self.counter.is_some() {
            TOKENS_PER_MESSAGE
        } else {
            0
        };
        self.text(&message.render()) + framing
    }

    /// The longest prefix of `text` (cut at a char boundary, preferably a line end) whose size
    /// is at most `max` (possibly empty).
    pub fn truncate<'t>(&self, text: &'t str, max: usize) -> &'t str {
        if self.text(text) <= max {
            return text;
        }
        // Binary search over byte offsets: counts are monotone in prefix length.
        let (mut lo, mut hi) = (0usize, text.len());
        while lo < hi {
            let mid = floor_boundary(text, lo + (hi - lo).div_ceil(2));
            if mid <= lo {
                break;
            }
            if self.text(&text[..mid]) <= max {
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
    }
}
