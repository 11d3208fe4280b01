//! What flows through the pipeline and what comes out of it.

use acms_core::{Depth, NodeId};
use acms_retrieve::{Hit, Query, StrategyRun};
use serde::{Deserialize, Serialize};

/// One assembly request: the task (or plan phase) and the budget.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AssemblyRequest {
    pub query: Query,
    pub budget: Budget,
    /// The skeleton of the parent plan's context, inherited by this child assembly.
    #[serde(default)]
    pub parent: Option<Skeleton>,
}

/// The token budget of an assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Budget {
    /// Exactly this many tokens for the assembled context.
    Tokens(usize),
    /// Derived from the model: `window - response_reserve - tool_definitions - skeleton`.
    Window {
        model_context_window: usize,
        tool_definitions: usize,
    },
}

impl Default for Budget {
    fn default() -> Self {
        Budget::Tokens(16_000)
    }
}

/// A node under consideration, with everything the stages learn about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragment {
    pub node: NodeId,
    /// Every strategy's hit for this node.
    pub hits: Vec<Hit>,
    /// Deepest depth worth offering (stage 5 may cap it).
    pub max_depth: Depth,
    /// Exact tokens of the rendered fragment (header included) at depths 0, 2, 4, 9.
    pub cost: [u32; 4],
    /// Fused relevance in [0, 1] (stage 6).
    pub relevance: f64,
    /// Composite score in [0, 1] (stage 6).
    pub score: f64,
}

impl Fragment {
    /// Depths on offer, deepest first.
    pub fn depths(&self) -> impl Iterator<Item = Depth> + '_ {
        Depth::FALLBACK
            .into_iter()
            .filter(move |d| *d <= self.max_depth)
    }
}

/// Why a considered node is not in the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DropReason {
    /// Found but below `context.query.min-relevance`.
    Relevance,
    /// A copy of a better-scored fragment (same content, same node, or too similar).
    Duplicate,
    /// Did not fit the budget at any depth.
    Budget,
    /// Shown inside an enclosing fragment at depth 9 (a closure inside its function), so
    /// not packed on its own.
    Enclosed,
}

/// A node that was considered and left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dropped {
    pub node: NodeId,
    pub reason: DropReason,
    /// Its composite score (stage 6): how near it came.
    #[serde(default)]
    pub score: f64,
}

/// A fragment placed in the context at a depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placed {
    pub fragment: Fragment,
    pub depth: Depth,
}

/// One line of the manifest: what was included, where it comes from, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub node: NodeId,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    pub name: String,
    pub kind: String,
    pub depth: Depth,
    /// Tokens of this fragment rendered alone (header included).
    pub tokens: u32,
    pub score: f64,
    pub strategies: Vec<String>,
    pub reasons: Vec<acms_retrieve::Reason>,
}

/// Timing and sizes of one pipeline stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageReport {
    /// The component (`strategy-selector`, ...).
    pub stage: String,
    /// The registered implementation that ran.
    pub implementation: String,
    pub millis: f64,
    /// Items in and out (selections, hits, fragments, ...).
    pub input: usize,
    pub output: usize,
}

/// What the packer achieved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PackReport {
    pub packer: String,
    pub value: f64,
    pub upper_bound: Option<f64>,
    /// `1 - value / upper_bound`: the certified distance to optimal.
    pub certified_gap: Option<f64>,
    /// Steps the exact-count verification took after packing.
    pub verify_downgrades: usize,
    pub verify_drops: usize,
    /// Fragments added after the first layout, in the room it left under the budget
    /// (fragments of one file share a header the packer paid for each).
    #[serde(default)]
    pub refilled: usize,
}

/// Diagnostics of one assembly: sizes, counts, timings and ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    pub stages: Vec<StageReport>,
    pub strategies: Vec<StrategyRun>,
    pub pack: PackReport,
    /// Notable conditions (skipped assembly, embedder in use, foreign index, ...).
    pub notes: Vec<String>,
    pub millis: f64,
}

/// A compressed form of an assembled context, inherited by child plans.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Skeleton {
    pub text: String,
    pub tokens: usize,
    pub nodes: Vec<NodeId>,
}

/// The result of an assembly.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AssembledContext {
    /// The context to send: preamble, inherited skeleton, then the fragments.
    pub text: String,
    /// Exact tokens of `text` with the configured tokenizer; never more than `budget`.
    pub tokens: usize,
    pub budget: usize,
    pub tokenizer: String,
    pub manifest: Vec<ManifestEntry>,
    pub dropped: Vec<Dropped>,
    /// This context compressed for child plans (stage 10).
    pub skeleton: Skeleton,
    pub diagnostics: Diagnostics,
}
