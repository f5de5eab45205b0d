//! Robust fit of the board's 9x9 line lattice to X-corner candidates.
//!
//! RANSAC-style: every hypothesis is one lattice cell (a seed corner, two
//! neighbours along different axes, and the fourth corner they predict),
//! turned into a homography `lattice_from_image` and grown outward, refitting
//! on the corners that land near integer lattice nodes. The hypothesis that
//! explains the most corners wins. Which 8x8 window of that (unbounded)
//! lattice is the board is then decided by the checker pattern: squares on
//! the board alternate light/dark, the frame and table around it do not.

use super::homography::{Homography, Pt};
use super::image::GrayImage;
use super::xcorners::{phase_diff, XCorner};

/// Neighbours of a seed considered for a cell hypothesis.
const SEED_NEIGHBOURS: usize = 8;
/// Seeds tried (strongest corners first).
const MAX_SEEDS: usize = 150;
/// A corner within this distance of a lattice node (in cell units) supports
/// it while growing; tighter at the end. A quarter cell is far outside the
/// sub-pixel noise of a real corner and well inside half a cell.
const GROW_TOLERANCE: f64 = 0.22;
const FINAL_TOLERANCE: f64 = 0.15;
/// A corner's bright-sector direction must be within this of what its
/// lattice node's parity predicts (pi/2 apart for the two parities);
/// perspective bends it by well under this across a board.
const PHASE_TOLERANCE: f32 = 0.6;
/// Growth radii (cells around the seed) for the successive refits.
const GROW_RADII: [f64; 5] = [1.5, 2.5, 4.0, 6.0, 10.0];
/// Fewer lattice-consistent corners than this is not a board: a 3x3 patch of
/// inner corners is the least that pins down a perspective map robustly.
pub const MIN_INLIERS: usize = 9;

/// A lattice explaining some of the corners.
#[derive(Debug, Clone)]
pub struct LatticeFit {
    /// Image pixels -> lattice units (nodes at integers).
    pub lattice_from_image: Homography,
    /// The supporting corners: image position and lattice node.
    pub inliers: Vec<(Pt, [i32; 2])>,
}

/// Supporting corners: image point, lattice node, residual (cells).
type Support = Vec<(Pt, [i32; 2], f64)>;

fn dist2(a: Pt, b: Pt) -> f64 {
    (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)
}

/// Corners near lattice nodes, one per node (the closest), within `radius`
/// cells of the origin.
fn collect(
    h: &Homography,
    pts: &[Pt],
    phases: &[f32],
    phase0: f32,
    tol: f64,
    radius: f64,
) -> Support {
    let mut best: std::collections::HashMap<[i32; 2], (Pt, f64)> = Default::default();
    for (p, ph) in pts.iter().zip(phases) {
        let Some(q) = h.apply(*p) else { continue };
        let (ru, rv) = (q[0].round(), q[1].round());
        if ru.abs() > radius || rv.abs() > radius {
            continue;
        }
        let err = ((q[0] - ru).powi(2) + (q[1] - rv).powi(2)).sqrt();
        if err > tol {
            continue;
        }
        let node = [ru as i32, rv as i32];
        if !phase0.is_nan() && !ph.is_nan() {
            let want = if (node[0] + node[1]).rem_euclid(2) == 0 {
                phase0
            } else {
                phase0 + std::f32::consts::FRAC_PI_2
            };
            if phase_diff(*ph, want) > PHASE_TOLERANCE {
                continue;
            }
        }
        let e = best.entry(node).or_insert((*p, f64::INFINITY));
        if err < e.1 {
            *e = (*p, err);
        }
    }
    let mut out: Vec<_> = best.into_iter().map(|(n, (p, e))| (p, n, e)).collect();
    out.sort_by_key(|(_, n, _)| (n[0], n[1]));
    out
}

fn refit(inl: &[(Pt, [i32; 2], f64)]) -> Option<Homography> {
    let src: Vec<Pt> = inl.iter().map(|(p, _, _)| *p).collect();
    let dst: Vec<Pt> = inl
        .iter()
        .map(|(_, n, _)| [n[0] as f64, n[1] as f64])
        .collect();
    Homography::fit(&src, &dst)
}

/// Grows one cell hypothesis into a lattice; returns it with its support.
fn grow(
    seed: Homography,
    pts: &[Pt],
    phases: &[f32],
    phase0: f32,
) -> Option<(Homography, Support)> {
    let mut h = seed;
    for r in GROW_RADII {
        let inl = collect(&h, pts, phases, phase0, GROW_TOLERANCE, r);
        if inl.len() < 4 {
            return None;
        }
        h = refit(&inl)?;
    }
    let inl = collect(&h, pts, phases, phase0, FINAL_TOLERANCE, 100.0);
    if inl.len() < 4 {
        return None;
    }
    let h = refit(&inl)?;
    Some((h, collect(&h, pts, phases, phase0, FINAL_TOLERANCE, 100.0)))
}

/// The lattice that explains the most corners, or `None`.
pub fn fit_lattice(corners: &[XCorner]) -> Option<LatticeFit> {
    let pts: Vec<Pt> = corners.iter().map(|c| [c.x, c.y]).collect();
    let phases: Vec<f32> = corners.iter().map(|c| c.phase).collect();
    // Axis neighbours have the other bright-sector direction; diagonal ones
    // the same (unknown phases never veto).
    let axis_ok = |i: usize, j: usize| {
        phases[i].is_nan()
            || phases[j].is_nan()
            || phase_diff(phases[i], phases[j]) > std::f32::consts::FRAC_PI_4
    };
    let mut best: Option<(Homography, Support)> = None;
    let mut explained = vec![false; pts.len()];
    for s in 0..pts.len().min(MAX_SEEDS) {
        if explained[s] {
            continue;
        }
        let p0 = pts[s];
        let mut nb: Vec<usize> = (0..pts.len()).filter(|&i| i != s).collect();
        nb.sort_by(|&a, &b| dist2(pts[a], p0).total_cmp(&dist2(pts[b], p0)));
        nb.truncate(SEED_NEIGHBOURS);
        for (ia, &a) in nb.iter().enumerate() {
            for &b in &nb[ia + 1..] {
                let da = [pts[a][0] - p0[0], pts[a][1] - p0[1]];
                let db = [pts[b][0] - p0[0], pts[b][1] - p0[1]];
                let (la, lb) = (da[0].hypot(da[1]), db[0].hypot(db[1]));
                if la < 4.0 || lb < 4.0 || la / lb > 2.0 || lb / la > 2.0 {
                    continue;
                }
                let cos = (da[0] * db[0] + da[1] * db[1]) / (la * lb);
                if cos.abs() > 0.5 || !axis_ok(s, a) || !axis_ok(s, b) {
                    continue;
                }
                let pc = [p0[0] + da[0] + db[0], p0[1] + da[1] + db[1]];
                let tol2 = (0.25 * la.min(lb)).powi(2);
                let Some(c) = (0..pts.len())
                    .filter(|&i| dist2(pts[i], pc) < tol2)
                    .min_by(|&i, &j| dist2(pts[i], pc).total_cmp(&dist2(pts[j], pc)))
                else {
                    continue;
                };
                let Some(h0) = Homography::fit(
                    &[p0, pts[a], pts[b], pts[c]],
                    &[[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
                ) else {
                    continue;
                };
                let Some((h, inl)) = grow(h0, &pts, &phases, phases[s]) else {
                    continue;
                };
                if best.as_ref().is_none_or(|(_, b)| inl.len() > b.len()) {
                    for (i, p) in pts.iter().enumerate() {
                        if inl.iter().any(|(q, _, _)| q == p) {
                            explained[i] = true;
                        }
                    }
                    best = Some((h, inl));
                }
            }
        }
    }
    let (h, inl) = best?;
    if inl.len() < MIN_INLIERS {
        return None;
    }
    Some(LatticeFit {
        lattice_from_image: h,
        inliers: inl.into_iter().map(|(p, n, _)| (p, n)).collect(),
    })
}

/// Robust luminance of one lattice cell `[s, s+1] x [t, t+1]`: the median of
/// samples near its rim (a piece standing in the middle hides the centre).
pub fn cell_rim_luma(
    gray: &GrayImage,
    image_from_lattice: &Homography,
    s: i32,
    t: i32,
) -> Option<f32> {
    const OFFS: [f64; 3] = [0.15, 0.5, 0.85];
    let mut v = Vec::with_capacity(8);
    for a in OFFS {
        for b in OFFS {
            if a == 0.5 && b == 0.5 {
                continue;
            }
            let p = image_from_lattice.apply([s as f64 + a, t as f64 + b])?;
            v.push(gray.sample(p[0], p[1])?);
        }
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some((v[3] + v[4]) / 2.0)
}

/// Keeps only inliers with at least `MIN_CORE_NEIGHBOURS` inlier neighbours
/// among the 4 adjacent lattice nodes: a real board's corners come in a
/// connected patch, clutter that happens to land near a node does not.
pub const MIN_CORE_NEIGHBOURS: usize = 2;

/// The connected core of a lattice fit, refitted on it alone.
pub fn core(fit: &LatticeFit) -> Option<LatticeFit> {
    let nodes: std::collections::HashSet<[i32; 2]> = fit.inliers.iter().map(|(_, n)| *n).collect();
    let inliers: Vec<(Pt, [i32; 2])> = fit
        .inliers
        .iter()
        .filter(|(_, n)| {
            [[1, 0], [-1, 0], [0, 1], [0, -1]]
                .iter()
                .filter(|d| nodes.contains(&[n[0] + d[0], n[1] + d[1]]))
                .count()
                >= MIN_CORE_NEIGHBOURS
        })
        .cloned()
        .collect();
    if inliers.len() < MIN_INLIERS {
        return None;
    }
    let src: Vec<Pt> = inliers.iter().map(|(p, _)| *p).collect();
    let dst: Vec<Pt> = inliers
        .iter()
        .map(|(_, n)| [n[0] as f64, n[1] as f64])
        .collect();
    let h = Homography::fit(&src, &dst)?;
    Some(LatticeFit {
        lattice_from_image: h,
        inliers,
    })
}

/// Picks the 8x8 window of the lattice that is the board: the offsets
/// `(i0, j0)` (board lines `i0..=i0+8`, `j0..=j0+8`) that maximise the number
/// of supporting corners inside plus the light/dark alternation of the 64
/// cells (in units of one well-alternating cell), so that a window shifted
/// by one row loses about 8 points of pattern and a line of corners.
pub fn board_window(fit: &LatticeFit, gray: &GrayImage) -> Option<[i32; 2]> {
    let image_from_lattice = fit.lattice_from_image.inverse()?;
    let umin = fit.inliers.iter().map(|(_, n)| n[0]).min()?;
    let umax = fit.inliers.iter().map(|(_, n)| n[0]).max()?;
    let vmin = fit.inliers.iter().map(|(_, n)| n[1]).min()?;
    let vmax = fit.inliers.iter().map(|(_, n)| n[1]).max()?;
    // Windows must overlap the corner patch by at least a few lines.
    let (i_lo, i_hi) = (umax.min(umin + 8) - 8, umin.max(umax - 8));
    let (j_lo, j_hi) = (vmax.min(vmin + 8) - 8, vmin.max(vmax - 8));
    let mut luma = std::collections::HashMap::new();
    for s in i_lo..i_hi + 8 {
        for t in j_lo..j_hi + 8 {
            if let Some(l) = cell_rim_luma(gray, &image_from_lattice, s, t) {
                luma.insert((s, t), l);
            }
        }
    }
    // Polarity and contrast, judged on the cells between corners.
    let (mut even, mut odd, mut ne, mut no) = (0.0, 0.0, 0, 0);
    for s in umin..umax {
        for t in vmin..vmax {
            if let Some(l) = luma.get(&(s, t)) {
                if (s + t).rem_euclid(2) == 0 {
                    even += l;
                    ne += 1;
                } else {
                    odd += l;
                    no += 1;
                }
            }
        }
    }
    if ne == 0 || no == 0 {
        return None;
    }
    let diff = even / ne as f32 - odd / no as f32;
    let polarity = diff.signum();
    let half_contrast = (diff.abs() / 2.0).max(1.0);
    let mut best: Option<([i32; 2], f32)> = None;
    for i0 in i_lo..=i_hi {
        for j0 in j_lo..=j_hi {
            let cells: Vec<(i32, i32, f32)> = (i0..i0 + 8)
                .flat_map(|s| (j0..j0 + 8).map(move |t| (s, t)))
                .filter_map(|(s, t)| luma.get(&(s, t)).map(|l| (s, t, *l)))
                .collect();
            if cells.len() < 32 {
                continue;
            }
            let mean = cells.iter().map(|c| c.2).sum::<f32>() / cells.len() as f32;
            // Missing (off-image) cells count as zero alternation.
            let pattern: f32 = cells
                .iter()
                .map(|(s, t, l)| {
                    let sign = if (s + t).rem_euclid(2) == 0 {
                        1.0
                    } else {
                        -1.0
                    };
                    (polarity * sign * (l - mean) / half_contrast).clamp(-1.5, 1.5)
                })
                .sum();
            let inside = fit
                .inliers
                .iter()
                .filter(|(_, n)| (i0..=i0 + 8).contains(&n[0]) && (j0..=j0 + 8).contains(&n[1]))
                .count() as f32;
            let score = pattern + inside;
            if best.is_none_or(|(_, b)| score > b) {
                best = Some(([i0, j0], score));
            }
        }
    }
    best.map(|(w, _)| w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::Matrix3;

    fn synthetic_corners(h_img_from_lat: &Homography, missing: &[[i32; 2]]) -> Vec<XCorner> {
        let mut v = Vec::new();
        for i in 1..8 {
            for j in 1..8 {
                if missing.contains(&[i, j]) {
                    continue;
                }
                let p = h_img_from_lat.apply([i as f64, j as f64]).unwrap();
                v.push(XCorner {
                    x: p[0],
                    y: p[1],
                    response: 1.0,
                    phase: f32::NAN,
                });
            }
        }
        // Clutter.
        for k in 0..30 {
            v.push(XCorner {
                x: 37.0 * k as f64 % 500.0,
                y: 91.0 * k as f64 % 400.0,
                response: 0.5,
                phase: f32::NAN,
            });
        }
        v
    }

    #[test]
    fn lattice_fit_finds_a_perspective_grid_among_clutter() {
        let truth = Homography {
            m: Matrix3::new(40.0, 6.0, 80.0, -4.0, 36.0, 60.0, 0.0008, 0.0015, 1.0),
        };
        let missing = [[2, 2], [3, 5], [6, 1], [7, 7], [4, 4]];
        let corners = synthetic_corners(&truth, &missing);
        let fit = core(&fit_lattice(&corners).expect("lattice")).expect("core");
        // Every inlier is a true corner; at most the two lattice corners
        // whose neighbours are missing drop out of the connected core.
        let is_true = |p: &Pt| {
            corners
                .iter()
                .any(|c| c.response == 1.0 && p[0] == c.x && p[1] == c.y)
        };
        assert!(fit.inliers.iter().all(|(p, _)| is_true(p)));
        assert!(
            fit.inliers.len() >= 49 - missing.len() - 2,
            "{}",
            fit.inliers.len()
        );
        // The fitted lattice agrees with the truth up to a lattice shift/rotation:
        // neighbouring nodes stay neighbours.
        let lat = fit.lattice_from_image;
        let a = lat.apply(truth.apply([3.0, 3.0]).unwrap()).unwrap();
        let b = lat.apply(truth.apply([4.0, 3.0]).unwrap()).unwrap();
        let d = ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt();
        assert!((d - 1.0).abs() < 1e-6, "{d}");
    }

    #[test]
    fn too_few_corners_are_no_lattice() {
        let truth = Homography {
            m: Matrix3::new(40.0, 0.0, 80.0, 0.0, 40.0, 60.0, 0.0, 0.0, 1.0),
        };
        let corners: Vec<XCorner> = [[1.0, 1.0], [2.0, 1.0], [1.0, 2.0], [2.0, 2.0]]
            .iter()
            .map(|p| {
                let q = truth.apply(*p).unwrap();
                XCorner {
                    x: q[0],
                    y: q[1],
                    response: 1.0,
                    phase: f32::NAN,
                }
            })
            .collect();
        assert!(fit_lattice(&corners).is_none());
    }
}
