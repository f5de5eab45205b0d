//! The arm's kinematic model: forward kinematics and analytic inverse kinematics.
//!
//! The model comes from a TOML file (`config/arms/so101.toml`): the URDF
//! joint origins, each joint revolute about its local z axis, the tool point
//! on the gripper link. The structure the inverse kinematics relies on is
//! checked when the model is built: a vertical pan axis, then three
//! parallel pitch axes (shoulder lift, elbow, wrist flex), then the wrist
//! roll. Inverse kinematics is then closed-form: the pan angle from the
//! target's bearing (allowing for the arm plane's sideways offset), a
//! planar three-link problem for a chosen approach pitch, and the wrist roll
//! that lines the jaws up with the board.
//!
//! Frames: `arm` is the URDF base frame (z up). Angles are radians at the
//! URDF zero; servo steps are converted in [`super::calibration`].

use std::f64::consts::{FRAC_PI_2, PI, TAU};
use std::path::Path;

use nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector2, Vector3};
use serde::{Deserialize, Serialize};

/// Number of arm joints (the gripper is separate).
pub const JOINTS: usize = 5;
/// Joint angles in radians: pan, lift, elbow, wrist flex, wrist roll.
pub type Joints = [f64; JOINTS];

/// The shipped SO-101 model, compiled in.
pub const SO101_TOML: &str = include_str!("../../config/arms/so101.toml");

/// Tolerance for the geometric checks on a model (parallel axes, vertical pan).
const STRUCTURE_TOLERANCE: f64 = 1e-6;

/// What is wrong with an arm model file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("arm model {origin}: {message}")]
    Syntax { origin: String, message: String },
    #[error("arm model {origin}: {message}")]
    Invalid { origin: String, message: String },
    #[error("cannot read arm model {path}: {message}")]
    Read { path: String, message: String },
}

/// Why a tool position cannot be reached.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IkError {
    #[error("target is {distance_m:.3} m from the pan axis, inside the arm's sideways offset {offset_m:.3} m")]
    TooClose { distance_m: f64, offset_m: f64 },
    #[error("wrist would have to be {needed_m:.3} m from the shoulder; the arm spans {min_m:.3}..{max_m:.3} m")]
    OutOfReach {
        needed_m: f64,
        min_m: f64,
        max_m: f64,
    },
    #[error("no pitch keeps the joints on one branch along the way (the arm would have to flip)")]
    NoSmoothPath,
    #[error("every solution puts {joint} outside its limits (best: {value:.3} rad, allowed {lower:.3}..{upper:.3})")]
    JointLimit {
        joint: String,
        value: f64,
        lower: f64,
        upper: f64,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct JointSpec {
    name: String,
    servo_id: u8,
    xyz: [f64; 3],
    rpy: [f64; 3],
    limits: [f64; 2],
    #[serde(default = "one")]
    servo_sign: f64,
}

fn one() -> f64 {
    1.0
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolSpec {
    xyz: [f64; 3],
    rpy: [f64; 3],
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct GripperSpec {
    name: String,
    servo_id: u8,
    xyz: [f64; 3],
    rpy: [f64; 3],
    limits: [f64; 2],
    #[serde(default = "one")]
    servo_sign: f64,
    closed_rad: f64,
    jaw_length_m: f64,
    closing_axis: [f64; 3],
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MotionSpec {
    max_speed_rad_s: f64,
    max_accel_rad_s2: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelSpec {
    name: String,
    joints: Vec<JointSpec>,
    tool: ToolSpec,
    gripper: GripperSpec,
    motion: MotionSpec,
}

/// One revolute joint about its local z axis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Joint {
    pub name: String,
    pub servo_id: u8,
    /// Parent-to-joint transform at zero angle.
    #[serde(skip)]
    pub origin: Isometry3<f64>,
    pub lower: f64,
    pub upper: f64,
    /// +1, or -1 when the servo turns against the URDF's sense.
    pub servo_sign: f64,
}

impl Joint {
    /// Distance to the nearer limit (negative outside).
    pub fn margin(&self, q: f64) -> f64 {
        (q - self.lower).min(self.upper - q)
    }
}

/// The gripper: its servo, jaw limits and opening geometry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gripper {
    pub joint: Joint,
    pub closed_rad: f64,
    pub jaw_length_m: f64,
    /// Closing direction in the gripper link frame.
    #[serde(skip)]
    pub closing_axis: Vector3<f64>,
}

impl Gripper {
    /// Jaw angle for an opening (chord of the jaw radius), clamped to the jaw limits.
    pub fn angle_for_width(&self, width_m: f64) -> f64 {
        let half = (width_m.max(0.0) / (2.0 * self.jaw_length_m)).min(1.0);
        (self.closed_rad + 2.0 * half.asin()).clamp(self.joint.lower, self.joint.upper)
    }

    /// Opening for a jaw angle.
    pub fn width_for_angle(&self, q: f64) -> f64 {
        2.0 * self.jaw_length_m * ((q - self.closed_rad).max(0.0) / 2.0).sin()
    }

    /// The widest opening the jaw limits allow.
    pub fn max_width(&self) -> f64 {
        self.width_for_angle(self.joint.upper.min(self.closed_rad + PI))
    }
}

/// Planner limits per joint.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MotionLimits {
    pub max_speed_rad_s: f64,
    pub max_accel_rad_s2: f64,
}

/// Constants of the planar three-link problem, derived from the model.
#[derive(Debug, Clone, PartialEq)]
struct Planar {
    /// Fixed rotation (about z) and offset of the elbow and wrist joint origins.
    theta3: f64,
    a3: Vector3<f64>,
    theta4: f64,
    a4: Vector3<f64>,
    /// Angle, in the wrist-flex frame, of the approach direction (roll axis toward the tool).
    approach_in_wrist: f64,
    /// Pan axis expressed in the shoulder-lift frame: a point and the world-up direction.
    pan_point: Vector3<f64>,
    up: Vector3<f64>,
    /// Lift axis direction in the pan frame (horizontal) and the shoulder offset along it.
    lateral_dir: Vector3<f64>,
    lateral_base: f64,
}

/// An arm model: joints, tool point, gripper, motion limits.
#[derive(Debug, Clone, PartialEq)]
pub struct ArmModel {
    pub name: String,
    pub joints: Vec<Joint>,
    /// Gripper link to tool point.
    pub tool: Isometry3<f64>,
    pub gripper: Gripper,
    pub motion: MotionLimits,
    planar: Planar,
}

/// One inverse-kinematics answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IkSolution {
    pub joints: Joints,
    /// Approach pitch used: radians below horizontal (π/2 = straight down).
    pub pitch: f64,
    /// Smallest distance of any joint to its limit.
    pub min_margin: f64,
}

fn iso(xyz: [f64; 3], rpy: [f64; 3]) -> Isometry3<f64> {
    Isometry3::from_parts(
        Translation3::new(xyz[0], xyz[1], xyz[2]),
        UnitQuaternion::from_euler_angles(rpy[0], rpy[1], rpy[2]),
    )
}

fn rot_z(q: f64) -> Isometry3<f64> {
    Isometry3::rotation(Vector3::z() * q)
}

/// An angle in (-π, π].
pub fn wrap_angle(a: f64) -> f64 {
    let w = a.rem_euclid(TAU);
    if w > PI {
        w - TAU
    } else {
        w
    }
}

fn angle_2d(v: Vector3<f64>) -> f64 {
    v.y.atan2(v.x)
}

impl ArmModel {
    /// The shipped SO-101 model.
    pub fn so101() -> Result<ArmModel, ModelError> {
        ArmModel::parse(SO101_TOML, "config/arms/so101.toml (built in)")
    }

    /// Reads a model file.
    pub fn load(path: &Path) -> Result<ArmModel, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        ArmModel::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a model.
    pub fn parse(text: &str, origin: &str) -> Result<ArmModel, ModelError> {
        let spec: ModelSpec = toml::from_str(text).map_err(|e| ModelError::Syntax {
            origin: origin.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let invalid = |message: String| ModelError::Invalid {
            origin: origin.to_owned(),
            message,
        };
        if spec.joints.len() != JOINTS {
            return Err(invalid(format!(
                "{} joints given; the model needs exactly {JOINTS} (pan, lift, elbow, wrist flex, wrist roll)",
                spec.joints.len()
            )));
        }
        let make_joint = |j: &JointSpec| -> Result<Joint, ModelError> {
            let finite = j
                .xyz
                .iter()
                .chain(&j.rpy)
                .chain(&j.limits)
                .all(|v| v.is_finite());
            if !finite || j.limits[0] >= j.limits[1] {
                return Err(invalid(format!(
                    "joint {}: numbers must be finite and limits ordered lower < upper",
                    j.name
                )));
            }
            if j.servo_sign != 1.0 && j.servo_sign != -1.0 {
                return Err(invalid(format!(
                    "joint {}: servo_sign must be 1 or -1",
                    j.name
                )));
            }
            Ok(Joint {
                name: j.name.clone(),
                servo_id: j.servo_id,
                origin: iso(j.xyz, j.rpy),
                lower: j.limits[0],
                upper: j.limits[1],
                servo_sign: j.servo_sign,
            })
        };
        let joints = spec
            .joints
            .iter()
            .map(make_joint)
            .collect::<Result<Vec<_>, _>>()?;
        let g = &spec.gripper;
        let gripper_joint = make_joint(&JointSpec {
            name: g.name.clone(),
            servo_id: g.servo_id,
            xyz: g.xyz,
            rpy: g.rpy,
            limits: g.limits,
            servo_sign: g.servo_sign,
        })?;
        let closing = Vector3::from(g.closing_axis);
        if g.jaw_length_m.is_nan() || g.jaw_length_m <= 0.0 || closing.norm() < 1e-9 {
            return Err(invalid(
                "gripper: jaw_length_m must be positive and closing_axis non-zero".into(),
            ));
        }
        let m = &spec.motion;
        if m.max_speed_rad_s.is_nan()
            || m.max_accel_rad_s2.is_nan()
            || m.max_speed_rad_s <= 0.0
            || m.max_accel_rad_s2 <= 0.0
        {
            return Err(invalid(
                "motion: speed and acceleration must be positive".into(),
            ));
        }
        let mut ids: Vec<u8> = joints.iter().map(|j| j.servo_id).collect();
        ids.push(gripper_joint.servo_id);
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != JOINTS + 1
            || ids
                .iter()
                .any(|&id| id >= crate::arm::feetech::BROADCAST_ID)
        {
            return Err(invalid("servo IDs must be distinct and below 254".into()));
        }
        let tool = iso(spec.tool.xyz, spec.tool.rpy);
        let planar = derive_planar(&joints, &tool).map_err(invalid)?;
        Ok(ArmModel {
            name: spec.name,
            joints,
            tool,
            gripper: Gripper {
                joint: gripper_joint,
                closed_rad: g.closed_rad,
                jaw_length_m: g.jaw_length_m,
                closing_axis: closing.normalize(),
            },
            motion: MotionLimits {
                max_speed_rad_s: m.max_speed_rad_s,
                max_accel_rad_s2: m.max_accel_rad_s2,
            },
            planar,
        })
    }

    /// Servo IDs of the five joints then the gripper.
    pub fn servo_ids(&self) -> [u8; JOINTS + 1] {
        let mut ids = [0; JOINTS + 1];
        for (i, j) in self.joints.iter().enumerate() {
            ids[i] = j.servo_id;
        }
        ids[JOINTS] = self.gripper.joint.servo_id;
        ids
    }

    /// The gripper link's pose in the arm frame.
    pub fn gripper_link(&self, q: &Joints) -> Isometry3<f64> {
        let mut t = Isometry3::identity();
        for (j, qi) in self.joints.iter().zip(q) {
            t = t * j.origin * rot_z(*qi);
        }
        t
    }

    /// Forward kinematics: the tool frame in the arm frame.
    pub fn fk(&self, q: &Joints) -> Isometry3<f64> {
        self.gripper_link(q) * self.tool
    }

    /// The tool point in the arm frame.
    pub fn tool_point(&self, q: &Joints) -> Point3<f64> {
        Point3::from(self.fk(q).translation.vector)
    }

    /// Positions of each joint origin then the tool point (for clearance checks).
    pub fn joint_points(&self, q: &Joints) -> Vec<Point3<f64>> {
        let mut t = Isometry3::identity();
        let mut out = Vec::with_capacity(JOINTS + 1);
        for (j, qi) in self.joints.iter().zip(q) {
            t *= j.origin;
            out.push(Point3::from(t.translation.vector));
            t *= rot_z(*qi);
        }
        out.push(Point3::from((t * self.tool).translation.vector));
        out
    }

    /// The approach pitch of a pose: angle of the gripper's approach axis below horizontal.
    pub fn pitch_of(&self, q: &Joints) -> f64 {
        let g = self.gripper_link(q);
        // The approach axis is the roll axis pointing toward the tool: gripper -z
        // for the SO-101 (the tool sits at negative z on the roll axis).
        let toward_tool = self.tool.translation.vector;
        let axis = g.rotation * Vector3::z() * toward_tool.z.signum();
        (-axis.z).clamp(-1.0, 1.0).asin()
    }

    /// The smallest joint-limit margin of a configuration.
    pub fn min_margin(&self, q: &Joints) -> f64 {
        self.joints
            .iter()
            .zip(q)
            .map(|(j, qi)| j.margin(*qi))
            .fold(f64::INFINITY, f64::min)
    }

    /// Inverse kinematics for a tool point (arm frame) and approach pitch.
    ///
    /// `jaw_align`: a horizontal direction (arm frame) the jaws should close
    /// along (or perpendicular to); the wrist roll is chosen for it.
    /// `limit_margin` shrinks every joint range; `near` picks, among valid
    /// solutions, the closest to a previous configuration (otherwise the one
    /// farthest from the limits).
    pub fn ik(
        &self,
        target: &Point3<f64>,
        pitch: f64,
        jaw_align: Option<Vector2<f64>>,
        limit_margin: f64,
        near: Option<&Joints>,
    ) -> Result<IkSolution, IkError> {
        // The roll angle moves the tool point a little (it sits off the roll
        // axis), which moves the other joints a little: a few refinements
        // settle the roll, and the last solve uses that roll exactly, so FK of
        // the answer is the target whatever the alignment converged to.
        let mut roll = near.map_or(0.0, |n| n[4]);
        let mut sol = self.solve_with_roll(target, pitch, roll, limit_margin, near)?;
        if jaw_align.is_some() {
            for _ in 0..3 {
                let r =
                    self.aligning_roll(&sol.joints, jaw_align, limit_margin, near.map(|n| n[4]));
                if (r - roll).abs() < 1e-9 {
                    break;
                }
                roll = r;
                sol = self.solve_with_roll(target, pitch, roll, limit_margin, near)?;
            }
        }
        Ok(sol)
    }

    /// The wrist roll (within limits) that lines the jaws up with `align` or
    /// its perpendicular: the one nearest `reference` (the previous roll, so
    /// a path does not flip the wrist by 90°), else the one nearest zero.
    fn aligning_roll(
        &self,
        q: &Joints,
        align: Option<Vector2<f64>>,
        margin: f64,
        reference: Option<f64>,
    ) -> f64 {
        let reference = reference.unwrap_or(0.0);
        let Some(b) = align.filter(|b| b.norm() > 1e-9) else {
            return q[4];
        };
        let b = b.normalize();
        let mut q0 = *q;
        q0[4] = 0.0;
        let g = self.gripper_link(&q0);
        let c = self.gripper.closing_axis;
        // Closing axis after roll r: Rz(r)·c = cos r·c + sin r·(z × c) (+ z-part unchanged).
        let cx = g.rotation * Vector3::new(c.x, c.y, 0.0);
        let cy = g.rotation * Vector3::new(-c.y, c.x, 0.0);
        let cross = |v: Vector3<f64>, d: Vector2<f64>| v.x * d.y - v.y * d.x;
        let joint = &self.joints[4];
        let mut best: Option<f64> = None;
        for d in [b, Vector2::new(-b.y, b.x)] {
            let (p, s) = (cross(cx, d), cross(cy, d));
            if p.abs() < 1e-9 && s.abs() < 1e-9 {
                continue;
            }
            let base = (-p).atan2(s);
            for k in [-2.0, -1.0, 0.0, 1.0, 2.0] {
                let r = base + k * PI;
                if r < joint.lower + margin || r > joint.upper - margin {
                    continue;
                }
                if best.is_none_or(|b| (r - reference).abs() < (b - reference).abs()) {
                    best = Some(r);
                }
            }
        }
        best.unwrap_or(q[4])
    }

    fn solve_with_roll(
        &self,
        target: &Point3<f64>,
        pitch: f64,
        roll: f64,
        margin: f64,
        near: Option<&Joints>,
    ) -> Result<IkSolution, IkError> {
        let pl = &self.planar;
        let [j1, j2, _, _, j5] = [0, 1, 2, 3, 4].map(|i| &self.joints[i]);
        // Tool point seen from the wrist-flex frame (after its rotation), for this roll.
        let tail = (j5.origin * rot_z(roll) * self.tool).translation.vector;
        // Sideways offset of the arm plane from the pan axis.
        let lateral = pl.lateral_base + pl.a3.z + pl.a4.z + tail.z;
        let p_pan = j1.origin.inverse_transform_point(target).coords;
        let r = p_pan.xy().norm();
        if r < lateral.abs() + 1e-9 {
            return Err(IkError::TooClose {
                distance_m: r,
                offset_m: lateral.abs(),
            });
        }
        let alpha = p_pan.y.atan2(p_pan.x);
        let beta = pl.lateral_dir.y.atan2(pl.lateral_dir.x);
        let spread = (lateral / r).acos();
        let (l1, l2, l3) = (pl.a3.xy().norm(), pl.a4.xy().norm(), tail.xy().norm());
        let (phi1, phi2, phi3) = (angle_2d(pl.a3), angle_2d(pl.a4), angle_2d(tail));
        let mut candidates: Vec<Joints> = Vec::with_capacity(4);
        let mut reach_error = None;
        for q1 in [alpha - beta - spread, alpha - beta + spread] {
            let q1 = wrap_angle(q1);
            // Target in the shoulder-lift frame (before the lift rotation).
            let p_pan_rot = rot_z(-q1).transform_point(&Point3::from(p_pan));
            let p2 = j2.origin.inverse_transform_point(&p_pan_rot).coords;
            // Outward: away from the pan axis, in the arm plane.
            let rel = p2 - pl.pan_point;
            let mut out = rel - pl.up * rel.dot(&pl.up);
            out.z = 0.0;
            if out.norm() < 1e-9 {
                continue;
            }
            let out = out.normalize();
            let approach = out * pitch.cos() - pl.up * pitch.sin();
            let approach_angle = approach.y.atan2(approach.x);
            // Absolute angle of the last link (x axis of the wrist-flex frame).
            let alpha3 = approach_angle - pl.approach_in_wrist;
            let beta3 = alpha3 + phi3;
            let w = Vector2::new(p2.x - l3 * beta3.cos(), p2.y - l3 * beta3.sin());
            let d = w.norm();
            let (min_r, max_r) = ((l1 - l2).abs(), l1 + l2);
            if d > max_r || d < min_r {
                reach_error = Some(IkError::OutOfReach {
                    needed_m: d,
                    min_m: min_r,
                    max_m: max_r,
                });
                continue;
            }
            let cos_g = ((d * d - l1 * l1 - l2 * l2) / (2.0 * l1 * l2)).clamp(-1.0, 1.0);
            for gamma in [cos_g.acos(), -cos_g.acos()] {
                let b1 = w.y.atan2(w.x) - (l2 * gamma.sin()).atan2(l1 + l2 * gamma.cos());
                let b2 = b1 + gamma;
                let q2 = b1 - phi1;
                let alpha2 = b2 - phi2;
                let q3 = alpha2 - pl.theta3 - q2;
                let q4 = alpha3 - pl.theta4 - alpha2;
                candidates.push([q1, wrap_angle(q2), wrap_angle(q3), wrap_angle(q4), roll]);
            }
        }
        let shrink = |j: &Joint, q: f64| j.margin(q) - margin;
        let mut worst: Option<(f64, usize, f64)> = None;
        let mut valid: Vec<(Joints, f64)> = Vec::new();
        for c in &candidates {
            let (m, idx) = self
                .joints
                .iter()
                .zip(c)
                .enumerate()
                .map(|(i, (j, q))| (shrink(j, *q), i))
                .fold((f64::INFINITY, 0), |a, b| if b.0 < a.0 { b } else { a });
            if m >= 0.0 {
                valid.push((*c, m + margin));
            } else if worst.is_none_or(|w| m > w.0) {
                worst = Some((m, idx, c[idx]));
            }
        }
        let pick = match near {
            Some(n) => valid.iter().min_by(|a, b| {
                let da: f64 = a.0.iter().zip(n).map(|(x, y)| (x - y).powi(2)).sum();
                let db: f64 = b.0.iter().zip(n).map(|(x, y)| (x - y).powi(2)).sum();
                da.total_cmp(&db)
            }),
            None => valid.iter().max_by(|a, b| a.1.total_cmp(&b.1)),
        };
        if let Some((joints, min_margin)) = pick {
            return Ok(IkSolution {
                joints: *joints,
                pitch,
                min_margin: *min_margin,
            });
        }
        if let Some((_, idx, value)) = worst {
            let j = &self.joints[idx];
            return Err(IkError::JointLimit {
                joint: j.name.clone(),
                value,
                lower: j.lower + margin,
                upper: j.upper - margin,
            });
        }
        Err(reach_error.unwrap_or(IkError::TooClose {
            distance_m: r,
            offset_m: lateral.abs(),
        }))
    }
}

/// Checks the pan + three parallel pitch joints + roll structure and derives the planar constants.
fn derive_planar(joints: &[Joint], tool: &Isometry3<f64>) -> Result<Planar, String> {
    let (m1, m2, m3, m4, m5) = (
        &joints[0].origin,
        &joints[1].origin,
        &joints[2].origin,
        &joints[3].origin,
        &joints[4].origin,
    );
    let z = Vector3::z();
    // The pan axis must be vertical in the arm frame.
    let pan_axis = m1.rotation * z;
    if pan_axis.cross(&z).norm() > STRUCTURE_TOLERANCE {
        return Err(format!(
            "the first joint ({}) must turn about the vertical",
            joints[0].name
        ));
    }
    // Elbow and wrist flex must turn about axes parallel to the shoulder lift.
    for (m, j) in [(m3, &joints[2]), (m4, &joints[3])] {
        if (m.rotation * z - z).norm() > STRUCTURE_TOLERANCE {
            return Err(format!(
                "joint {} must be parallel to the shoulder lift (same z axis)",
                j.name
            ));
        }
    }
    // The lift axis must be horizontal.
    let lateral_dir = m2.rotation * z;
    if lateral_dir.z.abs() > STRUCTURE_TOLERANCE {
        return Err(format!(
            "joint {} must turn about a horizontal axis",
            joints[1].name
        ));
    }
    let theta3 = {
        let x = m3.rotation * Vector3::x();
        x.y.atan2(x.x)
    };
    let theta4 = {
        let x = m4.rotation * Vector3::x();
        x.y.atan2(x.x)
    };
    // World up in the pan frame (pan frame z is ±vertical), then in the lift frame.
    let up_pan = m1.rotation.inverse() * z;
    let up = m2.rotation.inverse() * up_pan;
    let pan_point = m2.inverse_transform_point(&Point3::origin()).coords;
    // The roll axis toward the tool, in the wrist-flex frame: it must lie in the arm plane.
    // The approach direction is the roll axis, pointing toward the tool.
    let roll_axis = m5.rotation * z;
    let approach = roll_axis * tool.translation.vector.z.signum();
    if approach.z.abs() > STRUCTURE_TOLERANCE {
        return Err(format!(
            "joint {} must lie in the arm plane",
            joints[4].name
        ));
    }
    let approach_in_wrist = approach.y.atan2(approach.x);
    Ok(Planar {
        theta3,
        a3: m3.translation.vector,
        theta4,
        a4: m4.translation.vector,
        approach_in_wrist,
        pan_point,
        up,
        lateral_dir,
        lateral_base: m2.translation.vector.dot(&lateral_dir),
    })
}

/// Pitch candidates from straight down to `min_pitch`, in `step` decrements.
pub fn pitch_candidates(min_pitch: f64, step: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut p = FRAC_PI_2;
    while p >= min_pitch - 1e-9 {
        out.push(p);
        p -= step.max(1e-3);
    }
    out
}

#[cfg(test)]
mod tests;
