//! The scripted opponent: a person who plays a sequence of moves on the
//! simulated board with one hand, frame by frame.
//!
//! Each move becomes a plan of steps (hand moves, picks, drops); playing the
//! plan yields one [`World`] per frame plus the truth of what is happening.
//! The person reaches in from their side, lifts and places (or slides) the
//! piece, takes captured pieces off the board (before or after placing the
//! capturing piece), castles king first or rook first, sometimes leaves a
//! piece off-centre, sometimes replies quickly, and on request first makes
//! an illegal move and then takes it back. Pure: no rendering, no files.

use nalgebra::{Point3, Vector3};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use shakmaty::{CastlingMode, Chess, Color, Move, Piece, Position, Square};

use super::pieces::height_mm;
use super::scene::random_hand;
use super::world::{Hand, Placement, World, UNIT_PER_SQUARE};
use super::SimError;

/// How the person plays.
#[derive(Debug, Clone, PartialEq)]
pub struct OpponentStyle {
    /// Frames per second of the emitted stream.
    pub fps: f64,
    /// Chance of sliding a piece along the board instead of lifting it.
    pub slide_chance: f64,
    /// Chance of castling rook first (people mostly move the king first).
    pub rook_first_chance: f64,
    /// Chance of taking the captured piece off before moving (else after).
    pub capture_first_chance: f64,
    /// Chance of leaving a moved piece clearly off-centre.
    pub off_centre_chance: f64,
    /// Chance of replying quickly (a short pause before the move).
    pub quick_reply_chance: f64,
    /// Plies (0-based) before which an illegal move is made and taken back.
    pub illegal_before: Vec<usize>,
}

impl Default for OpponentStyle {
    fn default() -> Self {
        OpponentStyle {
            fps: 30.0,
            slide_chance: 0.2,
            rook_first_chance: 0.25,
            capture_first_chance: 0.5,
            off_centre_chance: 0.25,
            quick_reply_chance: 0.25,
            illegal_before: Vec::new(),
        }
    }
}

/// What the hand is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// No hand; the board is settled.
    Idle,
    /// The hand moves in, between pieces, or out.
    Reach,
    /// The hand stands still (grasping, releasing, hesitating).
    Hold,
    /// The hand carries (or slides) a piece.
    Carry,
}

/// The truth of one frame of a scripted game.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScriptTruth {
    pub frame: u64,
    /// Time of the frame from the start, milliseconds.
    pub time_ms: f64,
    /// Moves completed so far.
    pub ply: usize,
    /// The move being made (UCI), if any.
    pub moving: Option<String>,
    pub phase: Phase,
    /// Pieces standing on the board (FEN placement).
    pub board_fen: String,
    /// The game position after the completed moves (full FEN).
    pub position_fen: String,
    /// Whether a hand is in the scene.
    pub hand: bool,
    /// No hand, nothing held: what the board shows is a position.
    pub settled: bool,
    /// What happened at this frame (`move_started e2e4`, `picked e2`,
    /// `placed e4`, `removed d5`, `move_done e2e4`, `illegal_shown e2e5`,
    /// `illegal_undone e2e5`).
    pub events: Vec<String>,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// The hand appears at its resting point on `side`.
    HandIn {
        at: Point3<f64>,
    },
    /// Moves the grip to `to` over `frames`, rising by `arc` mm mid-way;
    /// held pieces follow (on the board surface when `slide`).
    Move {
        to: Point3<f64>,
        frames: u32,
        arc: f64,
        slide: bool,
    },
    /// The hand (and board) stay still.
    Hold {
        frames: u32,
        phase: Phase,
    },
    /// The piece under the grip is taken into the hand.
    Pick {
        piece: usize,
    },
    /// A held piece is set down at a base position.
    Drop {
        piece: usize,
        at: Point3<f64>,
    },
    HandOut,
    Event(String),
    /// The logical game advances by a move.
    Commit {
        mv: Move,
    },
    /// Marks the move in progress (None: none).
    Moving(Option<String>),
}

/// The scripted person and the game they play.
#[derive(Debug, Clone)]
pub struct ScriptedGame {
    world: World,
    position: Chess,
    rng: ChaCha8Rng,
    style: OpponentStyle,
    unit: f64,
    steps: Vec<Step>,
    // Playback state.
    step: usize,
    step_frame: u32,
    move_start: Point3<f64>,
    grip: Point3<f64>,
    side: Vector3<f64>,
    held: Vec<(usize, Vector3<f64>)>,
    hand_template: Option<Hand>,
    frame: u64,
    ply: usize,
    moving: Option<String>,
    captured: [usize; 2],
}

/// Height of the grip above a piece's top, mm (fingertips on its head).
const GRIP_ABOVE_MM: f64 = 6.0;
/// How high a lifted piece is carried, mm (a few cm, as people do).
const CARRY_LIFT_MM: f64 = 35.0;
/// Where the hand rests: this far out beyond the board frame, and this high.
const REST_OUT_MM: f64 = 260.0;
const REST_HEIGHT_MM: f64 = 140.0;
/// Hand speed while reaching/carrying, mm per second (a relaxed move).
const HAND_SPEED_MM_S: f64 = 600.0;

impl ScriptedGame {
    /// A person about to play `moves` from `start` on `world` (whose pieces
    /// must show `start`'s board).
    pub fn new(
        world: World,
        start: Chess,
        moves: &[Move],
        style: OpponentStyle,
        seed: u64,
    ) -> Result<ScriptedGame, SimError> {
        if !(1.0..=240.0).contains(&style.fps) {
            return Err(SimError::BadScript(format!(
                "{} frames per second: must be 1..=240",
                style.fps
            )));
        }
        if world.board_fen() != start.board().board_fen().to_string() {
            return Err(SimError::BadScript(format!(
                "the world shows {} but the game starts from {}",
                world.board_fen(),
                start.board().board_fen()
            )));
        }
        let unit = UNIT_PER_SQUARE * world.board.square_mm;
        let mut g = ScriptedGame {
            world,
            position: start.clone(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            style,
            unit,
            steps: Vec::new(),
            step: 0,
            step_frame: 0,
            move_start: Point3::origin(),
            grip: Point3::origin(),
            side: -Vector3::y(),
            held: Vec::new(),
            hand_template: None,
            frame: 0,
            ply: 0,
            moving: None,
            captured: [0, 0],
        };
        // Plan against a copy of the world that the plan itself updates.
        let mut plan_world = g.world.clone();
        let mut pos = start;
        g.steps.push(Step::Hold {
            frames: g.frames(0.5),
            phase: Phase::Idle,
        });
        for (ply, &mv) in moves.iter().enumerate() {
            if !pos.is_legal(mv) {
                return Err(SimError::BadScript(format!(
                    "move {} ({}) is not legal in {}",
                    ply + 1,
                    mv.to_uci(CastlingMode::Standard),
                    shakmaty::fen::Fen::from_position(&pos, shakmaty::EnPassantMode::Legal)
                )));
            }
            let pause = if g.rng.random_bool(g.style.quick_reply_chance) {
                g.rng.random_range(0.1..0.35)
            } else {
                g.rng.random_range(0.6..1.8)
            };
            g.steps.push(Step::Hold {
                frames: g.frames(pause),
                phase: Phase::Idle,
            });
            if g.style.illegal_before.contains(&ply) {
                g.plan_illegal(&mut plan_world, &pos);
            }
            g.plan_move(&mut plan_world, &pos, mv)?;
            pos.play_unchecked(mv);
        }
        g.steps.push(Step::Hold {
            frames: g.frames(0.5),
            phase: Phase::Idle,
        });
        Ok(g)
    }

    /// The game position so far.
    pub fn position(&self) -> &Chess {
        &self.position
    }

    /// A random duration between `lo` and `hi` seconds, in frames.
    fn rand_frames(&mut self, lo: f64, hi: f64) -> u32 {
        let secs = self.rng.random_range(lo..hi);
        self.frames(secs)
    }

    fn frames(&self, seconds: f64) -> u32 {
        ((seconds * self.style.fps).round() as u32).max(1)
    }

    fn side_of(&self, color: Color) -> Vector3<f64> {
        match color {
            Color::White => -Vector3::y(),
            Color::Black => Vector3::y(),
        }
    }

    fn rest_point(&self, color: Color, near_x: f64) -> Point3<f64> {
        let b = &self.world.board;
        let out = b.play_mm() / 2.0 + b.border_mm + REST_OUT_MM;
        let c = b.centre();
        let s = self.side_of(color);
        Point3::new(near_x, c.y + s.y * out, REST_HEIGHT_MM)
    }

    fn grip_over(&self, w: &World, piece: usize) -> Point3<f64> {
        let p = &w.pieces[piece];
        p.position + Vector3::z() * (height_mm(p.piece.role, self.unit) + GRIP_ABOVE_MM)
    }

    fn travel_frames(&mut self, a: Point3<f64>, b: Point3<f64>) -> u32 {
        let d = (b - a).norm();
        let jitter: f64 = self.rng.random_range(0.85..1.2);
        self.frames((d / HAND_SPEED_MM_S).max(0.15) * jitter)
    }

    /// Where a piece put on `sq` stands: near the centre, sometimes off it.
    fn place_on(&mut self, sq: Square) -> Point3<f64> {
        let c = self.world.board.square_centre(sq);
        let r = if self.rng.random_bool(self.style.off_centre_chance) {
            0.22
        } else {
            Placement::CASUAL.max_offset * 0.5
        } * self.world.board.square_mm;
        Point3::new(
            c.x + self.rng.random_range(-r..=r),
            c.y + self.rng.random_range(-r..=r),
            0.0,
        )
    }

    /// Where the next captured piece of `color` goes: a row beside the board.
    fn graveyard(&mut self, color: Color) -> Point3<f64> {
        let b = &self.world.board;
        let k = self.captured[color as usize];
        self.captured[color as usize] += 1;
        let x = match color {
            Color::White => b.play_mm() + b.border_mm + 40.0 + (k / 8) as f64 * 45.0,
            Color::Black => -b.border_mm - 40.0 - (k / 8) as f64 * 45.0,
        };
        let y = b.square_centre(Square::new((k % 8) as u32 * 8)).y;
        Point3::new(x, y, -b.thickness_mm)
    }

    /// Plans one piece taken from where it stands to `to` (lift or slide),
    /// the hand starting wherever the previous step left it.
    fn plan_carry(&mut self, w: &mut World, piece: usize, to: Point3<f64>, may_slide: bool) {
        let grip = self.grip_over(w, piece);
        let above = grip + Vector3::z() * 25.0;
        let frames = self.rand_frames(0.35, 0.6);
        self.steps.push(Step::Move {
            to: above,
            frames,
            arc: 40.0,
            slide: false,
        });
        self.steps.push(Step::Move {
            to: grip,
            frames: self.frames(0.15),
            arc: 0.0,
            slide: false,
        });
        let grasp = self.rand_frames(0.1, 0.25);
        self.steps.push(Step::Hold {
            frames: grasp,
            phase: Phase::Hold,
        });
        self.steps.push(Step::Pick { piece });
        let from_sq = w
            .board
            .square_at(w.pieces[piece].position.x, w.pieces[piece].position.y);
        if let Some(sq) = from_sq {
            self.steps.push(Step::Event(format!("picked {sq}")));
        }
        let offset = w.pieces[piece].position - grip;
        let target_grip = to - offset;
        let slide = may_slide && to.z == 0.0 && self.rng.random_bool(self.style.slide_chance);
        if slide {
            let frames = self.travel_frames(grip, target_grip) + 4;
            self.steps.push(Step::Move {
                to: target_grip,
                frames,
                arc: 0.0,
                slide: true,
            });
        } else {
            let lift = Vector3::z() * CARRY_LIFT_MM;
            self.steps.push(Step::Move {
                to: grip + lift,
                frames: self.frames(0.15),
                arc: 0.0,
                slide: false,
            });
            let frames = self.travel_frames(grip, target_grip);
            self.steps.push(Step::Move {
                to: target_grip + lift,
                frames,
                arc: 20.0,
                slide: false,
            });
            self.steps.push(Step::Move {
                to: target_grip,
                frames: self.frames(0.15),
                arc: 0.0,
                slide: false,
            });
        }
        self.steps.push(Step::Drop { piece, at: to });
        if let Some(sq) = w.board.square_at(to.x, to.y).filter(|_| to.z >= 0.0) {
            self.steps.push(Step::Event(format!("placed {sq}")));
        } else if let Some(sq) = from_sq {
            self.steps.push(Step::Event(format!("removed {sq}")));
        }
        let frames = self.rand_frames(0.08, 0.2);
        self.steps.push(Step::Hold {
            frames,
            phase: Phase::Hold,
        });
        w.pieces[piece].position = to;
    }

    fn hand_in(&mut self, color: Color, near_x: f64) {
        let at = self.rest_point(color, near_x);
        self.steps.push(Step::HandIn { at });
    }

    fn hand_out(&mut self, color: Color, near_x: f64) {
        let at = self.rest_point(color, near_x);
        let frames = self.rand_frames(0.35, 0.6);
        self.steps.push(Step::Move {
            to: at,
            frames,
            arc: 30.0,
            slide: false,
        });
        self.steps.push(Step::HandOut);
    }

    fn index_on(&self, w: &World, sq: Square) -> Result<usize, SimError> {
        w.piece_index_on(sq)
            .ok_or_else(|| SimError::BadScript(format!("no piece on {sq} in the simulated world")))
    }

    fn plan_move(&mut self, w: &mut World, pos: &Chess, mv: Move) -> Result<(), SimError> {
        let color = pos.turn();
        let uci = mv.to_uci(CastlingMode::Standard).to_string();
        let from = mv
            .from()
            .ok_or_else(|| SimError::BadScript("drops are not chess".into()))?;
        let near_x = w.board.square_centre(from).x;
        self.steps.push(Step::Moving(Some(uci.clone())));
        self.steps.push(Step::Event(format!("move_started {uci}")));
        self.hand_in(color, near_x);
        match mv {
            Move::Castle { king, rook } => {
                let side = shakmaty::CastlingSide::from_king_side(king < rook);
                let (k_to, r_to) = (side.king_to(color), side.rook_to(color));
                let ki = self.index_on(w, king)?;
                let ri = self.index_on(w, rook)?;
                let k_at = self.place_on(k_to);
                let r_at = self.place_on(r_to);
                if self.rng.random_bool(self.style.rook_first_chance) {
                    self.plan_carry(w, ri, r_at, true);
                    self.plan_carry(w, ki, k_at, false);
                } else {
                    self.plan_carry(w, ki, k_at, true);
                    self.plan_carry(w, ri, r_at, false);
                }
            }
            _ => {
                let to = mv.to();
                let mover = self.index_on(w, from)?;
                let victim_sq = if mv.is_en_passant() {
                    Some(Square::from_coords(to.file(), from.rank()))
                } else if mv.is_capture() {
                    Some(to)
                } else {
                    None
                };
                let victim = victim_sq.map(|s| self.index_on(w, s)).transpose()?;
                let first = self.rng.random_bool(self.style.capture_first_chance);
                if let Some(v) = victim.filter(|_| first) {
                    let g = self.graveyard(!color);
                    self.plan_carry(w, v, g, false);
                }
                if let Some(role) = mv.promotion() {
                    // The pawn goes off the board, a spare piece comes on.
                    let g = self.graveyard(color);
                    self.plan_carry(w, mover, g, false);
                    let spare_at = self.graveyard(color);
                    let spare = w.pieces.len();
                    let mut p = w.pieces[mover];
                    p.piece = Piece { color, role };
                    p.position = spare_at;
                    w.pieces.push(p);
                    self.world.pieces.push(p);
                    if let Some(v) = victim.filter(|_| !first) {
                        let g = self.graveyard(!color);
                        self.plan_carry(w, v, g, false);
                    }
                    let at = self.place_on(to);
                    self.plan_carry(w, spare, at, false);
                } else if let Some(v) = victim.filter(|_| !first) {
                    // Capture "after": the mover is first put down at the
                    // edge of the target square on the person's side, the
                    // captured piece is taken off, then the mover is pushed
                    // into place. Only when that neighbour square is free.
                    let side = self.side_of(color);
                    let c = w.board.square_centre(to);
                    let half = w.board.square_mm * 0.55;
                    let beside = Point3::new(c.x, c.y + side.y * half, 0.0);
                    let beside_sq = w.board.square_at(beside.x, beside.y);
                    let free = beside_sq.is_none_or(|sq| w.piece_index_on(sq).is_none());
                    if free {
                        self.plan_carry(w, mover, beside, false);
                        let g = self.graveyard(!color);
                        self.plan_carry(w, v, g, false);
                        let at = self.place_on(to);
                        self.plan_carry(w, mover, at, true);
                    } else {
                        let g = self.graveyard(!color);
                        self.plan_carry(w, v, g, false);
                        let at = self.place_on(to);
                        self.plan_carry(w, mover, at, false);
                    }
                } else {
                    let at = self.place_on(to);
                    self.plan_carry(w, mover, at, victim.is_none());
                }
            }
        }
        self.hand_out(color, near_x);
        self.steps.push(Step::Commit { mv });
        self.steps.push(Step::Event(format!("move_done {uci}")));
        self.steps.push(Step::Moving(None));
        Ok(())
    }

    /// Moves a piece of the side to move to an empty square it cannot go
    /// to, leaves it there a moment, then puts it back.
    fn plan_illegal(&mut self, w: &mut World, pos: &Chess) {
        let color = pos.turn();
        let legal = pos.legal_moves();
        let mut options = Vec::new();
        for (sq, piece) in pos.board().clone() {
            if piece.color != color {
                continue;
            }
            for to in Square::ALL {
                if pos.board().piece_at(to).is_some()
                    || legal.iter().any(|m| m.from() == Some(sq) && m.to() == to)
                {
                    continue;
                }
                let (df, dr) = (
                    (i32::from(sq.file()) - i32::from(to.file())).abs(),
                    (i32::from(sq.rank()) - i32::from(to.rank())).abs(),
                );
                // Plausible slips: one or two squares away.
                if df.max(dr) <= 2 {
                    options.push((sq, to));
                }
            }
        }
        if options.is_empty() {
            return;
        }
        let (from, to) = options[self.rng.random_range(0..options.len())];
        let Some(piece) = w.piece_index_on(from) else {
            return;
        };
        let uci = format!("{from}{to}");
        let near_x = w.board.square_centre(from).x;
        let back = w.pieces[piece].position;
        self.steps.push(Step::Moving(Some(uci.clone())));
        self.hand_in(color, near_x);
        let at = self.place_on(to);
        self.plan_carry(w, piece, at, true);
        self.hand_out(color, near_x);
        self.steps.push(Step::Event(format!("illegal_shown {uci}")));
        let frames = self.rand_frames(0.8, 1.5);
        self.steps.push(Step::Hold {
            frames,
            phase: Phase::Idle,
        });
        self.hand_in(color, near_x);
        self.plan_carry(w, piece, back, true);
        self.hand_out(color, near_x);
        self.steps
            .push(Step::Event(format!("illegal_undone {uci}")));
        self.steps.push(Step::Moving(None));
    }

    /// Total frames the script will emit.
    pub fn frame_count(&self) -> u64 {
        self.steps
            .iter()
            .map(|s| match s {
                Step::Move { frames, .. } | Step::Hold { frames, .. } => u64::from(*frames),
                _ => 0,
            })
            .sum()
    }

    fn update_hand(&mut self) {
        if let Some(t) = &self.hand_template {
            let mut h = Hand::reaching(self.grip, self.side, t.skin, t.sleeve);
            h.sleeve_capsules = t.sleeve_capsules;
            self.world.hand = Some(h);
        }
        for &(i, off) in &self.held {
            self.world.pieces[i].position = self.grip + off;
        }
    }
}

impl Iterator for ScriptedGame {
    type Item = (World, ScriptTruth);

    fn next(&mut self) -> Option<(World, ScriptTruth)> {
        let mut events = Vec::new();
        loop {
            let step = self.steps.get(self.step)?.clone();
            match step {
                Step::HandIn { at } => {
                    let color = self.position.turn();
                    self.side = self.side_of(color);
                    let hand = random_hand(at, self.side, &mut self.rng);
                    self.side = hand_direction(&hand, self.side);
                    self.hand_template = Some(hand);
                    self.grip = at;
                    self.update_hand();
                }
                Step::HandOut => {
                    self.hand_template = None;
                    self.world.hand = None;
                }
                Step::Pick { piece } => {
                    self.held
                        .push((piece, self.world.pieces[piece].position - self.grip));
                }
                Step::Drop { piece, at } => {
                    self.held.retain(|h| h.0 != piece);
                    self.world.pieces[piece].position = at;
                }
                Step::Event(e) => events.push(e),
                Step::Commit { mv } => {
                    self.position.play_unchecked(mv);
                    self.ply += 1;
                }
                Step::Moving(m) => self.moving = m,
                Step::Move {
                    to,
                    frames,
                    arc,
                    slide,
                } => {
                    if self.step_frame == 0 {
                        self.move_start = self.grip;
                    }
                    self.step_frame += 1;
                    let t = f64::from(self.step_frame) / f64::from(frames);
                    let s = t * t * (3.0 - 2.0 * t);
                    let mut g = self.move_start + (to - self.move_start) * s;
                    g.z += arc * (std::f64::consts::PI * t).sin();
                    self.grip = g;
                    self.update_hand();
                    if slide {
                        for &(i, _) in &self.held {
                            self.world.pieces[i].position.z = 0.0;
                        }
                    }
                    let phase = if self.held.is_empty() {
                        Phase::Reach
                    } else {
                        Phase::Carry
                    };
                    if self.step_frame >= frames {
                        self.step_frame = 0;
                        self.step += 1;
                    }
                    return Some(self.emit(phase, events));
                }
                Step::Hold { frames, phase } => {
                    self.step_frame += 1;
                    if self.step_frame >= frames {
                        self.step_frame = 0;
                        self.step += 1;
                    }
                    let phase = if self.world.hand.is_none() {
                        Phase::Idle
                    } else {
                        phase
                    };
                    return Some(self.emit(phase, events));
                }
            }
            self.step += 1;
        }
    }
}

/// The horizontal direction the hand came from (it is drawn at an angle).
fn hand_direction(hand: &Hand, fallback: Vector3<f64>) -> Vector3<f64> {
    hand.capsules
        .get(1)
        .map(|c| {
            let d = c.a - c.b;
            Vector3::new(d.x, d.y, 0.0)
        })
        .and_then(|d| d.try_normalize(1e-9))
        .unwrap_or(fallback)
}

impl ScriptedGame {
    fn emit(&mut self, phase: Phase, events: Vec<String>) -> (World, ScriptTruth) {
        let truth = ScriptTruth {
            frame: self.frame,
            time_ms: self.frame as f64 * 1000.0 / self.style.fps,
            ply: self.ply,
            moving: self.moving.clone(),
            phase,
            board_fen: self.world.board_fen(),
            position_fen: shakmaty::fen::Fen::from_position(
                &self.position,
                shakmaty::EnPassantMode::Legal,
            )
            .to_string(),
            hand: self.world.hand.is_some(),
            settled: self.world.hand.is_none() && self.held.is_empty(),
            events,
        };
        self.frame += 1;
        (self.world.clone(), truth)
    }
}

/// Parses a move list (`1. e4 e5 2. Nf3`, SAN or UCI; move numbers,
/// comments in braces and results are skipped) from `start`.
pub fn parse_moves(start: &Chess, text: &str) -> Result<Vec<Move>, SimError> {
    let mut pos = start.clone();
    let mut out = Vec::new();
    let mut depth = 0usize;
    for raw in text.split_whitespace() {
        if raw.starts_with('{') {
            depth += 1;
        }
        if depth > 0 {
            if raw.ends_with('}') {
                depth -= 1;
            }
            continue;
        }
        let tok = raw.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        if tok.is_empty()
            || matches!(
                tok,
                "1-0" | "0-1" | "1/2-1/2" | "*" | "-0" | "-1" | "/2-1/2"
            )
        {
            continue;
        }
        let mv = crate::game::parse_move(&pos, tok)
            .map_err(|e| SimError::BadScript(format!("move {} `{tok}`: {e}", out.len() + 1)))?;
        pos.play_unchecked(mv);
        out.push(mv);
    }
    Ok(out)
}

/// `n` random legal moves from `start` (stopping early at a game end).
pub fn random_moves(start: &Chess, n: usize, rng: &mut ChaCha8Rng) -> Vec<Move> {
    let mut pos = start.clone();
    let mut out = Vec::new();
    for _ in 0..n {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            break;
        }
        // Prefer captures now and then so games show them.
        let captures: Vec<Move> = legal.iter().copied().filter(|m| m.is_capture()).collect();
        let mv = if !captures.is_empty() && rng.random_bool(0.5) {
            captures[rng.random_range(0..captures.len())]
        } else {
            legal[rng.random_range(0..legal.len())]
        };
        pos.play_unchecked(mv);
        out.push(mv);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::world::{BoardSpec, BoardStyle, PieceSet};

    fn game(moves: &str, style: OpponentStyle, seed: u64) -> (Vec<ScriptTruth>, Chess) {
        let start = Chess::default();
        let moves = parse_moves(&start, moves).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let world = World::new(
            start.board(),
            BoardSpec::of_style(BoardStyle::Wooden),
            PieceSet::WOOD,
            Placement::CASUAL,
            &mut rng,
        )
        .unwrap();
        let mut end = start.clone();
        for &m in &moves {
            end.play_unchecked(m);
        }
        let g = ScriptedGame::new(world, start, &moves, style, seed).unwrap();
        let n = g.frame_count();
        let truths: Vec<ScriptTruth> = g.map(|(_, t)| t).collect();
        assert_eq!(
            truths.len() as u64,
            n,
            "frame_count matches the frames emitted"
        );
        (truths, end)
    }

    fn events(truths: &[ScriptTruth]) -> Vec<String> {
        truths.iter().flat_map(|t| t.events.clone()).collect()
    }

    fn index_of(ev: &[String], what: &str) -> usize {
        ev.iter()
            .position(|e| e == what)
            .unwrap_or_else(|| panic!("no event `{what}` in {ev:?}"))
    }

    const GAME: &str = "1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O Nf6 5. d4 exd4 6. e5 d5 7. exf6 dxc4";

    #[test]
    fn a_scripted_game_ends_settled_in_its_final_position() {
        let (truths, end) = game(GAME, OpponentStyle::default(), 1);
        let last = truths.last().unwrap();
        assert_eq!(last.ply, 14);
        assert!(last.settled && !last.hand);
        assert_eq!(last.board_fen, end.board().board_fen().to_string());
        // The hand was in view for a realistic while per move (at least 1 s at 30 fps).
        let hand_frames = truths.iter().filter(|t| t.hand).count();
        assert!(
            hand_frames > 14 * 30,
            "{hand_frames} hand frames for 14 moves"
        );
        // Between moves the board is settled and shows the game position.
        for t in truths.iter().filter(|t| t.settled && t.moving.is_none()) {
            assert_eq!(
                t.position_fen.split(' ').next().unwrap(),
                t.board_fen,
                "frame {}",
                t.frame
            );
        }
        // Some frames show a piece in the air (neither position).
        assert!(truths.iter().any(|t| t.hand
            && t.board_fen.matches(|c: char| c.is_alphabetic()).count() < 32
            && t.ply == 0));
    }

    #[test]
    fn castling_order_and_capture_order_follow_the_style() {
        let rook_first = OpponentStyle {
            rook_first_chance: 1.0,
            capture_first_chance: 1.0,
            ..OpponentStyle::default()
        };
        let ev = events(&game(GAME, rook_first, 2).0);
        assert!(index_of(&ev, "picked h1") < index_of(&ev, "picked e1"));
        // exd4: the d4 pawn is taken off before the e5 pawn is picked up.
        assert!(index_of(&ev, "removed d4") < index_of(&ev, "picked e5"));
        let king_first = OpponentStyle {
            rook_first_chance: 0.0,
            capture_first_chance: 0.0,
            ..OpponentStyle::default()
        };
        let ev = events(&game(GAME, king_first, 2).0);
        assert!(index_of(&ev, "picked e1") < index_of(&ev, "picked h1"));
        assert!(index_of(&ev, "picked e5") < index_of(&ev, "removed d4"));
    }

    #[test]
    fn an_illegal_move_is_shown_then_taken_back() {
        let style = OpponentStyle {
            illegal_before: vec![1],
            ..OpponentStyle::default()
        };
        let (truths, _) = game("1. e4 e5", style, 3);
        let ev = events(&truths);
        let shown = ev
            .iter()
            .find(|e| e.starts_with("illegal_shown"))
            .expect("an illegal move");
        let uci = shown.trim_start_matches("illegal_shown ");
        assert!(index_of(&ev, shown) < index_of(&ev, &format!("illegal_undone {uci}")));
        assert!(
            index_of(&ev, &format!("illegal_undone {uci}")) < index_of(&ev, "move_started e7e5")
        );
        // While it is shown, the settled board is not the game position.
        let after_e4 = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR";
        assert!(truths
            .iter()
            .any(|t| t.settled && t.ply == 1 && t.board_fen != after_e4));
    }

    #[test]
    fn same_seed_same_script() {
        let a = game("1. d4 d5 2. c4 dxc4", OpponentStyle::default(), 9).0;
        let b = game("1. d4 d5 2. c4 dxc4", OpponentStyle::default(), 9).0;
        let c = game("1. d4 d5 2. c4 dxc4", OpponentStyle::default(), 10).0;
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bad_scripts_are_rejected_with_reasons() {
        let start = Chess::default();
        let err = parse_moves(&start, "1. e4 e4").unwrap_err();
        assert!(err.to_string().contains("move 2"), "{err}");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let world = World::new(
            &shakmaty::Board::empty(),
            BoardSpec::of_style(BoardStyle::Vinyl),
            PieceSet::PLASTIC,
            Placement::EXACT,
            &mut rng,
        )
        .unwrap();
        let err = ScriptedGame::new(world, start, &[], OpponentStyle::default(), 1).unwrap_err();
        assert!(
            err.to_string().contains("the world shows 8/8/8/8/8/8/8/8"),
            "{err}"
        );
    }

    #[test]
    fn random_games_are_legal_and_seeded() {
        let start = Chess::default();
        let a = random_moves(&start, 30, &mut ChaCha8Rng::seed_from_u64(4));
        let b = random_moves(&start, 30, &mut ChaCha8Rng::seed_from_u64(4));
        assert_eq!(a, b);
        let mut pos = start;
        for m in a {
            assert!(pos.is_legal(m));
            pos.play_unchecked(m);
        }
    }
}
