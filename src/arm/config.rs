//! `[arm]`: the arm's port, model, calibration, board placement, slots and safety margins.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// `[arm]` of the configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArmConfig {
    /// Serial port of the servo bus adapter.
    pub port: String,
    /// Bus baud rate (STS3215 factory setting: 1 000 000).
    pub baud: u32,
    /// Extra attempts after a lost or corrupted reply.
    pub retries: u32,
    /// Arm model file. The shipped path falls back to the built-in copy when
    /// the file is not found (running outside the source tree).
    pub model: PathBuf,
    /// LeRobot calibration JSON; when the file does not exist a nominal
    /// calibration from the model is used (fine for simulation only).
    pub calibration: PathBuf,
    /// Measured board placement (`chessbot calibrate arm`); overrides
    /// `[arm.board]` when the file exists.
    pub board_calibration: PathBuf,
    pub board: BoardConfig,
    pub pieces: PiecesConfig,
    pub graveyard: SlotGrid,
    pub reserve: ReserveConfig,
    pub safety: SafetyConfig,
}

/// `[arm.board]`: where the board lies in the arm frame (`arm_from_board`).
///
/// The board frame has its origin at the outer corner of a1 on the playing
/// surface, x along the first rank (a to h), y along the a-file (1 to 8), z up.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BoardConfig {
    /// Side of one square.
    pub square_m: f64,
    /// Board origin in the arm frame.
    pub x_m: f64,
    pub y_m: f64,
    pub z_m: f64,
    /// Rotation of the board frame about the arm's vertical axis.
    pub yaw_deg: f64,
}

/// Height and grip width of one kind of piece.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PieceSize {
    pub height_m: f64,
    /// Jaw opening that holds the piece (a little under its width at grasp height).
    pub grip_width_m: f64,
}

/// `[arm.pieces]`: the set on the board.
///
/// Defaults: FIDE heights (king 9.5 cm, queen 8.5, bishop 7, knight 6, rook
/// 5.5, pawn 5 for 5.5 cm squares) scaled to 3.75 cm squares (×0.68).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct PiecesConfig {
    pub king: PieceSize,
    pub queen: PieceSize,
    pub rook: PieceSize,
    pub bishop: PieceSize,
    pub knight: PieceSize,
    pub pawn: PieceSize,
    /// Grasp at this fraction of the piece's height (hardware.md: 40-60 %).
    pub grasp_fraction: f64,
    /// Extra opening beyond the grip width while approaching.
    pub open_margin_m: f64,
    /// The carried piece's base clears the tallest standing piece by this (10-20 mm).
    pub travel_clearance_m: f64,
}

/// A grid of places beside the board, in the board frame.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SlotGrid {
    /// Centre of the first slot.
    pub x_m: f64,
    pub y_m: f64,
    /// Step between columns (x) and rows (y).
    pub dx_m: f64,
    pub dy_m: f64,
    pub columns: u32,
    pub rows: u32,
}

/// `[arm.reserve]`: spare pieces for promotions.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReserveConfig {
    pub grid: SlotGrid,
    /// What stands in each slot, in slot order: `q`, `r`, `b`, `n`.
    pub pieces: Vec<String>,
}

/// What the servos do after an emergency stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StopMode {
    /// Keep torque on at the present position (the arm does not drop).
    Hold,
    /// Torque off (the arm sags under its weight).
    Release,
}

/// `[arm.safety]`: the envelope every command is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SafetyConfig {
    /// Joint goals stay this far inside the URDF limits.
    pub joint_margin_deg: f64,
    /// The tool stays this high above the board surface, except at grasp points.
    pub board_clearance_m: f64,
    /// Hard caps on joint speed and acceleration (the model's planner limits must be below).
    pub max_speed_rad_s: f64,
    pub max_accel_rad_s2: f64,
    /// Gripper servo torque limit (0.1 % of stall) so the jaws cannot crush a piece.
    pub gripper_torque_limit_permille: u16,
    /// Load above this while moving counts as a stall (0.1 % of stall torque).
    pub stall_load_permille: i32,
    /// A joint is arrived within this many steps of its goal.
    pub arrival_tolerance_steps: i32,
    /// Longest wait for one segment's arrival beyond its planned duration.
    pub arrival_slack_s: f64,
    /// Steepest-first search for an approach pitch stops at this pitch.
    pub min_pitch_deg: f64,
    /// After an emergency stop or fault.
    pub on_stop: StopMode,
}

impl Default for ArmConfig {
    fn default() -> Self {
        ArmConfig {
            port: "/dev/ttyACM0".to_owned(),
            baud: 1_000_000,
            retries: 2,
            model: PathBuf::from(SHIPPED_MODEL_PATH),
            calibration: PathBuf::from("calibration/so101_follower.json"),
            board_calibration: PathBuf::from("calibration/arm_from_board.json"),
            board: BoardConfig::default(),
            pieces: PiecesConfig::default(),
            graveyard: SlotGrid {
                x_m: -0.035,
                y_m: 0.32,
                dx_m: -0.035,
                dy_m: -0.035,
                columns: 2,
                rows: 8,
            },
            reserve: ReserveConfig::default(),
            safety: SafetyConfig::default(),
        }
    }
}

/// Where the shipped model lives in the source tree.
pub const SHIPPED_MODEL_PATH: &str = "config/arms/so101.toml";

impl Default for BoardConfig {
    fn default() -> Self {
        // A 30 cm board (8 × 3.75 cm) centred in front of the arm (the arm
        // faces -y), its near edge (rank 8) 12 cm from the pan axis: nearer,
        // the wrist-flex limit keeps the tool from travel height above rank 8;
        // farther than ~14 cm, rank 1 is out of reach (`chessbot arm audit`).
        BoardConfig {
            square_m: 0.0375,
            x_m: -0.15,
            y_m: -0.42,
            z_m: 0.0,
            yaw_deg: 0.0,
        }
    }
}

impl Default for PiecesConfig {
    fn default() -> Self {
        let p = |height_m: f64, grip_width_m: f64| PieceSize {
            height_m,
            grip_width_m,
        };
        PiecesConfig {
            king: p(0.065, 0.020),
            queen: p(0.058, 0.019),
            rook: p(0.037, 0.019),
            bishop: p(0.048, 0.016),
            knight: p(0.041, 0.018),
            pawn: p(0.034, 0.014),
            grasp_fraction: 0.5,
            open_margin_m: 0.012,
            travel_clearance_m: 0.015,
        }
    }
}

impl Default for SlotGrid {
    fn default() -> Self {
        SlotGrid {
            x_m: 0.335,
            y_m: 0.32,
            dx_m: 0.035,
            dy_m: -0.035,
            columns: 1,
            rows: 4,
        }
    }
}

impl Default for ReserveConfig {
    fn default() -> Self {
        ReserveConfig {
            grid: SlotGrid::default(),
            pieces: ["q", "q", "r", "n"].map(String::from).to_vec(),
        }
    }
}

impl Default for SafetyConfig {
    fn default() -> Self {
        SafetyConfig {
            joint_margin_deg: 3.0,
            board_clearance_m: 0.01,
            max_speed_rad_s: 2.0,
            max_accel_rad_s2: 6.0,
            gripper_torque_limit_permille: 500,
            stall_load_permille: 700,
            arrival_tolerance_steps: 20,
            arrival_slack_s: 2.0,
            min_pitch_deg: 15.0,
            on_stop: StopMode::Hold,
        }
    }
}

impl SlotGrid {
    /// Slot centres in the board frame, column-major from the first slot.
    pub fn centres(&self) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for c in 0..self.columns {
            for r in 0..self.rows {
                out.push((
                    self.x_m + f64::from(c) * self.dx_m,
                    self.y_m + f64::from(r) * self.dy_m,
                ));
            }
        }
        out
    }
}

impl ArmConfig {
    /// Bus timing for this arm's port: its baud rate and retries, LeRobot's
    /// reply margin.
    pub fn bus_timing(&self) -> super::bus::BusTiming {
        super::bus::BusTiming {
            baud: self.baud,
            retries: self.retries,
            ..super::bus::BusTiming::default()
        }
    }

    /// The model file to load, or `None` for the built-in SO-101.
    pub fn model_file(&self) -> Option<&Path> {
        if self.model == Path::new(SHIPPED_MODEL_PATH) && !self.model.exists() {
            None
        } else {
            Some(&self.model)
        }
    }

    /// Checks values the types do not constrain.
    pub fn validate(&self, origin: &str) -> Result<(), ConfigError> {
        let invalid = |key: &str, value: String, allowed: &str| ConfigError::Invalid {
            origin: origin.to_owned(),
            key: format!("arm.{key}"),
            value,
            allowed: allowed.to_owned(),
        };
        let positive = |key: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(invalid(key, v.to_string(), "must be a positive number"))
            }
        };
        let finite = |key: &str, v: f64| {
            if v.is_finite() {
                Ok(())
            } else {
                Err(invalid(key, v.to_string(), "must be a finite number"))
            }
        };
        if self.baud == 0 {
            return Err(invalid(
                "baud",
                "0".into(),
                "must be a baud rate such as 1000000",
            ));
        }
        if self.retries > 10 {
            return Err(invalid(
                "retries",
                self.retries.to_string(),
                "must be 0..=10",
            ));
        }
        positive("board.square_m", self.board.square_m)?;
        for (k, v) in [
            ("board.x_m", self.board.x_m),
            ("board.y_m", self.board.y_m),
            ("board.z_m", self.board.z_m),
            ("board.yaw_deg", self.board.yaw_deg),
        ] {
            finite(k, v)?;
        }
        let p = &self.pieces;
        for (name, s) in [
            ("king", p.king),
            ("queen", p.queen),
            ("rook", p.rook),
            ("bishop", p.bishop),
            ("knight", p.knight),
            ("pawn", p.pawn),
        ] {
            positive(&format!("pieces.{name}.height_m"), s.height_m)?;
            positive(&format!("pieces.{name}.grip_width_m"), s.grip_width_m)?;
        }
        if !(0.1..=0.9).contains(&p.grasp_fraction) {
            return Err(invalid(
                "pieces.grasp_fraction",
                p.grasp_fraction.to_string(),
                "must be 0.1..=0.9 of the piece height",
            ));
        }
        positive("pieces.open_margin_m", p.open_margin_m)?;
        positive("pieces.travel_clearance_m", p.travel_clearance_m)?;
        for (key, g) in [
            ("graveyard", &self.graveyard),
            ("reserve.grid", &self.reserve.grid),
        ] {
            for (k, v) in [
                ("x_m", g.x_m),
                ("y_m", g.y_m),
                ("dx_m", g.dx_m),
                ("dy_m", g.dy_m),
            ] {
                finite(&format!("{key}.{k}"), v)?;
            }
        }
        if self.graveyard.columns * self.graveyard.rows == 0 {
            return Err(invalid(
                "graveyard",
                "0 slots".into(),
                "needs at least one slot",
            ));
        }
        let reserve_slots = (self.reserve.grid.columns * self.reserve.grid.rows) as usize;
        if self.reserve.pieces.len() > reserve_slots {
            return Err(invalid(
                "reserve.pieces",
                format!("{} pieces", self.reserve.pieces.len()),
                &format!("the reserve grid has {reserve_slots} slots"),
            ));
        }
        if let Some(bad) = self
            .reserve
            .pieces
            .iter()
            .find(|p| !matches!(p.as_str(), "q" | "r" | "b" | "n"))
        {
            return Err(invalid(
                "reserve.pieces",
                format!("{bad:?}"),
                "each must be q, r, b or n",
            ));
        }
        let s = &self.safety;
        if !(0.0..=20.0).contains(&s.joint_margin_deg) {
            return Err(invalid(
                "safety.joint_margin_deg",
                s.joint_margin_deg.to_string(),
                "must be 0..=20 degrees",
            ));
        }
        positive("safety.board_clearance_m", s.board_clearance_m)?;
        positive("safety.max_speed_rad_s", s.max_speed_rad_s)?;
        positive("safety.max_accel_rad_s2", s.max_accel_rad_s2)?;
        positive("safety.arrival_slack_s", s.arrival_slack_s)?;
        if !(1..=1000).contains(&s.gripper_torque_limit_permille) {
            return Err(invalid(
                "safety.gripper_torque_limit_permille",
                s.gripper_torque_limit_permille.to_string(),
                "must be 1..=1000",
            ));
        }
        if !(1..=1000).contains(&s.stall_load_permille) {
            return Err(invalid(
                "safety.stall_load_permille",
                s.stall_load_permille.to_string(),
                "must be 1..=1000",
            ));
        }
        if !(1..=200).contains(&s.arrival_tolerance_steps) {
            return Err(invalid(
                "safety.arrival_tolerance_steps",
                s.arrival_tolerance_steps.to_string(),
                "must be 1..=200",
            ));
        }
        if !(0.0..=90.0).contains(&s.min_pitch_deg) {
            return Err(invalid(
                "safety.min_pitch_deg",
                s.min_pitch_deg.to_string(),
                "must be 0..=90 degrees",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    fn err_of(toml: &str) -> String {
        Config::parse_str(toml, "t.toml").unwrap_err().to_string()
    }

    #[test]
    fn shipped_arm_section_is_valid_and_complete() {
        let c = Config::shipped().unwrap();
        assert_eq!(c.arm, super::ArmConfig::default());
        assert_eq!(c.arm.graveyard.centres().len(), 16);
    }

    #[test]
    fn bad_arm_values_name_their_key() {
        assert!(err_of("[arm.reserve]\npieces = [\"k\"]\n").contains("arm.reserve.pieces"));
        assert!(err_of("[arm.safety]\njoint_margin_deg = 45.0\n")
            .contains("arm.safety.joint_margin_deg"));
        assert!(err_of("[arm.board]\nsquare_m = 0.0\n").contains("arm.board.square_m"));
        assert!(
            err_of("[arm.pieces]\nking = { height_m = -1.0, grip_width_m = 0.02 }\n")
                .contains("arm.pieces.king.height_m")
        );
        assert!(err_of("[arm.graveyard]\nrows = 0\n").contains("arm.graveyard"));
        assert!(err_of("[arm.safety]\non_stop = \"panic\"\n").contains("on_stop"));
        assert!(err_of("[arm]\nbaud = 0\n").contains("arm.baud"));
    }

    #[test]
    fn partial_arm_section_keeps_other_defaults() {
        let c = Config::parse_str("[arm.board]\ny_m = -0.43\n", "t.toml").unwrap();
        assert_eq!(c.arm.board.y_m, -0.43);
        assert_eq!(c.arm.board.square_m, 0.0375);
        assert_eq!(c.arm.port, "/dev/ttyACM0");
    }
}
