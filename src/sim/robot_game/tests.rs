//! The jaws and the pieces: the real driver runs a plan on the simulated
//! bus and the physics decides what the jaws did.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use shakmaty::{Chess, Square};

use super::physics::{ArmWorld, DriverPort, JawEvent, SimTime};
use crate::arm::bus::{BusTiming, FeetechBus};
use crate::arm::clock::{Clock, ManualClock};
use crate::arm::plan::{Planner, SlotState};
use crate::arm::run::Executor;
use crate::arm::setup::ArmSetup;
use crate::sim::bus::{SimBus, SimPort};
use crate::sim::world::{BoardSpec, BoardStyle, PieceSet, Placement, World};

/// Plays e7e5 with the e7 pawn first moved by `(dx, dy)` mm; returns the
/// pawn's final offset from its square's centre (mm), the square it
/// stands on, and the jaw events.
fn e7e5_with_pawn_off_by(dx: f64, dy: f64) -> ((f64, f64), Option<Square>, Vec<JawEvent>) {
    let setup = Arc::new(ArmSetup::default_so101().unwrap());
    let mut board = BoardSpec::of_style(BoardStyle::Vinyl);
    board.square_mm = setup.board.square_m * 1000.0;
    let start = Chess::default();
    let mut world = World::new(
        shakmaty::Position::board(&start),
        board,
        PieceSet::PLASTIC,
        Placement::EXACT,
        &mut ChaCha8Rng::seed_from_u64(1),
    )
    .unwrap();
    let pawn = world.piece_index_on(Square::E7).unwrap();
    world.pieces[pawn].position.x += dx;
    world.pieces[pawn].position.y += dy;
    let time = Arc::new(ManualClock::new());
    let (sim, pty) = SimPort::spawn(SimBus::with_servos(6, time.clone())).unwrap();
    let physics = Arc::new(Mutex::new(ArmWorld::new(
        world,
        setup.clone(),
        sim.shared(),
    )));
    let killed = Arc::new(AtomicBool::new(false));
    let clock: Arc<dyn Clock> = Arc::new(SimTime::new(time, physics.clone(), None, killed.clone()));
    let bus = FeetechBus::new(DriverPort::new(pty, killed), BusTiming::default());
    let mut ex = Executor::new(bus, &setup, clock);
    let q = ex.connect().unwrap();
    let mv = crate::game::parse_move(&start, "e2e4").unwrap();
    let mut after_e4 = start.clone();
    shakmaty::Position::play_unchecked(&mut after_e4, mv);
    let e5 = crate::game::parse_move(&after_e4, "e7e5").unwrap();
    let plan = Planner::new(&setup)
        .plan(&after_e4, e5, Some(q), &mut SlotState::default())
        .unwrap();
    ex.execute(&plan).unwrap();
    let aw = physics.lock().unwrap();
    let p = aw.world.pieces[pawn].position;
    let sq = aw.world.board.square_at(p.x, p.y);
    let c = aw.world.board.square_centre(Square::E5);
    ((p.x - c.x, p.y - c.y), sq, aw.events.clone())
}

#[test]
fn a_centred_pawn_is_carried_to_its_square_centre() {
    let ((ox, oy), sq, events) = e7e5_with_pawn_off_by(0.0, 0.0);
    assert_eq!(sq, Some(Square::E5));
    assert!(ox.hypot(oy) < 1.0, "off by ({ox:.1}, {oy:.1}) mm");
    assert!(matches!(events[0], JawEvent::Grasped { .. }), "{events:?}");
    assert!(matches!(events[1], JawEvent::Released { .. }), "{events:?}");
}

#[test]
fn an_off_centre_grasp_leaves_the_piece_off_centre() {
    // 5 mm off along both board axes: the closing jaws push it to their
    // middle along one, the offset across them stays.
    let ((ox, oy), sq, _) = e7e5_with_pawn_off_by(5.0, 5.0);
    assert_eq!(sq, Some(Square::E5));
    let off = ox.hypot(oy);
    assert!(off > 3.0 && off < 6.0, "off by ({ox:.1}, {oy:.1}) mm");
}

#[test]
fn jaws_that_close_beside_a_piece_miss_it() {
    // Half a square off: outside the jaws both ways.
    let (_, sq, events) = e7e5_with_pawn_off_by(18.0, 18.0);
    assert_ne!(sq, Some(Square::E5));
    assert!(
        events.iter().any(|e| matches!(e, JawEvent::Missed { .. })),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, JawEvent::Grasped { .. })));
}
