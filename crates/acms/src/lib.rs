//! acms gives LLM agents the right context at the right size.
//!
//! This facade re-exports the public API of the acms crates so a user depends on one crate:
//! [`index`] builds the knowledge index of a repository.
//!
//! ```no_run
//! let repo = std::path::Path::new(".");
//! let report = acms::index::index_repo(repo, &acms::index::IndexOptions::new(repo))?;
//! println!("{} files, {} nodes", report.files, report.nodes);
//! # Ok::<(), acms::index::Error>(())
//! ```

pub use acms_core as core;
pub use acms_core::{Config, ContextConfig, Depth, NodeId, TokenCounter, Tokenizer};
pub use acms_index as index;
