//! Plans executed by the real driver over a pseudo-terminal against the
//! simulated bus, on virtual time; one test per injected fault, each
//! checking the typed error and that the arm was stopped safely.

use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use super::*;
use crate::arm::bus::BusTiming;
use crate::arm::clock::ManualClock;
use crate::arm::feetech::{ErrorBits, ServoFault};
use crate::arm::plan::{Planner, SlotState, StepKind};
use crate::sim::bus::{SimBus, SimFault, SimPort};

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
/// Generous reply margin: the test machine may be busy.
const TEST_MARGIN: Duration = Duration::from_millis(150);

struct Rig {
    sim: SimPort,
    setup: ArmSetup,
}

fn rig() -> (Rig, serialport::TTYPort) {
    let clock = Arc::new(ManualClock::new());
    rig_with_clock(clock)
}

fn rig_with_clock(clock: Arc<dyn Clock>) -> (Rig, serialport::TTYPort) {
    let sim_bus = SimBus::with_servos(6, clock);
    let (sim, port) = SimPort::spawn(sim_bus).expect("pseudo-terminal");
    (
        Rig {
            sim,
            setup: ArmSetup::default_so101().unwrap(),
        },
        port,
    )
}

fn bus(port: serialport::TTYPort) -> FeetechBus<serialport::TTYPort> {
    FeetechBus::new(
        port,
        BusTiming {
            reply_margin: TEST_MARGIN,
            ..BusTiming::default()
        },
    )
}

fn plan_from(setup: &ArmSetup, start: (Joints, f64), mv: &str) -> Plan {
    Planner::new(setup)
        .plan_text(START, mv, Some(start), &mut SlotState::default())
        .unwrap()
}

/// Every servo that answered holds: its goal equals its present position.
fn assert_holding(sim: &SimPort, ids: &[u8]) {
    let bus = sim.bus();
    for &id in ids {
        let s = bus.servo(id).unwrap();
        assert_eq!(
            s.get(reg::GOAL_POSITION),
            s.get(reg::PRESENT_POSITION),
            "servo {id} is not holding"
        );
    }
}

#[test]
fn a_quiet_move_runs_and_arrives() {
    let clock = Arc::new(ManualClock::new());
    let (r, port) = rig_with_clock(clock.clone());
    let mut ex = Executor::new(bus(port), &r.setup, clock.clone());
    let start = ex.connect().unwrap();
    let plan = plan_from(&r.setup, start, "e2e4");
    let report = ex.execute(&plan).unwrap();
    assert_eq!(report.steps, plan.steps.len());
    // Every joint ended where the plan's last step puts it.
    let last = plan.steps.last().unwrap();
    for (s, want) in report.final_states.iter().zip(&last.servo_steps) {
        assert!(
            (s.position - want).abs() <= r.setup.safety.arrival_tolerance_steps,
            "{s:?} vs {want}"
        );
    }
    // Virtual time: the plan's estimate plus arrival polling, not wildly more.
    let elapsed = report.elapsed.as_secs_f64();
    assert!(
        elapsed >= plan.total_s * 0.9,
        "{elapsed} vs {}",
        plan.total_s
    );
    assert!(
        elapsed <= plan.total_s + 0.5 * plan.steps.len() as f64,
        "{elapsed} vs {}",
        plan.total_s
    );
    // The gripper's torque was limited before anything moved.
    let g = r.sim.bus().servo(6).unwrap().get(reg::TORQUE_LIMIT);
    assert_eq!(g, i32::from(r.setup.safety.gripper_torque_limit_permille));
}

/// Runs e2e4 with a fault striking after `frames` bus frames; returns the error.
fn run_with_fault(fault: SimFault, frames: usize) -> (Rig, ArmError, bool) {
    let clock = Arc::new(ManualClock::new());
    let (r, port) = rig_with_clock(clock.clone());
    let setup = r.setup.clone();
    let mut ex = Executor::new(bus(port), &setup, clock);
    let start = ex.connect().unwrap();
    let plan = plan_from(&setup, start, "e2e4");
    r.sim.bus().inject_after(frames, fault);
    let err = ex.execute(&plan).unwrap_err();
    // Halted: the next move is refused until a person resumes.
    let again = ex.execute(&plan);
    let refused = matches!(again, Err(ArmError::Halted { .. }));
    (r, err, refused)
}

#[test]
fn servo_that_stops_answering_stops_the_arm() {
    let (r, err, refused) = run_with_fault(SimFault::Dead { id: 3 }, 40);
    assert!(
        matches!(err.bus_error(), Some(BusError::NoReply { id: 3, .. })),
        "{err}"
    );
    let stop = err.stop_report().unwrap();
    assert_eq!(stop.failed, vec![3]);
    assert_eq!(stop.done, vec![1, 2, 4, 5, 6]);
    assert_holding(&r.sim, &[1, 2, 4, 5, 6]);
    assert!(refused);
    assert!(err.to_string().contains("servo 3 did not answer"), "{err}");
}

#[test]
fn lost_replies_beyond_the_retries_stop_the_arm() {
    let (r, err, refused) = run_with_fault(SimFault::NoReply { id: 5, replies: 3 }, 40);
    assert!(
        matches!(
            err.bus_error(),
            Some(BusError::NoReply {
                id: 5,
                attempts: 3,
                ..
            })
        ),
        "{err}"
    );
    // The servo answers again afterwards, so all six hold.
    assert_eq!(err.stop_report().unwrap().done.len(), 6);
    assert_holding(&r.sim, &[1, 2, 3, 4, 5, 6]);
    assert!(refused);
}

#[test]
fn corrupted_replies_stop_the_arm() {
    let (r, err, refused) = run_with_fault(SimFault::CorruptChecksum { id: 2, replies: 3 }, 40);
    assert!(
        matches!(err.bus_error(), Some(BusError::Corrupted { id: 2, .. })),
        "{err}"
    );
    assert_holding(&r.sim, &[1, 2, 3, 4, 5, 6]);
    assert!(refused);
}

#[test]
fn short_replies_stop_the_arm() {
    let (r, err, refused) = run_with_fault(SimFault::ShortReply { id: 4, replies: 3 }, 40);
    assert!(
        matches!(err.bus_error(), Some(BusError::ShortReply { id: 4, .. })),
        "{err}"
    );
    assert_holding(&r.sim, &[1, 2, 3, 4, 5, 6]);
    assert!(refused);
}

#[test]
fn overload_error_bits_stop_the_arm_and_release_that_servo() {
    let bits = ErrorBits::from_faults(&[ServoFault::Overload]);
    let (r, err, refused) = run_with_fault(SimFault::ErrorBits { id: 2, bits }, 40);
    match err.bus_error() {
        Some(BusError::Fault { id: 2, faults }) => assert_eq!(faults, &vec![ServoFault::Overload]),
        other => panic!("expected an overload fault, got {other:?} ({err})"),
    }
    let stop = err.stop_report().unwrap();
    assert_eq!(stop.released, vec![2]);
    assert_eq!(r.sim.bus().servo(2).unwrap().get(reg::TORQUE_ENABLE), 0);
    assert_holding(&r.sim, &[1, 3, 4, 5, 6]);
    assert!(refused);
    assert!(err.to_string().contains("overloaded"), "{err}");
}

#[test]
fn blocked_joint_is_a_stall_and_the_arm_holds() {
    // Shoulder lift blocked a little way from where it starts.
    let (r, err, refused) = run_with_fault(
        SimFault::Block {
            id: 2,
            at_step: 2100,
        },
        0,
    );
    assert!(
        matches!(err.bus_error(), Some(BusError::Stalled { id: 2, .. })),
        "{err}"
    );
    assert_holding(&r.sim, &[1, 2, 3, 4, 5, 6]);
    assert!(refused);
}

#[test]
fn vanished_port_is_reported_as_lost() {
    let (_r, err, refused) = run_with_fault(SimFault::PortVanishes, 40);
    assert!(err.bus_error().is_some_and(|e| e.port_lost()), "{err}");
    assert!(err.stop_report().unwrap().port_lost);
    assert!(err.to_string().contains("port is gone"), "{err}");
    assert!(refused);
}

/// A clock that trips the emergency stop after a number of sleeps.
struct TripClock {
    inner: ManualClock,
    sleeps_left: AtomicUsize,
    flag: std::sync::Mutex<Option<Arc<AtomicBool>>>,
}

impl Clock for TripClock {
    fn now(&self) -> Duration {
        self.inner.now()
    }
    fn sleep(&self, d: Duration) {
        self.inner.sleep(d);
        if self.sleeps_left.fetch_sub(1, Ordering::SeqCst) == 1 {
            if let Some(f) = self.flag.lock().unwrap().as_ref() {
                f.store(true, Ordering::SeqCst);
            }
        }
    }
}

#[test]
fn emergency_stop_stops_within_one_period_and_holds() {
    let clock = Arc::new(TripClock {
        inner: ManualClock::new(),
        sleeps_left: AtomicUsize::new(usize::MAX),
        flag: std::sync::Mutex::new(None),
    });
    let (r, port) = rig_with_clock(clock.clone());
    let mut ex = Executor::new(bus(port), &r.setup, clock.clone());
    let start = ex.connect().unwrap();
    let plan = plan_from(&r.setup, start, "e2e4");
    *clock.flag.lock().unwrap() = Some(ex.stop_flag());
    clock.sleeps_left.store(30, Ordering::SeqCst);
    let sent_before = r.sim.bus().received().len();
    let err = ex.execute(&plan).unwrap_err();
    assert!(matches!(err, ArmError::EmergencyStop { .. }), "{err}");
    assert_holding(&r.sim, &[1, 2, 3, 4, 5, 6]);
    // No goal was streamed after the trip: one sync write per tick before
    // each of the 30 sleeps, then only the stop's reads and writes (ticks
    // are 20 ms: the stop acted within one control period).
    let sync_writes = r.sim.bus().received()[sent_before..]
        .iter()
        .filter(|f| f.code == 0x83)
        .count();
    assert_eq!(sync_writes, 30);
    assert!(matches!(ex.execute(&plan), Err(ArmError::Halted { .. })));
    ex.resume();
    assert!(ex.halted().is_none());
}

#[test]
fn missing_servo_refuses_to_start() {
    let (r, port) = rig();
    r.sim.bus().inject(SimFault::Dead { id: 6 });
    let clock = Arc::new(ManualClock::new());
    let mut ex = Executor::new(bus(port), &r.setup, clock);
    match ex.connect() {
        Err(ArmError::MissingServos { missing, .. }) => assert_eq!(missing, vec![6]),
        other => panic!("expected missing servo 6, got {other:?}"),
    }
}

#[test]
fn release_mode_switches_torque_off_on_a_fault() {
    let clock = Arc::new(ManualClock::new());
    let (r, port) = rig_with_clock(clock.clone());
    let mut cfg = crate::arm::config::ArmConfig::default();
    cfg.safety.on_stop = StopMode::Release;
    let model = crate::arm::model::ArmModel::so101().unwrap();
    let cal = crate::arm::calibration::Calibration::nominal(&model);
    let setup = ArmSetup::new(model, cal, &cfg, "nominal", Vec::new()).unwrap();
    let mut ex = Executor::new(bus(port), &setup, clock);
    let start = ex.connect().unwrap();
    let plan = plan_from(&setup, start, "d2d4");
    r.sim.bus().inject_after(60, SimFault::Dead { id: 4 });
    let err = ex.execute(&plan).unwrap_err();
    let stop = err.stop_report().unwrap();
    assert_eq!(stop.mode, StopMode::Release);
    assert_eq!(stop.done, vec![1, 2, 3, 5, 6]);
    for id in [1, 2, 3, 5, 6] {
        assert_eq!(r.sim.bus().servo(id).unwrap().get(reg::TORQUE_ENABLE), 0);
    }
    assert!(err.to_string().contains("torque released"), "{err}");
}

#[test]
fn next_move_plans_from_the_present_pose() {
    let clock = Arc::new(ManualClock::new());
    let (r, port) = rig_with_clock(clock.clone());
    let mut ex = Executor::new(bus(port), &r.setup, clock);
    let start = ex.connect().unwrap();
    let first = plan_from(&r.setup, start, "e2e4");
    ex.execute(&first).unwrap();
    let (q, g) = ex.present_pose().unwrap();
    let last = first.steps.last().unwrap();
    for (a, b) in q.iter().zip(&last.joints_rad) {
        // Within the arrival tolerance (20 steps ≈ 0.03 rad).
        assert!((a - b).abs() < 0.035, "{a} vs {b}");
    }
    let second = Planner::new(&r.setup)
        .plan_text(
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
            "e7e5",
            Some((q, g)),
            &mut SlotState::default(),
        )
        .unwrap();
    ex.execute(&second).unwrap();
}

#[test]
fn a_parked_arm_inside_the_margins_moves_out_to_rest() {
    let clock = Arc::new(ManualClock::new());
    let (r, port) = rig_with_clock(clock.clone());
    // Folded like a parked SO-101: shoulder and elbow inside their limit margins.
    let parked: Joints = [0.0, -1.72, 1.68, 1.2, 0.0];
    for (i, q) in parked.iter().enumerate() {
        let steps = r.setup.maps.joints[i].steps(*q).round() as i32;
        r.sim
            .bus()
            .move_by_hand(r.setup.model.joints[i].servo_id, steps);
    }
    // The ordinary envelope refuses that pose...
    let env = Envelope::new(&r.setup);
    assert!(matches!(
        env.command(&parked, 0.5, 1.0, 3.0, false),
        Err(SafetyViolation::JointLimit { .. })
    ));
    // ...but moving out of it, back into the envelope, is allowed.
    let mut ex = Executor::new(bus(port), &r.setup, clock);
    let start = ex.connect().unwrap();
    let plan = plan_from(&r.setup, start, "e2e4");
    ex.execute(&plan).unwrap();
    // Leaving never widens past the hard limits.
    let mut beyond = parked;
    beyond[1] = r.setup.model.joints[1].lower - 0.01;
    let leaving = Envelope::leaving(&r.setup, &parked);
    assert!(leaving.command(&beyond, 0.5, 1.0, 3.0, false).is_err());
}

#[test]
fn jaws_stopped_by_the_piece_are_a_grip_not_a_stall() {
    let clock = Arc::new(ManualClock::new());
    let (r, port) = rig_with_clock(clock.clone());
    // The pawn stops the jaws at its width, pushing back ever harder.
    let g = &r.setup.model.gripper;
    let at_piece = g.angle_for_width(r.setup.pieces.pawn.grip_width_m);
    let wall = r.setup.maps.gripper.steps(at_piece).round() as i32;
    r.sim.bus().inject(SimFault::Block {
        id: 6,
        at_step: wall,
    });
    let mut ex = Executor::new(bus(port), &r.setup, clock);
    let start = ex.connect().unwrap();
    let plan = plan_from(&r.setup, start, "e2e4");
    ex.execute(&plan).unwrap();
    // The grip commanded the jaws past the piece (a squeeze), so they really
    // pushed against it for the whole carry, and the move still completed.
    let grip = plan
        .steps
        .iter()
        .find(|s| s.kind == StepKind::Grip)
        .unwrap();
    assert!(
        grip.servo_steps[5] < wall,
        "{} vs {wall}",
        grip.servo_steps[5]
    );
}
