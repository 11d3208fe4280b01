//! The context budget tracker: maps the tokens used against a window to one of five states
//! (Normal, Warning, Pressure, AutoCompact, Blocking) and notifies subscribers when the state
//! changes, so a host can trigger the matching compaction tier.
//!
//! The tracker only classifies; it never compacts. Events carry sizes and states, never text.

pub use crate::types::BudgetState;
use crate::{Error, Result};

/// A threshold on the remaining room: absolute, or a fraction of the window.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Threshold {
    Absolute(usize),
    Fraction(f64),
}

impl Threshold {
    /// The threshold in units for a window of `window`.
    pub fn resolve(self, window: usize) -> usize {
        match self {
            Threshold::Absolute(n) => n,
            // Fractions are validated to lie in [0, 1], so this cannot overflow.
            Threshold::Fraction(f) => (window as f64 * f).round() as usize,
        }
    }
}

/// The four thresholds, compared with the remaining room (`window - used`).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Thresholds {
    pub warning: Threshold,
    pub pressure: Threshold,
    pub auto_compact: Threshold,
    pub blocking: Threshold,
}

impl Default for Thresholds {
    /// The spec's defaults: 25K, 18K, 13K and 3K remaining.
    fn default() -> Self {
        Thresholds {
            warning: Threshold::Absolute(25_000),
            pressure: Threshold::Absolute(18_000),
            auto_compact: Threshold::Absolute(13_000),
            blocking: Threshold::Absolute(3_000),
        }
    }
}

impl Thresholds {
    /// The same thresholds as fractions of the window.
    pub fn fractions(warning: f64, pressure: f64, auto_compact: f64, blocking: f64) -> Thresholds {
        Thresholds {
            warning: Threshold::Fraction(warning),
            pressure: Threshold::Fraction(pressure),
            auto_compact: Threshold::Fraction(auto_compact),
            blocking: Threshold::Fraction(blocking),
        }
    }

    /// Checks fractions lie in [0, 1] and that warning ≥ pressure ≥ auto-compact ≥ blocking
    /// once resolved for `window`.
    pub fn validate(&self, window: usize) -> Result<()> {
        let all = [
            self.warning,
            self.pressure,
            self.auto_compact,
            self.blocking,
        ];
        for t in all {
            if let Threshold::Fraction(f) = t
                && !(0.0..=1.0).contains(&f)
            {
                return Err(Error::Config(format!(
                    "threshold fraction {f} must lie between 0 and 1"
                )));
            }
        }
        let r = all.map(|t| t.resolve(window));
        if !(r[0] >= r[1] && r[1] >= r[2] && r[2] >= r[3]) {
            return Err(Error::Config(
                "thresholds must satisfy warning ≥ pressure ≥ auto-compact ≥ blocking".into(),
            ));
        }
        Ok(())
    }

    /// The state for `used` units of a `window`.
    pub fn state(&self, window: usize, used: usize) -> BudgetState {
        let remaining = window.saturating_sub(used);
        if remaining <= self.blocking.resolve(window) {
            BudgetState::Blocking
        } else if remaining <= self.auto_compact.resolve(window) {
            BudgetState::AutoCompact
        } else if remaining <= self.pressure.resolve(window) {
            BudgetState::Pressure
        } else if remaining <= self.warning.resolve(window) {
            BudgetState::Warning
        } else {
            BudgetState::Normal
        }
    }
}

/// A state change, delivered to subscribers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct StateChange {
    pub from: BudgetState,
    pub to: BudgetState,
    pub used: usize,
    pub remaining: usize,
    pub window: usize,
}

type Subscriber = Box<dyn FnMut(&StateChange) + Send>;

/// Tracks usage of one context window and reports state changes.
pub struct BudgetTracker {
    window: usize,
    thresholds: Thresholds,
    state: BudgetState,
    used: usize,
    subscribers: Vec<Subscriber>,
}

impl std::fmt::Debug for BudgetTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetTracker")
            .field("window", &self.window)
            .field("state", &self.state)
            .field("used", &self.used)
            .field("subscribers", &self.subscribers.len())
            .finish()
    }
}

impl BudgetTracker {
    /// A tracker for `window` units, starting empty (Normal unless the thresholds say otherwise).
    pub fn new(window: usize, thresholds: Thresholds) -> Result<BudgetTracker> {
        if window == 0 {
            return Err(Error::Config("the context window must be positive".into()));
        }
        thresholds.validate(window)?;
        Ok(BudgetTracker {
            window,
            thresholds,
            state: thresholds.state(window, 0),
            used: 0,
            subscribers: Vec::new(),
        })
    }

    /// Calls `f` on every future state change.
    pub fn subscribe(&mut self, f: impl FnMut(&StateChange) + Send + 'static) {
        self.subscribers.push(Box::new(f));
    }

    /// Records that the next request uses `used` units; returns (and publishes) the state
    /// change, if any.
    pub fn observe(&mut self, used: usize) -> Option<StateChange> {
        self.used = used;
        let to = self.thresholds.state(self.window, used);
        if to == self.state {
            return None;
        }
        let change = StateChange {
            from: self.state,
            to,
            used,
            remaining: self.window.saturating_sub(used),
            window: self.window,
        };
        self.state = to;
        for s in &mut self.subscribers {
            s(&change);
        }
        Some(change)
    }

    /// The current state.
    pub fn state(&self) -> BudgetState {
        self.state
    }

    /// Units left in the window.
    pub fn remaining(&self) -> usize {
        self.window.saturating_sub(self.used)
    }

    /// The window size.
    pub fn window(&self) -> usize {
        self.window
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    fn check(used: usize, expected: BudgetState) {
        assert_eq!(
            Thresholds::default().state(200_000, used),
            expected,
            "{used}"
        );
    }

    #[test]
    fn default_thresholds() {
        check(0, BudgetState::Normal);
        check(174_999, BudgetState::Normal);
        check(175_000, BudgetState::Warning);
        check(182_000, BudgetState::Pressure);
        check(187_000, BudgetState::AutoCompact);
        check(197_000, BudgetState::Blocking);
        check(250_000, BudgetState::Blocking);
    }

    #[test]
    fn fractions_of_window() {
        let t = Thresholds::fractions(0.5, 0.25, 0.1, 0.01);
        assert_eq!(t.state(1000, 400), BudgetState::Normal);
        assert_eq!(t.state(1000, 500), BudgetState::Warning);
        assert_eq!(t.state(1000, 900), BudgetState::AutoCompact);
        assert_eq!(t.state(1000, 995), BudgetState::Blocking);
        assert!(
            Thresholds::fractions(0.1, 0.5, 0.0, 0.0)
                .validate(10)
                .is_err()
        );
        assert!(
            Thresholds::fractions(1.5, 0.5, 0.0, 0.0)
                .validate(10)
                .is_err()
        );
    }

    #[test]
    fn publishes_changes_only() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut t = BudgetTracker::new(100_000, Thresholds::default()).unwrap();
        let s = seen.clone();
        t.subscribe(move |c| s.lock().unwrap().push((c.from, c.to)));
        assert!(t.observe(10_000).is_none());
        assert!(t.observe(80_000).is_some());
        assert!(t.observe(80_500).is_none());
        t.observe(98_000);
        t.observe(1_000);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                (BudgetState::Normal, BudgetState::Warning),
                (BudgetState::Warning, BudgetState::Blocking),
                (BudgetState::Blocking, BudgetState::Normal),
            ]
        );
        assert!(BudgetTracker::new(0, Thresholds::default()).is_err());
    }
}
