//! A chess clock: base time plus increment, driven by an injected time.
//!
//! The clock never reads the system time itself; callers pass "now" in
//! milliseconds, so tests (and the simulator's sped-up time) control it.

use shakmaty::{ByColor, Color};

/// Base time and increment per move, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct TimeControl {
    pub base_ms: u64,
    pub increment_ms: u64,
}

impl std::str::FromStr for TimeControl {
    type Err = String;

    /// `MINUTES+SECONDS`, as people write it: `5+3`, `0.5+0`, `90+30`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("time control {s:?}: expected MINUTES+SECONDS such as 5+3");
        let (base, inc) = s.trim().split_once('+').ok_or_else(bad)?;
        let base: f64 = base.trim().parse().map_err(|_| bad())?;
        let inc: f64 = inc.trim().parse().map_err(|_| bad())?;
        if !(base.is_finite() && inc.is_finite())
            || base < 0.0
            || inc < 0.0
            || base == 0.0 && inc == 0.0
        {
            return Err(bad());
        }
        Ok(TimeControl {
            base_ms: (base * 60_000.0).round() as u64,
            increment_ms: (inc * 1000.0).round() as u64,
        })
    }
}

impl std::fmt::Display for TimeControl {
    /// The same `MINUTES+SECONDS` form [`TimeControl::from_str`] reads.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let num = |ms: u64, unit: u64| {
            if ms.is_multiple_of(unit) {
                (ms / unit).to_string()
            } else {
                format!("{}", ms as f64 / unit as f64)
            }
        };
        write!(
            f,
            "{}+{}",
            num(self.base_ms, 60_000),
            num(self.increment_ms, 1000)
        )
    }
}

/// The two clocks of a game.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    control: TimeControl,
    remaining: ByColor<u64>,
    /// Whose clock runs, and since when.
    running: Option<(Color, u64)>,
}

impl Clock {
    pub fn new(control: TimeControl) -> Clock {
        Clock {
            control,
            remaining: ByColor::new_with(|_| control.base_ms),
            running: None,
        }
    }

    /// Clocks that stopped with `remaining` time left (a game resumed
    /// from its journal); neither runs until [`Clock::start`].
    pub fn resumed(control: TimeControl, remaining: ByColor<u64>) -> Clock {
        Clock {
            control,
            remaining,
            running: None,
        }
    }

    pub fn control(&self) -> TimeControl {
        self.control
    }

    /// Whose clock runs, if any.
    pub fn running_side(&self) -> Option<Color> {
        self.running.map(|(side, _)| side)
    }

    /// Starts `side`'s clock at `now_ms`.
    pub fn start(&mut self, side: Color, now_ms: u64) {
        self.running = Some((side, now_ms));
    }

    /// Pauses the running clock, keeping its time.
    pub fn pause(&mut self, now_ms: u64) {
        if let Some((side, since)) = self.running.take() {
            let used = now_ms.saturating_sub(since);
            *self.remaining.get_mut(side) = self.remaining.get(side).saturating_sub(used);
        }
    }

    /// Time left for `side` at `now_ms`.
    pub fn remaining(&self, side: Color, now_ms: u64) -> u64 {
        match self.running {
            Some((s, since)) if s == side => self
                .remaining
                .get(side)
                .saturating_sub(now_ms.saturating_sub(since)),
            _ => *self.remaining.get(side),
        }
    }

    /// The side whose flag has fallen, if any.
    pub fn flagged(&self, now_ms: u64) -> Option<Color> {
        let (side, _) = self.running?;
        (self.remaining(side, now_ms) == 0).then_some(side)
    }

    /// The mover completes a move at `now_ms`: their clock stops, gains the
    /// increment, and the opponent's starts. Returns (time used, time left).
    pub fn press(&mut self, now_ms: u64) -> Option<(u64, u64)> {
        let (side, since) = self.running?;
        let used = now_ms.saturating_sub(since);
        let left = self.remaining.get(side).saturating_sub(used);
        if left == 0 {
            return None;
        }
        let left = left + self.control.increment_ms;
        *self.remaining.get_mut(side) = left;
        self.running = Some((!side, now_ms));
        Some((used, left))
    }
}
