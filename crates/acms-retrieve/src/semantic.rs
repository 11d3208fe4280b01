//! `semantic-embedding`: cosine similarity between the task's embedding and each node's
//! compact rendering (signature, doc, identifiers), over an exact scan or HNSW
//! (`acms-vector`).

use std::sync::{Arc, PoisonError};

use acms_vector::{Embedder, VectorIndex};

use crate::shared::SharedVectors;

use crate::keyword::{hit_limit, hit_on};
use crate::{Error, Hit, Reason, Result, Strategy, StrategyInput};

/// Registered name.
pub const NAME: &str = "semantic-embedding";

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

impl Strategy for SemanticStrategy {
    fn name(&self) -> &str {
        NAME
    }

    fn max_quality(&self) -> f32 {
        0.7
    }

    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        let (embedder, vectors) = self.state.as_ref().map_err(|reason| Error::Unavailable {
            strategy: NAME.into(),
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
        let text = input.query.text.trim();
        if text.is_empty() || vectors.is_empty() {
            return Ok(Vec::new());
        }
        // Embedding models read a few hundred tokens; the head of a huge task is what they see.
        let head: String = text.chars().take(2000).collect();
        let query = embedder
            .embed(&[head.as_str()])?
            .pop()
            .ok_or_else(|| Error::Unavailable {
                strategy: NAME.into(),
                reason: "the embedder returned no vector".into(),
            })?;
        let found = vectors.search(&query, hit_limit(input.budget))?;
        let (unrelated, related) = embedder.calibration();
        Ok(found
            .into_iter()
            .filter_map(|h| {
                let relevance = (h.score - unrelated) / (related - unrelated);
                let reason = Reason::Similarity { cosine: h.score };
                hit_on(&input.corpus, h.id, relevance, NAME, reason)
            })
            .collect())
    }
}
