//! Integration tests of the assembly pipeline on the `tests/data/shop` fixture.

mod budget;
mod on_demand;
mod partial;
mod pipeline;
mod relevance;

use acms_assemble::{AssembledContext, AssemblyRequest, Budget, Engine};
use acms_core::ContextConfig;
use acms_retrieve::Query;

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = acms_testkit::shop();
        index(dir.path(), Some(&acms_vector::HashEmbedder::default()));
        Fixture { dir }
    }

    /// The engine over the fixture's index. Its vectors come from the hashing embedder, which
    /// a configuration must choose explicitly, so every test's configuration opts in here.
    pub fn engine(&self, config: &ContextConfig) -> Engine {
        let mut config = config.clone();
        config.strategies.semantic_embedding.embedder = acms_core::EmbedderKind::Hash;
        Engine::open(&self.dir.path().join(".acms"), &config).unwrap()
    }
}

/// Indexes the repository at `dir` into `dir/.acms`: store, keyword index and, with an
/// embedder, vectors.
pub fn index(dir: &std::path::Path, embedder: Option<&dyn acms_vector::Embedder>) {
    let opts = acms_index::IndexOptions::new(dir);
    let report = acms_index::index_repo(dir, &opts).unwrap();
    acms_retrieve::update_derived(
        &opts.index_dir,
        &report.changes,
        &ContextConfig::default(),
        embedder,
    )
    .unwrap();
}

pub fn assemble(engine: &Engine, task: &str, budget: usize) -> AssembledContext {
    engine
        .assemble(&AssemblyRequest {
            query: Query::new(task),
            budget: Budget::Tokens(budget),
            parent: None,
        })
        .unwrap()
}

pub const STAGES: [&str; 10] = [
    "strategy-selector",
    "budget-allocator",
    "strategy-executor",
    "fragment-deduplicator",
    "detail-depth-resolver",
    "fragment-scorer",
    "budget-packer",
    "fragment-orderer",
    "preamble-generator",
    "skeleton-compressor",
];
