//! acms-eval measures retrieval quality on real code nobody on the team wrote (issue 6).
//!
//! Per corpus (pinned PyPI / npm packages from `scripts/fetch-corpus.sh`): docstring-to-code
//! tasks (set 1: a function's docstring first sentence; set 2: the same without the name's
//! words), a copy of the corpus with those docstrings removed, an acms index of that copy, one
//! context per task × budget, the peers (Aider's repo map, BM25 over files) on the same tasks,
//! and ablations; every result is scored with the same rules and recounted with the same
//! tokenizer. [`report`] renders the tables for `docs/EVAL.md`.
//!
//! ```no_run
//! let root = std::path::Path::new(".");
//! let mut opts = acms_eval::RunOptions::new(root);
//! opts.corpora = vec!["requests".into()];
//! opts.tasks = Some(30);
//! let reports = acms_eval::run(&opts)?;
//! println!("{}", acms_eval::report::corpus_markdown(&reports[0], &opts.budgets));
//! # Ok::<(), acms_eval::Error>(())
//! ```
//!
//! Python task generation stays in `eval/make_tasks.py` (called from here); TypeScript tasks
//! are generated in [`tasks`] with the engine's analyzers and the same text rules ([`text`]).

mod error;
pub mod harness;
pub mod issues;
pub mod lang;
pub mod mine;
pub mod patch;
pub mod realtasks;
pub mod report;
pub mod score;
pub mod tasks;
pub mod text;

pub use error::{Error, Result};
pub use harness::{CorpusReport, Metrics, Row, RunOptions, run, run_corpus};
pub use score::{Hit, Target};
pub use tasks::Task;
