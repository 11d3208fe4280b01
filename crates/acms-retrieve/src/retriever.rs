//! [`Retriever`]: opens an index directory once (store metadata, graph, keyword index,
//! vectors, embedder), builds the configured strategies, and runs them through the
//! [`StrategyExecutor`].

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use acms_core::{ContextConfig, StrategyId};
use acms_keyword::KeywordIndex;
use acms_llm::LlmClient;
use acms_vector::IndexParams;

use crate::dirs::{keyword_dir, vector_dir};
use crate::embedding::{embeds, vector_generation};
use crate::strategy::Capped;
use crate::{
    ArceStrategy, Corpus, Error, Execution, KeywordStrategy, NavigatorStrategy, Query, Result,
    SemanticStrategy, Strategy, StrategyExecutor, StrategyInput, StrategyRegistry,
};

/// Strategies, shared data and executor for one index directory.
pub struct Retriever {
    corpus: Arc<Corpus>,
    strategies: Vec<Arc<dyn Strategy>>,
    executor: StrategyExecutor,
    notes: Vec<String>,
}

impl Retriever {
    /// Opens `index_dir` and builds the strategies `config` enables. A strategy that cannot
    /// work with this index (no vectors, a corrupted file) is still built and reports itself
    /// unavailable on every call; the others run. `llm` enables ARCE.
    pub fn open(
        index_dir: &Path,
        config: &ContextConfig,
        registry: &StrategyRegistry,
        llm: Option<Arc<dyn LlmClient>>,
    ) -> Result<Retriever> {
        Retriever::open_with_corpus(index_dir, config, registry, llm, Corpus::open(index_dir)?)
    }

    /// [`Retriever::open`] with a corpus the caller already holds (one loaded whole:
    /// [`Corpus::load`]).
    pub fn open_with_corpus(
        index_dir: &Path,
        config: &ContextConfig,
        registry: &StrategyRegistry,
        llm: Option<Arc<dyn LlmClient>>,
        corpus: Corpus,
    ) -> Result<Retriever> {
        let corpus = Arc::new(corpus);
        let mut notes = Vec::new();
        let keyword = || -> Result<Arc<KeywordIndex>> {
            let dir = keyword_dir(index_dir);
            if !dir.join("meta.json").exists() {
                return Err(Error::Derived {
                    path: dir,
                    message: "no keyword index: run `acms index`".into(),
                });
            }
            Ok(Arc::new(KeywordIndex::create_or_open(&dir)?))
        };
        let mut keyword_index: Option<Result<Arc<KeywordIndex>>> = None;
        let mut strategies: Vec<Arc<dyn Strategy>> = Vec::new();
        for name in &config.strategies.enabled {
            let id = StrategyId::from(name.as_str());
            let strategy: Arc<dyn Strategy> = match &id {
                StrategyId::Keyword => {
                    let k = keyword_index.get_or_insert_with(keyword);
                    match k {
                        Ok(k) => Arc::new(KeywordStrategy::new(Arc::clone(k))),
                        Err(e) => Arc::new(Unavailable::new(id, e.to_string())),
                    }
                }
                StrategyId::Semantic => {
                    let (s, note) = semantic(index_dir, config, &corpus);
                    notes.push(note);
                    Arc::new(s)
                }
                StrategyId::Navigator => Arc::new(NavigatorStrategy::new(
                    config.strategies.breadth_depth_navigator.max_hops,
                )),
                StrategyId::Arce => {
                    let k = keyword_index.get_or_insert_with(keyword);
                    match (&llm, k) {
                        (Some(llm), Ok(k)) => Arc::new(ArceStrategy::new(
                            Arc::clone(llm),
                            Arc::clone(k),
                            config.strategies.arce.max_rounds,
                        )),
                        (None, _) => Arc::new(Unavailable::new(
                            id,
                            "no language model configured (context.llm.base-url)".into(),
                        )),
                        (_, Err(e)) => Arc::new(Unavailable::new(id, e.to_string())),
                    }
                }
                StrategyId::Custom(custom) => {
                    let c = config
                        .strategies
                        .custom
                        .get(custom)
                        .ok_or_else(|| Error::UnknownStrategy(custom.clone()))?;
                    Arc::new(Capped {
                        inner: registry.build(custom, c)?,
                        max_quality: c.max_quality as f32,
                        id,
                    })
                }
            };
            strategies.push(strategy);
        }
        // A run killed between the store commit and the keyword commit leaves the keyword
        // index a generation behind: its hits are still served, but not silently.
        if let Some(Ok(k)) = &keyword_index
            && (k.generation() != corpus.generation() || k.store() != corpus.store_id())
        {
            notes.push(format!(
                "{}: the keyword index is at generation {} but the index is at {} (an index run was interrupted): keyword results may be stale; run `acms index` to bring it up to date",
                StrategyId::Keyword,
                k.generation(),
                corpus.generation()
            ));
        }
        Ok(Retriever {
            corpus,
            strategies,
            executor: StrategyExecutor::new(&config.executor, config.query.min_relevance),
            notes,
        })
    }

    /// The shared corpus.
    pub fn corpus(&self) -> &Arc<Corpus> {
        &self.corpus
    }

    /// The configured strategies, in configuration order.
    pub fn strategies(&self) -> &[Arc<dyn Strategy>] {
        &self.strategies
    }

    /// One line per notable choice made while opening (which embedder is in use, ...).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The executor (its breakers persist across calls).
    pub fn executor(&self) -> &StrategyExecutor {
        &self.executor
    }

    /// Runs `selected` strategies (by name; all when empty) for `query` with per-strategy
    /// token shares `budgets` (strategies without a share get `default_budget`).
    pub fn retrieve(
        &self,
        query: &Query,
        selected: &[String],
        budgets: &HashMap<StrategyId, u32>,
        default_budget: u32,
    ) -> Execution {
        let chosen: Vec<Arc<dyn Strategy>> = self
            .strategies
            .iter()
            .filter(|s| selected.is_empty() || selected.iter().any(|n| n == s.name()))
            .cloned()
            .collect();
        let input = StrategyInput::new(Arc::clone(&self.corpus), query.clone(), default_budget);
        self.executor.execute(&chosen, &input, budgets)
    }
}

/// How many of the corpus's nodes get a vector under `config`.
fn embeddable(corpus: &Corpus, config: &ContextConfig) -> usize {
    let semantic = &config.strategies.semantic_embedding;
    corpus
        .nodes()
        .iter()
        .filter(|n| embeds(n, semantic))
        .count()
}

/// The semantic strategy for `index_dir`, or an unavailable one saying why, plus the line
/// that says which embedder is in use (and whether the vectors are complete).
fn semantic(
    index_dir: &Path,
    config: &ContextConfig,
    corpus: &Corpus,
) -> (SemanticStrategy, String) {
    let unavailable = |why: String| {
        let note = format!("semantic-embedding: unavailable ({why})");
        (SemanticStrategy::unavailable(why), note)
    };
    let dir = vector_dir(index_dir);
    if !dir.join(acms_vector::VECTORS_FILE).exists() {
        return unavailable(
            "the index has no vectors: run `acms index` with an embedding model installed \
             (`acms model fetch`, or on first use)"
                .into(),
        );
    }
    // The embedder comes from the user's configuration, never from the index directory:
    // an index inside a repository is as untrusted as the repository.
    // Both are kept by the process between engine opens (see `shared`).
    let loaded = match crate::shared::embedder(&config.strategies.semantic_embedding) {
        Ok(l) => l,
        Err(e) => return unavailable(e.to_string()),
    };
    let params = IndexParams::from_config(&config.strategies.semantic_embedding);
    let shared = match crate::shared::shared_vectors(&dir, params) {
        Ok(v) => v,
        Err(e) => return unavailable(e.to_string()),
    };
    let embedder = loaded.embedder;
    let mut note = loaded.description;
    {
        let vectors = shared
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Ids only: a model still starting does not know its dimension yet (the strategy
        // checks it on the first vector).
        if embedder.id() != vectors.embedder_id() {
            return unavailable(format!(
                "vectors were built with `{}` but the embedder now is `{}`: run `acms index` again",
                vectors.embedder_id(),
                embedder.id()
            ));
        }
        if vector_generation(
            index_dir,
            &config.strategies.semantic_embedding,
            corpus.store_id(),
        ) != Some(corpus.generation())
        {
            note = format!(
                "semantic-embedding: incomplete ({} of {} symbols embedded; run `acms index` to \
                 finish): {note}",
                vectors.len(),
                embeddable(corpus, config)
            );
        }
    }
    (SemanticStrategy::shared(embedder, shared), note)
}

/// A configured strategy that cannot run with this index; it reports why on every call.
struct Unavailable {
    id: StrategyId,
    reason: String,
}

impl Unavailable {
    fn new(id: StrategyId, reason: String) -> Unavailable {
        Unavailable { id, reason }
    }
}

impl Strategy for Unavailable {
    fn name(&self) -> &str {
        self.id.as_str()
    }
    fn retrieve(&self, _: &StrategyInput) -> Result<Vec<crate::Hit>> {
        Err(Error::Unavailable {
            strategy: self.id.to_string(),
            reason: self.reason.clone(),
        })
    }
}
