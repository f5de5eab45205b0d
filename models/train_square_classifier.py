#!/usr/bin/env python3
"""Trains the learned square classifier (empty / white / black per cell).

Input: CSV rows written by `chessbot vision eval-sim --dump-features FILE`
(one row per visible cell of a localized rendered frame: the model inputs
named in `src/vision/learned.rs`, the hand-written rule's answer and the
truth). Output: gradient-boosted trees as JSON, the format
`vision::learned::Forest::parse` reads.

Usage (see models/README.md for the exact commands that made the shipped
model):

    python3 models/train_square_classifier.py --out models/square_classifier.json \
        train1.csv train2.csv [--test held_out.csv]

Needs numpy, pandas and scikit-learn (`pip install scikit-learn pandas`).
Deterministic: the same rows give the same file.
"""

import argparse
import json
import sys

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

# Must equal learned::input_names() in src/vision/learned.rs (the loader
# checks it): the measurements and view context, then the axis profile
# (squares::profile_names: 13 heights x 3 offsets x luma / behind).
MEASUREMENTS = [
    "light", "hidden", "luma_rel", "frac", "mean_dev", "piece_luma", "local",
    "frac_local", "luma_local", "edge", "frac_fine", "elev", "near", "far", "axis_board",
    "front_frac", "front_luma", "height", "dist",
]
PROFILE = [f"p{k:02}{side}_{value}" for k in range(13) for side in "lcr"
           for value in ("luma", "behind")]
INPUTS = MEASUREMENTS + PROFILE

# Tree settings. On the evaluation frames (seed 1, 500 frames, 1280x720,
# trained on seeds 3-6) 300 rounds of 31 leaves read 0.477 % of cells wrong,
# 600 rounds 0.452 % (a 3 MB file), 300 of 63 leaves 0.480 %; seeds 3-10
# with these settings 0.402 % (the rule 3.07 %); the file is 1.5 MB.
ITERATIONS = 300
LEARNING_RATE = 0.1
MAX_LEAF_NODES = 31
MIN_SAMPLES_LEAF = 40


def kinds(pred, truth):
    missed = int(((truth > 0) & (pred == 0)).sum())
    phantom = int(((truth == 0) & (pred > 0)).sum())
    colour = int(((truth > 0) & (pred > 0) & (pred != truth)).sum())
    return f"missed {missed}, phantom {phantom}, colour {colour}"


def report(name, df, pred):
    truth = df["truth"].values
    rule = df["rule"].values
    print(f"{name}: {len(df)} cells; model {100 * (pred != truth).mean():.3f} % wrong "
          f"({kinds(pred, truth)}); rule {100 * (rule != truth).mean():.3f} % ({kinds(rule, truth)})")
    for view in sorted(df["view"].unique()):
        k = (df["view"] == view).values
        print(f"  {view:9s} model {100 * (pred[k] != truth[k]).mean():.3f} %  "
              f"rule {100 * (rule[k] != truth[k]).mean():.3f} %")


def export(model, rows):
    trees = []
    for iteration in model._predictors:
        for predictor in iteration:
            nodes = []
            for n in predictor.nodes:
                if n["is_leaf"]:
                    nodes.append([-1, 0.0, 0, 0, round(float(n["value"]), 6)])
                else:
                    nodes.append([int(n["feature_idx"]), float(np.float32(n["num_threshold"])),
                                  int(n["left"]), int(n["right"]), 0.0])
            trees.append(nodes)
    baseline = np.asarray(model._baseline_prediction, dtype=float).reshape(-1)
    return {
        "inputs": INPUTS,
        "classes": 3,
        "baseline": [round(float(b), 6) for b in baseline],
        "trained_on": {
            "rows": rows,
            "iterations": ITERATIONS,
            "learning_rate": LEARNING_RATE,
            "max_leaf_nodes": MAX_LEAF_NODES,
            "min_samples_leaf": MIN_SAMPLES_LEAF,
        },
        "trees": trees,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--test", action="append", default=[])
    ap.add_argument("train", nargs="+")
    args = ap.parse_args()
    train = pd.concat([pd.read_csv(f) for f in args.train], ignore_index=True)
    missing = [c for c in INPUTS + ["truth", "rule"] if c not in train.columns]
    if missing:
        sys.exit(f"training rows lack columns {missing}")
    model = HistGradientBoostingClassifier(
        max_iter=ITERATIONS, learning_rate=LEARNING_RATE, max_leaf_nodes=MAX_LEAF_NODES,
        min_samples_leaf=MIN_SAMPLES_LEAF, early_stopping=False, random_state=0)
    model.fit(train[INPUTS].values, train["truth"].values)
    if list(model.classes_) != [0, 1, 2]:
        sys.exit(f"training rows hold classes {list(model.classes_)}, want 0, 1, 2")
    report("train", train, model.predict(train[INPUTS].values))
    for f in args.test:
        test = pd.read_csv(f)
        report(f"test {f}", test, model.predict(test[INPUTS].values))
    doc = export(model, len(train))
    with open(args.out, "w") as out:
        json.dump(doc, out, separators=(",", ":"))
        out.write("\n")
    print(f"wrote {args.out}: {len(doc['trees'])} trees")


if __name__ == "__main__":
    main()
