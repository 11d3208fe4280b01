//! The error type of `acms-llm`. Provider error bodies are kept out of messages on purpose:
//! they may echo the request (conversation text), and errors end up in logs.

/// Errors of `acms-llm`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The client is not configured; `what` names the missing setting.
    #[error("LLM client not configured: {what}")]
    NotConfigured { what: String },
    /// The provider rejected the request because it does not fit its context window
    /// (HTTP 413, or 400 with `context_length_exceeded` / "maximum context length").
    /// Shrink the request and retry.
    #[error(
        "the request exceeds the model's context window (HTTP {status}): compact the conversation and retry"
    )]
    ContextOverflow { status: u16 },
    /// Any other non-success HTTP status.
    #[error("LLM provider returned HTTP {status}{}", code.as_deref().map(|c| format!(" ({c})")).unwrap_or_default())]
    Status { status: u16, code: Option<String> },
    /// Connection, TLS or timeout failure.
    #[error("cannot reach the LLM provider: {0}")]
    Transport(String),
    /// The provider answered 2xx with a body that is not a chat completion.
    #[error("unexpected LLM response: {0}")]
    BadResponse(String),
    /// A [`crate::ScriptedClient`] ran out of queued replies.
    #[error("scripted client has no more replies queued")]
    ScriptExhausted,
}

impl Error {
    /// True for [`Error::ContextOverflow`]: the caller should shrink its request.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, Error::ContextOverflow { .. })
    }
}

/// Result alias for `acms-llm`.
pub type Result<T, E = Error> = std::result::Result<T, E>;
