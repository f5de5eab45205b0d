use proptest::prelude::*;
use rand::seq::IndexedRandom;
use rand::SeedableRng;
use shakmaty::{Chess, Position};

use super::*;
use crate::arm::calibration::{Calibration, STEPS_PER_TURN_LEROBOT};
use crate::arm::config::ArmConfig;
use crate::arm::model::ArmModel;
use crate::arm::safety::GRASP_FLOOR_M;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

fn setup() -> ArmSetup {
    ArmSetup::default_so101().unwrap()
}

fn plan(s: &ArmSetup, fen: &str, mv: &str, slots: &mut SlotState) -> Result<Plan, PlanError> {
    Planner::new(s).plan_text(fen, mv, None, slots)
}

fn descents(p: &Plan) -> Vec<&PlanStep> {
    p.steps
        .iter()
        .filter(|s| s.kind == StepKind::Descend)
        .collect()
}

#[test]
fn quiet_move_picks_and_places_one_piece() {
    let s = setup();
    let mut slots = SlotState::default();
    let p = plan(&s, START, "e2e4", &mut slots).unwrap();
    assert_eq!(p.transfers, vec!["pawn e2 -> e4"]);
    let kinds: Vec<StepKind> = p.steps.iter().map(|s| s.kind).collect();
    use StepKind::*;
    assert_eq!(
        kinds,
        vec![Travel, Descend, Grip, Lift, Travel, Descend, Release, Lift, Travel]
    );
    // Grasped at half the pawn's height, over the square centres.
    let (e2, e4) = (s.board.square_xy(Square::E2), s.board.square_xy(Square::E4));
    let d = descents(&p);
    assert!(
        (d[0].tool_board_m[0] - e2.0).abs() < 1e-9 && (d[0].tool_board_m[1] - e2.1).abs() < 1e-9
    );
    assert!(
        (d[1].tool_board_m[0] - e4.0).abs() < 1e-9 && (d[1].tool_board_m[1] - e4.1).abs() < 1e-9
    );
    assert!((d[0].tool_board_m[2] - s.grasp_height(Role::Pawn)).abs() < 1e-9);
    // FK of the planned joints is where the plan says the tool is.
    for step in &p.steps {
        let t = s.board.to_arm(
            step.tool_board_m[0],
            step.tool_board_m[1],
            step.tool_board_m[2],
        );
        assert!(
            (s.model.tool_point(&step.joints_rad) - t).norm() < 1e-4,
            "{}",
            step.what
        );
    }
    // The gripper closes narrower than it opens, on the pawn's width.
    let grip = p.steps.iter().find(|s| s.kind == Grip).unwrap();
    assert!(grip.gripper_width_m < s.pieces.pawn.grip_width_m);
    assert!(p.steps[0].gripper_width_m > s.pieces.pawn.grip_width_m);
    assert!(p.total_s > 2.0 && p.total_s.is_finite());
    assert_eq!(slots, SlotState::default());
}

#[test]
fn travel_clears_the_king_by_the_margin() {
    let s = setup();
    let p = plan(&s, START, "g1f3", &mut SlotState::default()).unwrap();
    let knight_grasp = s.grasp_height(Role::Knight);
    for step in p.steps.iter().filter(|s| s.kind == StepKind::Travel) {
        // Carried piece's base = tool height - grasp height.
        let base = step.tool_board_m[2] - knight_grasp;
        assert!(base >= s.pieces.king.height_m + s.pieces.travel_clearance_m - 1e-9);
    }
}

#[test]
fn capture_sends_the_victim_to_the_graveyard_first() {
    let s = setup();
    let fen = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    let mut slots = SlotState {
        graveyard_used: 3,
        ..SlotState::default()
    };
    let p = plan(&s, fen, "e4d5", &mut slots).unwrap();
    assert_eq!(p.transfers, vec!["pawn d5 -> graveyard 4", "pawn e4 -> d5"]);
    assert_eq!(slots.graveyard_used, 4);
    let g = s.board.graveyard[3];
    let d = descents(&p);
    assert!((d[1].tool_board_m[0] - g.0).abs() < 1e-9 && (d[1].tool_board_m[1] - g.1).abs() < 1e-9);
}

#[test]
fn castling_moves_king_then_rook() {
    let s = setup();
    let fen = "r3k2r/pppq1ppp/2np1n2/2b1p3/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 0 1";
    let p = plan(&s, fen, "e1g1", &mut SlotState::default()).unwrap();
    assert_eq!(p.transfers, vec!["king e1 -> g1", "rook h1 -> f1"]);
    let p = plan(
        &s,
        &fen.replace(" w ", " b "),
        "e8c8",
        &mut SlotState::default(),
    )
    .unwrap();
    assert_eq!(p.transfers, vec!["king e8 -> c8", "rook a8 -> d8"]);
    // The king is grasped higher than the rook.
    let d = descents(&p);
    assert!(d[0].tool_board_m[2] > d[2].tool_board_m[2]);
}

#[test]
fn en_passant_removes_the_pawn_beside() {
    let s = setup();
    let fen = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3";
    let mut slots = SlotState::default();
    let p = plan(&s, fen, "e5f6", &mut slots).unwrap();
    assert_eq!(p.transfers, vec!["pawn f5 -> graveyard 1", "pawn e5 -> f6"]);
}

#[test]
fn promotion_swaps_in_a_reserve_piece() {
    let s = setup();
    let fen = "1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1";
    let mut slots = SlotState::default();
    let p = plan(&s, fen, "a7b8q", &mut slots).unwrap();
    assert_eq!(
        p.transfers,
        vec![
            "knight b8 -> graveyard 1",
            "pawn a7 -> graveyard 2",
            "queen reserve 1 -> b8"
        ]
    );
    assert_eq!(slots.reserve_used, vec![true, false, false, false]);
    let p = plan(&s, "4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7a8q", &mut slots).unwrap();
    assert!(p.transfers.contains(&"queen reserve 2 -> a8".to_owned()));
    // Both spare queens used: a third promotion has none.
    let err = plan(&s, "4k3/P7/8/8/8/8/8/4K3 w - - 0 1", "a7a8q", &mut slots).unwrap_err();
    assert!(matches!(err, PlanError::NoReserve { .. }), "{err}");
    // No bishop was ever put in the reserve.
    let err = plan(
        &s,
        "4k3/P7/8/8/8/8/8/4K3 w - - 0 1",
        "a7a8b",
        &mut SlotState::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("bishop"), "{err}");
}

#[test]
fn full_graveyard_and_bad_moves_are_refused() {
    let s = setup();
    let fen = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    let mut slots = SlotState {
        graveyard_used: s.board.graveyard.len(),
        ..SlotState::default()
    };
    assert!(matches!(
        plan(&s, fen, "e4d5", &mut slots),
        Err(PlanError::GraveyardFull { .. })
    ));
    assert!(matches!(
        plan(&s, START, "e2e5", &mut SlotState::default()),
        Err(PlanError::Move(_))
    ));
    assert!(matches!(
        plan(&s, "nonsense", "e2e4", &mut SlotState::default()),
        Err(PlanError::Move(_))
    ));
}

#[test]
fn start_from_a_present_pose_goes_to_rest_first() {
    let s = setup();
    let planner = Planner::new(&s);
    let mut q = planner.rest().unwrap().joints;
    q[0] += 0.3;
    let p = planner
        .plan_text(START, "d2d4", Some((q, 0.2)), &mut SlotState::default())
        .unwrap();
    assert_eq!(p.steps[0].what, "to the rest pose");
    assert_eq!(p.steps.len(), 10);
}

#[test]
fn trapezoid_profile_is_consistent() {
    for (d, v, a) in [(1.0, 1.5, 4.0), (0.1, 1.5, 4.0), (2.0, 0.5, 1.0)] {
        let t = trapezoid_time(d, v, a);
        assert!((trapezoid_distance(d, v, a, t) - d).abs() < 1e-12);
        assert!((trapezoid_distance(d, v, a, t / 2.0) - d / 2.0).abs() < 1e-9);
    }
    // Long move: cruise at v plus one ramp's worth of time.
    assert!((trapezoid_time(3.0, 1.5, 4.0) - (2.0 + 0.375)).abs() < 1e-12);
}

/// Plays `plies` random legal moves from the start.
fn random_position(seed: u64, plies: usize) -> Chess {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut pos = Chess::default();
    for _ in 0..plies {
        let moves = pos.legal_moves();
        let Some(m) = moves.choose(&mut rng) else {
            break;
        };
        pos.play_unchecked(*m);
    }
    pos
}

/// Positions with every special move available.
const SPECIAL: [&str; 3] = [
    "r3k2r/pppq1ppp/2np1n2/2b1p3/2B1P1b1/2NP1N2/PPPQ1PPP/R3K2R w KQkq - 0 1",
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
    "1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the position, move and calibration, no planned goal leaves
    /// the envelope: checked here independently of the planner's own checks,
    /// from the raw calibration numbers and the unmodified URDF limits.
    #[test]
    fn no_plan_leaves_the_safety_envelope(
        seed in any::<u64>(),
        plies in 0usize..80,
        special in proptest::option::of(0usize..3),
        move_pick in any::<u64>(),
        offsets in proptest::collection::vec((-150i32..150, 0u8..2, 1400i32..1900), 6),
        graveyard_used in 0usize..14,
    ) {
        let model = ArmModel::so101().unwrap();
        let mut cal = Calibration::nominal(&model);
        for ((_, m), (off, drive, half)) in cal.motors.iter_mut().zip(&offsets) {
            let mid = 2047 + off;
            m.drive_mode = *drive;
            m.range_min = (mid - half).max(0);
            m.range_max = (mid + half).min(4095);
        }
        let cfg = ArmConfig::default();
        let setup = match ArmSetup::new(model.clone(), cal.clone(), &cfg, "random", Vec::new()) {
            Ok(s) => s,
            Err(_) => return Ok(()),
        };
        let pos = match special {
            Some(i) => crate::game::position_from_fen(SPECIAL[i]).unwrap(),
            None => random_position(seed, plies),
        };
        let moves = pos.legal_moves();
        prop_assume!(!moves.is_empty());
        let mv = moves[(move_pick % moves.len() as u64) as usize];
        let mut slots = SlotState { graveyard_used, ..SlotState::default() };
        let planner = Planner::new(&setup);
        let Ok(plan) = planner.plan(&pos, mv, None, &mut slots) else {
            // Refusing is always safe.
            return Ok(());
        };
        let margin = cfg.safety.joint_margin_deg.to_radians();
        prop_assert!(plan.speed_rad_s <= cfg.safety.max_speed_rad_s);
        prop_assert!(plan.accel_rad_s2 <= cfg.safety.max_accel_rad_s2);
        let board_from_arm = setup.board.arm_from_board.inverse();
        for step in &plan.steps {
            for (k, q) in step.path.iter().enumerate() {
                for (i, j) in model.joints.iter().enumerate() {
                    prop_assert!(q[i] >= j.lower + margin - 1e-9 && q[i] <= j.upper - margin + 1e-9,
                        "{} joint {} = {}", step.what, j.name, q[i]);
                    let m = cal.motors[&j.name];
                    let sign = if m.drive_mode == 1 { -1.0 } else { 1.0 };
                    let mid = f64::from(m.range_min + m.range_max) / 2.0;
                    let steps = (mid + sign * q[i] * STEPS_PER_TURN_LEROBOT / std::f64::consts::TAU).round() as i32;
                    prop_assert!(steps >= m.range_min && steps <= m.range_max, "{} servo {} step {}", step.what, j.name, steps);
                }
                let z = board_from_arm.transform_point(&model.tool_point(q)).z;
                let last = k + 1 == step.path.len();
                let floor = if step.grasp_point && last { GRASP_FLOOR_M } else { cfg.safety.board_clearance_m };
                prop_assert!(z >= floor - 1e-9, "{}: tool {} m above the board", step.what, z);
            }
            let g = cal.motors["gripper"];
            prop_assert!(step.servo_steps[5] >= g.range_min && step.servo_steps[5] <= g.range_max);
        }
    }
}

/// Every square can be emptied into the farthest graveyard slot and filled
/// from the farthest reserve slot, with the tallest piece: captures and
/// promotions work anywhere on the board.
#[test]
fn every_square_connects_to_the_graveyard_and_the_reserve() {
    let s = setup();
    let planner = Planner::new(&s);
    let last_grave = s.board.graveyard.len() - 1;
    let last_reserve = s.board.reserve.len() - 1;
    for sq in Square::ALL {
        let transfers = [
            Transfer {
                role: Role::King,
                from: Place::Square(sq),
                to: Place::Graveyard(last_grave),
            },
            Transfer {
                role: Role::Queen,
                from: Place::Reserve(last_reserve),
                to: Place::Square(sq),
            },
        ];
        let plan = planner
            .plan_transfers(&transfers, None, String::new(), format!("{sq}"))
            .unwrap_or_else(|e| panic!("{sq}: {e}"));
        assert_eq!(plan.steps.len(), 17, "{sq}");
    }
}

#[test]
fn a_slot_that_does_not_exist_is_an_error() {
    let s = setup();
    let t = [Transfer {
        role: Role::Pawn,
        from: Place::Square(Square::E2),
        to: Place::Graveyard(99),
    }];
    let err = Planner::new(&s)
        .plan_transfers(&t, None, String::new(), String::new())
        .unwrap_err();
    assert!(err.to_string().contains("graveyard 100"), "{err}");
}

/// With the default setup every legal move of random games gets a plan
/// (the property test above accepts refusals; this one does not).
#[test]
fn random_game_moves_all_get_plans() {
    let s = setup();
    let planner = Planner::new(&s);
    let mut failures = Vec::new();
    for seed in 0..40u64 {
        let pos = random_position(seed, (seed as usize * 7) % 90);
        let moves = pos.legal_moves();
        let Some(mv) = moves.get((seed as usize * 13) % moves.len().max(1)) else {
            continue;
        };
        if let Err(e) = planner.plan(&pos, *mv, None, &mut SlotState::default()) {
            failures.push(format!("{}: {e}", crate::game::uci_of(*mv)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
