//! The arm's effect on the simulated world: the simulated servos' present
//! positions, through the arm's forward kinematics, move the jaws; jaws
//! closing around a piece pick it up, jaws opening put it down where they
//! are. Nothing here knows the plan or the move: a grasp off-centre really
//! carries the piece off-centre, a grasp beside a piece really misses it.
//!
//! [`SimTime`] is the clock the arm driver runs on: virtual time that, each
//! time the driver waits, advances the servo simulation and this physics
//! (and, for a live view, really waits a scaled-down time).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use nalgebra::{Point3, Vector3};

use crate::arm::clock::{Clock, ManualClock};
use crate::arm::feetech::reg;
use crate::arm::model::JOINTS;
use crate::arm::setup::ArmSetup;
use crate::sim::bus::{SimBus, SimFault};
use crate::sim::pieces::height_mm;
use crate::sim::world::{ArmSilhouette, World, UNIT_PER_SQUARE};

/// The jaws must be at least this far above a piece's base and below its
/// top to hold it, mm (a pad needs some of the piece between it).
const GRASP_HEIGHT_MARGIN_MM: f64 = 3.0;
/// Jaws that open this much wider than the piece have let go of it, mm
/// (the planner opens 12 mm wider than the grip: `open_margin_m`).
const RELEASE_MARGIN_MM: f64 = 1.0;
/// A piece dropped outside the board and its border lands on the table,
/// this far below the playing surface only in the renderer's world; the arm's
/// slots are at board height (a mat beside the board), so pieces stay at 0.
const SURFACE_Z_MM: f64 = 0.0;

/// What the jaws did to the world.
#[derive(Debug, Clone, PartialEq)]
pub enum JawEvent {
    /// A piece was picked up, `off_mm` from the jaws' centre across the closing axis.
    Grasped { piece: usize, off_mm: f64 },
    /// The jaws closed where no piece stood within reach.
    Missed { at_mm: [f64; 2] },
    /// A piece was put down at this point of the board frame.
    Released { piece: usize, at_mm: [f64; 2] },
}

/// A piece in the jaws and where it sits relative to the tool point.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Held {
    piece: usize,
    offset: Vector3<f64>,
    grip_width_mm: f64,
}

/// The simulated world with the arm in it.
pub struct ArmWorld {
    pub world: World,
    setup: Arc<ArmSetup>,
    bus: Arc<Mutex<SimBus>>,
    held: Option<Held>,
    /// The jaws were closing on nothing (so one closing reports one miss).
    missed: bool,
    last_width_mm: f64,
    /// Tool point, board frame, mm.
    tool_mm: Point3<f64>,
    base_mm: Point3<f64>,
    pub events: Vec<JawEvent>,
    /// No arm at the board (record mode): the servos move nothing.
    absent: bool,
}

impl ArmWorld {
    /// `world` must be built on a board whose squares match the arm's
    /// (`setup.board.square_m`), with the same origin (a1's outer corner).
    pub fn new(world: World, setup: Arc<ArmSetup>, bus: Arc<Mutex<SimBus>>) -> ArmWorld {
        let base = setup
            .board
            .arm_from_board
            .inverse_transform_point(&Point3::origin());
        let mut w = ArmWorld {
            world,
            setup,
            bus,
            held: None,
            missed: false,
            last_width_mm: f64::MAX,
            tool_mm: Point3::origin(),
            base_mm: Point3::new(base.x * 1000.0, base.y * 1000.0, 0.0),
            events: Vec::new(),
            absent: false,
        };
        w.step();
        w
    }

    /// The same world with no arm at the board (record mode).
    pub fn without_arm(mut self) -> ArmWorld {
        self.absent = true;
        self.world.arm = None;
        self
    }

    pub fn bus(&self) -> MutexGuard<'_, SimBus> {
        self.bus.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tool point in the board frame, mm.
    pub fn tool_mm(&self) -> Point3<f64> {
        self.tool_mm
    }

    /// Whether a piece is in the jaws.
    pub fn holding(&self) -> bool {
        self.held.is_some()
    }

    /// Whether the tool is above the playing area (or holds a piece):
    /// the camera cannot trust the squares under it.
    pub fn over_board(&self) -> bool {
        if self.absent {
            return false;
        }
        let b = &self.world.board;
        let m = b.square_mm * 0.5;
        let inside = |v: f64| (-m..=b.play_mm() + m).contains(&v);
        self.held.is_some() || (inside(self.tool_mm.x) && inside(self.tool_mm.y))
    }

    /// A person takes the piece out of the jaws (it is theirs to place).
    pub fn take_from_jaws(&mut self) -> Option<usize> {
        let h = self.held.take()?;
        let id = self.setup.model.gripper.joint.servo_id;
        self.bus().unblock(id);
        Some(h.piece)
    }

    /// Runs the servos up to now and moves what the jaws hold.
    pub fn step(&mut self) {
        if self.absent {
            return;
        }
        let setup = self.setup.clone();
        let (q, g, gripper_dir, gripper_present) = {
            let mut bus = self.bus();
            bus.advance();
            let read = |id: u8| {
                bus.servo(id)
                    .map(|s| (s.get(reg::PRESENT_POSITION), s.get(reg::GOAL_POSITION)))
            };
            let mut q = [0.0; JOINTS];
            for (i, qi) in q.iter_mut().enumerate() {
                let (p, _) = read(setup.model.joints[i].servo_id).unwrap_or((2048, 2048));
                *qi = setup.maps.joints[i].radians(f64::from(p));
            }
            let (gp, gg) = read(setup.model.gripper.joint.servo_id).unwrap_or((2048, 2048));
            (
                q,
                setup.maps.gripper.radians(f64::from(gp)),
                (gg - gp).signum(),
                gp,
            )
        };
        let tool = setup.model.tool_point(&q);
        let b = setup.board.arm_from_board.inverse_transform_point(&tool);
        self.tool_mm = Point3::new(b.x * 1000.0, b.y * 1000.0, b.z * 1000.0);
        let width_mm = setup.model.gripper.width_for_angle(g) * 1000.0;
        let closing = width_mm < self.last_width_mm - 1e-6;
        self.last_width_mm = width_mm;
        match self.held {
            Some(h) => {
                if width_mm > h.grip_width_mm + RELEASE_MARGIN_MM {
                    self.release(h);
                } else {
                    let p = &mut self.world.pieces[h.piece];
                    p.position = self.tool_mm + h.offset;
                }
            }
            None => {
                if closing && !self.missed {
                    self.try_grasp(&q, width_mm, gripper_dir, gripper_present);
                }
                if !closing && width_mm > self.narrowest_grip_mm() + RELEASE_MARGIN_MM {
                    self.missed = false;
                }
            }
        }
        // Drawn while it works over the board; at rest beside the board it
        // is out of the camera's view (where the rest pose is chosen to be).
        self.world.arm = self.over_board().then(|| {
            ArmSilhouette::reaching(
                self.base_mm,
                Point3::new(self.tool_mm.x, self.tool_mm.y, 0.0),
                self.tool_mm.z.max(0.0),
            )
        });
    }

    fn narrowest_grip_mm(&self) -> f64 {
        let p = &self.setup.pieces;
        [p.king, p.queen, p.rook, p.bishop, p.knight, p.pawn]
            .iter()
            .map(|s| s.grip_width_m * 1000.0)
            .fold(f64::INFINITY, f64::min)
    }

    /// The jaws close: the piece between them (if any) is held once they touch it.
    fn try_grasp(&mut self, q: &[f64; JOINTS], width_mm: f64, dir: i32, present: i32) {
        let unit = UNIT_PER_SQUARE * self.world.board.square_mm;
        // The jaws' closing axis, horizontal, in the board frame.
        let link = self.setup.model.gripper_link(q);
        let axis_arm = link.rotation * self.setup.model.gripper.closing_axis;
        let axis = self
            .setup
            .board
            .arm_from_board
            .inverse_transform_vector(&axis_arm);
        let axis = Vector3::new(axis.x, axis.y, 0.0)
            .try_normalize(1e-9)
            .unwrap_or(Vector3::x());
        let open_mm = width_mm.max(self.last_open_mm());
        let tool = self.tool_mm;
        let mut best: Option<(usize, f64, f64, f64)> = None;
        for (i, p) in self.world.pieces.iter().enumerate() {
            let grip_mm = self.setup.piece(p.piece.role).grip_width_m * 1000.0;
            let h = height_mm(p.piece.role, unit);
            let dz = tool.z - p.position.z;
            if dz < GRASP_HEIGHT_MARGIN_MM || dz > h - GRASP_HEIGHT_MARGIN_MM {
                continue;
            }
            let d = Vector3::new(p.position.x - tool.x, p.position.y - tool.y, 0.0);
            let along = d.dot(&axis);
            let across = (d - axis * along).norm();
            // Closing jaws sweep the piece to the middle along their axis;
            // across it, the pads must still reach the piece.
            if along.abs() <= open_mm / 2.0 && across <= grip_mm / 2.0 {
                let dist = d.norm();
                if best.is_none_or(|b| dist < b.1) {
                    best = Some((i, dist, across, grip_mm));
                }
            }
        }
        let Some((i, _, across, grip_mm)) = best else {
            // Nothing between the jaws: once they are narrower than any piece, it is a miss.
            if width_mm < self.narrowest_grip_mm() {
                self.missed = true;
                self.events.push(JawEvent::Missed {
                    at_mm: [tool.x, tool.y],
                });
            }
            return;
        };
        if width_mm > grip_mm {
            return; // not touching yet
        }
        let p = self.world.pieces[i].position;
        let d = Vector3::new(p.x - tool.x, p.y - tool.y, 0.0);
        let along = d.dot(&axis);
        let centred = d - axis * along;
        let offset = Vector3::new(centred.x, centred.y, p.z - tool.z);
        self.held = Some(Held {
            piece: i,
            offset,
            grip_width_mm: grip_mm,
        });
        // The jaws stop on the piece: the gripper servo pushes against it.
        let id = self.setup.model.gripper.joint.servo_id;
        if dir != 0 {
            self.bus().inject(SimFault::Block {
                id,
                at_step: present + dir,
            });
        }
        self.events.push(JawEvent::Grasped {
            piece: i,
            off_mm: across,
        });
    }

    /// Widest opening the jaws can have had while closing onto a piece:
    /// the planner opens `grip + open_margin` (used as the sweep width).
    fn last_open_mm(&self) -> f64 {
        let p = &self.setup.pieces;
        let widest = [p.king, p.queen, p.rook, p.bishop, p.knight, p.pawn]
            .iter()
            .map(|s| s.grip_width_m)
            .fold(0.0, f64::max);
        (widest + p.open_margin_m) * 1000.0
    }

    fn release(&mut self, h: Held) {
        self.held = None;
        let id = self.setup.model.gripper.joint.servo_id;
        self.bus().unblock(id);
        let at = self.tool_mm + h.offset;
        let p = &mut self.world.pieces[h.piece];
        p.position = Point3::new(at.x, at.y, SURFACE_Z_MM);
        p.tilt = 0.0;
        self.events.push(JawEvent::Released {
            piece: h.piece,
            at_mm: [at.x, at.y],
        });
    }
}

/// Virtual time for the arm driver and the simulated servos: waiting
/// advances the servos and the world; with a speed factor it also really
/// waits (1/speed of the virtual time), so a person can watch.
pub struct SimTime {
    time: Arc<ManualClock>,
    physics: Arc<Mutex<ArmWorld>>,
    realtime_speed: Option<f64>,
    /// A simulated process kill: at this virtual time the driver's port dies.
    kill_at: Mutex<Option<Duration>>,
    killed: Arc<AtomicBool>,
}

impl SimTime {
    pub fn new(
        time: Arc<ManualClock>,
        physics: Arc<Mutex<ArmWorld>>,
        realtime_speed: Option<f64>,
        killed: Arc<AtomicBool>,
    ) -> SimTime {
        SimTime {
            time,
            physics,
            realtime_speed,
            kill_at: Mutex::new(None),
            killed,
        }
    }

    /// Kills the driver (its port stops working) once virtual time reaches `at`.
    pub fn kill_at(&self, at: Duration) {
        *self.kill_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(at);
    }
}

impl Clock for SimTime {
    fn now(&self) -> Duration {
        self.time.now()
    }

    fn sleep(&self, d: Duration) {
        if let Some(speed) = self.realtime_speed.filter(|s| *s > 0.0) {
            std::thread::sleep(d.div_f64(speed));
        }
        self.time.advance(d);
        self.physics
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .step();
        let mut kill = self.kill_at.lock().unwrap_or_else(|p| p.into_inner());
        if kill.is_some_and(|at| self.time.now() >= at) {
            *kill = None;
            self.killed.store(true, Ordering::SeqCst);
        }
    }
}

/// The driver's end of the simulated bus, which dies with its process:
/// once `killed`, every read and write fails as on a closed port, so not
/// even a stop command goes out (the servos keep their last goals).
pub struct DriverPort {
    inner: serialport::TTYPort,
    killed: Arc<AtomicBool>,
}

impl DriverPort {
    pub fn new(inner: serialport::TTYPort, killed: Arc<AtomicBool>) -> DriverPort {
        DriverPort { inner, killed }
    }

    fn check(&self) -> std::io::Result<()> {
        if self.killed.load(Ordering::SeqCst) {
            Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the process was killed",
            ))
        } else {
            Ok(())
        }
    }
}

impl std::io::Read for DriverPort {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.check()?;
        self.inner.read(buf)
    }
}

impl std::io::Write for DriverPort {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.check()?;
        self.inner.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.check()?;
        self.inner.flush()
    }
}

impl crate::arm::bus::BusPort for DriverPort {
    fn set_read_timeout(&mut self, timeout: Duration) -> std::io::Result<()> {
        self.check()?;
        crate::arm::bus::BusPort::set_read_timeout(&mut self.inner, timeout)
    }
    fn discard_input(&mut self) -> std::io::Result<()> {
        self.check()?;
        crate::arm::bus::BusPort::discard_input(&mut self.inner)
    }
}
