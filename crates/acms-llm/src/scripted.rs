//! [`ScriptedClient`]: a deterministic [`LlmClient`] for tests that replays queued replies and
//! errors in order and records every request it saw. It does no I/O.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::{ChatMessage, Error, LlmClient, Result};

/// Replays queued replies (or errors) in order; [`Error::ScriptExhausted`] once empty.
#[derive(Debug, Default)]
pub struct ScriptedClient {
    replies: Mutex<VecDeque<Result<String>>>,
    requests: Mutex<Vec<(Vec<ChatMessage>, Option<u32>)>>,
}

impl ScriptedClient {
    /// A client with no replies queued.
    pub fn new() -> ScriptedClient {
        ScriptedClient::default()
    }

    /// Queues a successful reply.
    pub fn reply(self, text: impl Into<String>) -> ScriptedClient {
        self.push(Ok(text.into()));
        self
    }

    /// Queues an error.
    pub fn fail(self, error: Error) -> ScriptedClient {
        self.push(Err(error));
        self
    }

    /// Queues a reply or an error on a shared client.
    pub fn push(&self, reply: Result<String>) {
        lock(&self.replies).push_back(reply);
    }

    /// Every request received so far: the messages and `max_tokens`.
    pub fn requests(&self) -> Vec<(Vec<ChatMessage>, Option<u32>)> {
        lock(&self.requests).clone()
    }
}

// A poisoned lock only means another test thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl LlmClient for ScriptedClient {
    fn chat(&self, messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<String> {
        lock(&self.requests).push((messages.to_vec(), max_tokens));
        lock(&self.replies)
            .pop_front()
            .unwrap_or(Err(Error::ScriptExhausted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replays_in_order_then_exhausts() {
        let c = ScriptedClient::new()
            .reply("one")
            .fail(Error::ContextOverflow { status: 413 });
        let msgs = [ChatMessage::user("hi")];
        assert_eq!(c.chat(&msgs, Some(5)).unwrap(), "one");
        assert!(c.chat(&msgs, None).unwrap_err().is_context_overflow());
        assert!(matches!(c.chat(&msgs, None), Err(Error::ScriptExhausted)));
        let reqs = c.requests();
        assert_eq!(reqs.len(), 3);
        assert_eq!(reqs[0].1, Some(5));
        assert_eq!(reqs[0].0, msgs.to_vec());
    }
}
