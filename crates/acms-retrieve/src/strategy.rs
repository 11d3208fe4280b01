//! The [`Strategy`] trait and the [`StrategyRegistry`] that maps configured names to
//! implementations (built-in and custom).

use std::collections::BTreeMap;
use std::sync::Arc;

use acms_core::{CustomStrategyConfig, StrategyId};

use crate::task::TaskReading;
use crate::{Corpus, Error, Hit, Query, Result};

/// When a strategy runs within one retrieval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stage {
    /// Runs first, in parallel with the other primary strategies.
    Primary,
    /// Runs after the primaries, seeded with their best hits (graph expansion).
    Expansion,
}

/// Everything a strategy gets for one retrieval. Cheap to clone: it is shared with worker
/// threads, which may outlive a timed-out call.
#[derive(Clone)]
pub struct StrategyInput {
    pub corpus: Arc<Corpus>,
    /// Private with [`StrategyInput::reading`], so the reading is always of this query.
    query: Arc<Query>,
    reading: Arc<TaskReading>,
    /// This strategy's share of the token budget: a hint for how many hits are useful.
    pub budget: u32,
    /// Best hits of the primary strategies (empty for primaries).
    pub seeds: Arc<Vec<Hit>>,
}

impl StrategyInput {
    /// The input of a retrieval of `query` over `corpus`, with no seeds: the query's text is
    /// read here, once, for every strategy.
    pub fn new(corpus: Arc<Corpus>, mut query: Query, budget: u32) -> StrategyInput {
        // What a strategy reads of a task is the report, not the package listing it pastes.
        if let std::borrow::Cow::Owned(text) = crate::task::without_environment(&query.text) {
            query.text = text;
        }
        StrategyInput {
            corpus,
            reading: Arc::new(crate::task::read(&query.text)),
            query: Arc::new(query),
            budget,
            seeds: Arc::new(Vec::new()),
        }
    }

    /// The query retrieved for.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// The query's text as [`crate::task::read`] reads it, once for every strategy.
    pub fn reading(&self) -> &TaskReading {
        &self.reading
    }
}

/// A way of finding relevant nodes.
pub trait Strategy: Send + Sync {
    /// The registered name (`simple-keyword`, ...).
    fn name(&self) -> &str;
    /// How far this strategy's relevance can be trusted, in [0, 1].
    fn max_quality(&self) -> f32 {
        1.0
    }
    /// When it runs.
    fn stage(&self) -> Stage {
        Stage::Primary
    }
    /// Scored hits for `input.query()`, best first. An `Err` counts against the strategy's
    /// circuit breaker but never fails the retrieval.
    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>>;
}

/// Builds a custom strategy from its `context.strategies.custom.<name>` table.
pub type StrategyFactory =
    Box<dyn Fn(&str, &CustomStrategyConfig) -> Result<Arc<dyn Strategy>> + Send + Sync>;

/// Custom strategy implementations by registered class name.
#[derive(Default)]
pub struct StrategyRegistry {
    factories: BTreeMap<String, StrategyFactory>,
}

impl StrategyRegistry {
    /// An empty registry.
    pub fn new() -> StrategyRegistry {
        StrategyRegistry::default()
    }

    /// Registers `factory` under `class`; a config table `context.strategies.custom.<name>`
    /// selects it with `class = "<class>"` (or by `<name>` itself when `class` is unset).
    pub fn register(&mut self, class: impl Into<String>, factory: StrategyFactory) {
        self.factories.insert(class.into(), factory);
    }

    /// Instantiates the custom strategy configured under `name`.
    pub fn build(&self, name: &str, config: &CustomStrategyConfig) -> Result<Arc<dyn Strategy>> {
        let class = config.class.as_deref().unwrap_or(name);
        let factory = self
            .factories
            .get(class)
            .ok_or_else(|| Error::UnknownStrategy(name.to_string()))?;
        factory(name, config)
    }
}

/// Wraps a custom strategy so its relevance never exceeds its configured `max_quality`, and
/// its hits carry the name it is configured under.
pub(crate) struct Capped {
    pub inner: Arc<dyn Strategy>,
    pub id: StrategyId,
    pub max_quality: f32,
}

impl Strategy for Capped {
    fn name(&self) -> &str {
        self.id.as_str()
    }
    fn max_quality(&self) -> f32 {
        self.max_quality
    }
    fn stage(&self) -> Stage {
        self.inner.stage()
    }
    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        let mut hits = self.inner.retrieve(input)?;
        for h in &mut hits {
            h.relevance = h.relevance.min(self.max_quality);
            h.strategy = self.id.clone();
        }
        Ok(hits)
    }
}
