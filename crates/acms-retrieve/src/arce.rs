//! `arce` (Autonomous Reasoning Context Extraction): a language-model-driven search-refine
//! loop. Each round the model proposes search terms for the task (seeing what earlier rounds
//! found); the terms are run against the keyword index; the loop stops when the model says
//! it is done, proposes nothing new, or after `max-rounds`. Off unless an LLM is configured.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use acms_core::{NodeId, StrategyId};
use acms_keyword::KeywordIndex;
use acms_llm::{ChatMessage, LlmClient};

use crate::keyword::proposed_depth;
use crate::{Hit, Reason, Result, Strategy, StrategyInput};

const SYSTEM: &str = "You help find the code relevant to a programming task in a repository. \
Reply with only a JSON array of at most 8 short search terms: identifiers, file names or \
phrases likely to appear in the relevant code. Reply [] when the code found so far suffices.";

/// Hits per proposed term.
const PER_TERM: usize = 5;
/// Relevance lost per extra round: later rounds refine, they do not outrank.
const ROUND_DECAY: f32 = 0.15;

/// The ARCE strategy.
pub struct ArceStrategy {
    llm: Arc<dyn LlmClient>,
    keyword: Arc<KeywordIndex>,
    max_rounds: usize,
}

impl ArceStrategy {
    pub fn new(llm: Arc<dyn LlmClient>, keyword: Arc<KeywordIndex>, max_rounds: usize) -> Self {
        ArceStrategy {
            llm,
            keyword,
            max_rounds,
        }
    }
}

/// The terms of a reply: the first JSON array of strings in it, tolerating prose around it.
fn parse_terms(reply: &str) -> Vec<String> {
    let (Some(start), Some(end)) = (reply.find('['), reply.rfind(']')) else {
        return Vec::new();
    };
    if end < start {
        return Vec::new();
    }
    serde_json::from_str::<Vec<String>>(&reply[start..=end])
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .take(8)
        .collect()
}

impl Strategy for ArceStrategy {
    fn name(&self) -> &str {
        StrategyId::Arce.as_str()
    }

    fn max_quality(&self) -> f32 {
        0.8
    }

    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        let task: String = input.query().text.chars().take(4000).collect();
        let mut found: HashMap<NodeId, Hit> = HashMap::new();
        let mut tried: BTreeSet<String> = BTreeSet::new();
        for round in 1..=self.max_rounds {
            let mut prompt = format!("Task:\n{task}\n");
            if !found.is_empty() {
                prompt.push_str("\nFound so far:\n");
                let mut shown: Vec<&Hit> = found.values().collect();
                shown.sort_by(|a, b| {
                    b.relevance
                        .total_cmp(&a.relevance)
                        .then(a.node.cmp(&b.node))
                });
                for h in shown.into_iter().take(20) {
                    if let Some(n) = input.corpus.node(h.node) {
                        prompt.push_str(&format!("- {}: {}\n", n.path, n.signature));
                    }
                }
            }
            let reply = self.llm.chat(
                &[ChatMessage::system(SYSTEM), ChatMessage::user(prompt)],
                Some(200),
            )?;
            let terms: Vec<String> = parse_terms(&reply)
                .into_iter()
                .filter(|t| tried.insert(t.to_lowercase()))
                .collect();
            if terms.is_empty() {
                break;
            }
            let weight = 1.0 - ROUND_DECAY * (round - 1) as f32;
            for term in &terms {
                for h in self.keyword.search(term, PER_TERM)? {
                    let Some(node) = input.corpus.node(NodeId(h.id)) else {
                        continue;
                    };
                    let relevance = (h.relevance * weight).clamp(0.0, 1.0);
                    let entry = found.entry(node.id).or_insert_with(|| Hit {
                        node: node.id,
                        depth: proposed_depth(node.kind),
                        relevance: 0.0,
                        strategy: StrategyId::Arce,
                        reason: Reason::Llm {
                            round,
                            terms: Vec::new(),
                        },
                    });
                    if relevance > entry.relevance {
                        entry.relevance = relevance;
                        entry.reason = Reason::Llm {
                            round,
                            terms: vec![term.clone()],
                        };
                    }
                }
            }
        }
        let mut hits: Vec<Hit> = found.into_values().collect();
        hits.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
        });
        Ok(hits)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_terms;

    #[test]
    fn parses_terms_from_chatty_replies() {
        assert_eq!(parse_terms(r#"["a", "b c"]"#), ["a", "b c"]);
        assert_eq!(parse_terms("Sure! [\"render\"] hope it helps"), ["render"]);
        assert!(parse_terms("no idea").is_empty());
        assert!(parse_terms("] [").is_empty());
        assert!(parse_terms("[1, 2]").is_empty());
    }
}
