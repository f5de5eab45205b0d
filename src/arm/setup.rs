//! Everything about one installed arm, loaded once: model, servo maps, board
//! placement, pieces, safety margins, and the reach queries built on them.

use std::f64::consts::FRAC_PI_2;

use nalgebra::Point3;
use shakmaty::Role;

use super::board::{BoardCalibration, BoardFitError, BoardGeometry};
use super::calibration::{Calibration, CalibrationError, ServoMaps};
use super::config::{ArmConfig, PieceSize, PiecesConfig, SafetyConfig};
use super::model::{ArmModel, IkError, IkSolution, Joints, ModelError};

/// Step between approach pitches tried, steepest first.
const PITCH_STEP_DEG: f64 = 5.0;
/// Pitches beyond vertical (tool leaning back toward the base) help near the
/// base; this far past vertical at most.
const MAX_PITCH_DEG: f64 = 115.0;
/// Cartesian spacing of waypoints on vertical and travel moves, so the
/// joint-space interpolation between them stays close to the straight line.
pub const WAYPOINT_SPACING_M: f64 = 0.02;

/// Loading the arm's files failed.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Calibration(#[from] CalibrationError),
    #[error(transparent)]
    Board(#[from] BoardFitError),
    #[error("joint {0}: the calibrated servo range and the model's limits do not overlap")]
    Range(String),
    #[error("arm config: reserve piece {0:?} is not q, r, b or n")]
    Reserve(String),
}

/// The installed arm.
#[derive(Debug, Clone)]
pub struct ArmSetup {
    pub model: ArmModel,
    pub calibration: Calibration,
    pub maps: ServoMaps,
    pub board: BoardGeometry,
    pub pieces: PiecesConfig,
    pub safety: SafetyConfig,
    pub reserve_roles: Vec<Role>,
    /// Things a person should know (nominal calibration in use, ...).
    pub notes: Vec<String>,
}

fn role_of(text: &str) -> Option<Role> {
    match text {
        "q" => Some(Role::Queen),
        "r" => Some(Role::Rook),
        "b" => Some(Role::Bishop),
        "n" => Some(Role::Knight),
        _ => None,
    }
}

impl ArmSetup {
    /// Loads the model, calibration and board calibration files the config names.
    pub fn load(cfg: &ArmConfig) -> Result<ArmSetup, SetupError> {
        let model = match cfg.model_file() {
            Some(path) => ArmModel::load(path)?,
            None => ArmModel::so101()?,
        };
        let mut notes = Vec::new();
        let (calibration, cal_origin) = if cfg.calibration.exists() {
            (
                Calibration::load(&cfg.calibration)?,
                cfg.calibration.display().to_string(),
            )
        } else {
            notes.push(format!(
                "no servo calibration at {}: using the nominal one (fine for simulation, not for a real arm)",
                cfg.calibration.display()
            ));
            (Calibration::nominal(&model), "nominal".to_owned())
        };
        let board = if cfg.board_calibration.exists() {
            let bc = BoardCalibration::load(&cfg.board_calibration)?;
            notes.push(format!(
                "board placement from {}",
                cfg.board_calibration.display()
            ));
            bc.board
        } else {
            cfg.board
        };
        let mut cfg = cfg.clone();
        cfg.board = board;
        ArmSetup::new(model, calibration, &cfg, &cal_origin, notes)
    }

    /// Builds a setup from parts already loaded (pure).
    pub fn new(
        model: ArmModel,
        calibration: Calibration,
        cfg: &ArmConfig,
        cal_origin: &str,
        notes: Vec<String>,
    ) -> Result<ArmSetup, SetupError> {
        let mut model = model;
        let maps = ServoMaps::new(&model, &calibration, cal_origin)?;
        // A joint may go only where both the URDF and the calibrated servo range allow.
        let joints = model
            .joints
            .iter_mut()
            .chain(std::iter::once(&mut model.gripper.joint));
        for (j, m) in joints.zip(maps.all()) {
            let (a, b) = (
                m.radians(f64::from(m.range_min)),
                m.radians(f64::from(m.range_max)),
            );
            j.lower = j.lower.max(a.min(b));
            j.upper = j.upper.min(a.max(b));
            if j.lower >= j.upper {
                return Err(SetupError::Range(j.name.clone()));
            }
        }
        let reserve_roles = cfg
            .reserve
            .pieces
            .iter()
            .map(|p| role_of(p).ok_or_else(|| SetupError::Reserve(p.clone())))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ArmSetup {
            board: BoardGeometry::new(&cfg.board, cfg),
            model,
            calibration,
            maps,
            pieces: cfg.pieces,
            safety: cfg.safety,
            reserve_roles,
            notes,
        })
    }

    /// The default SO-101 with the default config and nominal calibration.
    pub fn default_so101() -> Result<ArmSetup, SetupError> {
        let model = ArmModel::so101()?;
        let cal = Calibration::nominal(&model);
        ArmSetup::new(model, cal, &ArmConfig::default(), "nominal", Vec::new())
    }

    /// Joint-limit margin in radians.
    pub fn joint_margin(&self) -> f64 {
        self.safety.joint_margin_deg.to_radians()
    }

    pub fn piece(&self, role: Role) -> PieceSize {
        let p = &self.pieces;
        match role {
            Role::King => p.king,
            Role::Queen => p.queen,
            Role::Rook => p.rook,
            Role::Bishop => p.bishop,
            Role::Knight => p.knight,
            Role::Pawn => p.pawn,
        }
    }

    /// Tool height above the board surface when gripping a piece.
    pub fn grasp_height(&self, role: Role) -> f64 {
        self.piece(role).height_m * self.pieces.grasp_fraction
    }

    fn all_sizes(&self) -> [PieceSize; 6] {
        let p = &self.pieces;
        [p.king, p.queen, p.rook, p.bishop, p.knight, p.pawn]
    }

    /// The tallest piece's height.
    pub fn tallest(&self) -> f64 {
        self.all_sizes()
            .iter()
            .map(|s| s.height_m)
            .fold(0.0, f64::max)
    }

    /// The shortest piece's height.
    pub fn shortest(&self) -> f64 {
        self.all_sizes()
            .iter()
            .map(|s| s.height_m)
            .fold(f64::INFINITY, f64::min)
    }

    /// Tool height while travelling: a carried tallest piece, gripped at its
    /// grasp height, has its base `travel_clearance_m` above the tallest
    /// standing piece.
    pub fn travel_height(&self) -> f64 {
        self.tallest() * (1.0 + self.pieces.grasp_fraction) + self.pieces.travel_clearance_m
    }

    /// Pitches to try, steepest (vertical) first, alternating leaning out and back.
    pub fn pitch_candidates(&self) -> Vec<f64> {
        let mut out = vec![FRAC_PI_2];
        let mut k = 1.0;
        loop {
            let down = 90.0 - k * PITCH_STEP_DEG;
            let back = 90.0 + k * PITCH_STEP_DEG;
            let mut any = false;
            if down >= self.safety.min_pitch_deg - 1e-9 {
                out.push(down.to_radians());
                any = true;
            }
            if back <= MAX_PITCH_DEG + 1e-9 {
                out.push(back.to_radians());
                any = true;
            }
            if !any {
                return out;
            }
            k += 1.0;
        }
    }

    /// IK for a board-frame point at a given pitch, jaws along the files, inside the margins.
    pub fn solve(
        &self,
        board_xyz: [f64; 3],
        pitch: f64,
        near: Option<&Joints>,
    ) -> Result<IkSolution, IkError> {
        let target = self.board.to_arm(board_xyz[0], board_xyz[1], board_xyz[2]);
        self.solve_arm(&target, pitch, near)
    }

    /// IK keeping the wrist roll of `seed` (no jaw alignment), nearest `seed`.
    pub fn solve_with_roll(
        &self,
        board_xyz: [f64; 3],
        pitch: f64,
        seed: &Joints,
    ) -> Result<IkSolution, IkError> {
        let target = self.board.to_arm(board_xyz[0], board_xyz[1], board_xyz[2]);
        self.model
            .ik(&target, pitch, None, self.joint_margin(), Some(seed))
    }

    fn solve_arm(
        &self,
        target: &Point3<f64>,
        pitch: f64,
        near: Option<&Joints>,
    ) -> Result<IkSolution, IkError> {
        self.model.ik(
            target,
            pitch,
            Some(self.board.file_axis()),
            self.joint_margin(),
            near,
        )
    }

    /// A vertical line above a board point, from `z_low` to `z_high`, reached
    /// at one pitch (the steepest that works along the whole line): the
    /// solutions at waypoints every [`WAYPOINT_SPACING_M`], bottom first.
    pub fn vertical(
        &self,
        x: f64,
        y: f64,
        z_low: f64,
        z_high: f64,
    ) -> Result<Vec<(f64, IkSolution)>, IkError> {
        let n = ((z_high - z_low) / WAYPOINT_SPACING_M).ceil().max(1.0) as usize;
        let heights: Vec<f64> = (0..=n)
            .map(|i| z_low + (z_high - z_low) * i as f64 / n as f64)
            .collect();
        let mut first_err = None;
        'pitch: for pitch in self.pitch_candidates() {
            let mut sols = Vec::with_capacity(heights.len());
            let mut prev: Option<Joints> = None;
            for &z in &heights {
                match self.solve([x, y, z], pitch, prev.as_ref()) {
                    Ok(s) => {
                        prev = Some(s.joints);
                        sols.push((z, s));
                    }
                    Err(e) => {
                        // Report what the flattest pitch (the longest reach) ran into.
                        if first_err.as_ref().is_none_or(|(p, _)| pitch < *p) {
                            first_err = Some((pitch, e));
                        }
                        continue 'pitch;
                    }
                }
            }
            // The same branch all the way: no joint jumps between waypoints.
            let smooth = sols.windows(2).all(|w| {
                w[0].1
                    .joints
                    .iter()
                    .zip(&w[1].1.joints)
                    .all(|(a, b)| (a - b).abs() < MAX_WAYPOINT_JUMP_RAD)
            });
            if smooth {
                return Ok(sols);
            }
        }
        // Near the base no single pitch may serve the whole line: let the
        // pitch change gradually with height (the tool still moves straight
        // up and down; a carried piece tilts a little).
        let mut sols: Vec<(f64, IkSolution)> = Vec::with_capacity(heights.len());
        let candidates = self.pitch_candidates();
        for &z in &heights {
            let prev = sols.last().map(|(_, s)| *s);
            let mut order = candidates.clone();
            if let Some(p) = prev {
                order.sort_by(|a, b| (a - p.pitch).abs().total_cmp(&(b - p.pitch).abs()));
            }
            let found = order.iter().find_map(|&pitch| {
                let s = self
                    .solve([x, y, z], pitch, prev.as_ref().map(|p| &p.joints))
                    .ok()?;
                let smooth = prev.is_none_or(|p| {
                    p.joints
                        .iter()
                        .zip(&s.joints)
                        .all(|(a, b)| (a - b).abs() < MAX_WAYPOINT_JUMP_RAD)
                });
                smooth.then_some(s)
            });
            match found {
                Some(s) => sols.push((z, s)),
                None => return Err(first_err.map(|(_, e)| e).unwrap_or(IkError::NoSmoothPath)),
            }
        }
        Ok(sols)
    }
}

/// Largest joint change between neighbouring waypoints 2 cm apart before we
/// call it a branch switch (a 2 cm step needs well under 0.5 rad anywhere in
/// the workspace away from singularities).
pub const MAX_WAYPOINT_JUMP_RAD: f64 = 0.5;
