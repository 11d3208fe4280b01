//! [`StrategyExecutor`]: runs strategies in parallel on a bounded worker pool, each with a
//! timeout whose late result is discarded, behind a per-strategy circuit breaker.
//!
//! **Architecture Invariant:** a strategy that errors, panics, times out or is switched off
//! by its breaker never fails a retrieval; it is one [`StrategyRun`] in the diagnostics.
//! The breaker half-opens after a cool-down, so a transient failure never disables a
//! strategy for good.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acms_core::{ExecutorConfig, StrategyId};
use serde::{Deserialize, Serialize};

use crate::{Hit, Stage, Strategy, StrategyInput};

/// How one strategy's run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum RunStatus {
    /// Returned hits (`kept` survived the min-relevance filter).
    Ok { hits: usize, kept: usize },
    /// Returned an error.
    Failed { error: String },
    /// Panicked; the panic was caught.
    Panicked,
    /// Did not answer within the timeout; its late result is discarded.
    TimedOut,
    /// Skipped because its circuit breaker is open.
    CircuitOpen,
}

/// Diagnostics of one strategy in one retrieval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyRun {
    pub strategy: StrategyId,
    #[serde(flatten)]
    pub status: RunStatus,
    pub millis: f64,
}

/// The hits of all strategies plus how each run went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Execution {
    pub hits: Vec<Hit>,
    pub runs: Vec<StrategyRun>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Breaker {
    consecutive_failures: u32,
    opened_at: Option<Instant>,
}

/// Runs strategies in parallel with timeouts and circuit breakers. Keep one per process:
/// the breakers' memory is what makes them useful.
pub struct StrategyExecutor {
    pool: rayon::ThreadPool,
    timeout: Duration,
    threshold: u32,
    cooldown: Duration,
    min_relevance: f32,
    breakers: Mutex<HashMap<StrategyId, Breaker>>,
}

impl StrategyExecutor {
    /// An executor with `config`'s workers, timeout and breaker settings; hits below
    /// `min_relevance` are discarded.
    pub fn new(config: &ExecutorConfig, min_relevance: f64) -> StrategyExecutor {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.max_workers.max(1))
            .thread_name(|i| format!("acms-strategy-{i}"))
            .build()
            .expect("a thread pool of a few threads can be built");
        StrategyExecutor {
            pool,
            timeout: Duration::from_secs_f64(config.timeout_seconds),
            threshold: config.circuit_breaker_threshold.max(1),
            cooldown: Duration::from_secs_f64(config.circuit_breaker_cooldown_seconds),
            min_relevance: min_relevance as f32,
            breakers: Mutex::new(HashMap::new()),
        }
    }

    /// Runs the primary strategies in parallel, then the expansion strategies seeded with
    /// the primaries' hits. `budgets` gives each strategy's token share.
    pub fn execute(
        &self,
        strategies: &[Arc<dyn Strategy>],
        input: &StrategyInput,
        budgets: &HashMap<StrategyId, u32>,
    ) -> Execution {
        let mut execution = Execution::default();
        for stage in [Stage::Primary, Stage::Expansion] {
            let batch: Vec<Arc<dyn Strategy>> = strategies
                .iter()
                .filter(|s| s.stage() == stage)
                .cloned()
                .collect();
            if batch.is_empty() {
                continue;
            }
            let mut input = input.clone();
            if stage == Stage::Expansion {
                input.seeds = Arc::new(std::mem::take(&mut execution.hits));
            }
            let (hits, runs) = self.run_batch(&batch, &input, budgets);
            if stage == Stage::Expansion {
                // The seeds come back without a copy unless a timed-out strategy still holds them.
                let seeds = std::mem::take(&mut input.seeds);
                execution.hits = Arc::try_unwrap(seeds).unwrap_or_else(|held| (*held).clone());
            }
            execution.hits.extend(hits);
            execution.runs.extend(runs);
        }
        execution
    }

    fn run_batch(
        &self,
        batch: &[Arc<dyn Strategy>],
        input: &StrategyInput,
        budgets: &HashMap<StrategyId, u32>,
    ) -> (Vec<Hit>, Vec<StrategyRun>) {
        let (tx, rx) = mpsc::channel();
        let mut pending = Vec::new();
        let mut runs: Vec<Option<StrategyRun>> = vec![None; batch.len()];
        let started = Instant::now();
        let ids: Vec<StrategyId> = batch.iter().map(|s| StrategyId::from(s.name())).collect();
        for (i, strategy) in batch.iter().enumerate() {
            let id = &ids[i];
            if !self.allow(id) {
                runs[i] = Some(StrategyRun {
                    strategy: id.clone(),
                    status: RunStatus::CircuitOpen,
                    millis: 0.0,
                });
                continue;
            }
            let mut input = input.clone();
            input.budget = budgets.get(id).copied().unwrap_or(input.budget);
            let strategy = Arc::clone(strategy);
            let tx = tx.clone();
            pending.push(i);
            self.pool.spawn(move || {
                let t = Instant::now();
                let result =
                    std::panic::catch_unwind(AssertUnwindSafe(|| strategy.retrieve(&input)));
                // Released before the result is sent, so the executor gets its seeds back.
                drop(input);
                // The receiver may be gone after a timeout: the late result is discarded.
                let _ = tx.send((i, result, t.elapsed()));
            });
        }
        drop(tx);
        // Hits are kept per strategy and joined in the configured order, not in the order
        // the threads finish: equal inputs must give equal outputs.
        let mut found_by: Vec<Vec<Hit>> = vec![Vec::new(); batch.len()];
        let deadline = started + self.timeout;
        let mut left = pending.len();
        while left > 0 {
            let wait = deadline.saturating_duration_since(Instant::now());
            let Ok((i, result, elapsed)) = rx.recv_timeout(wait) else {
                break;
            };
            left -= 1;
            let id = &ids[i];
            let millis = elapsed.as_secs_f64() * 1000.0;
            let status = match result {
                Ok(Ok(found)) => {
                    self.record(id, true);
                    let total = found.len();
                    let kept: Vec<Hit> = found
                        .into_iter()
                        .filter(|h| h.relevance >= self.min_relevance)
                        .collect();
                    let status = RunStatus::Ok {
                        hits: total,
                        kept: kept.len(),
                    };
                    found_by[i] = kept;
                    status
                }
                Ok(Err(e)) => {
                    self.record(id, false);
                    RunStatus::Failed {
                        error: e.to_string(),
                    }
                }
                Err(_) => {
                    self.record(id, false);
                    RunStatus::Panicked
                }
            };
            runs[i] = Some(StrategyRun {
                strategy: id.clone(),
                status,
                millis,
            });
        }
        for i in pending {
            if runs[i].is_none() {
                self.record(&ids[i], false);
                runs[i] = Some(StrategyRun {
                    strategy: ids[i].clone(),
                    status: RunStatus::TimedOut,
                    millis: self.timeout.as_secs_f64() * 1000.0,
                });
            }
        }
        (
            found_by.into_iter().flatten().collect(),
            runs.into_iter().flatten().collect(),
        )
    }

    /// Whether `id` may run now: closed, or open long enough to let one trial through.
    fn allow(&self, id: &StrategyId) -> bool {
        let mut breakers = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let b = breakers.entry(id.clone()).or_default();
        match b.opened_at {
            None => true,
            Some(t) if t.elapsed() >= self.cooldown => {
                // Half-open: one trial; a failure re-opens with a fresh cool-down.
                b.opened_at = Some(Instant::now());
                true
            }
            Some(_) => false,
        }
    }

    fn record(&self, id: &StrategyId, ok: bool) {
        let mut breakers = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        let b = breakers.entry(id.clone()).or_default();
        if ok {
            *b = Breaker::default();
        } else {
            b.consecutive_failures += 1;
            if b.consecutive_failures >= self.threshold {
                b.opened_at = Some(Instant::now());
            }
        }
    }

    /// Whether the breaker of the strategy called `name` is open (for diagnostics and tests).
    pub fn is_open(&self, name: &str) -> bool {
        let breakers = self.breakers.lock().unwrap_or_else(|p| p.into_inner());
        breakers.get(name).is_some_and(|b| b.opened_at.is_some())
    }
}
