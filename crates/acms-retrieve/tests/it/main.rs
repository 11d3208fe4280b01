//! Integration tests of `acms-retrieve` on the `tests/data/shop` fixture repository.

mod embedding;
mod executor;
mod strategies;

use std::collections::HashMap;
use std::path::PathBuf;

use acms_core::ContextConfig;
use acms_index::{IndexOptions, index_repo};
use acms_retrieve::{Execution, Query, Retriever, StrategyRegistry, update_derived};
use acms_vector::HashEmbedder;

/// The fixture copied into a temporary directory and indexed (with hash-embedder vectors
/// unless `vectors` is false).
pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    pub fn new(vectors: bool) -> Fixture {
        Fixture::with_files(vectors, &[])
    }

    /// The fixture with `files` (relative path, text) added before it is indexed.
    pub fn with_files(vectors: bool, files: &[(&str, &str)]) -> Fixture {
        let dir = acms_testkit::shop();
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let opts = IndexOptions::new(dir.path());
        let report = index_repo(dir.path(), &opts).unwrap();
        let embedder = HashEmbedder::default();
        update_derived(
            &opts.index_dir,
            &report.changes,
            &ContextConfig::default(),
            vectors.then_some(&embedder as &dyn acms_vector::Embedder),
        )
        .unwrap();
        Fixture { dir }
    }

    pub fn index_dir(&self) -> PathBuf {
        self.dir.path().join(".acms")
    }

    pub fn retriever(&self) -> Retriever {
        Retriever::open(
            &self.index_dir(),
            &hash_config(),
            &StrategyRegistry::new(),
            None,
        )
        .unwrap()
    }
}

/// The default configuration with the hashing embedder the fixture's vectors were built with
/// (it is never chosen implicitly).
pub fn hash_config() -> ContextConfig {
    let mut config = ContextConfig::default();
    config.strategies.semantic_embedding.embedder = acms_core::EmbedderKind::Hash;
    config
}

/// Qualified names of `strategy`'s hits, best first.
pub fn names(r: &Retriever, e: &Execution, strategy: &str) -> Vec<String> {
    let mut hits: Vec<_> = e.hits.iter().filter(|h| h.strategy == strategy).collect();
    hits.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then(a.node.cmp(&b.node))
    });
    hits.iter()
        .filter_map(|h| r.corpus().node(h.node))
        .map(|n| n.qualified_name.clone())
        .collect()
}

pub fn run(r: &Retriever, query: Query, strategy: &str) -> Execution {
    r.retrieve(&query, &[strategy.to_string()], &HashMap::new(), 4000)
}
