//! Stage 3, StrategyExecutor: runs the selected strategies (in parallel, with timeouts and
//! circuit breakers — `acms_retrieve::StrategyExecutor`).

use std::collections::HashMap;

use acms_core::StrategyId;
use acms_retrieve::{Execution, Query, Retriever};

use super::selector::Selection;

/// Stage 3.
pub trait ExecutorStage: Send + Sync {
    fn execute(
        &self,
        retriever: &Retriever,
        query: &Query,
        selected: &[Selection],
        shares: &HashMap<StrategyId, u32>,
        budget: u32,
    ) -> Execution;
}

/// Runs the selection through the retriever's executor.
pub struct ParallelExecutor;

impl ExecutorStage for ParallelExecutor {
    fn execute(
        &self,
        retriever: &Retriever,
        query: &Query,
        selected: &[Selection],
        shares: &HashMap<StrategyId, u32>,
        budget: u32,
    ) -> Execution {
        if selected.is_empty() {
            return Execution::default();
        }
        let names: Vec<String> = selected.iter().map(|s| s.strategy.clone()).collect();
        retriever.retrieve(query, &names, shares, budget)
    }
}
