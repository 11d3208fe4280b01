//! The executor's timeout, circuit breaker and panic handling, with fake strategies.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use acms_core::{Depth, ExecutorConfig};
use acms_retrieve::{
    Error, Hit, Query, Reason, Result, RunStatus, Strategy, StrategyExecutor, StrategyInput,
};

use crate::Fixture;

enum Behaviour {
    Ok,
    Fail,
    Panic,
    Sleep(Duration),
}

struct Fake {
    name: &'static str,
    behaviour: Behaviour,
    calls: AtomicUsize,
}

impl Fake {
    fn new(name: &'static str, behaviour: Behaviour) -> Arc<Fake> {
        Arc::new(Fake {
            name,
            behaviour,
            calls: AtomicUsize::new(0),
        })
    }
}

impl Strategy for Fake {
    fn name(&self) -> &str {
        self.name
    }
    fn retrieve(&self, input: &StrategyInput) -> Result<Vec<Hit>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let hit = |relevance| Hit {
            node: input.corpus.nodes()[0].id,
            depth: Depth::Full,
            relevance,
            strategy: self.name.into(),
            reason: Reason::Custom {
                detail: "fake".into(),
            },
        };
        match &self.behaviour {
            Behaviour::Ok => Ok(vec![hit(0.9), hit(0.1)]),
            Behaviour::Fail => Err(Error::Unavailable {
                strategy: self.name.into(),
                reason: "down".into(),
            }),
            // Unwinds without the panic hook: printing a backtrace (RUST_BACKTRACE=1) on a
            // loaded machine took longer than the test's timeout.
            Behaviour::Panic => std::panic::resume_unwind(Box::new("fake strategy panicked")),
            Behaviour::Sleep(d) => {
                std::thread::sleep(*d);
                Ok(vec![hit(0.9)])
            }
        }
    }
}

fn input(f: &Fixture) -> StrategyInput {
    let r = f.retriever();
    StrategyInput::new(Arc::clone(r.corpus()), Query::new("x"), 1000)
}

fn executor(timeout: f64, cooldown: f64) -> StrategyExecutor {
    StrategyExecutor::new(
        &ExecutorConfig {
            timeout_seconds: timeout,
            circuit_breaker_threshold: 3,
            circuit_breaker_cooldown_seconds: cooldown,
            max_workers: 4,
        },
        0.3,
    )
}

fn status(e: &acms_retrieve::Execution, name: &str) -> RunStatus {
    e.runs
        .iter()
        .find(|r| r.strategy == name)
        .unwrap()
        .status
        .clone()
}

#[test]
fn slow_failing_and_panicking_strategies_never_fail_the_retrieval() {
    let f = Fixture::new(false);
    // Generous: the machine running the tests may be loaded.
    let ex = executor(1.5, 3600.0);
    let strategies: Vec<Arc<dyn Strategy>> = vec![
        Fake::new("ok", Behaviour::Ok),
        Fake::new("slow", Behaviour::Sleep(Duration::from_secs(6))),
        Fake::new("fail", Behaviour::Fail),
        Fake::new("panic", Behaviour::Panic),
    ];
    let e = ex.execute(&strategies, &input(&f), &HashMap::new());
    assert_eq!(
        status(&e, "ok"),
        RunStatus::Ok { hits: 2, kept: 1 },
        "min-relevance drops 0.1"
    );
    assert_eq!(status(&e, "slow"), RunStatus::TimedOut);
    assert!(matches!(status(&e, "fail"), RunStatus::Failed { .. }));
    assert_eq!(status(&e, "panic"), RunStatus::Panicked);
    // The late result of the slow strategy is discarded: only "ok" contributed.
    assert!(e.hits.iter().all(|h| h.strategy == "ok"));
}

#[test]
fn the_breaker_opens_after_three_failures_and_half_opens_after_the_cooldown() {
    let f = Fixture::new(false);
    let failing = Fake::new("fail", Behaviour::Fail);
    let strategies: Vec<Arc<dyn Strategy>> = vec![failing.clone()];
    let ex = executor(5.0, 3600.0);
    for _ in 0..3 {
        let e = ex.execute(&strategies, &input(&f), &HashMap::new());
        assert!(matches!(status(&e, "fail"), RunStatus::Failed { .. }));
    }
    assert!(ex.is_open("fail"));
    let e = ex.execute(&strategies, &input(&f), &HashMap::new());
    assert_eq!(status(&e, "fail"), RunStatus::CircuitOpen);
    assert_eq!(
        failing.calls.load(Ordering::SeqCst),
        3,
        "an open breaker does not call"
    );

    // With no cool-down the open breaker lets a trial through at once (half-open): a
    // transient failure never disables a strategy for good.
    let recovering = Fake::new("flaky", Behaviour::Fail);
    let ex = executor(5.0, 0.0);
    let strategies: Vec<Arc<dyn Strategy>> = vec![recovering.clone()];
    for _ in 0..4 {
        ex.execute(&strategies, &input(&f), &HashMap::new());
    }
    assert_eq!(recovering.calls.load(Ordering::SeqCst), 4);
    let healthy: Vec<Arc<dyn Strategy>> = vec![Fake::new("flaky", Behaviour::Ok)];
    let e = ex.execute(&healthy, &input(&f), &HashMap::new());
    assert!(matches!(status(&e, "flaky"), RunStatus::Ok { .. }));
    assert!(!ex.is_open("flaky"), "a success closes the breaker");
}
