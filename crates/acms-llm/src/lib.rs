//! LLM clients shared by acms: the [`LlmClient`] trait (one chat call, text in, text out), an
//! OpenAI-compatible chat-completions client over HTTP ([`HttpClient`]) and a
//! [`ScriptedClient`] that replays queued replies for tests.
//!
//! This crate owns the wire protocol and the mapping of provider failures to typed errors, in
//! particular [`Error::ContextOverflow`], which callers (conversation compaction, ARCE) react to
//! by shrinking their request. It does not retry, count tokens or decide what to send.

mod error;
mod http;
mod scripted;

pub use error::{Error, Result};
pub use http::HttpClient;
pub use scripted::ScriptedClient;

use serde::{Deserialize, Serialize};

/// The author of a [`ChatMessage`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

/// One plain-text message of a chat request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

impl ChatMessage {
    /// A system message.
    pub fn system(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::System,
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::User,
            content: content.into(),
        }
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> ChatMessage {
        ChatMessage {
            role: ChatRole::Assistant,
            content: content.into(),
        }
    }
}

/// A chat model: the seam that summarizers and ARCE call, replaced by [`ScriptedClient`] in
/// tests.
pub trait LlmClient: Send + Sync {
    /// Sends `messages` and returns the reply text. `max_tokens` caps the reply length.
    fn chat(&self, messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<String>;
}

impl<T: LlmClient + ?Sized> LlmClient for &T {
    fn chat(&self, messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<String> {
        (**self).chat(messages, max_tokens)
    }
}

impl<T: LlmClient + ?Sized> LlmClient for Box<T> {
    fn chat(&self, messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<String> {
        (**self).chat(messages, max_tokens)
    }
}

impl<T: LlmClient + ?Sized> LlmClient for std::sync::Arc<T> {
    fn chat(&self, messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<String> {
        (**self).chat(messages, max_tokens)
    }
}
