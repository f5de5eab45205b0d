//! The safety envelope: every servo command is checked here before it is sent.
//!
//! The check works on the command as it would go on the wire (servo steps,
//! step speeds, acceleration units), converting back to angles itself, so a
//! bug in the planner's conversions cannot slip past it:
//! - every goal inside the calibrated servo range and inside the URDF limits
//!   shrunk by the configured margin;
//! - the tool and every joint above the board surface plus the clearance,
//!   except the tool at a declared grasp point (then above a hard floor);
//! - speed and acceleration non-zero (0 means "unlimited" to the servo) and
//!   below the caps.

use serde::Serialize;

use super::bus::ServoGoal;
use super::calibration::JointMap;
use super::feetech::ACCELERATION_UNIT_STEPS_PER_S2;
use super::model::{Joints, JOINTS};
use super::setup::ArmSetup;

/// Even at a grasp point the tool stays this far above the board surface: a
/// grasp is never lower than 40 % of a piece (hardware.md), ≥ 13 mm for the
/// smallest pieces a hobby arm handles.
pub const GRASP_FLOOR_M: f64 = 0.005;
/// Servo steps per radian (LeRobot's 4095 per turn).
pub const STEPS_PER_RAD: f64 = super::calibration::STEPS_PER_TURN_LEROBOT / std::f64::consts::TAU;

/// A command that must not be sent, and why.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SafetyViolation {
    #[error("servo {id} goal {steps} is outside its calibrated range {min}..{max}")]
    OutsideRange {
        id: u8,
        steps: i32,
        min: i32,
        max: i32,
    },
    #[error("{joint} goal {rad:.3} rad is outside {lower:.3}..{upper:.3} (limits less the safety margin)")]
    JointLimit {
        joint: String,
        rad: f64,
        lower: f64,
        upper: f64,
    },
    #[error("{what} would be {height_mm:.1} mm above the board, below the {min_mm:.1} mm allowed")]
    TooLow {
        what: String,
        height_mm: f64,
        min_mm: f64,
    },
    #[error("servo {id} speed {speed} steps/s is outside 1..={max}")]
    Speed { id: u8, speed: u16, max: u16 },
    #[error("servo {id} acceleration {accel} is outside 1..={max} (×100 steps/s²)")]
    Acceleration { id: u8, accel: u8, max: u8 },
    #[error("command for {got} servos; the arm has {expected} (ids {ids:?})")]
    WrongServos {
        got: usize,
        expected: usize,
        ids: Vec<u8>,
    },
}

/// One command for all six servos.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServoCommand {
    /// Joints in model order, then the gripper.
    #[serde(skip)]
    pub goals: Vec<ServoGoal>,
    /// The tool may go below the clearance (but not the floor): it is gripping or placing.
    pub grasp_point: bool,
}

/// How far below its starting height the tool may dip while leaving a low
/// start pose (an arm parked folded on the table).
pub const LEAVE_SLACK_M: f64 = 0.005;

/// The envelope for one arm setup.
#[derive(Debug, Clone)]
pub struct Envelope<'a> {
    setup: &'a ArmSetup,
    /// Leaving a start pose outside the margins: the margin-shrunk limits
    /// widen to include it (never past the hard limits), and the height
    /// floor drops to just below it.
    leaving: Option<(Joints, f64)>,
}

impl<'a> Envelope<'a> {
    pub fn new(setup: &'a ArmSetup) -> Envelope<'a> {
        Envelope {
            setup,
            leaving: None,
        }
    }

    /// The envelope for the move out of a start pose that may lie inside
    /// the joint margins or below the clearance (a parked arm): motion from
    /// there back into the envelope is allowed, nothing farther out.
    pub fn leaving(setup: &'a ArmSetup, start: &Joints) -> Envelope<'a> {
        let board_from_arm = setup.board.arm_from_board.inverse();
        let lowest = setup
            .model
            .joint_points(start)
            .iter()
            .map(|p| board_from_arm.transform_point(p).z)
            .fold(f64::INFINITY, f64::min);
        Envelope {
            setup,
            leaving: Some((*start, lowest - LEAVE_SLACK_M)),
        }
    }

    /// Highest speed register value allowed (steps/s).
    pub fn max_speed_steps(&self) -> u16 {
        (self.setup.safety.max_speed_rad_s * STEPS_PER_RAD)
            .floor()
            .clamp(1.0, 32767.0) as u16
    }

    /// Highest acceleration register value allowed (units of 100 steps/s²).
    pub fn max_accel_units(&self) -> u8 {
        (self.setup.safety.max_accel_rad_s2 * STEPS_PER_RAD / ACCELERATION_UNIT_STEPS_PER_S2)
            .floor()
            .clamp(1.0, 254.0) as u8
    }

    fn maps(&self) -> Vec<(&str, u8, JointMap, f64, f64)> {
        let s = self.setup;
        let margin = s.joint_margin();
        let mut out: Vec<(&str, u8, JointMap, f64, f64)> = s
            .model
            .joints
            .iter()
            .zip(&s.maps.joints)
            .enumerate()
            .map(|(i, (j, m))| {
                let (mut lo, mut hi) = (j.lower + margin, j.upper - margin);
                if let Some((start, _)) = &self.leaving {
                    lo = lo.min(start[i]).max(j.lower);
                    hi = hi.max(start[i]).min(j.upper);
                }
                (j.name.as_str(), j.servo_id, *m, lo, hi)
            })
            .collect();
        let g = &s.model.gripper.joint;
        out.push((
            g.name.as_str(),
            g.servo_id,
            s.maps.gripper,
            g.lower,
            g.upper,
        ));
        out
    }

    /// Builds the command for joint angles and a gripper angle, then checks it.
    pub fn command(
        &self,
        joints: &Joints,
        gripper_rad: f64,
        speed_rad_s: f64,
        accel_rad_s2: f64,
        grasp_point: bool,
    ) -> Result<ServoCommand, SafetyViolation> {
        let speed = (speed_rad_s * STEPS_PER_RAD).round().clamp(1.0, 32767.0) as u16;
        let accel = (accel_rad_s2 * STEPS_PER_RAD / ACCELERATION_UNIT_STEPS_PER_S2)
            .ceil()
            .clamp(1.0, 254.0) as u8;
        let angles: Vec<f64> = joints.iter().copied().chain([gripper_rad]).collect();
        let goals = self
            .maps()
            .iter()
            .zip(angles)
            .map(|((_, id, map, _, _), q)| ServoGoal {
                id: *id,
                position: map.steps(q).round() as i32,
                speed,
                acceleration: accel,
            })
            .collect();
        let cmd = ServoCommand { goals, grasp_point };
        self.check(&cmd)?;
        Ok(cmd)
    }

    /// Checks a command as it would be sent.
    pub fn check(&self, cmd: &ServoCommand) -> Result<(), SafetyViolation> {
        let maps = self.maps();
        let ids: Vec<u8> = cmd.goals.iter().map(|g| g.id).collect();
        let expected: Vec<u8> = maps.iter().map(|m| m.1).collect();
        if ids != expected {
            return Err(SafetyViolation::WrongServos {
                got: ids.len(),
                expected: expected.len(),
                ids,
            });
        }
        let (max_speed, max_accel) = (self.max_speed_steps(), self.max_accel_units());
        let mut q = [0.0; JOINTS];
        for (i, (g, (name, id, map, lower, upper))) in cmd.goals.iter().zip(&maps).enumerate() {
            if !map.in_range(g.position) {
                return Err(SafetyViolation::OutsideRange {
                    id: *id,
                    steps: g.position,
                    min: map.range_min,
                    max: map.range_max,
                });
            }
            let rad = map.radians(f64::from(g.position));
            // Half a step of rounding is not a violation.
            let slack = 0.5 / STEPS_PER_RAD;
            if rad < lower - slack || rad > upper + slack {
                return Err(SafetyViolation::JointLimit {
                    joint: (*name).to_owned(),
                    rad,
                    lower: *lower,
                    upper: *upper,
                });
            }
            if g.speed == 0 || g.speed > max_speed {
                return Err(SafetyViolation::Speed {
                    id: *id,
                    speed: g.speed,
                    max: max_speed,
                });
            }
            if g.acceleration == 0 || g.acceleration > max_accel {
                return Err(SafetyViolation::Acceleration {
                    id: *id,
                    accel: g.acceleration,
                    max: max_accel,
                });
            }
            if i < JOINTS {
                q[i] = rad;
            }
        }
        self.check_height(&q, cmd.grasp_point)
    }

    /// The tool and joints above the board.
    pub fn check_height(&self, q: &Joints, grasp_point: bool) -> Result<(), SafetyViolation> {
        let s = self.setup;
        let board_from_arm = s.board.arm_from_board.inverse();
        let clearance = s.safety.board_clearance_m;
        let points = s.model.joint_points(q);
        let last = points.len() - 1;
        for (i, p) in points.iter().enumerate() {
            let height = board_from_arm.transform_point(p).z;
            let (what, min) = if i == last {
                let min = if grasp_point {
                    GRASP_FLOOR_M
                } else {
                    clearance
                };
                ("the tool".to_owned(), min)
            } else {
                (format!("joint {}", s.model.joints[i].name), clearance)
            };
            let min = match self.leaving {
                Some((_, floor)) => min.min(floor),
                None => min,
            };
            if height < min - 1e-9 {
                return Err(SafetyViolation::TooLow {
                    what,
                    height_mm: height * 1000.0,
                    min_mm: min * 1000.0,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> ArmSetup {
        ArmSetup::default_so101().unwrap()
    }

    fn above_e4(s: &ArmSetup, z: f64) -> Joints {
        let (x, y) = s.board.square_xy(shakmaty::Square::E4);
        s.vertical(x, y, z, z).unwrap()[0].1.joints
    }

    #[test]
    fn a_normal_command_passes() {
        let s = setup();
        let env = Envelope::new(&s);
        let q = above_e4(&s, 0.1);
        let cmd = env.command(&q, 0.3, 1.0, 3.0, false).unwrap();
        assert_eq!(cmd.goals.len(), 6);
        assert!(cmd.goals.iter().all(|g| g.speed > 0 && g.acceleration > 0));
    }

    #[test]
    fn joint_beyond_margin_is_refused() {
        let s = setup();
        let env = Envelope::new(&s);
        let mut q = above_e4(&s, 0.1);
        q[0] = s.model.joints[0].upper - 0.01;
        let err = env.command(&q, 0.3, 1.0, 3.0, false).unwrap_err();
        assert!(
            matches!(
                err,
                SafetyViolation::JointLimit { .. } | SafetyViolation::OutsideRange { .. }
            ),
            "{err}"
        );
    }

    #[test]
    fn tool_low_outside_a_grasp_point_is_refused() {
        let s = setup();
        let env = Envelope::new(&s);
        let q = above_e4(&s, 0.006);
        let err = env.command(&q, 0.3, 1.0, 3.0, false).unwrap_err();
        assert!(matches!(err, SafetyViolation::TooLow { .. }), "{err}");
        // The same pose is allowed as a grasp point, but not into the board.
        assert!(env.command(&q, 0.3, 1.0, 3.0, true).is_ok());
        let q = above_e4(&s, 0.002);
        assert!(env.command(&q, 0.3, 1.0, 3.0, true).is_err());
    }

    #[test]
    fn speed_and_acceleration_caps_hold() {
        let s = setup();
        let env = Envelope::new(&s);
        let q = above_e4(&s, 0.1);
        let err = env.command(&q, 0.3, 10.0, 3.0, false).unwrap_err();
        assert!(matches!(err, SafetyViolation::Speed { .. }), "{err}");
        let err = env.command(&q, 0.3, 1.0, 60.0, false).unwrap_err();
        assert!(matches!(err, SafetyViolation::Acceleration { .. }), "{err}");
        // A hand-made command with speed 0 ("unlimited" to the servo) is refused.
        let mut cmd = env.command(&q, 0.3, 1.0, 3.0, false).unwrap();
        cmd.goals[2].speed = 0;
        assert!(matches!(
            env.check(&cmd),
            Err(SafetyViolation::Speed { id: 3, .. })
        ));
    }

    #[test]
    fn goal_outside_calibrated_range_is_refused() {
        let s = setup();
        let env = Envelope::new(&s);
        let mut cmd = env
            .command(&above_e4(&s, 0.1), 0.3, 1.0, 3.0, false)
            .unwrap();
        cmd.goals[1].position = 4095;
        assert!(matches!(
            env.check(&cmd),
            Err(SafetyViolation::OutsideRange { id: 2, .. })
        ));
        cmd.goals.pop();
        assert!(matches!(
            env.check(&cmd),
            Err(SafetyViolation::WrongServos { .. })
        ));
    }
}
