//! Planning a chess move for the arm: which pieces go where, in which order,
//! and the joint path, gripper openings and durations for each step.
//!
//! A move becomes a list of piece transfers (a capture first sends the
//! victim to the graveyard; castling moves the king then the rook; en
//! passant removes the pawn beside; a promotion sends the pawn to the
//! graveyard and fetches the new piece from the reserve). Each transfer is:
//! travel above the piece at travel height, straight down to its grasp
//! height, close, straight up, travel, straight down, open, straight up.
//! Vertical and travel moves are chains of IK waypoints 2 cm apart, so the
//! joint-space interpolation between them stays on the line; each step
//! follows a trapezoidal speed profile along its joint path within the
//! speed and acceleration limits. Every waypoint, and samples between them,
//! pass the safety envelope before the plan is returned.

use serde::Serialize;
use shakmaty::{Chess, Move, Position, Role, Square};

use super::model::{IkError, IkSolution, Joints, JOINTS};
use super::safety::{Envelope, SafetyViolation};
use super::setup::{ArmSetup, WAYPOINT_SPACING_M};

/// Time for the jaws to settle on a piece (or let go) after the gripper stops.
pub const GRIP_SETTLE_S: f64 = 0.25;
/// Close this much below the piece's grip width so the jaws press it; the
/// gripper's torque limit keeps the squeeze gentle.
pub const SQUEEZE_M: f64 = 0.003;
/// How far below travel height the tool may sag between travel waypoints
/// (joint-space interpolation between points 2 cm apart on a line bows a
/// little); the travel clearance above the king (15 mm) absorbs it.
pub const TRAVEL_SAG_M: f64 = 0.005;
/// Waypoint spacing on travel lines: closer than on vertical lines because
/// sweeps past the base turn the pan fast and joint interpolation between
/// distant waypoints would sag below travel height.
pub const TRAVEL_SPACING_M: f64 = WAYPOINT_SPACING_M / 2.0;
/// Samples checked between two waypoints for the height envelope.
const SAMPLES_PER_SEGMENT: usize = 4;

/// Why no plan could be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("{0}")]
    Move(String),
    #[error("the arm cannot reach {place}: {source}")]
    Unreachable {
        place: String,
        #[source]
        source: IkError,
    },
    #[error("the graveyard is full ({slots} slots): clear it and reset the count")]
    GraveyardFull { slots: usize },
    #[error("no spare {role} left in the reserve: put one there")]
    NoReserve { role: String },
    #[error("step {step:?} would travel {height_mm:.0} mm above the board, below the {min_mm:.0} mm that clears standing pieces")]
    TravelTooLow {
        step: String,
        height_mm: f64,
        min_mm: f64,
    },
    #[error("step {step:?} would leave the safety envelope: {source}")]
    Unsafe {
        step: String,
        #[source]
        source: SafetyViolation,
    },
}

/// Which graveyard and reserve slots are taken (kept across moves by the caller).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct SlotState {
    pub graveyard_used: usize,
    pub reserve_used: Vec<bool>,
}

/// A place a piece stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Place {
    Square(Square),
    Graveyard(usize),
    Reserve(usize),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Square(s) => write!(f, "{s}"),
            Place::Graveyard(i) => write!(f, "graveyard {}", i + 1),
            Place::Reserve(i) => write!(f, "reserve {}", i + 1),
        }
    }
}

/// One piece carried from one place to another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transfer {
    pub role: Role,
    pub from: Place,
    pub to: Place,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Travel,
    Descend,
    Grip,
    Release,
    Lift,
}

/// One step: a joint path ending at a pose, with the gripper at an opening.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanStep {
    pub kind: StepKind,
    pub what: String,
    /// Tool point at the end of the step, board frame (m).
    pub tool_board_m: [f64; 3],
    pub pitch_deg: f64,
    pub joints_rad: Joints,
    pub gripper_rad: f64,
    pub gripper_width_m: f64,
    /// Goal steps of the five joints then the gripper.
    pub servo_steps: [i32; JOINTS + 1],
    pub duration_s: f64,
    /// The end point is a grasp point (the tool may be below the clearance).
    pub grasp_point: bool,
    /// Joint waypoints after the previous step's end; the last is `joints_rad`.
    #[serde(skip)]
    pub path: Vec<Joints>,
    /// Gripper angle at the start of the step (it moves linearly along the path).
    #[serde(skip)]
    pub gripper_from_rad: f64,
}

/// A whole move.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    pub fen: String,
    pub uci: String,
    pub transfers: Vec<String>,
    pub speed_rad_s: f64,
    pub accel_rad_s2: f64,
    pub start_joints_rad: Joints,
    pub start_gripper_rad: f64,
    pub steps: Vec<PlanStep>,
    pub total_s: f64,
}

impl Plan {
    /// A readable listing.
    pub fn to_text(&self) -> String {
        let mut out = format!("{} in {}\n", self.uci, self.fen);
        for t in &self.transfers {
            out.push_str(&format!("  {t}\n"));
        }
        for (i, s) in self.steps.iter().enumerate() {
            out.push_str(&format!(
                "{:>2} {:<8} {:<34} tool ({:+.3} {:+.3} {:+.3}) m pitch {:>3.0}° grip {:>4.1} mm  joints [{}] steps [{}] {:.2} s\n",
                i + 1,
                format!("{:?}", s.kind).to_lowercase(),
                s.what,
                s.tool_board_m[0],
                s.tool_board_m[1],
                s.tool_board_m[2],
                s.pitch_deg,
                s.gripper_width_m * 1000.0,
                s.joints_rad.iter().map(|q| format!("{q:+.3}")).collect::<Vec<_>>().join(" "),
                s.servo_steps.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(" "),
                s.duration_s
            ));
        }
        out.push_str(&format!("estimated arm time {:.1} s\n", self.total_s));
        out
    }
}

/// Time to cover `distance` from rest to rest with a trapezoidal (or
/// triangular) speed profile.
pub fn trapezoid_time(distance: f64, speed: f64, accel: f64) -> f64 {
    let d = distance.abs();
    if d == 0.0 {
        return 0.0;
    }
    if d >= speed * speed / accel {
        d / speed + speed / accel
    } else {
        2.0 * (d / accel).sqrt()
    }
}

/// Distance covered after `t` seconds of that profile.
pub fn trapezoid_distance(distance: f64, speed: f64, accel: f64, t: f64) -> f64 {
    let d = distance.abs();
    let total = trapezoid_time(d, speed, accel);
    if t <= 0.0 {
        return 0.0;
    }
    if t >= total {
        return d;
    }
    let v_peak = if d >= speed * speed / accel {
        speed
    } else {
        (d * accel).sqrt()
    };
    let t_ramp = v_peak / accel;
    if t < t_ramp {
        0.5 * accel * t * t
    } else if t <= total - t_ramp {
        0.5 * accel * t_ramp * t_ramp + v_peak * (t - t_ramp)
    } else {
        let tr = total - t;
        d - 0.5 * accel * tr * tr
    }
}

/// Max-norm length of a joint path (the largest joint change governs speed).
pub fn path_length(start: &Joints, path: &[Joints]) -> f64 {
    let mut prev = *start;
    let mut len = 0.0;
    for q in path {
        len += prev
            .iter()
            .zip(q)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        prev = *q;
    }
    len
}

/// Joints and gripper at arc length `s` along a step's path.
pub fn point_on_path(start: &Joints, path: &[Joints], s: f64) -> Joints {
    let mut prev = *start;
    let mut left = s.max(0.0);
    for q in path {
        let seg = prev
            .iter()
            .zip(q)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        if left <= seg && seg > 0.0 {
            let f = left / seg;
            let mut out = prev;
            for i in 0..JOINTS {
                out[i] = prev[i] + (q[i] - prev[i]) * f;
            }
            return out;
        }
        left -= seg;
        prev = *q;
    }
    prev
}

/// Turns moves into arm plans for one setup.
pub struct Planner<'a> {
    setup: &'a ArmSetup,
    pub speed: f64,
    pub accel: f64,
}

#[derive(Clone, Copy)]
struct Pose {
    xyz: [f64; 3],
    sol: IkSolution,
}

struct Builder<'p, 'a> {
    planner: &'p Planner<'a>,
    steps: Vec<PlanStep>,
    cur: Pose,
    gripper: f64,
    /// The first step leaves the start pose, which may be outside the envelope.
    leaving_start: bool,
    /// A piece is in the jaws.
    carrying: bool,
}

impl<'a> Planner<'a> {
    pub fn new(setup: &'a ArmSetup) -> Planner<'a> {
        Planner {
            setup,
            speed: setup
                .model
                .motion
                .max_speed_rad_s
                .min(setup.safety.max_speed_rad_s),
            accel: setup
                .model
                .motion
                .max_accel_rad_s2
                .min(setup.safety.max_accel_rad_s2),
        }
    }

    /// Where the arm waits between moves: above the first graveyard slot at
    /// travel height, beside the board so the camera sees every square.
    pub fn rest_xyz(&self) -> [f64; 3] {
        let (x, y) = self
            .setup
            .board
            .graveyard
            .first()
            .copied()
            .unwrap_or((-0.05, 0.3));
        [x, y, self.setup.travel_height()]
    }

    /// The rest pose.
    pub fn rest(&self) -> Result<IkSolution, PlanError> {
        let [x, y, z] = self.rest_xyz();
        let line = self
            .setup
            .vertical(x, y, z, z)
            .map_err(|source| PlanError::Unreachable {
                place: "the rest pose".into(),
                source,
            })?;
        line.last().map(|(_, s)| *s).ok_or(PlanError::Unreachable {
            place: "the rest pose".into(),
            source: IkError::TooClose {
                distance_m: 0.0,
                offset_m: 0.0,
            },
        })
    }

    /// The transfers a legal move needs, taking graveyard and reserve slots.
    pub fn transfers(
        &self,
        pos: &Chess,
        mv: Move,
        slots: &mut SlotState,
    ) -> Result<Vec<Transfer>, PlanError> {
        let mut out = Vec::new();
        let graveyard_slots = self.setup.board.graveyard.len();
        let to_graveyard =
            |role: Role, from: Square, out: &mut Vec<Transfer>, slots: &mut SlotState| {
                if slots.graveyard_used >= graveyard_slots {
                    return Err(PlanError::GraveyardFull {
                        slots: graveyard_slots,
                    });
                }
                out.push(Transfer {
                    role,
                    from: Place::Square(from),
                    to: Place::Graveyard(slots.graveyard_used),
                });
                slots.graveyard_used += 1;
                Ok(())
            };
        match mv {
            Move::Normal {
                role,
                from,
                capture,
                to,
                promotion,
            } => {
                if let Some(victim) = capture {
                    to_graveyard(victim, to, &mut out, slots)?;
                }
                match promotion {
                    Some(new_role) => {
                        to_graveyard(role, from, &mut out, slots)?;
                        let roles = &self.setup.reserve_roles;
                        slots.reserve_used.resize(roles.len(), false);
                        let idx = roles
                            .iter()
                            .zip(&slots.reserve_used)
                            .position(|(r, used)| *r == new_role && !used)
                            .ok_or_else(|| PlanError::NoReserve {
                                role: format!("{new_role:?}").to_lowercase(),
                            })?;
                        slots.reserve_used[idx] = true;
                        out.push(Transfer {
                            role: new_role,
                            from: Place::Reserve(idx),
                            to: Place::Square(to),
                        });
                    }
                    None => out.push(Transfer {
                        role,
                        from: Place::Square(from),
                        to: Place::Square(to),
                    }),
                }
            }
            Move::EnPassant { from, to } => {
                let victim = Square::from_coords(to.file(), from.rank());
                to_graveyard(Role::Pawn, victim, &mut out, slots)?;
                out.push(Transfer {
                    role: Role::Pawn,
                    from: Place::Square(from),
                    to: Place::Square(to),
                });
            }
            Move::Castle { king, rook } => {
                let side = if rook.file() > king.file() {
                    shakmaty::CastlingSide::KingSide
                } else {
                    shakmaty::CastlingSide::QueenSide
                };
                let color = pos.turn();
                out.push(Transfer {
                    role: Role::King,
                    from: Place::Square(king),
                    to: Place::Square(side.king_to(color)),
                });
                out.push(Transfer {
                    role: Role::Rook,
                    from: Place::Square(rook),
                    to: Place::Square(side.rook_to(color)),
                });
            }
            Move::Put { .. } => return Err(PlanError::Move("drops are not chess moves".into())),
        }
        Ok(out)
    }

    fn place_xy(&self, p: Place) -> Result<(f64, f64), PlanError> {
        let b = &self.setup.board;
        match p {
            Place::Square(s) => Some(b.square_xy(s)),
            Place::Graveyard(i) => b.graveyard.get(i).copied(),
            Place::Reserve(i) => b.reserve.get(i).copied(),
        }
        .ok_or_else(|| PlanError::Move(format!("there is no {p} in the configuration")))
    }

    /// Plans a move given as UCI (or any move text) in a FEN position.
    pub fn plan_text(
        &self,
        fen: &str,
        mv: &str,
        start: Option<(Joints, f64)>,
        slots: &mut SlotState,
    ) -> Result<Plan, PlanError> {
        let pos =
            crate::game::position_from_fen(fen).map_err(|e| PlanError::Move(e.to_string()))?;
        let m = crate::game::parse_move(&pos, mv).map_err(|e| PlanError::Move(e.to_string()))?;
        self.plan(&pos, m, start, slots)
    }

    /// Plans a legal move. `start`: present joints and gripper (from the
    /// bus); `None` starts at the rest pose.
    pub fn plan(
        &self,
        pos: &Chess,
        mv: Move,
        start: Option<(Joints, f64)>,
        slots: &mut SlotState,
    ) -> Result<Plan, PlanError> {
        if !pos.is_legal(mv) {
            return Err(PlanError::Move(format!(
                "{} is not legal in this position",
                crate::game::uci_of(mv)
            )));
        }
        let mut trial = slots.clone();
        let transfers = self.transfers(pos, mv, &mut trial)?;
        let plan = self.plan_transfers(
            &transfers,
            start,
            crate::game::fen_of(pos),
            crate::game::uci_of(mv),
        )?;
        *slots = trial;
        Ok(plan)
    }

    /// Plans piece transfers (from a legal move, or a clean-up by hand:
    /// resetting the board, emptying the graveyard).
    pub fn plan_transfers(
        &self,
        transfers: &[Transfer],
        start: Option<(Joints, f64)>,
        fen: String,
        uci: String,
    ) -> Result<Plan, PlanError> {
        let rest = self.rest()?;
        let closed = self.setup.model.gripper.angle_for_width(0.0);
        let (start_q, start_g) = start.unwrap_or((rest.joints, closed));
        let start_xyz = {
            let p = self.setup.model.tool_point(&start_q);
            let b = self.setup.board.arm_from_board.inverse_transform_point(&p);
            [b.x, b.y, b.z]
        };
        let mut b = Builder {
            planner: self,
            steps: Vec::new(),
            cur: Pose {
                xyz: start_xyz,
                sol: IkSolution {
                    joints: start_q,
                    pitch: self.setup.model.pitch_of(&start_q),
                    min_margin: self.setup.model.min_margin(&start_q),
                },
            },
            gripper: start_g,
            leaving_start: true,
            carrying: false,
        };
        if start.is_some() {
            b.joint_move_to(
                Pose {
                    xyz: self.rest_xyz(),
                    sol: rest,
                },
                "to the rest pose",
            )?;
        }
        for t in transfers {
            b.transfer(t)?;
        }
        b.travel_to(
            Pose {
                xyz: self.rest_xyz(),
                sol: rest,
            },
            b.gripper,
            "back to rest",
        )?;
        let total_s = b.steps.iter().map(|s| s.duration_s).sum();
        Ok(Plan {
            fen,
            uci,
            transfers: transfers
                .iter()
                .map(|t| format!("{:?} {} -> {}", t.role, t.from, t.to).to_lowercase())
                .collect(),
            speed_rad_s: self.speed,
            accel_rad_s2: self.accel,
            start_joints_rad: start_q,
            start_gripper_rad: start_g,
            steps: b.steps,
            total_s,
        })
    }
}

impl Builder<'_, '_> {
    fn setup(&self) -> &ArmSetup {
        self.planner.setup
    }

    fn push(
        &mut self,
        kind: StepKind,
        what: String,
        path: Vec<Pose>,
        gripper_to: f64,
        grasp_point: bool,
    ) -> Result<(), PlanError> {
        let setup = self.planner.setup;
        let env = if self.leaving_start {
            Envelope::leaving(setup, &self.cur.sol.joints)
        } else {
            Envelope::new(setup)
        };
        let start = self.cur.sol.joints;
        let joints_path: Vec<Joints> = path.iter().map(|p| p.sol.joints).collect();
        let end = *path.last().unwrap_or(&self.cur);
        let unsafe_step = |source| PlanError::Unsafe {
            step: what.clone(),
            source,
        };
        // Waypoints as full commands (ranges, limits, caps), then samples between them for height.
        let n = joints_path.len();
        for (i, q) in joints_path.iter().enumerate() {
            let at_grasp = grasp_point && i + 1 == n;
            env.command(
                q,
                gripper_to,
                self.planner.speed,
                self.planner.accel,
                at_grasp,
            )
            .map_err(unsafe_step)?;
        }
        let len = path_length(&start, &joints_path);
        let samples = (n * SAMPLES_PER_SEGMENT).max(1);
        for k in 1..samples {
            let q = point_on_path(&start, &joints_path, len * k as f64 / samples as f64);
            // Between waypoints only the last approach to a grasp point may be low.
            let near_grasp = grasp_point && k * n / samples + 1 >= n;
            env.check_height(&q, near_grasp).map_err(unsafe_step)?;
            // Travel keeps a carried piece (or the empty jaws) above the
            // standing pieces (except the first step, which leaves wherever
            // the arm happens to be).
            if kind == StepKind::Travel && !self.leaving_start {
                let p = setup.model.tool_point(&q);
                let z = setup.board.arm_from_board.inverse_transform_point(&p).z;
                let min = if self.carrying {
                    setup.travel_height() - TRAVEL_SAG_M
                } else {
                    setup.tallest() + setup.pieces.travel_clearance_m
                };
                if z < min {
                    return Err(PlanError::TravelTooLow {
                        step: what.clone(),
                        height_mm: z * 1000.0,
                        min_mm: min * 1000.0,
                    });
                }
            }
        }
        let gripper_len = (gripper_to - self.gripper).abs();
        let mut duration =
            trapezoid_time(len.max(gripper_len), self.planner.speed, self.planner.accel);
        if matches!(kind, StepKind::Grip | StepKind::Release) {
            duration += GRIP_SETTLE_S;
        }
        let maps = &setup.maps;
        let mut servo_steps = [0; JOINTS + 1];
        for ((out, map), q) in servo_steps
            .iter_mut()
            .zip(&maps.joints)
            .zip(&end.sol.joints)
        {
            *out = map.steps(*q).round() as i32;
        }
        servo_steps[JOINTS] = maps.gripper.steps(gripper_to).round() as i32;
        self.steps.push(PlanStep {
            kind,
            what,
            tool_board_m: end.xyz,
            pitch_deg: end.sol.pitch.to_degrees(),
            joints_rad: end.sol.joints,
            gripper_rad: gripper_to,
            gripper_width_m: setup.model.gripper.width_for_angle(gripper_to),
            servo_steps,
            duration_s: duration,
            grasp_point,
            path: joints_path,
            gripper_from_rad: self.gripper,
        });
        self.cur = end;
        self.gripper = gripper_to;
        // Only the first step leaves the start pose.
        self.leaving_start = false;
        Ok(())
    }

    /// Straight joint-space move (only from an arbitrary start pose).
    fn joint_move_to(&mut self, to: Pose, what: &str) -> Result<(), PlanError> {
        let g = self.gripper;
        self.push(StepKind::Travel, what.to_owned(), vec![to], g, false)
    }

    /// Travel along a straight line in the board frame, pitch blended from the
    /// present pose's to the target's.
    fn travel_to(&mut self, to: Pose, gripper_to: f64, what: &str) -> Result<(), PlanError> {
        let from = self.cur;
        let d = ((to.xyz[0] - from.xyz[0]).powi(2)
            + (to.xyz[1] - from.xyz[1]).powi(2)
            + (to.xyz[2] - from.xyz[2]).powi(2))
        .sqrt();
        let n = (d / TRAVEL_SPACING_M).ceil().max(1.0) as usize;
        let mut path = Vec::with_capacity(n);
        let mut prev = from.sol;
        let candidates = self.setup().pitch_candidates();
        for i in 1..n {
            let f = i as f64 / n as f64;
            let xyz = [0, 1, 2].map(|k| from.xyz[k] + (to.xyz[k] - from.xyz[k]) * f);
            let want = from.sol.pitch + (to.sol.pitch - from.sol.pitch) * f;
            let mut order = vec![want];
            let mut rest = candidates.clone();
            rest.sort_by(|a, b| (a - want).abs().total_cmp(&(b - want).abs()));
            order.extend(rest);
            let sol = order.iter().find_map(|&p| {
                // The wrist roll turns evenly from the start's to the target's
                // (both line the jaws up with the board), not by re-aligning
                // at every waypoint, which could flip it by 90°.
                let mut seed = prev.joints;
                seed[4] = from.sol.joints[4] + (to.sol.joints[4] - from.sol.joints[4]) * f;
                let s = self.setup().solve_with_roll(xyz, p, &seed).ok()?;
                let smooth = s
                    .joints
                    .iter()
                    .zip(&prev.joints)
                    .all(|(a, b)| (a - b).abs() < super::setup::MAX_WAYPOINT_JUMP_RAD);
                smooth.then_some(s)
            });
            match sol {
                Some(s) => {
                    path.push(Pose { xyz, sol: s });
                    prev = s;
                }
                // A point of the line out of reach: fall back to a joint-space
                // move for this leg (checked for height like any other).
                None => {
                    path.clear();
                    break;
                }
            }
        }
        path.push(to);
        self.push(StepKind::Travel, what.to_owned(), path, gripper_to, false)
    }

    fn transfer(&mut self, t: &Transfer) -> Result<(), PlanError> {
        let setup = self.planner.setup;
        let piece = setup.piece(t.role);
        let grasp = setup.grasp_height(t.role);
        let travel = setup.travel_height();
        let model = &setup.model;
        let open = model
            .gripper
            .angle_for_width(piece.grip_width_m + setup.pieces.open_margin_m);
        let closed = model
            .gripper
            .angle_for_width((piece.grip_width_m - SQUEEZE_M).max(0.0));
        let name = format!("{:?}", t.role).to_lowercase();
        let line = |place: Place| -> Result<Vec<Pose>, PlanError> {
            let (x, y) = self.planner.place_xy(place)?;
            let sols =
                setup
                    .vertical(x, y, grasp, travel)
                    .map_err(|source| PlanError::Unreachable {
                        place: place.to_string(),
                        source,
                    })?;
            Ok(sols
                .into_iter()
                .map(|(z, sol)| Pose {
                    xyz: [x, y, z],
                    sol,
                })
                .collect())
        };
        let up_from = line(t.from)?;
        let up_to = line(t.to)?;
        let here = self.cur;
        let top = |l: &[Pose]| *l.last().unwrap_or(&here);
        self.travel_to(top(&up_from), open, &format!("above {} ({name})", t.from))?;
        let down: Vec<Pose> = up_from.iter().rev().skip(1).copied().collect();
        self.push(
            StepKind::Descend,
            format!("down to the {name} on {}", t.from),
            down,
            open,
            true,
        )?;
        self.push(
            StepKind::Grip,
            format!("grip the {name}"),
            vec![self.cur],
            closed,
            true,
        )?;
        self.carrying = true;
        let up: Vec<Pose> = up_from.iter().skip(1).copied().collect();
        self.push(
            StepKind::Lift,
            format!("lift the {name}"),
            up,
            closed,
            false,
        )?;
        self.travel_to(top(&up_to), closed, &format!("carry to {}", t.to))?;
        let down: Vec<Pose> = up_to.iter().rev().skip(1).copied().collect();
        self.push(
            StepKind::Descend,
            format!("set down on {}", t.to),
            down,
            closed,
            true,
        )?;
        self.push(
            StepKind::Release,
            format!("release the {name}"),
            vec![self.cur],
            open,
            true,
        )?;
        self.carrying = false;
        let up: Vec<Pose> = up_to.iter().skip(1).copied().collect();
        self.push(StepKind::Lift, format!("up from {}", t.to), up, open, false)
    }
}

#[cfg(test)]
mod tests;
