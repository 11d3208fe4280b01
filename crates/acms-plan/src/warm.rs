//! Decision memory in retrieval and scoring, through the existing seams:
//!
//! - [`WarmMemoryStrategy`], registered as `warm-memory` in a `StrategyRegistry` (off by
//!   default: add it to `context.strategies.enabled`), proposes the fragments of warm
//!   decisions whose task, phase and notes share terms with the query;
//! - [`DemotingScorer`] wraps whichever `FragmentScorer` is configured and divides the score
//!   of every fragment of a corrected decision by 2 per correction.
//!
//! Both read a [`MemoryView`]: a snapshot the plan layer refreshes from the database before
//! each assembly, so no stage does I/O and results are deterministic for a given snapshot.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock};

use acms_assemble::Fragment;
use acms_assemble::stages::StageContext;
use acms_assemble::stages::scorer::FragmentScorer;
use acms_core::{ContextConfig, CustomStrategyConfig, Depth, NodeId};
use acms_retrieve::{Hit, Reason, Strategy, StrategyInput, StrategyRegistry};

use crate::{DecisionId, PlanId};

/// The registered name (and class) of the warm-memory strategy.
pub const WARM_MEMORY: &str = "warm-memory";

/// Quality the warm-memory strategy is trusted with when `acms.toml` gives no
/// `[context.strategies.custom.warm-memory]` table: a past decision is good evidence, but
/// weaker than the task's own words.
pub const DEFAULT_WARM_QUALITY: f64 = 0.7;

/// Factor a fragment's score is multiplied by for each correction of a decision it was in.
pub const DEMOTION: f64 = 0.5;

/// A warm decision as retrieval sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct WarmDecision {
    pub id: DecisionId,
    pub plan: PlanId,
    pub phase: String,
    pub last_used: i64,
    /// Distinct lower-case terms of its task, phase and notes.
    pub terms: BTreeSet<String>,
    pub fragments: Vec<(NodeId, Depth)>,
}

/// What retrieval and scoring know of decision memory at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemorySnapshot {
    pub now: i64,
    pub warm_seconds: i64,
    pub warm: Vec<WarmDecision>,
    /// Nodes of corrected decisions, with how many corrections they were part of.
    pub demoted: HashMap<NodeId, u32>,
}

/// A shared, replaceable [`MemorySnapshot`].
#[derive(Debug, Clone, Default)]
pub struct MemoryView(Arc<RwLock<MemorySnapshot>>);

impl MemoryView {
    /// Replaces the snapshot.
    pub fn set(&self, snapshot: MemorySnapshot) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = snapshot;
    }

    /// Reads the snapshot.
    pub fn with<T>(&self, f: impl FnOnce(&MemorySnapshot) -> T) -> T {
        f(&self.0.read().unwrap_or_else(PoisonError::into_inner))
    }
}

/// Words too common in task text to say anything about a match.
const STOP: &[&str] = &[
    "the", "and", "for", "with", "that", "this", "from", "into", "are", "was", "not", "but", "all",
    "any", "can", "use", "when", "then", "than", "what", "where", "which", "how", "why", "has",
    "have", "its", "our", "you", "your", "should", "would", "could", "add", "make", "get", "set",
    "new",
];

/// Distinct lower-case terms of `text` (identifiers split), without stop words.
pub fn terms(text: &str) -> BTreeSet<String> {
    acms_keyword::code_terms(text)
        .into_iter()
        .map(|t| t.to_lowercase())
        .filter(|t| t.chars().count() >= 3 && !STOP.contains(&t.as_str()))
        .collect()
}

/// Proposes the fragments of warm decisions that match the query.
pub struct WarmMemoryStrategy {
    name: String,
    view: MemoryView,
}

impl WarmMemoryStrategy {
    pub fn new(name: impl Into<String>, view: MemoryView) -> WarmMemoryStrategy {
        WarmMemoryStrategy {
            name: name.into(),
            view,
        }
    }
}

impl Strategy for WarmMemoryStrategy {
    fn name(&self) -> &str {
        &self.name
    }

    fn max_quality(&self) -> f32 {
        DEFAULT_WARM_QUALITY as f32
    }

    fn retrieve(&self, input: &StrategyInput) -> acms_retrieve::Result<Vec<Hit>> {
        let mut query = terms(&input.query().text);
        for s in &input.query().mentioned_symbols {
            query.extend(terms(s));
        }
        if query.is_empty() {
            return Ok(Vec::new());
        }
        let mut best: HashMap<NodeId, Hit> = HashMap::new();
        self.view.with(|snap| {
            for d in &snap.warm {
                let shared = d.terms.intersection(&query).count();
                if shared == 0 {
                    continue;
                }
                let overlap = shared as f64 / query.len() as f64;
                let age = (snap.now - d.last_used).max(0) as f64;
                let recency = 1.0 - 0.5 * (age / snap.warm_seconds.max(1) as f64).min(1.0);
                let relevance = ((0.3 + 0.7 * overlap) * recency) as f32;
                for &(node, depth) in &d.fragments {
                    if input.corpus.node(node).is_none() {
                        continue; // deleted since the decision
                    }
                    let hit = Hit {
                        node,
                        depth,
                        relevance,
                        strategy: self.name.as_str().into(),
                        reason: Reason::Custom {
                            detail: format!(
                                "decision {} (plan {}, phase {}) shares {shared} terms",
                                d.id, d.plan, d.phase
                            ),
                        },
                    };
                    match best.get(&node) {
                        Some(old) if old.relevance >= relevance => {}
                        _ => {
                            best.insert(node, hit);
                        }
                    }
                }
            }
        });
        let mut hits: Vec<Hit> = best.into_values().collect();
        hits.sort_by(|a, b| {
            b.relevance
                .total_cmp(&a.relevance)
                .then(a.node.cmp(&b.node))
        });
        Ok(hits)
    }
}

/// Registers `warm-memory` in `registry`, reading `view`.
pub fn register(registry: &mut StrategyRegistry, view: &MemoryView) {
    let view = view.clone();
    registry.register(
        WARM_MEMORY,
        Box::new(move |name, _config| {
            Ok(Arc::new(WarmMemoryStrategy::new(name, view.clone())) as Arc<dyn Strategy>)
        }),
    );
}

/// When `warm-memory` is enabled without its own `[context.strategies.custom.warm-memory]`
/// table, adds the default one so the retriever can build it.
pub fn complete_config(config: &mut ContextConfig) {
    if config.strategies.enabled.iter().any(|s| s == WARM_MEMORY) {
        config
            .strategies
            .custom
            .entry(WARM_MEMORY.to_string())
            .or_insert_with(|| CustomStrategyConfig {
                class: Some(WARM_MEMORY.to_string()),
                max_quality: DEFAULT_WARM_QUALITY,
                config: Default::default(),
            });
    }
}

/// Wraps a scorer: fragments of corrected decisions lose [`DEMOTION`] of their score per
/// correction.
pub struct DemotingScorer {
    inner: Arc<dyn FragmentScorer>,
    view: MemoryView,
}

impl DemotingScorer {
    pub fn new(inner: Arc<dyn FragmentScorer>, view: MemoryView) -> DemotingScorer {
        DemotingScorer { inner, view }
    }
}

impl FragmentScorer for DemotingScorer {
    fn score(&self, ctx: &StageContext<'_>, fragments: &mut [Fragment]) {
        self.inner.score(ctx, fragments);
        self.view.with(|snap| {
            if snap.demoted.is_empty() {
                return;
            }
            for f in fragments.iter_mut() {
                if let Some(&n) = snap.demoted.get(&f.node) {
                    f.score *= DEMOTION.powi(n.min(16) as i32);
                }
            }
        });
    }
}

/// Wraps every registered scorer of `registry` in a [`DemotingScorer`] reading `view`.
pub fn wrap_scorers(registry: &mut acms_assemble::PipelineRegistry, view: &MemoryView) {
    for scorer in registry.fragment_scorer.values_mut() {
        *scorer = Arc::new(DemotingScorer::new(Arc::clone(scorer), view.clone()));
    }
}
