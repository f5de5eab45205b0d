//! The reach audit: can the arm reach every place a game needs?
//!
//! For every square centre, graveyard slot and reserve slot, the vertical
//! line from the shortest piece's grasp height through the tallest's up to
//! travel height must be reachable at one approach pitch inside the joint
//! margins. A game does not start on a failed audit.

use serde::Serialize;
use shakmaty::Square;

use super::setup::ArmSetup;

/// One place checked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    /// `e4`, `graveyard 3`, `reserve 1 (q)`.
    pub place: String,
    /// Board-frame centre (m).
    pub x_m: f64,
    pub y_m: f64,
    pub reachable: bool,
    /// Approach pitch below horizontal (degrees; 90 = straight down).
    pub pitch_deg: Option<f64>,
    /// Smallest distance of any joint to its URDF limit along the line (degrees).
    pub min_margin_deg: Option<f64>,
    /// Why not, when unreachable.
    pub problem: Option<String>,
}

/// The whole audit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    pub arm: String,
    pub square_m: f64,
    /// Heights checked above the board surface (m).
    pub grasp_low_m: f64,
    pub grasp_high_m: f64,
    pub travel_m: f64,
    pub entries: Vec<AuditEntry>,
}

impl AuditReport {
    pub fn passed(&self) -> bool {
        self.entries.iter().all(|e| e.reachable)
    }

    pub fn unreachable(&self) -> impl Iterator<Item = &AuditEntry> {
        self.entries.iter().filter(|e| !e.reachable)
    }

    /// The smallest joint margin over all reachable places (degrees).
    pub fn worst_margin_deg(&self) -> Option<f64> {
        self.entries
            .iter()
            .filter_map(|e| e.min_margin_deg)
            .reduce(f64::min)
    }

    /// A readable report: a summary, then the unreachable places.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "reach audit for {} ({} places; grasp heights {:.0}-{:.0} mm, travel {:.0} mm)\n",
            self.arm,
            self.entries.len(),
            self.grasp_low_m * 1000.0,
            self.grasp_high_m * 1000.0,
            self.travel_m * 1000.0
        );
        let pitches: Vec<f64> = self.entries.iter().filter_map(|e| e.pitch_deg).collect();
        if let (Some(lo), Some(hi)) = (
            pitches.iter().copied().reduce(f64::min),
            pitches.iter().copied().reduce(f64::max),
        ) {
            out.push_str(&format!("approach pitch {lo:.0}..{hi:.0} degrees\n"));
        }
        if let Some(m) = self.worst_margin_deg() {
            out.push_str(&format!("smallest joint-limit margin {m:.1} degrees\n"));
        }
        if self.passed() {
            out.push_str("PASS: every square, graveyard slot and reserve slot is reachable\n");
        } else {
            let bad: Vec<&AuditEntry> = self.unreachable().collect();
            out.push_str(&format!("FAIL: {} places unreachable:\n", bad.len()));
            for e in bad {
                out.push_str(&format!(
                    "  {:<16} ({:+.3}, {:+.3}) m: {}\n",
                    e.place,
                    e.x_m,
                    e.y_m,
                    e.problem.as_deref().unwrap_or("unreachable")
                ));
            }
        }
        out
    }
}

/// Runs the audit for an arm setup.
pub fn audit(setup: &ArmSetup) -> AuditReport {
    let low = setup.shortest() * setup.pieces.grasp_fraction;
    let high = setup.tallest() * setup.pieces.grasp_fraction;
    let travel = setup.travel_height();
    let mut places: Vec<(String, f64, f64)> = Square::ALL
        .iter()
        .map(|sq| {
            let (x, y) = setup.board.square_xy(*sq);
            (sq.to_string(), x, y)
        })
        .collect();
    for (i, (x, y)) in setup.board.graveyard.iter().enumerate() {
        places.push((format!("graveyard {}", i + 1), *x, *y));
    }
    for (i, ((x, y), role)) in setup
        .board
        .reserve
        .iter()
        .zip(&setup.reserve_roles)
        .enumerate()
    {
        places.push((format!("reserve {} ({})", i + 1, role.char()), *x, *y));
    }
    let entries = places
        .into_iter()
        .map(|(place, x, y)| match setup.vertical(x, y, low, travel) {
            Ok(line) => {
                let margin = line
                    .iter()
                    .map(|(_, s)| setup.model.min_margin(&s.joints))
                    .fold(f64::INFINITY, f64::min);
                // The line passes through the tallest piece's grasp height by
                // construction (low <= high <= travel).
                debug_assert!(low <= high && high <= travel);
                AuditEntry {
                    place,
                    x_m: x,
                    y_m: y,
                    reachable: true,
                    pitch_deg: line.first().map(|(_, s)| s.pitch.to_degrees()),
                    min_margin_deg: Some(margin.to_degrees()),
                    problem: None,
                }
            }
            Err(e) => AuditEntry {
                place,
                x_m: x,
                y_m: y,
                reachable: false,
                pitch_deg: None,
                min_margin_deg: None,
                problem: Some(e.to_string()),
            },
        })
        .collect();
    AuditReport {
        arm: setup.model.name.clone(),
        square_m: setup.board.square_m,
        grasp_low_m: low,
        grasp_high_m: high,
        travel_m: travel,
        entries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arm::calibration::Calibration;
    use crate::arm::config::ArmConfig;
    use crate::arm::model::ArmModel;

    #[test]
    fn default_so101_with_30cm_board_passes() {
        let setup = ArmSetup::default_so101().unwrap();
        let report = audit(&setup);
        assert_eq!(report.entries.len(), 64 + 16 + 4);
        assert!(report.passed(), "{}", report.to_text());
        assert!(report.worst_margin_deg().unwrap() >= 3.0 - 1e-9);
    }

    #[test]
    fn far_board_fails_with_a_list() {
        let mut cfg = ArmConfig::default();
        cfg.board.y_m -= 0.15;
        let model = ArmModel::so101().unwrap();
        let cal = Calibration::nominal(&model);
        let setup = ArmSetup::new(model, cal, &cfg, "nominal", Vec::new()).unwrap();
        let report = audit(&setup);
        assert!(!report.passed());
        let text = report.to_text();
        assert!(text.contains("FAIL"), "{text}");
        // The far ranks go first: a1 is among the unreachable, h8's side is not all lost.
        assert!(report.unreachable().any(|e| e.place == "a1"), "{text}");
        assert!(report.entries.iter().any(|e| e.reachable));
    }
}
