//! Time for tier maintenance: an injectable [`Clock`] (unix seconds) so promotion, demotion
//! and expiry are deterministic in tests ([`FakeClock`]). The store never trusts a clock to
//! move forward: it keeps the latest time it has seen and never goes below it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A source of the current time in unix seconds.
pub trait Clock: Send + Sync {
    fn now(&self) -> i64;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
    }
}

/// A clock that moves only when told to (tests); clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct FakeClock(Arc<AtomicI64>);

impl FakeClock {
    /// A fake clock at `now`.
    pub fn at(now: i64) -> FakeClock {
        FakeClock(Arc::new(AtomicI64::new(now)))
    }

    /// Sets the time (backwards too).
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }

    /// Moves the time by `seconds` (negative moves it back).
    pub fn advance(&self, seconds: i64) {
        self.0.fetch_add(seconds, Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}
