//! What a strategy is asked ([`Query`]) and what it answers ([`Hit`]).

use acms_core::{Depth, NodeId, StrategyId};
use serde::{Deserialize, Serialize};

/// A retrieval request: the task text plus optional plan-phase hints.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// The task or plan-phase text.
    pub text: String,
    /// Repository-relative paths the task mentions.
    #[serde(default)]
    pub mentioned_files: Vec<String>,
    /// Symbol names (simple or qualified) the task mentions.
    #[serde(default)]
    pub mentioned_symbols: Vec<String>,
    /// Nodes selected by a previous phase.
    #[serde(default)]
    pub previous: Vec<NodeId>,
}

impl Query {
    /// A query with only task text.
    pub fn new(text: impl Into<String>) -> Query {
        Query {
            text: text.into(),
            ..Query::default()
        }
    }
}

/// Why a strategy returned a hit: short and machine-readable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Reason {
    /// Query terms that matched (keyword).
    Terms { terms: Vec<String> },
    /// Cosine similarity of embeddings (semantic).
    Similarity { cosine: f32 },
    /// Graph walk from a seed: the nodes and edge kinds on the way (navigator).
    Path {
        seed: NodeId,
        hops: Vec<(String, NodeId)>,
    },
    /// Named by the task (mentioned file or symbol).
    Mentioned { name: String },
    /// Proposed by a language model in a search-refine round (ARCE).
    Llm { round: usize, terms: Vec<String> },
    /// Free-form reason of a custom strategy.
    Custom { detail: String },
}

/// One scored node proposed by a strategy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    pub node: NodeId,
    /// The depth the strategy proposes (the packer may fall back from it).
    pub depth: Depth,
    /// In [0, 1].
    pub relevance: f32,
    /// The strategy that found it.
    pub strategy: StrategyId,
    pub reason: Reason,
}
