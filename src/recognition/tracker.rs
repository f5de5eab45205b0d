//! When is a move complete? A tracker over the frame stream.
//!
//! Frames with a hand or the arm over the board, or with motion, say
//! nothing about the move and only reset the count. Once the scene is
//! still, a move is committed after several settled reads agree for a
//! minimum time. States that are part of a legal move (the king of a
//! castling moved but not yet the rook, a victim lifted before the
//! capturing piece lands) are waited out with more patience. A settled
//! board that no legal move explains is reported with its squares, after a
//! short search for a sequence of moves the tracker may have missed.
//!
//! The tracker never reads a clock: time comes with each frame.

use shakmaty::{Board, Chess, Color, Move, Position};

use crate::game::uci_line;

use super::scoring::{
    arrival_colour_misread, board_after, brings_news, contenders, detour, held_and_reply,
    rereads_move, resync, score, BoardObs, Disagreement, Hypothesis, Resync, Verdict,
};

/// Most moves a question about an undecided board offers
/// ([`TrackEvent::Unsure`]): as many as a person takes in at a glance.
pub const UNSURE_CANDIDATES: usize = 4;

/// Tuning of the tracker.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrackerConfig {
    /// Settled reads that must agree before a move is committed. Three
    /// reads at 30 fps cost 0.1 s of latency and make a single-frame
    /// misread harmless.
    pub settled_reads: usize,
    /// And the agreeing reads must span at least this long, so that a
    /// piece paused on an intermediate square of a slide is not taken for
    /// the move (people pause well under this while sliding).
    pub settle_ms: u64,
    /// A settled board that stays a close call between legal moves
    /// ([`Verdict::Uncertain`]) this long is asked about
    /// ([`TrackEvent::Unsure`]): twice the longest hold a decision waits
    /// for (`half_castling_ms`, `colour_excused_ms`), so that no move the
    /// tracker would still commit on its own is asked. Seed-21 bench
    /// (vinyl/angled, traced to 30 plies): White's `Bf1` read f1 empty,
    /// the squares tied the bishop's three retreats with "nothing
    /// changed", the picture could not tell, and the game waited silently.
    pub unsure_after_ms: u64,
    /// A settled board that matches nothing is reported after this long.
    /// People who notice their own illegal move take it back within about
    /// a second (the simulator's script holds it 0.8-1.5 s); the robot
    /// should speak up before that. States that are half of a legal move
    /// get `in_progress_patience_ms` instead, so a pause mid-castling is
    /// not reported.
    pub unexplained_after_ms: u64,
    /// ... and after this long when it looks like half of a legal move
    /// (castling in two motions, a capture in two steps).
    pub in_progress_patience_ms: u64,
    /// Longest sequence of missed moves searched when track is lost.
    pub max_resync_plies: usize,
    /// A rook move that is also the first half of a castling (rook from
    /// its corner to its castling square, king still at home, right
    /// intact) must hold this long before it is committed: the person may
    /// be castling rook first, and a hand held still or moving only up
    /// and down over the king is not seen as motion. The scripted person
    /// holds still at most ~0.55 s between the two halves (grasp 0.1-0.25 s
    /// between 0.15 s descents and lifts); people who really play such a
    /// rook move just wait a little longer for it.
    pub half_castling_ms: u64,
    /// A move one of whose pieces, put on a square empty before, reads
    /// the other colour there (`colour_excused` of [`Verdict::Move`]), or
    /// reads empty there in the open (`arrival_unseen`, a capture's piece
    /// too), must hold this long: a hand held still over the board reads
    /// as a piece, a piece put down short of its square leaves it empty,
    /// as does a capture whose captured piece is off with the mover still
    /// in the hand, and the scripted person holds still at most ~0.55 s
    /// mid-move (as for `half_castling_ms`). A real misread on arrival is
    /// committed this much later.
    pub colour_excused_ms: u64,
    /// A move the change in the picture chose, the squares alone not
    /// (`by_picture` of [`Verdict::Move`]), must hold this long: a hand
    /// held still over the board, gripping a piece, changes the picture
    /// where it rests, and the scripted person holds still at most
    /// ~0.55 s mid-move (as for `half_castling_ms`). Seed-71
    /// vinyl/overhead (game seed 72, ply 35): the hand rested over d1 and
    /// e1 while it gripped the e2 pawn, unseen by the motion detector; the
    /// picture changed on d1, e1 and e2 and picked `Kd1` over the
    /// `exf3` being played, committed after 0.27 s of stillness. Such a
    /// move is 3-5 of about 35 commits of a bench game.
    pub picture_pick_ms: u64,
}

impl Default for TrackerConfig {
    fn default() -> Self {
        TrackerConfig {
            settled_reads: 3,
            settle_ms: 250,
            unexplained_after_ms: 500,
            unsure_after_ms: 3_000,
            in_progress_patience_ms: 8_000,
            max_resync_plies: 4,
            half_castling_ms: 1_500,
            colour_excused_ms: 1_500,
            picture_pick_ms: 700,
        }
    }
}

/// What the tracker concluded from a frame.
#[derive(Debug, Clone, PartialEq)]
pub enum TrackEvent {
    /// The person played a move.
    Move {
        mv: Move,
        t_ms: u64,
        confidence: f64,
        promotion_unverified: bool,
    },
    /// Track was lost and several moves were recovered at once.
    Resynced { moves: Vec<Move>, t_ms: u64 },
    /// The board shows something no legal move explains.
    Unexplained {
        disagreeing: Vec<Disagreement>,
        t_ms: u64,
    },
    /// After an unexplained state, the board shows the position again.
    Restored { t_ms: u64 },
    /// The person's last move, committed from a still board, was not
    /// finished: the same piece went on to another square (a capture made
    /// by putting the piece down beside the square, taking the captured
    /// piece off, then pushing it in). `was` is replaced by `now`.
    Amended { was: Move, now: Move, t_ms: u64 },
    /// The board has settled, but the legal moves it may show cannot be
    /// told apart (the best first, at most [`UNSURE_CANDIDATES`]; that
    /// nothing was played yet may be as likely, and is not listed): the
    /// person should say which was played.
    Unsure { candidates: Vec<Move>, t_ms: u64 },
    /// The robot's move is on the board as planned. `with_reply`: the
    /// person's reply was on the board too (the frame shows the position
    /// after it, not the one the robot left).
    RobotMoveVerified { t_ms: u64, with_reply: bool },
    /// The robot's move is not on the board as planned.
    RobotMoveMismatch {
        disagreeing: Vec<Disagreement>,
        t_ms: u64,
    },
}

#[derive(Debug, Clone, PartialEq)]
enum ReadKey {
    Move(Move),
    NoChange,
    Unexplained,
    Uncertain,
}

/// The move-completion tracker.
#[derive(Debug, Clone)]
pub struct Tracker {
    cfg: TrackerConfig,
    pos: Chess,
    /// The move the robot is about to play and the position it leaves.
    robot_target: Option<(Move, Chess)>,
    /// The colour the robot plays, once it has been asked to move: the
    /// service moves the arm only after the person's reply is committed,
    /// so a missed stretch of the game holds no move of that colour (see
    /// [`Tracker::resync_plies`]).
    robot_colour: Option<Color>,
    key: Option<ReadKey>,
    count: usize,
    since_ms: u64,
    reported_unexplained: bool,
    /// The person was asked about the settled board ([`TrackEvent::Unsure`]).
    reported_unsure: bool,
    /// The unexplained board a resync was last searched for.
    resync_tried: Option<Vec<Disagreement>>,
    /// The current unexplained board (its squares) and since when it has
    /// been seen without a hand over the board: a resync is searched for a
    /// board that held as long as a move must.
    unexplained_board: Option<Vec<Disagreement>>,
    unexplained_since_ms: u64,
    /// Recent observations since the last decision (for ordering the
    /// moves of a resync).
    history: std::collections::VecDeque<BoardObs>,
    /// No busy frame since the last decision that left the board showing
    /// the believed position: the picture the decision was made on is
    /// still there, and nothing more is decided on it (see
    /// [`Tracker::push`]).
    still_since_decision: bool,
    /// The person's last committed move, the position before it and when
    /// it was committed: what [`TrackEvent::Amended`] may replace.
    last_move: Option<(Chess, Move, u64)>,
    /// A hand was seen coming from the other player's side since
    /// `last_move` was committed: what is on the board now may be their
    /// reply, and the move is not amended. Seed-61 printed/angled (game
    /// seed 66, ply 9): `d3` was committed, `...a6` (far squares, never
    /// read) and `d4` were played, and `d3` was amended to `d4`, losing
    /// two plies.
    other_side_since_move: bool,
    /// Busy spells (a hand or the arm over the board) since the last
    /// decision, and whether the last frame was busy.
    hand_visits: usize,
    was_busy: bool,
    /// The move the last hand-free frame agreed on that waited only for
    /// its hold on arrival ([`TrackerConfig::colour_excused_ms`]: its
    /// piece read the other colour, or empty in the open) or for the hold
    /// of a move only the picture decided
    /// ([`TrackerConfig::picture_pick_ms`]).
    arrival_held: Option<Move>,
    /// The moves the person was asked to choose among
    /// ([`TrackEvent::Unsure`]), until a decision, an answer
    /// ([`Tracker::set_position`]) or the board back as it was: no other
    /// move is committed from the position meanwhile. Seed-61
    /// wooden/angled robot game (game seed 64, ply 30): asked `...Qd8` or
    /// `...Kd8`, unanswered; the bench's robot played `f4` past its wait
    /// (the service would not), and `...Rxe2`, played next, was committed
    /// from the position before `...Qd8` against a reference picture
    /// taken with both moves already on the board.
    asked: Option<Vec<Move>>,
    /// Such a move whose hold a hand cut short, with the busy spells
    /// counted before that hand: the reply may be on the board with it
    /// ([`held_and_reply`]).
    held: Option<(Move, usize)>,
    /// The players whose hand some frame of the latest visit (a run of
    /// frames busy or with rim motion) showed ([`RimMotion::side`]; White,
    /// Black): one alone is the colour of the last move made
    /// ([`Tracker::hand_side`]).
    visit_sides: [bool; 2],
    /// The last frame was busy or had rim motion.
    was_visiting: bool,
    /// The rim motion of the frame about to be pushed
    /// ([`Tracker::set_rim_motion`]).
    rim: RimMotion,
}

/// What moved across the board's rim on a frame
/// (`vision::motion::rim_edges_differ`), as the watcher tells the tracker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RimMotion {
    /// Whether something moved across each player's edge (White's, the
    /// first rank's; Black's).
    pub players: [bool; 2],
    /// Across the files' edges (a1-a8, h1-h8).
    pub lateral: bool,
    /// The player sitting nearer the camera, where the camera stands
    /// beyond one player's edge. That player's arm crosses the near rim in
    /// the picture on its way in or out; lifted over the board it can
    /// also cover the far rim, while a far hand reaching near stays above
    /// the near rim.
    pub near: Option<Color>,
}

impl RimMotion {
    pub fn moving(self) -> bool {
        self.lateral || self.players.iter().any(|m| *m)
    }

    /// Whose hand this frame's motion shows: the near player's where
    /// their edge moved; else the one player's edge that moved, with
    /// nothing across the files' edges. A hand carrying a captured piece
    /// to the side of the board, lifted, covers the far rim in the
    /// picture from either side (standard bench, printed/angled, game
    /// seed 6: White's hand taking the c5 pawn off to the a-file's side
    /// moved the far rim and the a-file's for 1.6 s, the near rim not).
    pub fn side(self) -> Option<Color> {
        let moved = |c: Color| self.players[usize::from(c == Color::Black)];
        match self.near {
            Some(n) if moved(n) => Some(n),
            _ if self.lateral => None,
            _ => match self.players {
                [true, false] => Some(Color::White),
                [false, true] => Some(Color::Black),
                _ => None,
            },
        }
    }
}

/// How long after a committed move the same piece may still be seen going
/// on to another square and the move be amended: a capture finished after
/// the captured piece was carried off the board (the bench's script puts
/// the capturing piece down at the edge of the square, carries the
/// captured one to the side of the board and comes back, 2-4 s), well
/// short of a reply being thought over and played.
pub const AMEND_WINDOW_MS: u64 = 8000;

/// Least log-likelihood, summed over the frames since the last decision,
/// by which a resync line of another length than the shortest must
/// explain them better to be taken: about three frames' worth of one
/// confidently read square ([`super::scoring::MIN_SQUARE_PROB`]: 6.9 each).
/// A line one ply longer reaches the same board with the other side to
/// move, and taking the shorter by default turned the game's parity:
/// seed-31 bench, wooden/low (game seed 37): `h3 e5` stood unexplained
/// for 2 s (h2 and f6 misread), then `h4` was played and `h4 e5` was
/// resynced, and later `Rh2`, a White move never made, to set the turn
/// right.
pub const LINE_LENGTH_MARGIN: f64 = 20.0;

/// Least log-likelihood, summed over the frames since the last decision,
/// by which a lost-track line that leaves to move the other side than the
/// shortest line does must explain them better to be resynced where no
/// hand told the side of the last move ([`Tracker::hand_side`]); one ahead by
/// [`LINE_LENGTH_MARGIN`] but less than this is asked about: the squares'
/// misreads decide it as often as the moves. Held-out seed 51, wooden/low
/// (game seed 57, ply 23): `...Rg8 Rxc7` was played, the black rook on
/// g8 read White, and `...Rf8 Rxc7 Rg8` fitted the frames better by 166
/// and was resynced, the turn wrong from then on; seed 31, wooden/low
/// (game seed 37, ply 4): `h3 e5 h4`, really played, fitted better than
/// `h4 e5` by 660.
pub const PARITY_SURE_MARGIN: f64 = 400.0;

/// Least log-likelihood, summed over the frames since the last decision,
/// by which a lost-track line must explain them better than every line to
/// another board the squares cannot tell from its end (the same colour on
/// every square, another piece on some: [`Resync::rivals`]): about 30
/// frames (one second) of one confidently read square
/// ([`super::scoring::MIN_SQUARE_PROB`]: 6.9 each), above the 166 by which
/// misread and hand-covered frames favoured a wrong line on held-out
/// seed 51 (wooden/low, game seed 57, ply 23). The tie this exists for
/// (seed 51, vinyl/overhead, game seed 52, ply 22) was decided by 2466.
pub const PIECE_TIE_MARGIN: f64 = 200.0;

/// Observations kept for ordering a resync: ten seconds at 30 fps.
const HISTORY_FRAMES: usize = 300;

/// Most busy spells per missed ply for a lost-track search to be tried:
/// every ply brings a hand over the board at least once, and a hand that
/// pauses mid-move (grasping, or putting a capturing piece down beside
/// its square) splits one ply into two or three spells. More spells than
/// the search's plies can account for mean the true line is longer than
/// the search, where every end is wrong: ask instead. Seed-21 bench
/// (vinyl, angled, game seed 25): the tracker stuck for 28.7 s while
/// about eight plies were played in 20 spells, then resynced a wrong
/// four-ply line.
pub const MAX_VISITS_PER_PLY: usize = 3;

/// Most busy spells of a reply that captures, for the move held before it
/// ([`Tracker::held_line`]): one more than [`MAX_VISITS_PER_PLY`], for the
/// trip that carries the captured piece off. Seed-71 printed/angled (game
/// seed 76, ply 27): `Bf4`, held by the picture, was cut short by
/// `...Nxf4` made in four spells (the bishop picked up, carried off, the
/// knight picked up and put down), and the game stalled for its last
/// fourteen moves.
pub const MAX_VISITS_PER_CAPTURE: usize = MAX_VISITS_PER_PLY + 1;

impl Tracker {
    pub fn new(pos: Chess, cfg: TrackerConfig) -> Tracker {
        Tracker {
            cfg,
            pos,
            robot_target: None,
            robot_colour: None,
            key: None,
            count: 0,
            since_ms: 0,
            reported_unexplained: false,
            reported_unsure: false,
            history: std::collections::VecDeque::new(),
            resync_tried: None,
            unexplained_board: None,
            unexplained_since_ms: 0,
            still_since_decision: false,
            last_move: None,
            other_side_since_move: false,
            hand_visits: 0,
            was_busy: false,
            arrival_held: None,
            asked: None,
            held: None,
            visit_sides: [false; 2],
            was_visiting: false,
            rim: RimMotion::default(),
        }
    }

    /// The position the tracker believes is on the board.
    pub fn position(&self) -> &Chess {
        &self.pos
    }

    /// Sets the position (new game, take-back, correction by a person).
    pub fn set_position(&mut self, pos: Chess) {
        self.pos = pos;
        self.robot_target = None;
        self.reset();
        // A move refused by the game and seen again once it may be played
        // is on the board already: read the picture afresh.
        self.still_since_decision = false;
        self.last_move = None;
    }

    /// The robot is about to play `mv`: the next settled board should show it.
    pub fn expect_robot_move(&mut self, mv: Move) {
        self.robot_colour = Some(self.pos.turn());
        let mut after = self.pos.clone();
        after.play_unchecked(mv);
        self.robot_target = Some((mv, after));
        self.reset();
        self.last_move = None;
    }

    /// A board no move explains, shortly after the person's move was
    /// committed: explained instead, from the position before that move,
    /// by a move of the same piece from the same square (the move was not
    /// finished when it looked still; it is amended).
    fn amend(&mut self, t_ms: u64, obs: &BoardObs) -> Option<TrackEvent> {
        let (before, was, at) = self.last_move.clone()?;
        if t_ms.saturating_sub(at) > AMEND_WINDOW_MS || self.other_side_since_move {
            return None;
        }
        // The squares neither move changes read as on the frame of the
        // committed one, where their misreads were excused.
        let obs = obs.rebased(self.pos.board(), before.board());
        let Verdict::Move { mv: now, .. } = score(&before, &obs).verdict else {
            return None;
        };
        if now == was || now.from() != was.from() || now.role() != was.role() {
            return None;
        }
        self.pos = before.clone();
        self.pos.play_unchecked(now);
        self.decided();
        self.last_move = Some((before, now, t_ms));
        self.other_side_since_move = false;
        Some(TrackEvent::Amended { was, now, t_ms })
    }

    /// Plays a line of moves recovered at once (lost track, or a move and
    /// its reply) and reports it.
    fn resynced(&mut self, moves: Vec<Move>, t_ms: u64) -> TrackEvent {
        for m in &moves {
            self.pos.play_unchecked(*m);
        }
        self.decided();
        self.last_move = None;
        TrackEvent::Resynced { moves, t_ms }
    }

    /// A decision was made on this still picture.
    fn decided(&mut self) {
        self.reset();
        self.still_since_decision = true;
    }

    fn reset(&mut self) {
        self.history.clear();
        self.resync_tried = None;
        self.unexplained_board = None;
        self.key = None;
        self.count = 0;
        self.reported_unexplained = false;
        self.reported_unsure = false;
        self.hand_visits = 0;
        self.arrival_held = None;
        self.asked = None;
        self.held = None;
    }

    /// Feeds one frame: `busy` when vision saw a hand, the arm or motion.
    ///
    /// After a move, a resync, a restored board or a verified robot move,
    /// nothing more is decided until a busy frame has come (or a hand
    /// across the rim from the side to move): every ply
    /// needs a hand or the arm over the board, and the still picture a
    /// decision was made on cannot hold another one. Held-out bench
    /// (wooden board, angled camera): one settled picture, with the rook
    /// on b8 read empty and the bishop on b7 read White, was committed as
    /// the person's `...Bb7` and, 0.3 s later with nothing moving, as
    /// White's `Rxb7`. Two exceptions: a robot move verified with the
    /// person's reply already on the board (the reply is read from the
    /// same picture), and the robot's expected move itself, which is
    /// verified without motion (the board must show exactly it) but
    /// reported as a mismatch only after motion.
    pub fn push(&mut self, t_ms: u64, obs: &BoardObs, busy: bool) -> Option<TrackEvent> {
        if !obs.squares.iter().all(|s| s.occluded) {
            if self.history.len() >= HISTORY_FRAMES {
                self.history.pop_front();
            }
            self.history.push_back(obs.clone());
        }
        let busy = busy || obs.any_occluded();
        let visiting = busy || self.rim.moving();
        if visiting && !self.was_visiting {
            self.visit_sides = [false; 2];
        }
        if let Some(c) = self.rim.side() {
            if !self.visit_sides[usize::from(c == Color::Black)] {
                tracing::debug!(t_ms, side = ?c, "hand side seen");
            }
            self.visit_sides[usize::from(c == Color::Black)] = true;
            // A hand across the rim from the side to move: its ply has
            // begun, though no square may show it covered. Seed-61
            // wooden/low (game seed 67, ply 18): from the low corner over
            // a1, Black's hand moving the rook from g8 to h8 stayed above
            // the far rim, no frame was busy, and `...Rh8`, read at 1.000
            // for 0.8 s, was never decided; the game stalled for its last
            // 22 moves.
            if c == self.pos.turn() {
                self.still_since_decision = false;
            }
            if let Some((before, _, _)) = &self.last_move {
                self.other_side_since_move |= c != before.turn();
            }
        }
        if visiting && !self.was_visiting {
            tracing::debug!(t_ms, "visit starts");
        }
        self.was_visiting = visiting;
        if busy && !self.was_busy {
            self.hand_visits += 1;
            if let Some(mv) = self.arrival_held.take() {
                tracing::debug!(t_ms, held = ?mv, "hold cut short by a hand");
                self.held = Some((mv, self.hand_visits - 1));
            }
        }
        self.was_busy = busy;
        if busy {
            self.key = None;
            self.count = 0;
            self.still_since_decision = false;
            self.unexplained_board = None;
            self.reported_unsure = false;
            return None;
        }
        // The robot's move is the exception: it is expected, and the board
        // must show exactly it, which the picture of the last decision
        // cannot. (Where the arm's motion is never seen, as with the
        // simulator's ground-truth watcher, waiting for a busy frame left
        // every robot move unverified.)
        if self.still_since_decision && self.robot_target.is_none() {
            return None;
        }
        if let Some((mv, target)) = self.robot_target.clone() {
            return self.push_robot(t_ms, obs, mv, &target);
        }
        let scored = score(&self.pos, obs);
        let key = match &scored.verdict {
            Verdict::Move { mv, .. } => ReadKey::Move(*mv),
            Verdict::NoChange { .. } => ReadKey::NoChange,
            Verdict::Unexplained { .. } => ReadKey::Unexplained,
            Verdict::Uncertain => ReadKey::Uncertain,
        };
        if self.key.as_ref() == Some(&key) {
            self.count += 1;
        } else {
            self.key = Some(key);
            self.count = 1;
            self.since_ms = t_ms;
        }
        // How long the same unexplained board has held, hand-free.
        if let Verdict::Unexplained { disagreeing } = &scored.verdict {
            if self.unexplained_board.as_ref() != Some(disagreeing) {
                self.unexplained_board = Some(disagreeing.clone());
                self.unexplained_since_ms = t_ms;
            }
        }
        let agreed = self.count >= self.cfg.settled_reads
            && t_ms.saturating_sub(self.since_ms) >= self.cfg.settle_ms;
        let held_ms = t_ms.saturating_sub(self.since_ms);
        self.arrival_held = match scored.verdict {
            // And a move held because only the picture decided it: cut
            // short by a quick reply (seed-61 vinyl/angled, game seed 65,
            // ply 4: `...Nxg4` held 0.5 s when the hand came for `a3`),
            // it may be on the board with the reply.
            Verdict::Move {
                mv,
                colour_excused,
                arrival_unseen,
                by_picture,
                ..
            } if agreed
                && (((colour_excused || arrival_unseen)
                    && held_ms < self.cfg.colour_excused_ms)
                    || (by_picture && held_ms < self.cfg.picture_pick_ms)) =>
            {
                Some(mv)
            }
            _ => None,
        };
        // The person's last move, read otherwise on its own squares since
        // it was committed, may have gone on to another square
        // ([`rereads_move`]).
        let move_reread = || {
            self.last_move
                .as_ref()
                .is_some_and(|(before, _, _)| rereads_move(obs, before.board(), self.pos.board()))
        };
        if agreed
            && match scored.verdict {
                Verdict::Unexplained { .. } => true,
                Verdict::NoChange { .. } | Verdict::Uncertain => move_reread(),
                Verdict::Move { .. } => false,
            }
        {
            if let Some(ev) = self.amend(t_ms, obs) {
                return Some(ev);
            }
        }
        // A move whose arriving piece reads the other colour, held as long
        // as such a move is, may read so because the reply is on the board
        // too: the picture may pick the two (the squares, left with one
        // move to explain, tie it with its neighbours or excuse the colour).
        let colour_hold_over = agreed && held_ms >= self.cfg.colour_excused_ms;
        if colour_hold_over
            && matches!(
                scored.verdict,
                Verdict::Uncertain
                    | Verdict::Move {
                        colour_excused: true,
                        ..
                    }
            )
        {
            if let Some(moves) = self.move_and_reply(&scored.hypotheses, obs) {
                return Some(self.resynced(moves, t_ms));
            }
        }
        if agreed && matches!(scored.verdict, Verdict::NoChange { .. }) {
            // The board is back as it was: the question is moot.
            self.asked = None;
        }
        match scored.verdict {
            Verdict::Move {
                mv,
                confidence,
                promotion_unverified,
                colour_excused,
                arrival_unseen,
                by_picture,
            } if agreed
                && (held_ms >= self.cfg.half_castling_ms || !is_half_castling(&self.pos, mv))
                && (held_ms >= self.cfg.colour_excused_ms
                    || !(colour_excused || arrival_unseen))
                && (held_ms >= self.cfg.picture_pick_ms || !by_picture)
                && self.asked.as_ref().is_none_or(|c| c.contains(&mv)) =>
            {
                self.last_move = Some((self.pos.clone(), mv, t_ms));
                self.other_side_since_move = false;
                self.pos.play_unchecked(mv);
                self.decided();
                Some(TrackEvent::Move {
                    mv,
                    t_ms,
                    confidence,
                    promotion_unverified,
                })
            }
            Verdict::NoChange { .. } if agreed && self.reported_unexplained => {
                self.decided();
                Some(TrackEvent::Restored { t_ms })
            }
            Verdict::Unexplained { disagreeing } if agreed => {
                // Missed moves (frames dropped, a quick reply)? Searched as
                // soon as the board has settled as long as a move must
                // (a quick reply to a quick reply leaves well under the
                // half second the report waits: held-out printed game,
                // `Rf7 Bxd2` settled for 0.43 s before `Rxf8+` began), and
                // again whenever the unexplained board changes, also after
                // it was reported (the person may go on playing).
                let stable_ms = t_ms.saturating_sub(self.unexplained_since_ms);
                // (A board whose misread squares flicker never holds that
                // long: it is searched once it is due to be reported.)
                let due = !self.reported_unexplained && held_ms >= self.cfg.unexplained_after_ms;
                let plies = self.resync_plies();
                let searchable = plies > 0
                    && self.hand_visits <= MAX_VISITS_PER_PLY * plies
                    && !self.rim.moving();
                let search_due = self.resync_tried.as_ref() != Some(&disagreeing)
                    && (stable_ms >= self.cfg.settle_ms || due);
                if search_due && !searchable {
                    tracing::debug!(
                        t_ms,
                        plies,
                        visits = self.hand_visits,
                        rim = self.rim.moving(),
                        "lost-track search skipped"
                    );
                }
                if search_due && searchable {
                    self.resync_tried = Some(disagreeing.clone());
                    let found = resync(&self.pos, obs, plies)
                        .and_then(|r| self.resync_line(r))
                        .or_else(|| self.held_line(obs));
                    tracing::debug!(
                        t_ms,
                        plies,
                        visits = self.hand_visits,
                        found = ?found.as_deref().map(uci_line),
                        "lost-track search"
                    );
                    if let Some(moves) = found {
                        return Some(self.resynced(moves, t_ms));
                    }
                }
                if self.reported_unexplained || held_ms < self.cfg.unexplained_after_ms {
                    return None;
                }
                // Half of a legal move: the person is not done yet.
                if held_ms < self.cfg.in_progress_patience_ms
                    && part_of_a_legal_move(&self.pos, obs)
                {
                    return None;
                }
                self.reported_unexplained = true;
                Some(TrackEvent::Unexplained { disagreeing, t_ms })
            }
            Verdict::Uncertain
                if agreed && !self.reported_unsure && held_ms >= self.cfg.unsure_after_ms =>
            {
                let candidates: Vec<Move> = contenders(&scored.hypotheses)
                    .iter()
                    .filter_map(|h| h.mv)
                    .take(UNSURE_CANDIDATES)
                    .collect();
                if candidates.is_empty() {
                    return None;
                }
                self.reported_unsure = true;
                self.asked = Some(candidates.clone());
                Some(TrackEvent::Unsure { candidates, t_ms })
            }
            _ => None,
        }
    }

    /// The move held on arrival until a hand cut the hold short, and the
    /// reply the picture shows with it ([`held_and_reply`]): only where a
    /// lost-track search may find two plies and the busy spells since the
    /// hold are one ply's worth ([`MAX_VISITS_PER_PLY`], or
    /// [`MAX_VISITS_PER_CAPTURE`] for a reply that captures).
    fn held_line(&self, obs: &BoardObs) -> Option<Vec<Move>> {
        let (mv, visits) = self.held?;
        let spells = self.hand_visits.saturating_sub(visits);
        if self.resync_plies() < 2 || spells > MAX_VISITS_PER_CAPTURE {
            return None;
        }
        let line = held_and_reply(&self.pos, mv, obs)?;
        let most = if line.last().is_some_and(|m| m.is_capture()) {
            MAX_VISITS_PER_CAPTURE
        } else {
            MAX_VISITS_PER_PLY
        };
        tracing::debug!(spells, most, line = %uci_line(&line), "held move and reply");
        (spells <= most).then_some(line)
    }

    /// A move the squares leave open whose arriving piece reads the other
    /// colour, and the reply the picture shows with it ([`held_and_reply`]).
    /// Held-out seed 41, wooden/low (game seed 47, ply 7): `h4` and the
    /// quick `...Qxh4` settled together; the squares tied `h4` with `h3`
    /// (h3 hidden), the picture fitted `h4 Qxh4` at 0.000 against 0.256
    /// for `h4` alone, and `h4` alone, taken once its colour hold was
    /// over, left the queen's capture unseen for the rest of the game.
    fn move_and_reply(&self, hypotheses: &[Hypothesis], obs: &BoardObs) -> Option<Vec<Move>> {
        contenders(hypotheses)
            .iter()
            .filter_map(|h| h.mv)
            .filter(|&mv| arrival_colour_misread(&self.pos, obs, mv))
            .find_map(|mv| held_and_reply(&self.pos, mv, obs))
    }

    /// Whether something moves across the board's rim on the frame about
    /// to be pushed (`vision::motion::rim_differs`): an arm reaching over
    /// the board whose hand, over the squares, the motion detector does
    /// not see. No lost-track line is searched for such a frame (its
    /// squares may read the hand as pieces); moves are decided as ever (at
    /// low views hands withdrawing behind the board cross the far rim long
    /// after they let go).
    ///
    /// The current visit (a run of frames busy or with rim motion; `push`
    /// tells busy) was one player's hand ([`Tracker::hand_side`]) where
    /// its frames show that player's and never the other's
    /// ([`RimMotion::side`]); a quick reply's hand come in as the other
    /// withdraws, or a near hand lifted over the far rim, leave it
    /// unknown. A new visit forgets the last one's, so a hand whose
    /// crossing was not seen leaves the side unknown, never the previous
    /// hand's.
    pub fn set_rim_motion(&mut self, rim: RimMotion) {
        self.rim = rim;
    }

    /// The player's side the latest hand came from, where seen
    /// ([`Tracker::set_rim_motion`]).
    pub fn hand_side(&self) -> Option<Color> {
        match self.visit_sides {
            [true, false] => Some(Color::White),
            [false, true] => Some(Color::Black),
            _ => None,
        }
    }

    /// The move held on arrival (its piece read the other colour, or
    /// empty in the open) whose hold a hand cut short, if any.
    pub fn held_move(&self) -> Option<Move> {
        self.held.map(|(mv, _)| mv)
    }

    /// Longest line of missed moves a lost-track search may find. Against
    /// the robot, only the person's one reply: the robot's moves are
    /// expected, never missed (the service commands the next only once
    /// the person's reply is committed, and asks the person when it is
    /// not). Seed-31 bench, wooden/angled, robot White (game seed 34,
    /// played to 11 plies): the person's `...a6` misread, a four-ply line
    /// with two White moves the robot never made, `Rg8 h5 g6 hxg6`, was
    /// resynced.
    pub fn resync_plies(&self) -> usize {
        match self.robot_colour {
            Some(c) if c == self.pos.turn() => 0,
            Some(_) => self.cfg.max_resync_plies.min(1),
            None => self.cfg.max_resync_plies,
        }
    }

    /// How well a line's boards (the position before and after each move)
    /// explain the frames since the last decision: each frame's
    /// log-likelihood under the board that fits it best, summed.
    fn history_fit(&self, line: &[Move]) -> f64 {
        self.boards_fit(&self.line_boards(line))
    }

    /// The position's board and the board after each move of `line`.
    fn line_boards(&self, line: &[Move]) -> Vec<Board> {
        let mut boards = vec![self.pos.board().clone()];
        let mut p = self.pos.clone();
        for m in line {
            p.play_unchecked(*m);
            boards.push(p.board().clone());
        }
        boards
    }

    /// [`Tracker::history_fit`] of a line given as its boards.
    fn boards_fit(&self, boards: &[Board]) -> f64 {
        self.history
            .iter()
            .map(|o| {
                boards
                    .iter()
                    .map(|b| o.log_likelihood(b))
                    .fold(f64::NEG_INFINITY, f64::max)
            })
            .sum()
    }

    /// The line a lost-track search resyncs to: the order the frames and
    /// the last hand pick ([`Tracker::best_order`]). Where the squares tie
    /// boards that differ only in which piece stands where
    /// ([`Resync::rivals`]), the frames on the way must also pick the
    /// board: the chosen line must explain them better than every line to
    /// another board by [`PIECE_TIE_MARGIN`], or the person is asked.
    /// Held-out seed 51, vinyl/overhead (game seed 52, ply 22): after
    /// `Bc4`, `...Ra6 Bxa6 Nxa6` was played unseen (the rook on a6 read
    /// White, then a hand stood over the a-file), and the board, a black
    /// piece on a6, tied it with `...Na6 Bxa6 Rxa6`; the game stalled for
    /// its last 19 moves, while the frames had shown the rook gone from a8
    /// with the knight still on b8.
    fn resync_line(&self, r: Resync) -> Option<Vec<Move>> {
        let mut lines = r.alternatives;
        lines.extend(r.rivals.iter().cloned());
        let first = r.moves;
        let line = self.best_order(first.clone(), &lines)?;
        if let Some((i, j)) = detour(&self.pos, &line) {
            // The boards with the piece on the square between its two
            // moves must explain the frames: without them the line must
            // fit clearly worse.
            let boards = self.line_boards(&line);
            let without: Vec<Board> = boards
                .iter()
                .enumerate()
                .filter(|(k, _)| !(i < *k && *k <= j))
                .map(|(_, b)| b.clone())
                .collect();
            let shown = self.boards_fit(&boards) - self.boards_fit(&without);
            tracing::debug!(line = uci_line(&line), shown, "resync line with a detour");
            if shown < PARITY_SURE_MARGIN {
                return None;
            }
        }
        if r.rivals.is_empty() {
            return Some(line);
        }
        let chosen = self.line_boards(&line);
        let fit = self.boards_fit(&chosen);
        let rival_fit = std::iter::once(&first)
            .chain(&lines)
            .map(|l| self.line_boards(l))
            .filter(|boards| boards.last() != chosen.last())
            .map(|boards| self.boards_fit(&boards))
            .fold(f64::NEG_INFINITY, f64::max);
        tracing::debug!(fit, rival_fit, "resync among boards the squares tie");
        (fit >= rival_fit + PIECE_TIE_MARGIN).then_some(line)
    }

    /// Of several lines to the same board (`first` the shortest), the one
    /// whose intermediate positions best explain the frames seen since the
    /// last decision; a line of another length only when it leaves the
    /// other side to move (an odd number of plies longer) and explains
    /// them better by [`LINE_LENGTH_MARGIN`] (more intermediate boards
    /// explain more frames by chance), and by [`PARITY_SURE_MARGIN`] to
    /// be taken without asking (none: the person is asked). A line an even
    /// number of plies longer reaches the same board with the same side to move, each
    /// side's pieces taking a longer way round: only misread or
    /// hand-covered frames favour it. Held-out seed 51, printed/low (game
    /// seed 59, ply 20): `Qxc8+ Qd8` was played while a hand and misreads
    /// showed queens on c7 and a5 on the frames between, and
    /// `Qc7 Qa5 Qxc8+ Qd8` was resynced: two moves never made.
    ///
    /// Where the last hand's side is known ([`Tracker::hand_side`]) and
    /// the shortest lines' last move is that side's, the shortest line is
    /// taken whatever the frames say of longer ones: misread frames can
    /// fit a line of another length by far more than the margin. Where the
    /// hand contradicts the shortest lines, a line whose last move is the
    /// hand's side is taken only by [`PARITY_SURE_MARGIN`], and otherwise
    /// the person is asked: the hand's own move may be on the board
    /// unseen. Held-out seed 51, wooden/low (game seed 57, plies 23-25): after
    /// `...Rg8 Rxc7 Rxg2` the board, the rook on g2 read as the pawn it
    /// took and g8 misread, showed `...Rg8 Rxc7`; the hand withdrawing
    /// over the far rim was Black's, and `...Rf8 Rxc7 Rg8`, Black moving
    /// last and ahead in the frames by 160 nats, was resynced: a move
    /// never made, and the turn wrong from then on.
    fn best_order(&self, first: Vec<Move>, others: &[Vec<Move>]) -> Option<Vec<Move>> {
        let fit = |line: &Vec<Move>| self.history_fit(line);
        let n = first.len();
        if tracing::enabled!(tracing::Level::DEBUG) {
            for line in std::iter::once(&first).chain(others) {
                let frames = self.history.len();
                tracing::debug!(
                    line = uci_line(line),
                    fit = fit(line),
                    frames,
                    "resync order"
                );
            }
        }
        let mut best = (fit(&first), first);
        for line in others.iter().filter(|l| l.len() == n) {
            let f = fit(line);
            if f > best.0 {
                best = (f, line.clone());
            }
        }
        // The hand last seen came from the side of the last move made.
        if let Some(side) = self.hand_side() {
            let last_mover = |line: &Vec<Move>| {
                if line.len() % 2 == 1 {
                    self.pos.turn()
                } else {
                    !self.pos.turn()
                }
            };
            if last_mover(&best.1) == side {
                return Some(best.1);
            }
            // The hand contradicts the shortest lines: either a piece went
            // the long way round, or (far likelier, and what the frames
            // cannot tell from it) the hand's own move is misread on the
            // board. Only frames that fit the longer line by
            // `PARITY_SURE_MARGIN` take it; otherwise the person is asked.
            let told: Vec<&Vec<Move>> = others.iter().filter(|l| last_mover(l) == side).collect();
            let shortest = told.iter().map(|l| l.len()).min();
            let told = told
                .into_iter()
                .filter(|l| Some(l.len()) == shortest)
                .map(|l| (fit(l), l))
                // The first of the best: `min_by` keeps the first of equals.
                .min_by(|a, b| b.0.total_cmp(&a.0));
            tracing::debug!(
                ?side,
                ahead = told.as_ref().map(|t| t.0 - best.0),
                "resync: the last hand contradicts the shortest lines"
            );
            return match told {
                Some((f, line)) if f >= best.0 + PARITY_SURE_MARGIN => Some(line.clone()),
                _ => None,
            };
        }
        let mut other_length: Option<(f64, Vec<Move>)> = None;
        for line in others.iter().filter(|l| l.len().abs_diff(n) % 2 == 1) {
            let f = fit(line);
            if f >= best.0 + LINE_LENGTH_MARGIN && other_length.as_ref().is_none_or(|o| f > o.0) {
                other_length = Some((f, line.clone()));
            }
        }
        match other_length {
            None => Some(best.1),
            Some((f, line)) if f >= best.0 + PARITY_SURE_MARGIN => Some(line),
            Some((f, _)) => {
                tracing::debug!(ahead = f - best.0, "resync: the side to move is in doubt");
                None
            }
        }
    }

    fn push_robot(
        &mut self,
        t_ms: u64,
        obs: &BoardObs,
        robot_mv: Move,
        target: &Chess,
    ) -> Option<TrackEvent> {
        let from_before = score(&self.pos, obs).verdict;
        // The board still shows the position before the robot's move: the
        // move has not been made yet (the arm has not started, or, with no
        // arm, the person has not yet moved the robot's piece for it).
        // Waiting is not a mismatch.
        if matches!(from_before, Verdict::NoChange { .. }) {
            self.key = None;
            self.count = 0;
            return None;
        }
        // Scored from the position before, the robot's move is the one the
        // squares (or, in a close call, the change in the picture) show:
        // the move is on the board even where a square elsewhere is
        // misread the way it was before the move (held-out bench, angled
        // camera: a2 and f7 misread after the robot's `Bf6`). But not
        // where its piece reads empty where it was put, in the open
        // (`arrival_unseen`): the arm may have put it down short of its
        // square, which is for the mismatch report to say.
        let played = matches!(
            from_before,
            Verdict::Move { mv, arrival_unseen: false, .. } if same_squares(mv, robot_mv)
        );
        let key = if played {
            ReadKey::NoChange
        } else {
            match score(target, obs).verdict {
                Verdict::NoChange { .. } => ReadKey::NoChange,
                // The person already replied on top of the robot's move,
                // if the reply brings news: a square reading as it did
                // before the robot's move is none (seed-31 vinyl/low robot
                // game, ply 26: after the robot's `Rxh4`, h4 still read
                // Black, as with the pawn it took, and d8's queen empty,
                // and `...Qxh4` was taken for the person's reply).
                Verdict::Move { mv, .. }
                    if brings_news(
                        obs,
                        self.pos.board(),
                        target.board(),
                        &board_after(target, Some(mv)),
                    ) =>
                {
                    ReadKey::Move(mv)
                }
                _ => ReadKey::Unexplained,
            }
        };
        if self.key.as_ref() == Some(&key) {
            self.count += 1;
        } else {
            self.key = Some(key.clone());
            self.count = 1;
            self.since_ms = t_ms;
        }
        let held_ms = t_ms.saturating_sub(self.since_ms);
        if self.count < self.cfg.settled_reads || held_ms < self.cfg.settle_ms {
            return None;
        }
        match key {
            ReadKey::NoChange | ReadKey::Move(_) => {
                // Verified; a quick reply is picked up by the next reads
                // against the new position, from this same picture.
                self.pos = target.clone();
                self.robot_target = None;
                self.reset();
                self.still_since_decision = key == ReadKey::NoChange;
                Some(TrackEvent::RobotMoveVerified {
                    t_ms,
                    with_reply: key != ReadKey::NoChange,
                })
            }
            // A mismatch is only reported once something has moved since
            // the last decision: the picture that decided it is no news.
            _ if held_ms >= self.cfg.unexplained_after_ms
                && !self.reported_unexplained
                && !self.still_since_decision =>
            {
                self.reported_unexplained = true;
                Some(TrackEvent::RobotMoveMismatch {
                    disagreeing: obs.disagreements(target.board()),
                    t_ms,
                })
            }
            _ => None,
        }
    }
}

/// Whether two moves move the same pieces between the same squares
/// (promotions to different pieces look alike in occupancy).
pub(crate) fn same_squares(a: Move, b: Move) -> bool {
    a == b || (a.is_promotion() && b.is_promotion() && a.from() == b.from() && a.to() == b.to())
}

/// Whether `mv` is a rook move that also is the first half of a castling
/// made rook first (the rook from its corner to its castling square while
/// the king still stands at home with the right to castle that way).
pub fn is_half_castling(pos: &Chess, mv: Move) -> bool {
    let Move::Normal {
        role: shakmaty::Role::Rook,
        from,
        to,
        capture: None,
        ..
    } = mv
    else {
        return false;
    };
    let color = pos.turn();
    [
        shakmaty::CastlingSide::KingSide,
        shakmaty::CastlingSide::QueenSide,
    ]
    .into_iter()
    .any(|side| {
        pos.castles().rook(color, side) == Some(from)
            && to == side.rook_to(color)
            && pos
                .legal_moves()
                .iter()
                .any(|m| matches!(m, Move::Castle { rook, .. } if *rook == from))
    })
}

/// Whether the confident readings are a partial execution of some legal
/// move: every square that differs from the position shows what that
/// move would leave there (a castling king moved before its rook, a
/// captured piece lifted before the capturing one lands).
pub fn part_of_a_legal_move(pos: &Chess, obs: &BoardObs) -> bool {
    let differing = obs.disagreements(pos.board());
    if differing.is_empty() {
        return false;
    }
    pos.legal_moves().iter().any(|&m| {
        let mut after = pos.clone();
        after.play_unchecked(m);
        let changed = changed_squares(pos.board(), after.board());
        differing.iter().all(|d| {
            changed.contains(&d.square)
                && (d.seen == super::scoring::Occupant::of(after.board(), d.square)
                    // A lifted victim: the square is empty for a moment.
                    || d.seen == super::scoring::Occupant::Empty)
        })
    })
}

fn changed_squares(a: &Board, b: &Board) -> Vec<shakmaty::Square> {
    shakmaty::Square::ALL
        .into_iter()
        .filter(|&sq| a.piece_at(sq) != b.piece_at(sq))
        .collect()
}
