use std::f64::consts::FRAC_PI_2;

use nalgebra::{Point3, Vector2};
use proptest::prelude::*;

use super::*;

fn so101() -> ArmModel {
    ArmModel::so101().expect("shipped model parses")
}

/// FK(IK(p)) = p within this (issue 7).
const POSITION_TOLERANCE_M: f64 = 1e-4;

#[test]
fn shipped_geometry_matches_the_published_dimensions() {
    let m = so101();
    let pts = m.joint_points(&[0.0; JOINTS]);
    // hardware.md: shoulder-lift axis about 0.149 m above the base origin.
    assert!((pts[1].z - 0.149).abs() < 0.002, "{}", pts[1].z);
    // Upper arm ~0.116 m, forearm ~0.135 m.
    assert!(((pts[2] - pts[1]).norm() - 0.116).abs() < 0.003);
    assert!(((pts[3] - pts[2]).norm() - 0.135).abs() < 0.003);
    // Wrist flex axis to the tool point ~0.159 m.
    assert!(((pts[5] - pts[3]).norm() - 0.159).abs() < 0.005);
}

#[test]
fn vertical_grasp_in_front_round_trips() {
    let m = so101();
    let target = Point3::new(0.0, -0.25, 0.03);
    let sol = m.ik(&target, FRAC_PI_2, None, 0.0, None).unwrap();
    let got = m.tool_point(&sol.joints);
    assert!((got - target).norm() < POSITION_TOLERANCE_M, "{got}");
    assert!((m.pitch_of(&sol.joints) - FRAC_PI_2).abs() < 1e-6);
}

#[test]
fn far_and_too_close_targets_are_unreachable() {
    let m = so101();
    assert!(matches!(
        m.ik(&Point3::new(0.7, 0.0, 0.05), FRAC_PI_2, None, 0.0, None),
        Err(IkError::OutOfReach { .. })
    ));
    assert!(m
        .ik(&Point3::new(0.0, 0.0, 0.9), 0.0, None, 0.0, None)
        .is_err());
    // Straight down on the arm's own base.
    assert!(m
        .ik(&Point3::new(0.0, 0.0, 0.0), FRAC_PI_2, None, 0.0, None)
        .is_err());
}

#[test]
fn jaw_alignment_closes_along_a_board_axis() {
    let m = so101();
    let target = Point3::new(0.1, -0.2, 0.03);
    let align = Vector2::new(1.0, 0.0);
    let sol = m.ik(&target, FRAC_PI_2, Some(align), 0.0, None).unwrap();
    let closing = m.gripper_link(&sol.joints).rotation * m.gripper.closing_axis;
    let h = Vector2::new(closing.x, closing.y).normalize();
    // Parallel or perpendicular to the board axis.
    let cross = (h.x * align.y - h.y * align.x).abs();
    let dot = h.dot(&align).abs();
    assert!(cross < 1e-3 || dot < 1e-3, "closing {h}");
    assert!((m.tool_point(&sol.joints) - target).norm() < POSITION_TOLERANCE_M);
}

#[test]
fn margin_excludes_solutions_near_limits() {
    let m = so101();
    let target = Point3::new(0.0, -0.25, 0.03);
    let sol = m.ik(&target, FRAC_PI_2, None, 0.1, None).unwrap();
    assert!(sol.min_margin >= 0.1 - 1e-9);
    let huge = m.ik(&target, FRAC_PI_2, None, 1.5, None);
    assert!(matches!(huge, Err(IkError::JointLimit { .. })), "{huge:?}");
}

#[test]
fn bad_models_are_rejected_with_reasons() {
    let two_joints = SO101_TOML.replacen("[[joints]]", "[[jointz]]", 1);
    assert!(ArmModel::parse(&two_joints, "t").is_err());
    let bad_limits = SO101_TOML.replace("limits = [-1.69, 1.69]", "limits = [1.69, -1.69]");
    let err = ArmModel::parse(&bad_limits, "t").unwrap_err();
    assert!(err.to_string().contains("elbow_flex"), "{err}");
    let tilted = SO101_TOML.replace(
        "rpy = [0.0, 0.0, 1.5707963267948966]\nlimits = [-1.69",
        "rpy = [0.3, 0.0, 1.5707963267948966]\nlimits = [-1.69",
    );
    let err = ArmModel::parse(&tilted, "t").unwrap_err();
    assert!(err.to_string().contains("parallel"), "{err}");
}

#[test]
fn gripper_width_and_angle_invert() {
    let g = so101().gripper;
    for w in [0.0, 0.01, 0.03, 0.05] {
        assert!((g.width_for_angle(g.angle_for_width(w)) - w).abs() < 1e-9);
    }
    assert!(g.max_width() > 0.08);
}

fn joints_strategy() -> impl Strategy<Value = Joints> {
    let m = so101();
    let r = |i: usize| m.joints[i].lower..m.joints[i].upper;
    (r(0), r(1), r(2), r(3), r(4)).prop_map(|(a, b, c, d, e)| [a, b, c, d, e])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Over the board workspace: every answer lands on the target, inside the
    /// limits, at the asked pitch.
    #[test]
    fn ik_answers_land_on_target(
        r in 0.08f64..0.45,
        bearing in -1.8f64..1.8,
        z in -0.02f64..0.25,
        pitch_deg in 0.0f64..90.0,
        align in proptest::option::of(-3.2f64..3.2),
    ) {
        let m = so101();
        let target = Point3::new(r * bearing.cos(), r * bearing.sin(), z);
        let pitch = pitch_deg.to_radians();
        let align = align.map(|a| Vector2::new(a.cos(), a.sin()));
        if let Ok(sol) = m.ik(&target, pitch, align, 0.0, None) {
            let got = m.tool_point(&sol.joints);
            prop_assert!((got - target).norm() < POSITION_TOLERANCE_M, "{} vs {}", got, target);
            prop_assert!(m.min_margin(&sol.joints) >= -1e-12);
            prop_assert!((m.pitch_of(&sol.joints) - pitch).abs() < 1e-6);
        }
    }

    /// Completeness: a pose the arm can take (approach pointing outward) is found again.
    #[test]
    fn reachable_poses_are_found(q in joints_strategy()) {
        let m = so101();
        let p = m.tool_point(&q);
        let pitch = m.pitch_of(&q);
        let g = m.gripper_link(&q);
        let approach = g.rotation * nalgebra::Vector3::z() * m.tool.translation.vector.z.signum();
        let pan_axis = m.joint_points(&q)[0];
        let radial = Vector2::new(p.x - pan_axis.x, p.y - pan_axis.y);
        // Only poses whose approach points away from the pan axis are
        // described by a pitch in -90..90 degrees.
        prop_assume!(radial.norm() > 0.05);
        prop_assume!(Vector2::new(approach.x, approach.y).dot(&radial) > 1e-4);
        let sol = m.ik(&p, pitch, None, 0.0, Some(&q));
        prop_assert!(sol.is_ok(), "{:?} for q {:?}", sol, q);
        let sol = sol.unwrap();
        prop_assert!((m.tool_point(&sol.joints) - p).norm() < POSITION_TOLERANCE_M);
    }

    /// Far away is always reported unreachable.
    #[test]
    fn beyond_reach_is_unreachable(r in 0.62f64..2.0, bearing in -3.1f64..3.1, z in -0.3f64..0.5, pitch in -1.5f64..1.57) {
        let m = so101();
        let target = Point3::new(r * bearing.cos(), r * bearing.sin(), z);
        prop_assert!(m.ik(&target, pitch, None, 0.0, None).is_err());
    }
}
