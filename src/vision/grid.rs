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
/// Longest over shortest side of a seed cell in the image. A square seen
/// at pitch p above the board is foreshortened by about sin(p) across the
/// line of sight, and more on the far side of a low view: 4 admits cells
/// down to ~15° (the low views start at 28°, where the near squares are
/// already ~2.1 : 1). At 2, low views could only seed lattices of every
/// other rank (knight-move cells, nearly square in the image), which
/// explain half the corners and put the board off by squares.
const MAX_SIDE_RATIO: f64 = 4.0;
/// Largest |cos| of the angle between a seed cell's two sides in the
/// image. A square's right angle is seen sheared by the view: ~60° apart
/// (cos 0.5) is common at 30-40° pitch with the board turned; 0.85 (32°)
/// still keeps the two sides clearly apart.
const MAX_SIDE_COS: f64 = 0.85;
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
    let mut h = refit(&inl)?;
    // Relabel onto the lattice the corners span when they leave nodes out
    // systematically (a lattice of half-squares puts corners only on
    // every other line). Judged on the nodes with at least two inlier
    // neighbours, so that one stray corner between the lines does not
    // hide the pattern.
    let nodes: Vec<[i32; 2]> = inl.iter().map(|(_, n, _)| *n).collect();
    if let Some(relabel) = spanned_lattice(&dominant_coset(&connected(&nodes))) {
        let spanned = Homography { m: relabel * h.m };
        let corners: Vec<(Pt, f32)> = inl
            .iter()
            .map(|(p, _, _)| {
                let i = pts.iter().position(|q| q == p);
                (*p, i.map_or(f32::NAN, |i| phases[i]))
            })
            .collect();
        h = axis_basis(&spanned, &corners, phase0);
    }
    let inl = collect(&h, pts, phases, phase0, FINAL_TOLERANCE, 100.0);
    if inl.len() < 4 {
        return None;
    }
    let h = refit(&inl)?;
    Some((h, collect(&h, pts, phases, phase0, FINAL_TOLERANCE, 100.0)))
}

/// Of the relabellings of `lattice` by small unimodular maps (entries -1,
/// 0, 1, and a shift by one node), the one whose node parity best matches
/// the corners' bright-sector directions (even nodes along `phase0`, odd
/// ones across it: the board's own axes flip the phase at every step, a
/// diagonal does not), the shortest cell in the image breaking ties (a
/// shear by two keeps the parity but not the length). Any basis of the
/// spanned lattice puts the corners on nodes; only the board's own has
/// its axes along the board's lines.
fn axis_basis(lattice: &Homography, corners: &[(Pt, f32)], phase0: f32) -> Homography {
    let nodes: Vec<(Pt, f32)> = corners
        .iter()
        .filter_map(|(p, ph)| lattice.apply(*p).map(|q| (q, *ph)))
        .collect();
    let Some(image) = lattice.inverse() else {
        return *lattice;
    };
    let n = nodes.len().max(1) as f64;
    let centre = [
        (nodes.iter().map(|(q, _)| q[0]).sum::<f64>() / n).round(),
        (nodes.iter().map(|(q, _)| q[1]).sum::<f64>() / n).round(),
    ];
    let mut best: Option<(usize, f64, Homography)> = None;
    let entries: [f64; 3] = [-1.0, 0.0, 1.0];
    for m00 in entries {
        for m01 in entries {
            for m10 in entries {
                for m11 in entries {
                    if (m00 * m11 - m01 * m10).abs() != 1.0 {
                        continue;
                    }
                    for shift in [0.0, 1.0] {
                        // k' = M k + (shift, 0)
                        let m =
                            nalgebra::Matrix3::new(m00, m01, shift, m10, m11, 0.0, 0.0, 0.0, 1.0);
                        let agree = nodes
                            .iter()
                            .filter(|(q, ph)| {
                                let k0 = m00 * q[0] + m01 * q[1] + shift;
                                let k1 = m10 * q[0] + m11 * q[1];
                                let odd = (k0.round() + k1.round()).rem_euclid(2.0) == 1.0;
                                let across = phase_diff(*ph, phase0) > std::f32::consts::FRAC_PI_4;
                                !ph.is_nan() && !phase0.is_nan() && odd == across
                            })
                            .count();
                        // Cell size in the image: M^-1 maps unit steps back.
                        let Some(minv) = m.try_inverse() else {
                            continue;
                        };
                        let k = m * nalgebra::Vector3::new(centre[0], centre[1], 1.0);
                        let at = |d: [f64; 2]| {
                            let v = minv * nalgebra::Vector3::new(k.x + d[0], k.y + d[1], 1.0);
                            image.apply([v.x, v.y])
                        };
                        let (Some(p0), Some(p1), Some(p2)) =
                            (at([0.0, 0.0]), at([1.0, 0.0]), at([0.0, 1.0]))
                        else {
                            continue;
                        };
                        let size = dist2(p0, p1) + dist2(p0, p2);
                        let better = best
                            .as_ref()
                            .is_none_or(|(a, s, _)| agree > *a || (agree == *a && size < *s));
                        if better {
                            best = Some((agree, size, Homography { m: m * lattice.m }));
                        }
                    }
                }
            }
        }
    }
    best.map_or(*lattice, |(_, _, h)| h)
}

/// Share of the nodes that must fall on every other line for the few that
/// do not to be taken as strays (a piece's edge or the board's rim near a
/// node): in a rendered overhead view (`vision eval-sim`, seed 1, frame
/// 290) a lattice of half-squares had 37 of its 38 connected nodes on
/// its odd lines, the 38th a corner between two pawns.
const COSET_SHARE: f64 = 0.9;

/// The nodes on every second or third line (of either coordinate, or
/// their sum or difference) when at least [`COSET_SHARE`] of them are;
/// else all. (A low view seeded a lattice with file lines on every third
/// line of it.)
fn dominant_coset(nodes: &[[i32; 2]]) -> Vec<[i32; 2]> {
    type Key = fn(&[i32; 2]) -> i32;
    let keys: [Key; 4] = [|n| n[0], |n| n[1], |n| n[0] + n[1], |n| n[0] - n[1]];
    let on = |key: Key, k: i32, r: i32| move |n: &&[i32; 2]| key(n).rem_euclid(k) == r;
    let mut best: Option<(usize, Key, i32, i32)> = None;
    for key in keys {
        for k in 2..=3 {
            for r in 0..k {
                let count = nodes.iter().filter(on(key, k, r)).count();
                if best.is_none_or(|(c, ..)| count > c) {
                    best = Some((count, key, k, r));
                }
            }
        }
    }
    match best {
        Some((count, key, k, r)) if count as f64 >= COSET_SHARE * nodes.len() as f64 => {
            nodes.iter().filter(on(key, k, r)).copied().collect()
        }
        _ => nodes.to_vec(),
    }
}

/// Greatest common divisor with Bezout coefficients: `(g, s, t)`,
/// `s*a + t*b = g >= 0`.
fn ext_gcd(a: i64, b: i64) -> (i64, i64, i64) {
    if b == 0 {
        (a.abs(), a.signum(), 0)
    } else {
        let (g, s, t) = ext_gcd(b, a.rem_euclid(b));
        (g, t, s - a.div_euclid(b) * t)
    }
}

/// When the integer vectors between `nodes` span a proper sublattice of
/// the integer grid (index > 1), the affine map (as a 3x3 matrix) that
/// relabels it onto the whole grid: node `n0 + B k` goes to `k`, `B`
/// being the sublattice's Hermite basis. `None` when they span the whole
/// grid (or too little to tell: fewer than two independent directions).
///
/// A lattice fit grown from a cell that spans two squares (the knight-move
/// cells of a foreshortened view, or half a square on a side) still puts
/// its nodes on real corners, as many as the board's own lattice, but
/// every other line of it holds none; the corners themselves then say
/// which lattice is the board's.
fn spanned_lattice(nodes: &[[i32; 2]]) -> Option<nalgebra::Matrix3<f64>> {
    let n0 = *nodes.first()?;
    // Hermite basis (a, b), (0, c) of the span, built one vector at a time.
    let (mut a, mut b, mut c) = (0i64, 0i64, 0i64);
    for n in &nodes[1..] {
        let (x, y) = (i64::from(n[0] - n0[0]), i64::from(n[1] - n0[1]));
        if x == 0 && y == 0 {
            continue;
        }
        // Fold (x, y) into the first row: gcd on the first coordinate, the
        // rest of it (first coordinate zero) goes to the second row.
        let (g, s, t) = ext_gcd(a, x);
        let (rest_y, new_b) = if g == 0 {
            (y, b)
        } else {
            let w_y = (x / g) * b - (a / g) * y;
            (w_y, s * b + t * y)
        };
        if g != 0 {
            a = g;
            b = new_b;
        }
        c = ext_gcd(c, rest_y).0;
        if c != 0 {
            b = b.rem_euclid(c);
        }
    }
    if a == 0 || c == 0 || a * c == 1 {
        return None;
    }
    // k = B^-1 (n - n0), B = [[a, 0], [b, c]] (columns (a, b) and (0, c)).
    let (a, b, c) = (a as f64, b as f64, c as f64);
    let inv = nalgebra::Matrix3::new(1.0 / a, 0.0, 0.0, -b / (a * c), 1.0 / c, 0.0, 0.0, 0.0, 1.0);
    let shift = nalgebra::Matrix3::new(
        1.0,
        0.0,
        -f64::from(n0[0]),
        0.0,
        1.0,
        -f64::from(n0[1]),
        0.0,
        0.0,
        1.0,
    );
    Some(inv * shift)
}

/// The lattice with the best `inliers x quality`, or `None`; `quality`
/// (0..1) judges a grown hypothesis from its map and supporting nodes (see
/// [`checker_quality`]). Corners explained by a hypothesis of at least
/// [`TRUSTED_QUALITY`] are not tried again as seeds.
pub fn fit_lattice(
    corners: &[XCorner],
    quality: impl Fn(&Homography, &[[i32; 2]]) -> f64,
) -> Option<LatticeFit> {
    let pts: Vec<Pt> = corners.iter().map(|c| [c.x, c.y]).collect();
    let phases: Vec<f32> = corners.iter().map(|c| c.phase).collect();
    // Axis neighbours have the other bright-sector direction; diagonal ones
    // the same (unknown phases never veto).
    let axis_ok = |i: usize, j: usize| {
        phases[i].is_nan()
            || phases[j].is_nan()
            || phase_diff(phases[i], phases[j]) > std::f32::consts::FRAC_PI_4
    };
    let mut best: Option<(Homography, Support, f64)> = None;
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
                if la < 4.0 || lb < 4.0 || la / lb > MAX_SIDE_RATIO || lb / la > MAX_SIDE_RATIO {
                    continue;
                }
                let cos = (da[0] * db[0] + da[1] * db[1]) / (la * lb);
                if cos.abs() > MAX_SIDE_COS || !axis_ok(s, a) || !axis_ok(s, b) {
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
                if inl.len() < MIN_INLIERS
                    || best
                        .as_ref()
                        .is_some_and(|(_, _, b)| inl.len() as f64 <= *b)
                {
                    continue;
                }
                let nodes: Vec<[i32; 2]> = inl.iter().map(|(_, n, _)| *n).collect();
                let q = quality(&h, &nodes).clamp(0.0, 1.0);
                let score = inl.len() as f64 * q;
                if best.as_ref().is_none_or(|(_, _, b)| score > *b) {
                    if q >= TRUSTED_QUALITY {
                        for (i, p) in pts.iter().enumerate() {
                            if inl.iter().any(|(q, _, _)| q == p) {
                                explained[i] = true;
                            }
                        }
                    }
                    best = Some((h, inl, score));
                }
            }
        }
    }
    let (h, inl, _) = best?;
    Some(LatticeFit {
        lattice_from_image: h,
        inliers: inl.into_iter().map(|(p, n, _)| (p, n)).collect(),
    })
}

/// A hypothesis whose checker quality reaches this is taken as the board's
/// own lattice, so its corners need not seed further hypotheses: real boards
/// score 0.7-1 (pieces and shadows spoil a few cell pairs), lattices whose
/// cells straddle two squares (sheared or of every other rank) near 0.
pub const TRUSTED_QUALITY: f64 = 0.5;
/// Two neighbouring cells whose luminance differs by less than this (0..255)
/// tell nothing about the checker pattern (a piece or shadow may be
/// levelling them); they count as disagreeing, so a lattice over a plain
/// table scores low.
const CHECKER_MIN_STEP: f32 = 6.0;

/// How well a lattice's cells alternate light/dark, 0..1: over the pairs of
/// side-by-side cells next to its supporting nodes, the share whose
/// luminance order follows the majority parity minus the share against
/// it. The board's own lattice alternates cell by cell; a lattice whose
/// cells each straddle two squares (a sheared one, or one of every other
/// rank that a strongly foreshortened view can seed) and so still puts
/// its nodes on real corners does not.
pub fn checker_quality(
    gray: &GrayImage,
    lattice_from_image: &Homography,
    nodes: &[[i32; 2]],
) -> f64 {
    let Some(image_from_lattice) = lattice_from_image.inverse() else {
        return 0.0;
    };
    let mut cells: std::collections::HashMap<(i32, i32), Option<f32>> = Default::default();
    for n in nodes {
        for (ds, dt) in [(0, 0), (-1, 0), (0, -1), (-1, -1)] {
            let c = (n[0] + ds, n[1] + dt);
            cells
                .entry(c)
                .or_insert_with(|| cell_rim_luma(gray, &image_from_lattice, c.0, c.1));
        }
    }
    let (mut along, mut against, mut pairs) = (0usize, 0usize, 0usize);
    for (&(s, t), l) in &cells {
        let Some(l) = l else { continue };
        for right in [(s + 1, t), (s, t + 1)] {
            let Some(Some(r)) = cells.get(&right) else {
                continue;
            };
            pairs += 1;
            let step = l - r;
            if step.abs() < CHECKER_MIN_STEP {
                continue;
            }
            // Even cells lighter than their odd neighbours, or the reverse.
            if (step > 0.0) == ((s + t).rem_euclid(2) == 0) {
                along += 1;
            } else {
                against += 1;
            }
        }
    }
    if pairs == 0 {
        return 0.0;
    }
    along.abs_diff(against) as f64 / pairs as f64
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

/// The nodes with at least [`MIN_CORE_NEIGHBOURS`] of the 4 adjacent
/// nodes among `nodes`.
fn connected(nodes: &[[i32; 2]]) -> Vec<[i32; 2]> {
    let set: std::collections::HashSet<[i32; 2]> = nodes.iter().copied().collect();
    nodes
        .iter()
        .filter(|n| {
            [[1, 0], [-1, 0], [0, 1], [0, -1]]
                .iter()
                .filter(|d| set.contains(&[n[0] + d[0], n[1] + d[1]]))
                .count()
                >= MIN_CORE_NEIGHBOURS
        })
        .copied()
        .collect()
}

/// The connected core of a lattice fit, refitted on it alone.
pub fn core(fit: &LatticeFit) -> Option<LatticeFit> {
    let nodes: Vec<[i32; 2]> = fit.inliers.iter().map(|(_, n)| *n).collect();
    let keep: std::collections::HashSet<[i32; 2]> = connected(&nodes).into_iter().collect();
    let inliers: Vec<(Pt, [i32; 2])> = fit
        .inliers
        .iter()
        .filter(|(_, n)| keep.contains(n))
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
        let fit = core(&fit_lattice(&corners, |_, _| 1.0).expect("lattice")).expect("core");
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
    fn nodes_on_every_other_line_are_relabelled_onto_the_lattice_they_span() {
        // Real corners (i files, j ranks) labelled (2j + 1, i + j - 3) by a
        // lattice of half-squares: rank lines only on odd first coordinates.
        let nodes: Vec<[i32; 2]> = (0..5)
            .flat_map(|i| (0..4).map(move |j| [2 * j + 1, i + j - 3]))
            .collect();
        let m = spanned_lattice(&nodes).expect("index 2 is relabelled");
        let relabel = |n: [i32; 2]| {
            let v = m * nalgebra::Vector3::new(f64::from(n[0]), f64::from(n[1]), 1.0);
            [v.x, v.y]
        };
        let k: Vec<[f64; 2]> = nodes.iter().map(|n| relabel(*n)).collect();
        // Every corner lands on an integer node.
        for p in &k {
            assert!(p.iter().all(|c| (c - c.round()).abs() < 1e-9), "{p:?}");
        }
        // One file and one rank now span a unit cell (index 1).
        let area = |a: [f64; 2], b: [f64; 2]| (a[0] * b[1] - a[1] * b[0]).abs();
        let (o, f, r) = (relabel([1, -3]), relabel([1, -2]), relabel([3, -2]));
        let file = [f[0] - o[0], f[1] - o[1]];
        let rank = [r[0] - o[0], r[1] - o[1]];
        assert_eq!(
            area(file, rank),
            1.0,
            "one file and one rank span a unit cell"
        );
        // A stray node between the lines hides the pattern from the span,
        // not from the dominant coset.
        let mut strayed = nodes.clone();
        strayed.push([2, 0]);
        assert!(spanned_lattice(&strayed).is_none());
        assert_eq!(dominant_coset(&strayed), nodes);
        // Every third line (a file line on every third line of a lattice).
        let third: Vec<[i32; 2]> = (0..4)
            .flat_map(|i| (0..5).map(move |j| [3 * i + 1, j]))
            .collect();
        let m3 = spanned_lattice(&third).expect("index 3 is relabelled");
        let v = m3 * nalgebra::Vector3::new(4.0, 0.0, 1.0);
        let w = m3 * nalgebra::Vector3::new(1.0, 0.0, 1.0);
        assert!(((v.x - w.x).abs() + (v.y - w.y).abs() - 1.0).abs() < 1e-9);
        // A full lattice is left alone, and so is a single line.
        let full: Vec<[i32; 2]> = (0..3).flat_map(|u| (0..3).map(move |v| [u, v])).collect();
        assert!(spanned_lattice(&full).is_none());
        assert!(spanned_lattice(&[[0, 0], [0, 2], [0, 4]]).is_none());
    }

    /// Inner corners of a grid seen through `h` (lattice -> image), with
    /// the bright-sector phase each would show: the direction bisecting
    /// the image directions of the two lattice axes at the corner, turned
    /// by a right angle on odd nodes.
    fn corners_with_phases(h: &Homography) -> Vec<XCorner> {
        let mut v = Vec::new();
        for i in 1..8 {
            for j in 1..8 {
                let p = h.apply([i as f64, j as f64]).unwrap();
                let pu = h.apply([i as f64 + 0.01, j as f64]).unwrap();
                let pv = h.apply([i as f64, j as f64 + 0.01]).unwrap();
                let unit = |q: Pt| {
                    let d = [q[0] - p[0], q[1] - p[1]];
                    let l = d[0].hypot(d[1]);
                    [d[0] / l, d[1] / l]
                };
                let (a, b) = (unit(pu), unit(pv));
                let bis = if (i + j) % 2 == 0 {
                    [a[0] + b[0], a[1] + b[1]]
                } else {
                    [a[0] - b[0], a[1] - b[1]]
                };
                v.push(XCorner {
                    x: p[0],
                    y: p[1],
                    response: 1.0,
                    phase: bis[1].atan2(bis[0]).rem_euclid(std::f64::consts::PI) as f32,
                });
            }
        }
        v
    }

    #[test]
    fn a_low_oblique_view_is_fitted_with_the_boards_own_axes() {
        // Files 40 px apart along the image's x, ranks 14 px apart and
        // slanted (a low view from one side: sides 2.9 : 1 at 57°, where
        // seed cells used to be refused and only cells two ranks tall,
        // nearly square in the image, were tried).
        let truth = Homography {
            m: Matrix3::new(40.0, 9.0, 100.0, 0.0, 14.0, 80.0, 0.0, 0.0015, 1.0),
        };
        let corners = corners_with_phases(&truth);
        let fit = core(&fit_lattice(&corners, |_, _| 1.0).expect("lattice")).expect("core");
        assert!(fit.inliers.len() >= 45, "{}", fit.inliers.len());
        // One file and one rank apart in truth are one node apart in the fit.
        let lat = fit.lattice_from_image;
        let node = |i: f64, j: f64| lat.apply(truth.apply([i, j]).unwrap()).unwrap();
        let d = |a: Pt, b: Pt| (a[0] - b[0]).abs() + (a[1] - b[1]).abs();
        assert!((d(node(3.0, 3.0), node(4.0, 3.0)) - 1.0).abs() < 1e-6);
        assert!((d(node(3.0, 3.0), node(3.0, 4.0)) - 1.0).abs() < 1e-6);
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
        assert!(fit_lattice(&corners, |_, _| 1.0).is_none());
    }
}
