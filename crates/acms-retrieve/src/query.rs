//! What a strategy is asked ([`Query`]) and what it answers ([`Hit`]).

use acms_core::{Depth, NodeId, StrategyId};
use acms_index::EdgeKind;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
    /// Graph walk from a seed: the edges taken and the nodes reached (navigator).
    Path {
        seed: NodeId,
        hops: Vec<(PathEdge, NodeId)>,
    },
    /// Named by the task (mentioned file or symbol).
    Mentioned { name: String },
    /// Proposed by a language model in a search-refine round (ARCE).
    Llm { round: usize, terms: Vec<String> },
    /// Free-form reason of a custom strategy.
    Custom { detail: String },
}

/// An edge a [`Reason::Path`] took: an index edge of `kind`, followed from its source
/// (`calls`) or back from its target (`called-by`). Serialized as that label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathEdge {
    pub kind: EdgeKind,
    pub outgoing: bool,
}

impl PathEdge {
    /// What the edge says about the node reached, from the node before it.
    fn label(self) -> &'static str {
        match (self.kind, self.outgoing) {
            (EdgeKind::Calls, true) => "calls",
            (EdgeKind::Calls, false) => "called-by",
            (EdgeKind::Imports, true) => "imports",
            (EdgeKind::Imports, false) => "imported-by",
            (EdgeKind::Inherits, true) => "inherits",
            (EdgeKind::Inherits, false) => "inherited-by",
            (EdgeKind::Contains, true) => "contains",
            (EdgeKind::Contains, false) => "contained-in",
        }
    }

    /// The edge labelled `label`, if any.
    fn from_label(label: &str) -> Option<PathEdge> {
        // Every kind: `label` above matches on all of them, so a new one is noticed there.
        const KINDS: [EdgeKind; 4] = [
            EdgeKind::Calls,
            EdgeKind::Imports,
            EdgeKind::Inherits,
            EdgeKind::Contains,
        ];
        KINDS
            .into_iter()
            .flat_map(|kind| [true, false].map(|outgoing| PathEdge { kind, outgoing }))
            .find(|e| e.label() == label)
    }
}

impl PartialEq<&str> for PathEdge {
    fn eq(&self, label: &&str) -> bool {
        self.label() == *label
    }
}

impl std::fmt::Display for PathEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.label())
    }
}

impl Serialize for PathEdge {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.label())
    }
}

impl<'de> Deserialize<'de> for PathEdge {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<PathEdge, D::Error> {
        let label = String::deserialize(deserializer)?;
        PathEdge::from_label(&label).ok_or_else(|| {
            serde::de::Error::custom(format!("`{label}` is not an edge of a graph path"))
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_edges_serialize_as_their_labels() {
        let reason = Reason::Path {
            seed: NodeId(1),
            hops: vec![(
                PathEdge {
                    kind: EdgeKind::Calls,
                    outgoing: false,
                },
                NodeId(2),
            )],
        };
        let json = serde_json::to_string(&reason).unwrap();
        assert_eq!(
            json,
            r#"{"type":"path","seed":"0000000000000001","hops":[["called-by","0000000000000002"]]}"#
        );
        assert_eq!(serde_json::from_str::<Reason>(&json).unwrap(), reason);
        let mut labels: Vec<&str> = Vec::new();
        for kind in [
            EdgeKind::Calls,
            EdgeKind::Imports,
            EdgeKind::Inherits,
            EdgeKind::Contains,
        ] {
            for outgoing in [true, false] {
                let e = PathEdge { kind, outgoing };
                assert_eq!(PathEdge::from_label(e.label()), Some(e));
                labels.push(e.label());
            }
        }
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), 8);
        assert!(serde_json::from_str::<PathEdge>(r#""calls-back""#).is_err());
    }
}
