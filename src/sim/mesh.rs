//! Triangle meshes for the rasteriser: solids of revolution, boxes,
//! ellipsoids and capsules, built in millimetres.

use nalgebra::{Matrix3, Point3, Rotation3, Vector3};

/// An indexed triangle mesh with per-vertex normals.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Mesh {
    pub positions: Vec<Point3<f64>>,
    pub normals: Vec<Vector3<f64>>,
    pub triangles: Vec<[u32; 3]>,
}

impl Mesh {
    /// Appends another mesh, transformed by `linear` (rotation/scale) then `offset`.
    pub fn append(&mut self, other: &Mesh, linear: &Matrix3<f64>, offset: Vector3<f64>) {
        let base = self.positions.len() as u32;
        let normal_m = linear
            .try_inverse()
            .map(|m| m.transpose())
            .unwrap_or(*linear);
        self.positions.extend(
            other
                .positions
                .iter()
                .map(|p| Point3::from(linear * p.coords + offset)),
        );
        self.normals.extend(
            other
                .normals
                .iter()
                .map(|n| (normal_m * n).try_normalize(1e-12).unwrap_or(Vector3::z())),
        );
        self.triangles.extend(
            other
                .triangles
                .iter()
                .map(|t| [t[0] + base, t[1] + base, t[2] + base]),
        );
    }

    /// Recomputes smooth normals as area-weighted averages of face normals.
    fn smooth_normals(&mut self) {
        let mut acc = vec![Vector3::zeros(); self.positions.len()];
        for t in &self.triangles {
            let [a, b, c] = t.map(|i| self.positions[i as usize]);
            let n = (b - a).cross(&(c - a));
            for &i in t {
                acc[i as usize] += n;
            }
        }
        self.normals = acc
            .into_iter()
            .map(|n| n.try_normalize(1e-12).unwrap_or(Vector3::z()))
            .collect();
    }
}

/// A solid of revolution about +z from a profile of (radius, height) points
/// listed bottom to top; points with radius 0 close the solid.
pub fn lathe(profile: &[(f64, f64)], segments: usize) -> Mesh {
    let segments = segments.max(3);
    let mut m = Mesh::default();
    for &(r, z) in profile {
        for s in 0..segments {
            let a = s as f64 / segments as f64 * std::f64::consts::TAU;
            m.positions.push(Point3::new(r * a.cos(), r * a.sin(), z));
        }
    }
    for ring in 0..profile.len().saturating_sub(1) {
        let (r0, r1) = ((ring * segments) as u32, ((ring + 1) * segments) as u32);
        for s in 0..segments as u32 {
            let s1 = (s + 1) % segments as u32;
            m.triangles.push([r0 + s, r0 + s1, r1 + s1]);
            m.triangles.push([r0 + s, r1 + s1, r1 + s]);
        }
    }
    m.smooth_normals();
    m
}

/// An axis-aligned box with flat faces (its own vertices per face).
pub fn cuboid(half: Vector3<f64>) -> Mesh {
    let mut m = Mesh::default();
    let faces: [(Vector3<f64>, Vector3<f64>, Vector3<f64>); 6] = [
        (Vector3::x(), Vector3::y(), Vector3::z()),
        (-Vector3::x(), Vector3::z(), Vector3::y()),
        (Vector3::y(), Vector3::z(), Vector3::x()),
        (-Vector3::y(), Vector3::x(), Vector3::z()),
        (Vector3::z(), Vector3::x(), Vector3::y()),
        (-Vector3::z(), Vector3::y(), Vector3::x()),
    ];
    for (n, u, v) in faces {
        let base = m.positions.len() as u32;
        for (su, sv) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)] {
            let p = n + u * su + v * sv;
            m.positions
                .push(Point3::new(p.x * half.x, p.y * half.y, p.z * half.z));
            m.normals.push(n);
        }
        m.triangles.push([base, base + 1, base + 2]);
        m.triangles.push([base, base + 2, base + 3]);
    }
    m
}

/// A unit sphere as a lathe (scale it for ellipsoids).
pub fn sphere(segments: usize, rings: usize) -> Mesh {
    let rings = rings.max(3);
    let profile: Vec<(f64, f64)> = (0..=rings)
        .map(|i| {
            let a = std::f64::consts::PI * (i as f64 / rings as f64);
            (a.sin(), -a.cos())
        })
        .collect();
    lathe(&profile, segments)
}

/// A capsule between two points.
pub fn capsule(a: Point3<f64>, b: Point3<f64>, radius: f64, segments: usize) -> Mesh {
    let axis = b - a;
    let len = axis.norm();
    let rings = 4;
    let mut profile = Vec::new();
    for i in 0..=rings {
        let t = std::f64::consts::FRAC_PI_2 * (i as f64 / rings as f64);
        profile.push((radius * t.sin(), -radius * t.cos()));
    }
    for i in 0..=rings {
        let t = std::f64::consts::FRAC_PI_2 * (i as f64 / rings as f64);
        profile.push((radius * t.cos(), len + radius * t.sin()));
    }
    let local = lathe(&profile, segments);
    let rot = Rotation3::rotation_between(&Vector3::z(), &axis)
        .unwrap_or_else(|| Rotation3::from_axis_angle(&Vector3::x_axis(), std::f64::consts::PI));
    let mut m = Mesh::default();
    let lin = if len > 1e-9 {
        *rot.matrix()
    } else {
        Matrix3::identity()
    };
    m.append(&local, &lin, a.coords);
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lathe_builds_rings_and_outward_normals() {
        let m = lathe(&[(0.0, 0.0), (1.0, 0.0), (1.0, 2.0), (0.0, 2.0)], 8);
        assert_eq!(m.positions.len(), 32);
        assert_eq!(m.triangles.len(), 3 * 8 * 2);
        // A vertex on the side (ring 1 and 2) has a normal pointing away from the axis.
        let i = 8 + 2;
        let p = m.positions[i];
        let n = m.normals[i];
        assert!(n.x * p.x + n.y * p.y > 0.0, "{p:?} {n:?}");
    }

    #[test]
    fn capsule_spans_its_endpoints() {
        let a = Point3::new(0.0, 0.0, 0.0);
        let b = Point3::new(100.0, 0.0, 0.0);
        let m = capsule(a, b, 10.0, 12);
        let max_x = m.positions.iter().map(|p| p.x).fold(f64::MIN, f64::max);
        let min_x = m.positions.iter().map(|p| p.x).fold(f64::MAX, f64::min);
        assert!((max_x - 110.0).abs() < 1e-6 && (min_x + 10.0).abs() < 1e-6);
    }
}
