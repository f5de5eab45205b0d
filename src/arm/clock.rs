//! Time, injected: the real monotonic clock for hardware, a manual one for tests.
//!
//! Everything in the arm that waits or measures elapsed time (arrival
//! polling, the simulated servos' motion) asks a [`Clock`], so tests run
//! on virtual time: fast and the same on every run.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A monotonic clock that can also wait.
pub trait Clock: Send + Sync {
    /// Time since the clock's own epoch.
    fn now(&self) -> Duration;
    /// Waits `d` (a manual clock just advances).
    fn sleep(&self, d: Duration);
}

/// Wall-clock time from `Instant`; `sleep` really sleeps.
#[derive(Debug)]
pub struct SystemClock {
    epoch: Instant,
}

impl SystemClock {
    pub fn new() -> SystemClock {
        SystemClock {
            epoch: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.epoch.elapsed()
    }
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Virtual time that moves only when someone sleeps or calls [`ManualClock::advance`].
#[derive(Debug, Default)]
pub struct ManualClock {
    now: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    pub fn advance(&self, d: Duration) {
        let mut now = self.now.lock().unwrap_or_else(|p| p.into_inner());
        *now += d;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        *self.now.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn sleep(&self, d: Duration) {
        self.advance(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new();
        assert_eq!(c.now(), Duration::ZERO);
        c.sleep(Duration::from_millis(20));
        c.advance(Duration::from_millis(5));
        assert_eq!(c.now(), Duration::from_millis(25));
    }
}
