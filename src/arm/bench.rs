//! `chessbot arm bench`: IK speed and the arm's estimated time per move.
//!
//! Targets (issue 7): IK under 20 µs per solve; at most 10 s for a quiet
//! move and 16 s for a capture with the SO-101's speed limits. Numbers are
//! measured and printed, not asserted.

use std::time::Instant;

use nalgebra::Point3;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use super::plan::{PlanError, Planner, SlotState};
use super::setup::ArmSetup;

/// One move's estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MoveTime {
    pub label: String,
    pub fen: String,
    pub uci: String,
    pub arm_seconds: f64,
    /// The same plan executed by the real driver against the simulated
    /// servos, on virtual time (streaming, arrival polling included).
    pub simulated_seconds: Option<f64>,
    pub steps: usize,
    pub plan_micros: f64,
}

/// The bench's results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArmBench {
    pub ik_solves: usize,
    pub ik_reachable: usize,
    pub ik_micros_per_solve: f64,
    pub moves: Vec<MoveTime>,
}

/// Moves timed: near and far quiet moves, a capture, castling, a promotion.
pub const BENCH_MOVES: [(&str, &str, &str); 5] = [
    (
        "quiet (e2e4)",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "e2e4",
    ),
    (
        "quiet, far rank (Nb1-c3)",
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "b1c3",
    ),
    (
        "capture (exd5)",
        "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",
        "e4d5",
    ),
    (
        "castling (O-O)",
        "r3k2r/pppq1ppp/2np1n2/2b1p3/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
        "e1g1",
    ),
    (
        "promotion with capture (axb8=Q)",
        "1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1",
        "a7b8q",
    ),
];

/// Runs the bench: `ik_solves` IK calls at random targets over the board area.
pub fn run(setup: &ArmSetup, ik_solves: usize) -> Result<ArmBench, PlanError> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let side = setup.board.square_m * 8.0;
    let targets: Vec<(Point3<f64>, f64)> = (0..ik_solves)
        .map(|_| {
            let p = setup.board.to_arm(
                rng.random_range(0.0..side),
                rng.random_range(0.0..side),
                rng.random_range(0.01..0.12),
            );
            (p, rng.random_range(30f64..90.0).to_radians())
        })
        .collect();
    let align = Some(setup.board.file_axis());
    let margin = setup.joint_margin();
    let start = Instant::now();
    let mut reachable = 0;
    for (p, pitch) in &targets {
        if setup.model.ik(p, *pitch, align, margin, None).is_ok() {
            reachable += 1;
        }
    }
    let per = start.elapsed().as_secs_f64() * 1e6 / ik_solves.max(1) as f64;
    let planner = Planner::new(setup);
    let mut moves = Vec::new();
    for (label, fen, uci) in BENCH_MOVES {
        let t = Instant::now();
        let plan = planner.plan_text(fen, uci, None, &mut SlotState::default())?;
        let plan_micros = t.elapsed().as_secs_f64() * 1e6;
        moves.push(MoveTime {
            label: label.to_owned(),
            fen: fen.to_owned(),
            uci: uci.to_owned(),
            arm_seconds: plan.total_s,
            simulated_seconds: simulate(setup, fen, uci),
            steps: plan.steps.len(),
            plan_micros,
        });
    }
    Ok(ArmBench {
        ik_solves,
        ik_reachable: reachable,
        ik_micros_per_solve: per,
        moves,
    })
}

/// Runs a move on the simulated bus on virtual time; `None` if no
/// pseudo-terminal is available or the run fails (the bench reports, it
/// does not judge).
pub fn simulate(setup: &ArmSetup, fen: &str, uci: &str) -> Option<f64> {
    use std::sync::Arc;

    use super::bus::{BusTiming, FeetechBus};
    use super::clock::{Clock, ManualClock};
    use super::run::Executor;
    use crate::sim::bus::{SimBus, SimPort};

    let clock = Arc::new(ManualClock::new());
    let (_sim, port) = SimPort::spawn(SimBus::with_servos(6, clock.clone())).ok()?;
    let mut ex = Executor::new(
        FeetechBus::new(port, BusTiming::default()),
        setup,
        clock.clone(),
    );
    let start = ex.connect().ok()?;
    // Go to rest first, so the timed run starts where the estimate does.
    let warmup = Planner::new(setup)
        .plan_transfers(&[], Some(start), String::new(), String::new())
        .ok()?;
    ex.execute(&warmup).ok()?;
    let plan = Planner::new(setup)
        .plan_text(fen, uci, ex.present_pose().ok(), &mut SlotState::default())
        .ok()?;
    let t0 = clock.now();
    ex.execute(&plan).ok()?;
    // (The plan begins with a near-zero move from the present pose to rest.)
    Some((clock.now() - t0).as_secs_f64())
}

impl ArmBench {
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "IK: {:.2} µs per solve ({} solves, {} reachable; jaw-aligned, target < 20 µs)\n",
            self.ik_micros_per_solve, self.ik_solves, self.ik_reachable
        );
        for m in &self.moves {
            let sim = m
                .simulated_seconds
                .map_or("-".to_owned(), |s| format!("{s:.1} s"));
            out.push_str(&format!(
                "{:<36} {:>5.1} s arm time (simulated run {sim}), {:>2} steps, planned in {:.0} µs\n",
                m.label, m.arm_seconds, m.steps, m.plan_micros
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_plans_every_move_and_solves_most_targets() {
        let setup = ArmSetup::default_so101().unwrap();
        let b = run(&setup, 200).unwrap();
        assert_eq!(b.moves.len(), BENCH_MOVES.len());
        assert!(b.moves.iter().all(|m| m.arm_seconds > 0.0 && m.steps >= 9));
        // Over the board area at 30-90° pitch most targets are reachable.
        assert!(b.ik_reachable * 2 > b.ik_solves, "{}", b.ik_reachable);
        // A capture carries two pieces, so it takes longer than a quiet move.
        assert!(b.moves[2].arm_seconds > b.moves[0].arm_seconds);
        // The simulated servos follow the plan: within a second per step of the estimate.
        for m in &b.moves {
            let sim = m.simulated_seconds.expect("simulated run");
            assert!(
                sim >= m.arm_seconds * 0.9,
                "{}: {sim} vs {}",
                m.label,
                m.arm_seconds
            );
            assert!(
                sim <= m.arm_seconds + m.steps as f64,
                "{}: {sim} vs {}",
                m.label,
                m.arm_seconds
            );
        }
    }
}
