//! Tier 3's seam: the [`Summarizer`] trait that turns the compacted span into the nine-section
//! summary, an [`LlmSummarizer`] that asks a chat model through `acms-llm`, and a
//! [`DeterministicSummarizer`] that fills the sections from [`SessionFacts`] for tests and
//! offline use.
//!
//! A summarizer only produces text. Budget checks, verification and the fall-back to tier 2
//! belong to the compactor, which never writes a summarizer error into the history.

use acms_llm::{ChatMessage, LlmClient};

use crate::session::SessionFacts;

/// The nine sections, in order.
const SECTIONS: [&str; 9] = [
    "Primary objective",
    "Key technical findings",
    "Files and artifacts",
    "Errors and fixes",
    "Gates and status",
    "All user requests",
    "Pending tasks",
    "Current state",
    "Suggested next action",
];

/// What a summarizer is asked to summarize.
#[derive(Debug, Clone)]
pub struct SummaryRequest<'a> {
    /// The compacted span in canonical rendering, oldest first.
    pub transcript: &'a str,
    /// Facts extracted from the span without a model.
    pub facts: &'a SessionFacts,
    /// The most the summary may take, in the compactor's unit.
    pub max_size: usize,
}

/// Why a summarizer produced nothing. Carries a category, never provider text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SummarizerError {
    #[error("the summary model's context window overflowed")]
    ContextOverflow,
    #[error("the summary model call failed")]
    CallFailed,
    #[error("the summary model returned an empty summary")]
    Empty,
}

/// Writes the nine-section summary of a compacted span.
pub trait Summarizer: Send + Sync {
    /// The summary text (sections as `## <name>` headings).
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummarizerError>;
}

/// Summarizes with one chat-model call.
#[derive(Debug)]
pub struct LlmSummarizer<C> {
    client: C,
    /// Converts the size budget to a `max_tokens` cap (1 for tokens, ~0.25 for bytes).
    tokens_per_unit: f64,
}

impl<C: LlmClient> LlmSummarizer<C> {
    /// A summarizer over `client`; `tokens_per_unit` converts the compactor's unit to tokens.
    pub fn new(client: C, tokens_per_unit: f64) -> LlmSummarizer<C> {
        LlmSummarizer {
            client,
            tokens_per_unit,
        }
    }
}

/// The instruction sent to the model.
fn prompt() -> String {
    let mut p = String::from(
        "You compact the history of a tool-using coding agent so it can keep working. \
         Write a summary with exactly these nine sections, each as a `## ` heading, in order. \
         Quote every user request in section 6 as written, marking any you shorten with […]. \
         Name files, functions, commands and error messages exactly. Be concise; do not invent \
         facts.\n",
    );
    for (i, s) in SECTIONS.iter().enumerate() {
        p.push_str(&format!("{}. {s}\n", i + 1));
    }
    p
}

impl<C: LlmClient> Summarizer for LlmSummarizer<C> {
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummarizerError> {
        let max_tokens = ((request.max_size as f64) * self.tokens_per_unit).floor() as u32;
        let messages = [
            ChatMessage::system(prompt()),
            ChatMessage::user(format!(
                "Conversation to summarize:\n\n{}",
                request.transcript
            )),
        ];
        match self.client.chat(&messages, Some(max_tokens.max(1))) {
            Ok(text) if text.trim().is_empty() => Err(SummarizerError::Empty),
            Ok(text) => Ok(text),
            Err(e) if e.is_context_overflow() => Err(SummarizerError::ContextOverflow),
            Err(_) => Err(SummarizerError::CallFailed),
        }
    }
}

/// Fills the nine sections from [`SessionFacts`]: deterministic, no I/O.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeterministicSummarizer;

impl Summarizer for DeterministicSummarizer {
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String, SummarizerError> {
        let f = request.facts;
        let mut s = String::new();
        let section = |s: &mut String, i: usize, body: String| {
            s.push_str(&format!("## {}\n{}\n\n", SECTIONS[i], body.trim_end()));
        };
        section(
            &mut s,
            0,
            f.user_requests
                .first()
                .cloned()
                .unwrap_or_else(|| "(unknown)".into()),
        );
        section(
            &mut s,
            1,
            format!(
                "{} tool calls; {} errors seen.",
                f.tool_counts.values().sum::<usize>(),
                f.errors.len()
            ),
        );
        section(
            &mut s,
            2,
            f.files.iter().map(|(p, _)| format!("- {p}\n")).collect(),
        );
        section(
            &mut s,
            3,
            f.errors
                .iter()
                .map(|e| format!("- {}: {}\n", e.tool, e.first_line))
                .collect(),
        );
        section(
            &mut s,
            4,
            if f.errors.is_empty() {
                "No failures seen.".into()
            } else {
                "Failures were seen; see errors.".into()
            },
        );
        section(
            &mut s,
            5,
            f.user_requests.iter().map(|r| format!("- {r}\n")).collect(),
        );
        section(
            &mut s,
            6,
            f.user_requests.last().cloned().unwrap_or_default(),
        );
        section(&mut s, 7, f.current_state.clone().unwrap_or_default());
        section(&mut s, 8, "Continue with the pending task.".into());
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acms_llm::{Error as LlmError, ScriptedClient};

    fn request(facts: &SessionFacts) -> SummaryRequest<'_> {
        SummaryRequest {
            transcript: "user\nhi",
            facts,
            max_size: 100,
        }
    }

    #[test]
    fn llm_summarizer_maps_errors() {
        let facts = SessionFacts::default();
        let client = ScriptedClient::new()
            .reply("## Primary objective\nx")
            .reply("  ")
            .fail(LlmError::ContextOverflow { status: 413 })
            .fail(LlmError::Status {
                status: 500,
                code: None,
            });
        let s = LlmSummarizer::new(&client, 1.0);
        assert!(s.summarize(&request(&facts)).is_ok());
        assert_eq!(s.summarize(&request(&facts)), Err(SummarizerError::Empty));
        assert_eq!(
            s.summarize(&request(&facts)),
            Err(SummarizerError::ContextOverflow)
        );
        assert_eq!(
            s.summarize(&request(&facts)),
            Err(SummarizerError::CallFailed)
        );
        let reqs = client.requests();
        assert_eq!(reqs[0].1, Some(100));
        assert!(reqs[0].0[0].content.contains("9. Suggested next action"));
    }

    #[test]
    fn deterministic_has_nine_sections() {
        let facts = SessionFacts {
            user_requests: vec!["do X".into()],
            ..SessionFacts::default()
        };
        let s = DeterministicSummarizer.summarize(&request(&facts)).unwrap();
        assert_eq!(s.matches("## ").count(), 9);
        for name in SECTIONS {
            assert!(s.contains(name));
        }
    }
}
