//! Plane-to-plane projective maps (homographies), fitted by the normalised DLT.

use nalgebra::{DMatrix, Matrix3, Vector3};

/// A 2D point in some frame (image pixels, board lattice units, ...).
pub type Pt = [f64; 2];

/// A homography `to_from_from`: maps points of one plane to another.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Homography {
    pub m: Matrix3<f64>,
}

impl Homography {
    pub fn identity() -> Homography {
        Homography {
            m: Matrix3::identity(),
        }
    }

    /// Maps a point; `None` when it goes to infinity.
    pub fn apply(&self, p: Pt) -> Option<Pt> {
        let v = self.m * Vector3::new(p[0], p[1], 1.0);
        if v.z.abs() < 1e-12 {
            return None;
        }
        Some([v.x / v.z, v.y / v.z])
    }

    /// The inverse map; `None` for a singular matrix.
    pub fn inverse(&self) -> Option<Homography> {
        self.m.try_inverse().map(|m| Homography { m })
    }

    /// Least-squares fit of `dst = H(src)` over all pairs (at least 4, not all
    /// collinear). Points are normalised first (Hartley) for conditioning.
    pub fn fit(src: &[Pt], dst: &[Pt]) -> Option<Homography> {
        if src.len() != dst.len() || src.len() < 4 {
            return None;
        }
        let ts = normaliser(src)?;
        let td = normaliser(dst)?;
        let n = src.len();
        let mut a = DMatrix::<f64>::zeros(2 * n, 9);
        for i in 0..n {
            let s = ts * Vector3::new(src[i][0], src[i][1], 1.0);
            let d = td * Vector3::new(dst[i][0], dst[i][1], 1.0);
            let (x, y) = (s.x, s.y);
            let (u, v) = (d.x, d.y);
            let r = 2 * i;
            a.row_mut(r)
                .copy_from_slice(&[-x, -y, -1.0, 0.0, 0.0, 0.0, u * x, u * y, u]);
            a.row_mut(r + 1)
                .copy_from_slice(&[0.0, 0.0, 0.0, -x, -y, -1.0, v * x, v * y, v]);
        }
        // The solution is the eigenvector of AᵀA with the smallest eigenvalue.
        let ata = a.transpose() * &a;
        let eig = nalgebra::SymmetricEigen::new(ata);
        let (mut best, mut best_val) = (0, f64::INFINITY);
        for (i, v) in eig.eigenvalues.iter().enumerate() {
            if *v < best_val {
                best_val = *v;
                best = i;
            }
        }
        let h = eig.eigenvectors.column(best);
        let hn = Matrix3::new(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8]);
        // Second-smallest eigenvalue near zero too means a degenerate set.
        let mut vals: Vec<f64> = eig.eigenvalues.iter().copied().collect();
        vals.sort_by(|a, b| a.total_cmp(b));
        if n > 4 && vals[1] < 1e-10 * vals[8].max(1e-300) {
            return None;
        }
        let m = td.try_inverse()? * hn * ts;
        if m[(2, 2)].abs() < 1e-15 && m.norm() < 1e-15 {
            return None;
        }
        let scale = if m[(2, 2)].abs() > 1e-12 {
            m[(2, 2)]
        } else {
            m.norm()
        };
        let h = Homography { m: m / scale };
        if !h.m.iter().all(|v| v.is_finite()) || h.m.determinant().abs() < 1e-15 {
            return None;
        }
        Some(h)
    }
}

/// Similarity that moves the centroid to 0 and the mean distance to √2.
fn normaliser(p: &[Pt]) -> Option<Matrix3<f64>> {
    let n = p.len() as f64;
    let cx = p.iter().map(|q| q[0]).sum::<f64>() / n;
    let cy = p.iter().map(|q| q[1]).sum::<f64>() / n;
    let d = p
        .iter()
        .map(|q| ((q[0] - cx).powi(2) + (q[1] - cy).powi(2)).sqrt())
        .sum::<f64>()
        / n;
    if d < 1e-12 || !d.is_finite() {
        return None;
    }
    let s = std::f64::consts::SQRT_2 / d;
    Some(Matrix3::new(
        s,
        0.0,
        -s * cx,
        0.0,
        s,
        -s * cy,
        0.0,
        0.0,
        1.0,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_recovers_a_known_perspective_map() {
        let truth = Homography {
            m: Matrix3::new(40.0, 5.0, 100.0, -3.0, 38.0, 50.0, 0.001, 0.002, 1.0),
        };
        let src: Vec<Pt> = (0..9)
            .flat_map(|i| (0..9).map(move |j| [i as f64, j as f64]))
            .collect();
        let dst: Vec<Pt> = src.iter().map(|p| truth.apply(*p).unwrap()).collect();
        let h = Homography::fit(&src, &dst).unwrap();
        for (s, d) in src.iter().zip(&dst) {
            let q = h.apply(*s).unwrap();
            assert!((q[0] - d[0]).abs() < 1e-6 && (q[1] - d[1]).abs() < 1e-6);
        }
        let back = h.inverse().unwrap().apply(dst[10]).unwrap();
        assert!((back[0] - src[10][0]).abs() < 1e-9);
    }

    #[test]
    fn collinear_points_are_refused() {
        let src: Vec<Pt> = (0..6).map(|i| [i as f64, 2.0 * i as f64]).collect();
        let dst = src.clone();
        assert!(Homography::fit(&src, &dst).is_none());
    }
}
