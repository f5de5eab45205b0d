//! The learned square classifier: gradient-boosted trees over each cell's
//! measurements and how the camera sees it (`models/square_classifier.json`).
//!
//! The hand-written rule ([`super::squares`]) reads each cell on its own;
//! at oblique views the same measurements mean different things (a tall
//! piece in front leans into the cell behind it, the axis above an empty
//! cell shows the board further back). The trees learn those from rendered
//! frames with exact truth: `models/train_square_classifier.py` fits them on
//! the rows `chessbot vision eval-sim --dump-features` writes (seeds never
//! used for evaluation; see `models/README.md`). This module only evaluates
//! them: the model is text compiled into the binary, parsed once.

use std::sync::OnceLock;

use serde::Deserialize;

use super::squares::{colour_split, profile_names, CellFeatures, NCTX, NF, NPROFILE};
use super::VisionError;

/// Number of model inputs per cell: the measurements and view context
/// ([`MEASUREMENT_NAMES`]) and the axis profile.
pub const NIN: usize = NMEASUREMENTS + NPROFILE;

/// Number of measurement and view-context inputs.
const NMEASUREMENTS: usize = 3 + NF + NCTX;

/// Names of the measurement and view-context inputs, in order; the axis
/// profile's ([`profile_names`]) follow them in [`input_names`].
pub const MEASUREMENT_NAMES: [&str; NMEASUREMENTS] = [
    "light",
    "hidden",
    "luma_rel",
    "frac",
    "mean_dev",
    "piece_luma",
    "local",
    "frac_local",
    "luma_local",
    "edge",
    "frac_fine",
    "elev",
    "near",
    "far",
    "axis_board",
    "front_frac",
    "front_luma",
    "height",
    "dist",
];

/// Names of all inputs, in order (the CSV header of the training rows and
/// the model file's `inputs`, checked when the model is loaded).
pub fn input_names() -> Vec<String> {
    MEASUREMENT_NAMES
        .iter()
        .map(|s| s.to_string())
        .chain(profile_names())
        .collect()
}

/// The model inputs of every cell, or `None` when a cell has no view
/// context (no viewpoint could be estimated: the rule reads those frames).
pub fn model_inputs(cells: &[CellFeatures]) -> Option<Vec<[f32; NIN]>> {
    let split = colour_split(cells);
    cells
        .iter()
        .map(|c| {
            let ctx = c.ctx?;
            let profile = c.profile?;
            let mut x = [0.0; NIN];
            x[0] = f32::from(u8::from(c.light));
            x[1] = f32::from(u8::from(c.hidden));
            // The luma of what deviates, against this frame's own split
            // between white and black pieces.
            x[2] = c.f[super::squares::F_LUMA_LOCAL] - split;
            x[3..3 + NF].copy_from_slice(&c.f);
            x[3 + NF..NMEASUREMENTS].copy_from_slice(&ctx);
            x[NMEASUREMENTS..].copy_from_slice(&profile);
            Some(x)
        })
        .collect()
}

/// One node, 16 bytes (the 900 trees are walked for every cell of every
/// frame, so they are kept compact and in one array): a split sends a cell
/// to `left` when input `feature` is at most `value`, else to `right`
/// (indices into the forest's node array); a leaf (`feature == LEAF`) adds
/// `value` to its class.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Node {
    feature: u32,
    value: f32,
    left: u32,
    right: u32,
}

const LEAF: u32 = u32::MAX;

/// Multi-class gradient-boosted trees: per class, a baseline plus the sum of
/// that class's trees; softmax over the classes.
#[derive(Debug, Clone, PartialEq)]
pub struct Forest {
    classes: usize,
    baseline: Vec<f32>,
    /// Every tree's nodes, one after another.
    nodes: Vec<Node>,
    /// Where each tree's root is in `nodes`; iteration-major: tree `k`
    /// adds to class `k % classes`.
    roots: Vec<u32>,
}

/// One node as stored: `[feature, threshold, left, right, value]`, with
/// `feature` -1 for a leaf.
type RawNode = (i32, f32, usize, usize, f32);

/// The file format.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ForestFile {
    inputs: Vec<String>,
    classes: usize,
    baseline: Vec<f32>,
    trees: Vec<Vec<RawNode>>,
    #[serde(default)]
    #[allow(dead_code)]
    trained_on: serde_json::Value,
}

impl Forest {
    /// Parses and checks a model file: inputs as [`input_names`], three
    /// classes (empty, white, black), child indices inside each tree and
    /// pointing forward (no cycles), split features among the inputs.
    pub fn parse(text: &str) -> Result<Forest, VisionError> {
        let bad = |m: String| VisionError::Input(format!("square classifier model: {m}"));
        let file: ForestFile =
            serde_json::from_str(text).map_err(|e| bad(format!("not a model file: {e}")))?;
        let names = input_names();
        if file.inputs != names {
            return Err(bad(format!(
                "inputs {:?} differ from the program's {:?}",
                file.inputs, names
            )));
        }
        if file.classes != 3 || file.baseline.len() != 3 {
            return Err(bad(format!(
                "{} classes and {} baselines, want 3 (empty, white, black)",
                file.classes,
                file.baseline.len()
            )));
        }
        if file.trees.is_empty() || !file.trees.len().is_multiple_of(3) {
            return Err(bad(format!(
                "{} trees, want a positive multiple of 3",
                file.trees.len()
            )));
        }
        let mut nodes = Vec::new();
        let mut roots = Vec::with_capacity(file.trees.len());
        for (t, raw) in file.trees.iter().enumerate() {
            if raw.is_empty() {
                return Err(bad(format!("tree {t} has no nodes")));
            }
            let base = nodes.len();
            roots.push(base as u32);
            for (n, &(feature, threshold, left, right, value)) in raw.iter().enumerate() {
                let node = if feature < 0 {
                    if !value.is_finite() {
                        return Err(bad(format!("tree {t} leaf {n} has value {value}")));
                    }
                    Node {
                        feature: LEAF,
                        value,
                        left: 0,
                        right: 0,
                    }
                } else {
                    let feature = feature as usize;
                    let ok = feature < NIN
                        && threshold.is_finite()
                        && left > n
                        && right > n
                        && left < raw.len()
                        && right < raw.len();
                    if !ok {
                        return Err(bad(format!(
                            "tree {t} node {n}: split on input {feature} at {threshold} to {left}/{right} is out of range"
                        )));
                    }
                    Node {
                        feature: feature as u32,
                        value: threshold,
                        left: (base + left) as u32,
                        right: (base + right) as u32,
                    }
                };
                nodes.push(node);
            }
        }
        Ok(Forest {
            classes: file.classes,
            baseline: file.baseline,
            nodes,
            roots,
        })
    }

    /// Probabilities `[empty, white, black]` of one cell.
    pub fn predict(&self, x: &[f32; NIN]) -> [f32; 3] {
        self.predict_many(std::slice::from_ref(x))[0]
    }

    /// Probabilities of many cells (tree by tree over all cells, so each
    /// tree is fetched once).
    pub fn predict_many(&self, xs: &[[f32; NIN]]) -> Vec<[f32; 3]> {
        let mut raw = vec![[self.baseline[0], self.baseline[1], self.baseline[2]]; xs.len()];
        for (k, &root) in self.roots.iter().enumerate() {
            let class = k % self.classes;
            for (x, r) in xs.iter().zip(raw.iter_mut()) {
                let mut node = self.nodes[root as usize];
                while node.feature != LEAF {
                    let next = if x[node.feature as usize] <= node.value {
                        node.left
                    } else {
                        node.right
                    };
                    node = self.nodes[next as usize];
                }
                r[class] += node.value;
            }
        }
        raw.into_iter()
            .map(|r| {
                let m = r.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let e = r.map(|v| (v - m).exp());
                let s: f32 = e.iter().sum();
                e.map(|v| v / s)
            })
            .collect()
    }
}

/// The shipped model, parsed on first use.
pub fn shipped() -> Result<&'static Forest, &'static VisionError> {
    static MODEL: OnceLock<Result<Forest, VisionError>> = OnceLock::new();
    MODEL
        .get_or_init(|| Forest::parse(include_str!("../../models/square_classifier.json")))
        .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(trees: &str) -> String {
        format!(
            r#"{{"inputs": {}, "classes": 3, "baseline": [0.0, 0.0, 0.0], "trees": {trees}}}"#,
            serde_json::to_string(&input_names()).unwrap()
        )
    }

    #[test]
    fn the_shipped_model_loads() {
        let m = shipped().expect("models/square_classifier.json parses");
        assert_eq!(m.roots.len() % 3, 0);
        assert!(m.roots.len() >= 30);
    }

    #[test]
    fn a_split_sends_a_cell_left_or_right() {
        // Class 0 (empty) gains 2 when frac_local (input 7) <= 0.25.
        let m = Forest::parse(&tiny(
            "[[[7, 0.25, 1, 2, 0.0], [-1, 0, 0, 0, 2.0], [-1, 0, 0, 0, -2.0]], [[-1, 0, 0, 0, 0.0]], [[-1, 0, 0, 0, 0.0]]]",
        ))
        .unwrap();
        let mut x = [0.0; NIN];
        x[7] = 0.1;
        let p = m.predict(&x);
        assert!(
            (p[0] - 2f32.exp() / (2f32.exp() + 2.0)).abs() < 1e-6,
            "{p:?}"
        );
        x[7] = 0.9;
        let p = m.predict(&x);
        assert!(
            (p[0] - (-2f32).exp() / ((-2f32).exp() + 2.0)).abs() < 1e-6,
            "{p:?}"
        );
        assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    }

    #[test]
    fn broken_models_are_refused_with_the_reason() {
        let cyc = Forest::parse(&tiny(
            "[[[7, 0.25, 0, 0, 0.0]], [[-1, 0, 0, 0, 0.0]], [[-1, 0, 0, 0, 0.0]]]",
        ))
        .unwrap_err();
        assert!(cyc.to_string().contains("out of range"), "{cyc}");
        let two = Forest::parse(&tiny("[[[-1, 0, 0, 0, 0.0]]]")).unwrap_err();
        assert!(two.to_string().contains("multiple of 3"), "{two}");
        let names =
            Forest::parse(r#"{"inputs": ["x"], "classes": 3, "baseline": [0,0,0], "trees": []}"#)
                .unwrap_err();
        assert!(names.to_string().contains("differ"), "{names}");
        assert!(Forest::parse("not json").is_err());
    }
}
