//! Integration tests of the assembly pipeline on the `tests/data/shop` fixture.

mod budget;
mod pipeline;

use std::path::{Path, PathBuf};

use acms_assemble::{AssembledContext, AssemblyRequest, Budget, Engine};
use acms_core::ContextConfig;
use acms_retrieve::Query;

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

pub fn copy_dir(src: &Path, dst: &Path) {
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let to = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            copy_dir(&entry.path(), &to);
        } else {
            std::fs::copy(entry.path(), to).unwrap();
        }
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new()
    }
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/shop");
        copy_dir(&src, dir.path());
        let opts = acms_index::IndexOptions::new(dir.path());
        let report = acms_index::index_repo(dir.path(), &opts).unwrap();
        acms_retrieve::update_derived(
            &opts.index_dir,
            &report.changes,
            &ContextConfig::default(),
            Some(&acms_vector::HashEmbedder::default()),
        )
        .unwrap();
        Fixture { dir }
    }

    pub fn engine(&self, config: &ContextConfig) -> Engine {
        Engine::open(&self.dir.path().join(".acms"), config).unwrap()
    }
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
