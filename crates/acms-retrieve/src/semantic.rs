//! `semantic-embedding`: cosine similarity between the task's embedding and each node's
//! compact rendering (signature, doc, identifiers), over an exact scan or HNSW
//! (`acms-vector`).

use std::sync::{Arc, PoisonError};

use acms_core::StrategyId;
use acms_vector::{Embedder, VectorIndex};

use crate::shared::SharedVectors;

use crate::keyword::{hit_limit, hit_on};
use crate::{Error, Hit, Reason, Result, Strategy, StrategyInput};

/// The semantic strategy: an embedder plus the vectors built with it at index time, or the
/// reason it is unavailable (no model installed, no vectors, a corrupted file, an embedder
/// mismatch). It never substitutes another embedder: a strategy without real signal must not
/// take budget.
pub struct SemanticStrategy {
    state: std::result::Result<(Arc<dyn Embedder>, Vectors), String>,
}

/// Vectors owned by this strategy, or shared with the process's embedding runs.
enum Vectors {
    Fixed(Arc<VectorIndex>),
    Shared(SharedVectors),
}

impl SemanticStrategy {
    pub fn new(embedder: Arc<dyn Embedder>, vectors: Arc<VectorIndex>) -> SemanticStrategy {
        SemanticStrategy {
            state: Ok((embedder, Vectors::Fixed(vectors))),
        }
    }

    /// A strategy on vectors an embedding run of this process may update in place.
    pub fn shared(embedder: Arc<dyn Embedder>, vectors: SharedVectors) -> SemanticStrategy {
        SemanticStrategy {
            state: Ok((embedder, Vectors::Shared(vectors))),
        }
    }

    /// A strategy that reports `reason` on every call; the other strategies still run.
    pub fn unavailable(reason: impl Into<String>) -> SemanticStrategy {
        SemanticStrategy {
            state: Err(reason.into()),
        }
    }
}

/// The rank whose cosine stands for "what this query is similar to anyway".
const BASELINE_RANK: usize = 50;

/// The narrowest span, as a share of the model's unrelated-to-related span, over which a hit
/// rises from the query's crowd to full relevance.
const MIN_SPAN: f32 = 0.2;

/// Relevance is measured from the query's own baseline, not from the model's typical
/// unrelated cosine alone: a long bug report is about as similar to hundreds of symbols as to
/// the one it is about, while a short description stands out from its fiftieth hit. Only a
/// hit that separates from the crowd is evidence. The baseline (floor) is the cosine at
/// [`BASELINE_RANK`] (never below the model's unrelated level); a hit reaches full relevance
/// at the model's related level, or [`MIN_SPAN`] of the model's span above the floor when the
/// crowd itself sits that high — a long report about printers is 0.55–0.65 similar to every
/// printer method, and measuring those from a floor below the crowd made all of them fully
/// relevant (docs/EVAL.md, "The crowd above the related level"). Returns (floor, span).
fn scale(found: &[acms_vector::Hit], unrelated: f32, related: f32) -> (f32, f32) {
    let floor = found
        .get(BASELINE_RANK)
        .or(found.last())
        .map_or(unrelated, |h| h.score)
        .max(unrelated);
    (
        floor,
        (related - floor).max(MIN_SPAN * (related - unrelated)),
    )
}

impl Strategy for SemanticStrategy {
    fn name(&self) -> &str {
        StrategyId::Semantic.as_str()
    }

    fn max_quality(&self) -> f32 {
        0.7
    }

    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        let (embedder, vectors) = self.state.as_ref().map_err(|reason| Error::Unavailable {
            strategy: StrategyId::Semantic.to_string(),
            reason: reason.clone(),
        })?;
        let guard;
        let vectors: &VectorIndex = match vectors {
            Vectors::Fixed(v) => v,
            Vectors::Shared(v) => {
                guard = v.read().unwrap_or_else(PoisonError::into_inner);
                &guard
            }
        };
        let text = input.query().text.trim();
        if text.is_empty() || vectors.is_empty() {
            return Ok(Vec::new());
        }
        // Embedding models read a few hundred tokens; the head of a huge task is what they see.
        let head: String = text.chars().take(2000).collect();
        let query = embedder
            .embed(&[head.as_str()])?
            .pop()
            .ok_or_else(|| Error::Unavailable {
                strategy: StrategyId::Semantic.to_string(),
                reason: "the embedder returned no vector".into(),
            })?;
        if query.len() != vectors.dim() {
            return Err(Error::Unavailable {
                strategy: StrategyId::Semantic.to_string(),
                reason: format!(
                    "the vectors have {} dimensions but the embedder gives {}: run `acms index` \
                     again",
                    vectors.dim(),
                    query.len()
                ),
            });
        }
        let limit = hit_limit(input.budget);
        let mut found = vectors.search(&query, limit.max(BASELINE_RANK + 1))?;
        let (unrelated, related) = embedder.calibration();
        let (floor, span) = scale(&found, unrelated, related);
        found.truncate(limit);
        Ok(found
            .into_iter()
            .filter_map(|h| {
                let relevance = (h.score - floor) / span;
                let reason = Reason::Similarity { cosine: h.score };
                hit_on(&input.corpus, h.id, relevance, StrategyId::Semantic, reason)
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(scores: impl IntoIterator<Item = f32>) -> Vec<acms_vector::Hit> {
        scores
            .into_iter()
            .enumerate()
            .map(|(id, score)| acms_vector::Hit {
                id: id as u64,
                score,
            })
            .collect()
    }

    fn relevance(found: &[acms_vector::Hit], rank: usize) -> f32 {
        let (floor, span) = scale(found, 0.1, 0.66);
        (found[rank].score - floor) / span
    }

    fn top_relevance(found: &[acms_vector::Hit]) -> f32 {
        relevance(found, 0)
    }

    #[test]
    fn only_a_hit_that_stands_out_from_the_query_s_crowd_is_strong_evidence() {
        // A long bug report: everything sits at 0.35–0.40, the best barely above the rest.
        let crowd = hits((0..100).map(|i| 0.40 - i as f32 * 0.0005));
        // A short description: one symbol at 0.62, the rest at the model's usual 0.2–0.3.
        let standout = hits(std::iter::once(0.62).chain((0..99).map(|i| 0.30 - i as f32 * 0.001)));
        let (c, s) = (top_relevance(&crowd), top_relevance(&standout));
        assert!(c < 0.15, "the crowd's best is no evidence: {c}");
        assert!(s > 0.8, "the standout is: {s}");
        // Fewer hits than the baseline rank: the last one stands in.
        assert!(top_relevance(&crowd[..10]) < 0.1);
        // A crowd above the model's related level (0.66): only the hit that leaves it behind
        // is fully relevant, not every member of the crowd.
        let high = hits(std::iter::once(0.85).chain((0..99).map(|i| 0.75 - i as f32 * 0.001)));
        assert!(top_relevance(&high) >= 1.0);
        let member = relevance(&high, 10);
        assert!(
            member < 0.5,
            "a crowd member is not strong evidence: {member}"
        );
    }
}
