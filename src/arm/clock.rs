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

/// Virtual time that also really waits, `speed` times faster than the
/// virtual time it advances: a simulated arm a person can watch, sped up.
/// Waiting advances the shared [`ManualClock`] (the simulated servos move
/// on it), so the arm's timing is the same at every speed.
#[derive(Debug)]
pub struct PacedClock {
    time: std::sync::Arc<ManualClock>,
    speed: f64,
}

impl PacedClock {
    /// `speed` must be positive and finite (checked by the caller's config).
    pub fn new(time: std::sync::Arc<ManualClock>, speed: f64) -> PacedClock {
        PacedClock { time, speed }
    }
}

impl Clock for PacedClock {
    fn now(&self) -> Duration {
        self.time.now()
    }
    fn sleep(&self, d: Duration) {
        if self.speed > 0.0 && self.speed.is_finite() {
            std::thread::sleep(d.div_f64(self.speed));
        }
        self.time.advance(d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paced_clock_advances_virtual_time_by_what_it_sleeps() {
        let t = std::sync::Arc::new(ManualClock::new());
        let c = PacedClock::new(t.clone(), 1000.0);
        let real = Instant::now();
        c.sleep(Duration::from_secs(2));
        assert_eq!(t.now(), Duration::from_secs(2));
        assert_eq!(c.now(), Duration::from_secs(2));
        // 2 s at 1000x is 2 ms of real waiting, far under a second.
        assert!(real.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new();
        assert_eq!(c.now(), Duration::ZERO);
        c.sleep(Duration::from_millis(20));
        c.advance(Duration::from_millis(5));
        assert_eq!(c.now(), Duration::from_millis(25));
    }
}
