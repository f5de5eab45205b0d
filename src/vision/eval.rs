//! Evaluation against the labelled real photos (`../shared/data/real`).
//!
//! Reads the label files, runs localization and square reading on every
//! photo, and summarises: localization success and corner error, per-square
//! accuracy uncalibrated and calibrated (reference = another photo of the
//! same board), orientation.

use std::path::{Path, PathBuf};

use super::homography::Pt;
use super::orientation::{self, Side};
use super::squares::{self, CalibratedModel};
use super::{io, locate_board, occupancy_from_fen, Occupancy, VisionError};

/// One labelled photo.
#[derive(Debug, Clone)]
pub struct Sample {
    pub set: String,
    pub path: PathBuf,
    pub fen: String,
    /// Labelled outer corners in image order (clockwise); `None` if unknown.
    pub corners: Option<[Pt; 4]>,
    /// Where White is, when the data set says so.
    pub white_at: Option<Side>,
    /// Index (in the same set) of the photo used as calibration reference.
    pub reference: Option<usize>,
}

fn csv_rows(path: &Path) -> Result<Vec<Vec<String>>, VisionError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| VisionError::Input(format!("{}: {e}", path.display())))?;
    Ok(text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|s| s.trim().to_owned()).collect())
        .collect())
}

fn num(s: &str, path: &Path) -> Result<f64, VisionError> {
    s.parse()
        .map_err(|_| VisionError::Input(format!("{}: {s:?} is not a number", path.display())))
}

/// Loads every labelled photo of both real sets under `root`.
pub fn load_real_sets(root: &Path) -> Result<Vec<Vec<Sample>>, VisionError> {
    let mut sets = Vec::new();
    // Webcam stills: corners p1..p4 clockwise from the top-left.
    let web = root.join("webcam_wooden_boards");
    let lp = web.join("labels_detailed.csv");
    let mut stills = Vec::new();
    for row in csv_rows(&lp)? {
        if row.len() < 12 {
            return Err(VisionError::Input(format!(
                "{}: short row {row:?}",
                lp.display()
            )));
        }
        let c = |k: usize| -> Result<Pt, VisionError> {
            Ok([num(&row[4 + 2 * k], &lp)?, num(&row[5 + 2 * k], &lp)?])
        };
        stills.push(Sample {
            set: "webcam stills".into(),
            path: web.join("images").join(&row[0]),
            fen: row[1].clone(),
            corners: Some([c(0)?, c(1)?, c(2)?, c(3)?]),
            white_at: None,
            reference: None,
        });
    }
    // Same board, the other state (README pairs): 002 <-> 005/006/007, 004 <-> 003, 011 <-> 012.
    let pairs = [
        ("002", "005"),
        ("005", "002"),
        ("006", "002"),
        ("007", "002"),
        ("004", "003"),
        ("003", "004"),
        ("011", "012"),
        ("012", "011"),
    ];
    let find = |v: &Vec<Sample>, tag: &str| {
        v.iter().position(|s| {
            s.path
                .to_string_lossy()
                .contains(&format!("chessBoard{tag}"))
        })
    };
    for (a, b) in pairs {
        if let (Some(i), Some(j)) = (find(&stills, a), find(&stills, b)) {
            stills[i].reference = Some(j);
        }
    }
    sets.push(stills);
    // Video frames: fixed camera, White at the right, corners from the README.
    let vf = web.join("video_frames");
    let vcorners = [[140.0, 5.0], [506.0, 10.0], [507.0, 377.0], [137.0, 374.0]];
    let mut frames = Vec::new();
    for row in csv_rows(&vf.join("labels.csv"))? {
        frames.push(Sample {
            set: "webcam video frames".into(),
            path: vf.join(&row[0]),
            fen: row.get(1).cloned().unwrap_or_default(),
            corners: Some(vcorners),
            white_at: Some(Side::Right),
            reference: None,
        });
    }
    // Reference: the start-position frame; for it, the empty board.
    let start = frames
        .iter()
        .position(|s| s.path.to_string_lossy().contains("f020"));
    let empty = frames
        .iter()
        .position(|s| s.path.to_string_lossy().contains("emptyBoard"));
    for (i, f) in frames.iter_mut().enumerate() {
        f.reference = if Some(i) == start { empty } else { start };
    }
    sets.push(frames);
    // Green vinyl: corners a8, h8, h1, a1; White at the bottom.
    let g = root.join("green_vinyl_game");
    let cp = g.join("corners.csv");
    let corner_rows = csv_rows(&cp)?;
    let mut green = Vec::new();
    for row in csv_rows(&g.join("labels.csv"))? {
        let corners = corner_rows
            .iter()
            .find(|r| r.first() == row.first() && r.len() >= 9)
            .map(|r| -> Result<[Pt; 4], VisionError> {
                let c = |k: usize| -> Result<Pt, VisionError> {
                    Ok([num(&r[1 + 2 * k], &cp)?, num(&r[2 + 2 * k], &cp)?])
                };
                Ok([c(0)?, c(1)?, c(2)?, c(3)?])
            })
            .transpose()?;
        green.push(Sample {
            set: "green vinyl game".into(),
            path: g.join("images").join(&row[0]),
            fen: row.get(1).cloned().unwrap_or_default(),
            corners,
            white_at: Some(Side::Bottom),
            reference: None,
        });
    }
    // Reference: the previous photo of the game (the first uses the second).
    for i in 0..green.len() {
        green[i].reference = if i == 0 {
            Some(1).filter(|_| green.len() > 1)
        } else {
            Some(i - 1)
        };
    }
    sets.push(green);
    Ok(sets)
}

/// Mean and max distance between found and labelled corners, over the best
/// matching of the two quadrilaterals (any rotation or reflection: labels
/// and results may start at different corners).
pub fn corner_error(found: &[Pt; 4], truth: &[Pt; 4]) -> (f64, f64) {
    let mut best = (f64::INFINITY, f64::INFINITY);
    for shift in 0..4 {
        for reflect in [false, true] {
            let d: Vec<f64> = (0..4)
                .map(|k| {
                    let j = if reflect {
                        (shift + 4 - k) % 4
                    } else {
                        (shift + k) % 4
                    };
                    ((found[k][0] - truth[j][0]).powi(2) + (found[k][1] - truth[j][1]).powi(2))
                        .sqrt()
                })
                .collect();
            let mean = d.iter().sum::<f64>() / 4.0;
            if mean < best.0 {
                best = (mean, d.iter().copied().fold(0.0, f64::max));
            }
        }
    }
    best
}

/// Per-photo result.
#[derive(Debug, Clone)]
pub struct SampleResult {
    pub name: String,
    pub located: Result<(), String>,
    /// Mean/max corner error in pixels and the square size in pixels.
    pub corner_err: Option<(f64, f64, f64)>,
    /// Correct squares out of 64 (uncalibrated, auto orientation).
    pub uncal_auto: Option<usize>,
    /// Correct squares, uncalibrated, orientation given by the data set.
    pub uncal_given: Option<usize>,
    /// Correct squares, calibrated from the reference photo.
    pub cal: Option<usize>,
    /// Orientation found automatically agreed with the labels' best side.
    pub orientation_ok: Option<bool>,
    /// Misread squares, uncalibrated (given orientation, else automatic).
    pub wrong_uncal: Vec<Misread>,
    /// Misread squares, calibrated.
    pub wrong_cal: Vec<Misread>,
}

fn count_correct(reading: &Occupancy, truth: &Occupancy) -> usize {
    reading.iter().zip(truth).filter(|(a, b)| a == b).count()
}

/// One misread square: its index (a1 = 0), the label and the reading.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Misread {
    pub square: usize,
    pub truth: super::Occupant,
    pub read: super::Occupant,
}

impl std::fmt::Display for Misread {
    /// `square truth>read` (FEN-like letters: `.`, `W`, `B`), e.g. `h1 .>B`
    /// for an empty h1 read as a black piece.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = super::square_name(self.square);
        write!(f, "{name} {}>{}", self.truth.letter(), self.read.letter())
    }
}

/// The squares the reading gets wrong.
fn misread(reading: &Occupancy, truth: &Occupancy) -> Vec<Misread> {
    reading
        .iter()
        .zip(truth)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(square, (read, truth))| Misread {
            square,
            truth: *truth,
            read: *read,
        })
        .collect()
}

/// Runs everything on one set.
pub fn evaluate_set(set: &[Sample]) -> Vec<SampleResult> {
    // Localize and measure every photo once.
    let prepared: Vec<_> = set
        .iter()
        .map(|s| -> Result<_, String> {
            let img = io::load_image(&s.path).map_err(|e| e.to_string())?;
            let loc = locate_board(&img).map_err(|e| e.to_string())?;
            let (cells, _) = squares::cell_features(&img, &loc).map_err(|e| e.to_string())?;
            let truth = occupancy_from_fen(&s.fen).map_err(|e| e.to_string())?;
            Ok((loc, cells, truth))
        })
        .collect();
    let mut out = Vec::new();
    for (i, s) in set.iter().enumerate() {
        let name = s
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut r = SampleResult {
            name,
            located: Ok(()),
            corner_err: None,
            uncal_auto: None,
            uncal_given: None,
            cal: None,
            orientation_ok: None,
            wrong_uncal: Vec::new(),
            wrong_cal: Vec::new(),
        };
        let (loc, cells, truth) = match &prepared[i] {
            Ok(p) => p,
            Err(e) => {
                r.located = Err(e.clone());
                out.push(r);
                continue;
            }
        };
        if let Some(tc) = &s.corners {
            let (mean, max) = corner_error(&loc.corners, tc);
            let side = ((tc[0][0] - tc[1][0]).hypot(tc[0][1] - tc[1][1])
                + (tc[1][0] - tc[2][0]).hypot(tc[1][1] - tc[2][1]))
                / 16.0;
            r.corner_err = Some((mean, max, side));
        }
        let light: Vec<bool> = cells.iter().map(|c| c.light).collect();
        let probs = squares::classify_uncalibrated(cells);
        let auto = orientation::decide(&probs, &light, None);
        let reading = squares::reading_from_cells(&probs, auto.white_at).occupancy();
        r.uncal_auto = Some(count_correct(&reading, truth));
        // The side that explains the labels best (for orientation scoring).
        let best_side = orientation::ALL_SIDES.iter().copied().max_by_key(|sd| {
            count_correct(&squares::reading_from_cells(&probs, *sd).occupancy(), truth)
        });
        let is_symmetric = truth.iter().all(|o| *o == super::Occupant::Empty);
        if !is_symmetric {
            r.orientation_ok = Some(Some(auto.white_at) == s.white_at.or(best_side));
        }
        let side = s.white_at.unwrap_or(auto.white_at);
        let reading_side = squares::reading_from_cells(&probs, side).occupancy();
        r.wrong_uncal = misread(&reading_side, truth);
        if s.white_at.is_some() {
            r.uncal_given = Some(count_correct(&reading_side, truth));
        }
        if let Some(j) = s.reference {
            if let (Ok((_, rcells, rtruth)), Some(rs)) = (&prepared[j], set.get(j)) {
                // The reference's own orientation: given, else decided on it.
                let rlight: Vec<bool> = rcells.iter().map(|c| c.light).collect();
                let rprobs = squares::classify_uncalibrated(rcells);
                let rside = rs
                    .white_at
                    .unwrap_or(orientation::decide(&rprobs, &rlight, None).white_at);
                let rtruth_cells = squares::cells_from_occupancy(rtruth, rside);
                if let Ok(model) = CalibratedModel::fit(rcells, &rtruth_cells) {
                    let p = model.classify(cells);
                    let reading = squares::reading_from_cells(&p, side).occupancy();
                    r.cal = Some(count_correct(&reading, truth));
                    r.wrong_cal = misread(&reading, truth);
                }
            }
        }
        out.push(r);
    }
    out
}

/// The rows of [`super::eval_sim::feature_header`] (photo, set, set, cell,
/// model inputs, the rule's answer, truth) of every localized photo with a
/// view context (truth in the grid frame, with the given side or the
/// best-fitting one): real cells for checking the learned classifier.
pub fn feature_rows(set: &[Sample]) -> Vec<String> {
    let mut rows = Vec::new();
    for s in set {
        let Ok(img) = io::load_image(&s.path) else {
            continue;
        };
        let Ok(loc) = locate_board(&img) else {
            continue;
        };
        let Ok((cells, _)) = squares::cell_features(&img, &loc) else {
            continue;
        };
        let Ok(truth) = occupancy_from_fen(&s.fen) else {
            continue;
        };
        let probs = squares::classify_uncalibrated(&cells);
        let side = s.white_at.unwrap_or_else(|| {
            orientation::ALL_SIDES
                .iter()
                .copied()
                .max_by_key(|sd| {
                    count_correct(
                        &squares::reading_from_cells(&probs, *sd).occupancy(),
                        &truth,
                    )
                })
                .unwrap_or(Side::Bottom)
        });
        let t = squares::cells_from_occupancy(&truth, side);
        let photo = s
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        rows.extend(super::eval_sim::cell_rows(
            &photo,
            &s.set,
            &s.set,
            &cells,
            |i| t.get(i).copied(),
        ));
    }
    rows
}

/// Markdown tables of the results (one summary row per set, then details).
pub fn report(results: &[(String, Vec<SampleResult>)]) -> String {
    let mut s = String::new();
    s.push_str("| set | photos | localized | corner err mean / max (px) | corner err mean (squares) | squares uncal. (auto orient.) | squares uncal. (given orient.) | squares calibrated | boards fully right (uncal./cal.) | orientation right |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    let pct = |a: usize, b: usize| {
        if b == 0 {
            "n/a".to_owned()
        } else {
            format!("{:.2} % ({a}/{b})", 100.0 * a as f64 / b as f64)
        }
    };
    for (name, rs) in results {
        let n = rs.len();
        let loc_ok = rs
            .iter()
            .filter(|r| r.located.is_ok() && r.corner_err.is_none_or(|(m, _, sq)| m < 0.5 * sq))
            .count();
        let errs: Vec<(f64, f64, f64)> = rs.iter().filter_map(|r| r.corner_err).collect();
        let (em, emax, esq) = if errs.is_empty() {
            (f64::NAN, f64::NAN, f64::NAN)
        } else {
            (
                errs.iter().map(|e| e.0).sum::<f64>() / errs.len() as f64,
                errs.iter().map(|e| e.1).fold(0.0, f64::max),
                errs.iter().map(|e| e.0 / e.2).sum::<f64>() / errs.len() as f64,
            )
        };
        let sum = |f: &dyn Fn(&SampleResult) -> Option<usize>| {
            let v: Vec<usize> = rs.iter().filter_map(f).collect();
            (
                v.iter().sum::<usize>(),
                64 * v.len(),
                v.iter().filter(|x| **x == 64).count(),
                v.len(),
            )
        };
        let ua = sum(&|r| r.uncal_auto);
        let ug = sum(&|r| r.uncal_given);
        let ca = sum(&|r| r.cal);
        let or: Vec<bool> = rs.iter().filter_map(|r| r.orientation_ok).collect();
        s.push_str(&format!(
            "| {name} | {n} | {loc_ok}/{n} | {em:.1} / {emax:.1} | {esq:.3} | {} | {} | {} | {}/{} / {}/{} | {}/{} |\n",
            pct(ua.0, ua.1),
            pct(ug.0, ug.1),
            pct(ca.0, ca.1),
            ua.2,
            ua.3,
            ca.2,
            ca.3,
            or.iter().filter(|b| **b).count(),
            or.len()
        ));
    }
    s.push_str("\nSquares misread most often (photos; a square misread in many photos of one board is a property of that board or view):\n\n| set | uncal. | cal. |\n|---|---|---|\n");
    for (name, rs) in results {
        let top = |f: &dyn Fn(&SampleResult) -> &Vec<Misread>| {
            let mut count = [0usize; 64];
            for w in rs.iter().flat_map(f) {
                count[w.square] += 1;
            }
            let mut v: Vec<(String, usize)> = (0..64)
                .filter(|&i| count[i] > 0)
                .map(|i| (super::square_name(i), count[i]))
                .collect();
            v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            v.iter()
                .take(5)
                .map(|(sq, n)| format!("{sq} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        s.push_str(&format!(
            "| {name} | {} | {} |\n",
            top(&|r| &r.wrong_uncal),
            top(&|r| &r.wrong_cal)
        ));
    }
    s.push_str("\nPer photo (squares right of 64; corner error mean/max px; misread squares as `square truth>read`, uncal. with the given orientation where there is one):\n\n| set | photo | located | corner err | uncal. auto | uncal. given | calibrated | misread uncal. | misread cal. |\n|---|---|---|---|---|---|---|---|---|\n");
    for (name, rs) in results {
        for r in rs {
            let opt = |v: Option<usize>| v.map(|x| x.to_string()).unwrap_or_else(|| "-".into());
            let list = |v: &[Misread]| {
                v.iter()
                    .map(Misread::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            s.push_str(&format!(
                "| {name} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.name,
                match &r.located {
                    Ok(()) => "yes".to_owned(),
                    Err(e) => format!("no: {e}"),
                },
                r.corner_err
                    .map(|(m, x, _)| format!("{m:.1} / {x:.1}"))
                    .unwrap_or_else(|| "-".into()),
                opt(r.uncal_auto),
                opt(r.uncal_given),
                opt(r.cal),
                list(&r.wrong_uncal),
                list(&r.wrong_cal)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misread_names_each_wrong_square_with_truth_and_reading() {
        let truth = occupancy_from_fen("8/8/8/8/8/8/8/7K").unwrap();
        let mut reading = truth;
        reading[7] = super::super::Occupant::Empty; // h1
        reading[0] = super::super::Occupant::Black; // a1
        let names: Vec<String> = misread(&reading, &truth)
            .iter()
            .map(Misread::to_string)
            .collect();
        assert_eq!(names, vec!["a1 .>B", "h1 W>."]);
        assert!(misread(&truth, &truth).is_empty());
    }

    #[test]
    fn corner_error_ignores_starting_corner_and_direction() {
        let t = [[0.0, 0.0], [10.0, 0.0], [10.0, 10.0], [0.0, 10.0]];
        let f = [[10.0, 1.0], [10.0, 10.0], [0.0, 10.0], [0.0, 0.0]];
        let (mean, max) = corner_error(&f, &t);
        assert!((mean - 0.25).abs() < 1e-9 && (max - 1.0).abs() < 1e-9);
        let rev = [t[0], t[3], t[2], t[1]];
        assert_eq!(corner_error(&rev, &t).0, 0.0);
    }
}
