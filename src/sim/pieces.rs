//! Staunton pieces as meshes: solids of revolution for all but the knight,
//! whose head is a neck and muzzle of ellipsoids with ears, so it reads as a
//! horse from the side.
//!
//! Profiles are in Staunton units (king 9.5 tall) as (radius, height)
//! pairs; base diameters are 40-50 % of each piece's height.

use nalgebra::{Matrix3, Rotation3, Vector3};
use shakmaty::Role;

use super::mesh::{cuboid, lathe, sphere, Mesh};
use super::world::staunton_units;

/// Points of a ball of radius `r` centred at height `zc`, from `from_deg`
/// (0 = bottom) to the top.
fn ball(r: f64, zc: f64, from_deg: f64, steps: usize) -> Vec<(f64, f64)> {
    (0..=steps)
        .map(|i| {
            let a = (from_deg + (180.0 - from_deg) * i as f64 / steps as f64).to_radians();
            (r * a.sin(), zc - r * a.cos())
        })
        .collect()
}

/// The turned base shared by all pieces: foot, bead and collar.
fn foot(r: f64) -> Vec<(f64, f64)> {
    vec![
        (0.0, 0.0),
        (r, 0.0),
        (r, 0.35),
        (r * 0.86, 0.55),
        (r * 0.9, 0.72),
        (r * 0.66, 1.0),
    ]
}

/// The (radius, height) profile of a piece in Staunton units.
pub fn profile(role: Role) -> Vec<(f64, f64)> {
    let mut p;
    match role {
        Role::Pawn => {
            p = foot(1.2);
            p.extend([(0.5, 2.2), (0.78, 2.45), (0.78, 2.6), (0.42, 2.8)]);
            p.extend(ball(1.05, 3.95, 25.0, 8));
        }
        Role::Rook => {
            p = foot(1.3);
            p.extend([
                (0.78, 3.7),
                (1.02, 3.95),
                (1.05, 5.5),
                (0.75, 5.5),
                (0.75, 5.15),
                (0.0, 5.15),
            ]);
        }
        Role::Knight => {
            p = foot(1.35);
            p.extend([(0.95, 1.25), (0.0, 1.3)]);
        }
        Role::Bishop => {
            p = foot(1.5);
            p.extend([
                (0.55, 3.8),
                (1.0, 4.0),
                (1.0, 4.15),
                (0.5, 4.3),
                (0.85, 4.65),
                (0.97, 5.15),
                (0.82, 5.75),
                (0.45, 6.2),
                (0.18, 6.45),
            ]);
            p.extend(ball(0.28, 6.72, 10.0, 5));
        }
        Role::Queen => {
            p = foot(1.85);
            p.extend([
                (0.68, 4.8),
                (1.18, 5.1),
                (1.18, 5.3),
                (0.72, 5.5),
                (0.82, 6.0),
                (1.28, 7.2),
                (1.12, 7.32),
                (0.7, 7.42),
                (0.5, 7.7),
            ]);
            p.extend(ball(0.38, 8.12, 20.0, 6));
        }
        Role::King => {
            p = foot(2.0);
            p.extend([
                (0.72, 5.2),
                (1.22, 5.5),
                (1.22, 5.7),
                (0.76, 5.9),
                (0.86, 6.4),
                (1.22, 7.3),
                (1.02, 7.5),
                (0.42, 7.8),
                (0.0, 7.85),
            ]);
        }
    }
    p
}

/// A piece's mesh in millimetres, standing on z = 0, knight facing +x.
/// `unit_mm` is one Staunton unit.
pub fn piece_mesh(role: Role, unit_mm: f64, segments: usize) -> Mesh {
    let scaled: Vec<(f64, f64)> = profile(role)
        .into_iter()
        .map(|(r, z)| (r * unit_mm, z * unit_mm))
        .collect();
    let mut m = lathe(&scaled, segments);
    let u = unit_mm;
    let id = Matrix3::identity();
    match role {
        Role::King => {
            // The cross.
            let post = cuboid(Vector3::new(0.16, 0.16, 0.85) * u);
            m.append(&post, &id, Vector3::new(0.0, 0.0, 8.65) * u);
            let bar = cuboid(Vector3::new(0.6, 0.16, 0.16) * u);
            m.append(&bar, &id, Vector3::new(0.0, 0.0, 8.95) * u);
        }
        Role::Knight => {
            let ball = sphere(segments, segments / 2);
            let ellipsoid = |centre: Vector3<f64>, radii: Vector3<f64>, tilt_deg: f64| {
                let rot = Rotation3::from_axis_angle(&Vector3::y_axis(), tilt_deg.to_radians());
                (
                    rot.matrix() * Matrix3::from_diagonal(&(radii * u)),
                    centre * u,
                )
            };
            // Neck rising from the base, leaning back.
            let (l, o) = ellipsoid(
                Vector3::new(-0.25, 0.0, 3.0),
                Vector3::new(1.05, 0.75, 2.0),
                -12.0,
            );
            m.append(&ball, &l, o);
            // Head and muzzle pointing forward and down.
            let (l, o) = ellipsoid(
                Vector3::new(0.75, 0.0, 4.6),
                Vector3::new(1.55, 0.62, 0.72),
                28.0,
            );
            m.append(&ball, &l, o);
            // Mane along the back of the neck.
            let (l, o) = ellipsoid(
                Vector3::new(-0.95, 0.0, 3.7),
                Vector3::new(0.45, 0.3, 1.7),
                -18.0,
            );
            m.append(&ball, &l, o);
            // Ears.
            for side in [-0.28, 0.28] {
                let (l, o) = ellipsoid(
                    Vector3::new(-0.1, side, 5.55),
                    Vector3::new(0.22, 0.14, 0.45),
                    -10.0,
                );
                m.append(&ball, &l, o);
            }
        }
        _ => {}
    }
    m
}

/// The height of a piece in millimetres for a unit size.
pub fn height_mm(role: Role, unit_mm: f64) -> f64 {
    staunton_units(role) * unit_mm
}

/// Discs (centre height, radius) that approximate a piece for shadows.
pub fn shadow_discs(role: Role, unit_mm: f64) -> Vec<(f64, f64)> {
    let prof = profile(role);
    let h = staunton_units(role);
    let mut discs: Vec<(f64, f64)> = (0..SHADOW_DISCS)
        .map(|i| {
            let z = h * (i as f64 + 0.5) / SHADOW_DISCS as f64;
            (z * unit_mm, radius_at(&prof, z).max(0.35) * unit_mm)
        })
        .collect();
    if role == Role::Knight {
        // The head sticks out forward; widen the upper discs.
        for d in discs.iter_mut().skip(SHADOW_DISCS / 4) {
            d.1 = d.1.max(1.0 * unit_mm);
        }
    }
    discs
}

/// Discs per piece for the shadow raster (enough for a smooth outline).
const SHADOW_DISCS: usize = 12;

/// Largest radius of the profile at a height (0 above the top).
fn radius_at(prof: &[(f64, f64)], z: f64) -> f64 {
    let mut best: f64 = 0.0;
    for w in prof.windows(2) {
        let ((r0, z0), (r1, z1)) = (w[0], w[1]);
        let (lo, hi) = if z0 <= z1 { (z0, z1) } else { (z1, z0) };
        if z >= lo && z <= hi {
            let r = if (z1 - z0).abs() < 1e-12 {
                r0.max(r1)
            } else {
                r0 + (r1 - r0) * (z - z0) / (z1 - z0)
            };
            best = best.max(r);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top_and_base_width(role: Role) -> (f64, f64) {
        let m = piece_mesh(role, 1.0, 16);
        let top = m.positions.iter().map(|p| p.z).fold(0.0, f64::max);
        let base = m
            .positions
            .iter()
            .filter(|p| p.z.abs() < 1e-9)
            .map(|p| (p.x * p.x + p.y * p.y).sqrt())
            .fold(0.0, f64::max);
        (top, 2.0 * base)
    }

    #[test]
    fn staunton_heights_and_bases() {
        for role in Role::ALL {
            let (top, base) = top_and_base_width(role);
            let want = staunton_units(role);
            assert!(
                (top - want).abs() < 0.15,
                "{role:?}: height {top}, want {want}"
            );
            let ratio = base / top;
            assert!(
                (0.4..=0.5).contains(&ratio),
                "{role:?}: base/height {ratio}"
            );
        }
    }

    #[test]
    fn knight_is_not_round() {
        // Its head reaches further forward (+x) than sideways (y).
        let m = piece_mesh(Role::Knight, 1.0, 16);
        let upper = m.positions.iter().filter(|p| p.z > 4.0);
        let (mut fx, mut sy): (f64, f64) = (0.0, 0.0);
        for p in upper {
            fx = fx.max(p.x);
            sy = sy.max(p.y.abs());
        }
        assert!(fx > 1.8 * sy, "forward {fx}, sideways {sy}");
    }
}
