//! The built-in search: iterative deepening principal-variation alpha-beta
//! with aspiration windows, a transposition table, quiescence search, null
//! move pruning, late move reductions and the usual move ordering.
//!
//! [`Searcher`] is a plain struct: the caller injects the stop flag and the
//! clock, passes a callback for progress reports and gets a
//! [`SearchResult`]. It does no I/O.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use shakmaty::zobrist::Zobrist64;
use shakmaty::{Chess, EnPassantMode, Move, Position, Role};

use super::eval::{evaluate, has_non_pawn_material, SEE_VALUE};
use super::tt::{Bound, TransTable};

/// Score of being mated right now; mate in `n` plies scores `MATE - n`.
pub const MATE: i32 = 32_000;
/// Scores beyond this are mate scores.
pub const MATE_BOUND: i32 = MATE - 1_000;
/// Larger than any score.
pub const INF: i32 = 32_500;
/// Deepest ply the search reaches (extensions included).
pub const MAX_PLY: usize = 120;
/// Deepest iteration of iterative deepening.
pub const MAX_DEPTH: u32 = 100;

/// How often (in nodes) the clock and stop flag are looked at: a power of two
/// so that the check is a mask; ~1000 nodes are well under a millisecond.
const CHECK_EVERY_NODES: u64 = 1024;
/// Half-width of the first aspiration window (cp); 25 is a common start.
const ASPIRATION_DELTA: i32 = 25;
/// Iterations below this depth use a full window (scores still unstable).
const ASPIRATION_MIN_DEPTH: i32 = 5;
/// Reverse futility margin per ply of remaining depth (cp).
const RFP_MARGIN: i32 = 90;
/// Deepest remaining depth where reverse futility pruning applies.
const RFP_MAX_DEPTH: i32 = 6;
/// Futility margin for quiet moves at depth 1 and 2 (cp): base + per ply.
const FUTILITY_BASE: i32 = 100;
const FUTILITY_PER_PLY: i32 = 120;
/// Delta pruning margin in quiescence (cp): a capture that cannot bring the
/// score within this of alpha is skipped.
const DELTA_MARGIN: i32 = 200;
/// A new iteration is not started once this fraction (per mille) of the soft
/// time budget has gone: the next iteration usually takes twice as long.
const NEXT_ITERATION_PER_MILLE: u32 = 550;
/// Default time-control assumptions when `movestogo` is not given.
const DEFAULT_MOVES_TO_GO: u32 = 25;
const MAX_HISTORY: i32 = 16_384;

/// A source of monotonic time, injected so that tests can control it.
pub trait Clock: Send {
    /// Time since an arbitrary fixed origin.
    fn now(&self) -> Duration;
}

/// The real monotonic clock.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl Default for MonotonicClock {
    fn default() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }
}

/// What limits one search (the UCI `go` parameters).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    pub depth: Option<u32>,
    pub nodes: Option<u64>,
    pub movetime: Option<Duration>,
    pub wtime: Option<Duration>,
    pub btime: Option<Duration>,
    pub winc: Option<Duration>,
    pub binc: Option<Duration>,
    pub movestogo: Option<u32>,
    /// Search until stopped (time limits are ignored).
    pub infinite: bool,
    /// Only these root moves are considered (all when empty).
    pub searchmoves: Vec<Move>,
}

impl Limits {
    pub fn depth(depth: u32) -> Limits {
        Limits {
            depth: Some(depth),
            ..Limits::default()
        }
    }

    pub fn movetime(t: Duration) -> Limits {
        Limits {
            movetime: Some(t),
            ..Limits::default()
        }
    }

    pub fn nodes(n: u64) -> Limits {
        Limits {
            nodes: Some(n),
            ..Limits::default()
        }
    }

    /// Soft and hard time budgets for the side to move, after the overhead.
    /// The soft one decides whether to start another iteration, the hard one
    /// aborts the search.
    pub fn time_budget(
        &self,
        turn: shakmaty::Color,
        overhead: Duration,
    ) -> (Option<Duration>, Option<Duration>) {
        if self.infinite {
            return (None, None);
        }
        let floor = Duration::from_millis(1);
        if let Some(mt) = self.movetime {
            // A fixed time per move is used in full: iterate until it is over.
            let t = mt.saturating_sub(overhead).max(floor);
            return (None, Some(t));
        }
        let (time, inc) = match turn {
            shakmaty::Color::White => (self.wtime, self.winc),
            shakmaty::Color::Black => (self.btime, self.binc),
        };
        let Some(time) = time else {
            return (None, None);
        };
        let inc = inc.unwrap_or_default();
        let left = time.saturating_sub(overhead).max(floor);
        let mtg = self.movestogo.unwrap_or(DEFAULT_MOVES_TO_GO).clamp(1, 60);
        let soft = left / mtg + inc * 3 / 4;
        // Never plan to use more than half of what is left (80% on the last
        // move before a time control).
        let cap = if mtg == 1 { left * 4 / 5 } else { left / 2 };
        let hard = (soft * 3).min(cap).max(floor);
        (Some(soft.min(hard)), Some(hard))
    }
}

/// One progress report (the UCI `info` line).
#[derive(Debug, Clone, PartialEq)]
pub struct SearchInfo {
    pub depth: u32,
    pub seldepth: u32,
    pub score: i32,
    pub bound: Bound,
    pub nodes: u64,
    pub time: Duration,
    pub pv: Vec<Move>,
}

impl SearchInfo {
    pub fn nps(&self) -> u64 {
        let ms = self.time.as_millis().max(1) as u64;
        self.nodes * 1000 / ms
    }

    /// The score as UCI writes it: `cp N` or `mate N` (moves, not plies).
    pub fn uci_score(&self) -> String {
        uci_score(self.score)
    }

    /// The PV as UCI move strings.
    pub fn uci_pv(&self) -> String {
        crate::game::uci_line(&self.pv)
    }
}

/// `cp N` or `mate N` for a search score.
pub fn uci_score(score: i32) -> String {
    if score >= MATE_BOUND {
        format!("mate {}", (MATE - score + 1) / 2)
    } else if score <= -MATE_BOUND {
        format!("mate -{}", (MATE + score) / 2)
    } else {
        format!("cp {score}")
    }
}

/// The answer of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchResult {
    /// `None` only when the position has no legal move.
    pub best_move: Option<Move>,
    pub ponder: Option<Move>,
    pub score: i32,
    pub depth: u32,
    pub nodes: u64,
    pub time: Duration,
    pub pv: Vec<Move>,
}

/// The Zobrist key the search uses for `pos`.
pub fn key_of(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::Legal).0
}

/// Compact move code for the TT and killers: from | to << 6 | promotion << 12.
/// Castling is encoded king-to-rook as shakmaty represents it. 0 = none.
pub fn move_code(m: Move) -> u16 {
    let from = m.from().map(|s| s as u16).unwrap_or(0);
    let to = m.to() as u16;
    let promo = m.promotion().map(|r| r as u16).unwrap_or(0);
    from | (to << 6) | (promo << 12)
}

/// Static exchange evaluation: material gained by `m` when both sides keep
/// recapturing on its target square with their least valuable piece.
pub fn see(pos: &Chess, m: Move) -> i32 {
    let board = pos.board();
    let Some(from) = m.from() else { return 0 };
    let to = m.to();
    if m.is_castle() {
        return 0;
    }
    let mut gain = [0i32; 32];
    let mut occupied = board.occupied();
    let captured = if m.is_en_passant() {
        Some(Role::Pawn)
    } else {
        m.capture()
    };
    gain[0] = captured.map(|r| SEE_VALUE[r as usize - 1]).unwrap_or(0);
    let mut on_square = match m.promotion() {
        Some(p) => {
            gain[0] += SEE_VALUE[p as usize - 1] - SEE_VALUE[0];
            SEE_VALUE[p as usize - 1]
        }
        None => SEE_VALUE[m.role() as usize - 1],
    };
    occupied.discard(from);
    if m.is_en_passant() {
        let cap_sq = shakmaty::Square::from_coords(to.file(), from.rank());
        occupied.discard(cap_sq);
    }
    let mut side = !pos.turn();
    let mut d = 0;
    loop {
        let attackers = board.attacks_to(to, side, occupied) & occupied;
        if attackers.is_empty() {
            break;
        }
        // Least valuable attacker.
        let mut found = None;
        for role in Role::ALL {
            let bb = attackers & board.by_role(role);
            if let Some(sq) = bb.first() {
                found = Some((sq, role));
                break;
            }
        }
        let Some((sq, role)) = found else { break };
        d += 1;
        if d >= gain.len() {
            break;
        }
        gain[d] = on_square - gain[d - 1];
        on_square = SEE_VALUE[role as usize - 1];
        occupied.discard(sq);
        side = !side;
    }
    while d > 0 {
        gain[d - 1] = -(-gain[d - 1]).max(gain[d]);
        d -= 1;
    }
    gain[0]
}

/// Late move reduction in plies for a depth and move number (log formula
/// popularised by Stockfish/Ethereal; divisor 2.25 like many small engines).
fn lmr_reduction(depth: i32, move_number: usize) -> i32 {
    let d = (depth.max(1) as f64).ln();
    let m = (move_number.max(1) as f64).ln();
    (0.75 + d * m / 2.25) as i32
}

/// The search state that lives across searches (TT, history).
pub struct Searcher {
    tt: TransTable,
    history: Vec<[i32; 64]>,
    killers: Vec<[u16; 2]>,
    pv: Vec<Vec<Move>>,
    stop: Arc<AtomicBool>,
    clock: Box<dyn Clock>,
    move_overhead: Duration,
    // Per search:
    keys: Vec<u64>,
    rep_floor: usize,
    nodes: u64,
    seldepth: u32,
    start: Duration,
    hard_deadline: Option<Duration>,
    node_limit: Option<u64>,
    stopped: bool,
    root_filter: Vec<u16>,
}

impl Searcher {
    /// A searcher with a `hash_mb` transposition table, a stop flag that
    /// another thread may set, and a clock.
    pub fn new(hash_mb: usize, stop: Arc<AtomicBool>, clock: Box<dyn Clock>) -> Searcher {
        Searcher {
            tt: TransTable::new(hash_mb),
            history: vec![[0; 64]; 12],
            killers: vec![[0; 2]; MAX_PLY + 2],
            pv: vec![Vec::new(); MAX_PLY + 2],
            stop,
            clock,
            move_overhead: Duration::ZERO,
            keys: Vec::new(),
            rep_floor: 0,
            nodes: 0,
            seldepth: 0,
            start: Duration::ZERO,
            hard_deadline: None,
            node_limit: None,
            stopped: false,
            root_filter: Vec::new(),
        }
    }

    /// A searcher with the real clock and its own stop flag.
    pub fn with_hash(hash_mb: usize) -> Searcher {
        Searcher::new(
            hash_mb,
            Arc::new(AtomicBool::new(false)),
            Box::new(MonotonicClock::default()),
        )
    }

    /// The flag that stops a running search when set.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    pub fn set_move_overhead(&mut self, overhead: Duration) {
        self.move_overhead = overhead;
    }

    pub fn move_overhead(&self) -> Duration {
        self.move_overhead
    }

    /// Resizes (and clears) the transposition table.
    pub fn set_hash_mb(&mut self, mb: usize) {
        self.tt = TransTable::new(mb);
    }

    /// Forgets everything learned (new game).
    pub fn clear(&mut self) {
        self.tt.clear();
        for h in &mut self.history {
            *h = [0; 64];
        }
        for k in &mut self.killers {
            *k = [0; 2];
        }
    }

    /// Searches `pos`. `history` holds the Zobrist keys (see [`key_of`]) of
    /// the positions before it in the game, oldest first, for repetition
    /// detection. `on_info` is called after each iteration.
    pub fn search(
        &mut self,
        pos: &Chess,
        history: &[u64],
        limits: &Limits,
        on_info: &mut dyn FnMut(&SearchInfo),
    ) -> SearchResult {
        self.start = self.clock.now();
        self.nodes = 0;
        self.seldepth = 0;
        self.stopped = false;
        self.keys.clear();
        self.keys.extend_from_slice(history);
        self.rep_floor = 0;
        self.node_limit = limits.nodes;
        self.tt.new_search();
        for k in &mut self.killers {
            *k = [0; 2];
        }
        // Age the history so old games do not dominate.
        for h in &mut self.history {
            for v in h.iter_mut() {
                *v /= 2;
            }
        }
        let legal = pos.legal_moves();
        self.root_filter = limits
            .searchmoves
            .iter()
            .filter(|m| legal.contains(m))
            .map(|&m| move_code(m))
            .collect();
        let root_count = if self.root_filter.is_empty() {
            legal.len()
        } else {
            self.root_filter.len()
        };
        let (soft, mut hard) = limits.time_budget(pos.turn(), self.move_overhead);
        let mut soft = soft;
        if root_count == 1 && soft.is_some() {
            // Only one move: no point thinking long.
            soft = Some(Duration::ZERO);
            hard = hard.map(|h| h.min(Duration::from_millis(20)));
        }
        self.hard_deadline = hard;
        let max_depth = limits.depth.unwrap_or(MAX_DEPTH).clamp(1, MAX_DEPTH);
        let root_key = key_of(pos);

        let mut result = SearchResult {
            best_move: None,
            ponder: None,
            score: 0,
            depth: 0,
            nodes: 0,
            time: Duration::ZERO,
            pv: Vec::new(),
        };
        if legal.is_empty() {
            result.score = if pos.is_check() { -MATE } else { 0 };
            return result;
        }
        // Something legal to play even if stopped before depth 1 finishes.
        result.best_move = legal
            .iter()
            .copied()
            .find(|m| self.root_filter.is_empty() || self.root_filter.contains(&move_code(*m)));

        let mut prev_score = 0;
        for depth in 1..=max_depth as i32 {
            let mut delta = ASPIRATION_DELTA;
            let (mut alpha, mut beta) = if depth >= ASPIRATION_MIN_DEPTH {
                (
                    (prev_score - delta).max(-INF),
                    (prev_score + delta).min(INF),
                )
            } else {
                (-INF, INF)
            };
            let mut score;
            loop {
                score = self.negamax(pos, root_key, depth, alpha, beta, 0, false);
                if self.stopped {
                    break;
                }
                if score <= alpha {
                    beta = (alpha + beta) / 2;
                    alpha = (score - delta).max(-INF);
                } else if score >= beta {
                    beta = (score + delta).min(INF);
                } else {
                    break;
                }
                delta += delta;
            }
            // A partial iteration is used only if it already has a best
            // move of its own (the PV move of the previous one is searched
            // first, so a changed PV means a better move was found).
            let pv = self.pv[0].clone();
            if self.stopped {
                if depth > 1
                    && !pv.is_empty()
                    && Some(pv[0]) != result.best_move
                    && score > prev_score
                {
                    result.best_move = Some(pv[0]);
                    result.ponder = pv.get(1).copied();
                    result.pv = pv;
                }
                break;
            }
            if pv.is_empty() {
                break;
            }
            prev_score = score;
            result.best_move = Some(pv[0]);
            result.ponder = pv.get(1).copied();
            result.score = score;
            result.depth = depth as u32;
            result.pv = pv.clone();
            let elapsed = self.elapsed();
            on_info(&SearchInfo {
                depth: depth as u32,
                seldepth: self.seldepth.max(depth as u32),
                score,
                bound: Bound::Exact,
                nodes: self.nodes,
                time: elapsed,
                pv,
            });
            if let Some(soft) = soft {
                if elapsed >= soft * NEXT_ITERATION_PER_MILLE / 1000 {
                    break;
                }
            }
            if score.abs() >= MATE_BOUND && limits.depth.is_none() && !limits.infinite {
                // A forced mate was found: deeper search will not change it much.
                let mate_plies = MATE - score.abs();
                if depth > mate_plies + 2 {
                    break;
                }
            }
            if self.stop.load(Ordering::Relaxed) {
                break;
            }
        }
        // With `infinite`, UCI wants the bestmove only after `stop`.
        if limits.infinite {
            while !self.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        result.nodes = self.nodes;
        result.time = self.elapsed();
        result
    }

    fn elapsed(&self) -> Duration {
        self.clock.now().saturating_sub(self.start)
    }

    fn check_stop(&mut self) -> bool {
        if self.stopped {
            return true;
        }
        if let Some(limit) = self.node_limit {
            if self.nodes >= limit {
                self.stopped = true;
                return true;
            }
        }
        if self.nodes.is_multiple_of(CHECK_EVERY_NODES) {
            if self.stop.load(Ordering::Relaxed) {
                self.stopped = true;
            } else if let Some(deadline) = self.hard_deadline {
                if self.elapsed() >= deadline {
                    self.stopped = true;
                }
            }
        }
        self.stopped
    }

    fn is_repetition(&self, key: u64, halfmoves: u32) -> bool {
        let len = self.keys.len();
        let reach = (halfmoves as usize).min(len - self.rep_floor.min(len));
        let mut i = 4;
        while i <= reach {
            if self.keys[len - i] == key {
                return true;
            }
            i += 2;
        }
        false
    }

    fn history_index(pos: &Chess, m: Move) -> usize {
        pos.turn() as usize * 6 + m.role() as usize - 1
    }

    /// Ordering scores: TT move, good captures (MVV-LVA), promotions,
    /// killers, history, bad captures last.
    fn order_scores(&self, pos: &Chess, moves: &[Move], tt_move: u16, ply: usize) -> Vec<i32> {
        let killers = self.killers[ply];
        moves
            .iter()
            .map(|&m| {
                let code = move_code(m);
                if code == tt_move {
                    return 10_000_000;
                }
                let victim = if m.is_en_passant() {
                    Some(Role::Pawn)
                } else {
                    m.capture()
                };
                if let Some(v) = victim {
                    let mvv_lva = SEE_VALUE[v as usize - 1] * 10 - m.role() as i32;
                    if see(pos, m) >= 0 {
                        return 1_000_000 + mvv_lva;
                    }
                    return -1_000_000 + mvv_lva;
                }
                if let Some(p) = m.promotion() {
                    return if p == Role::Queen {
                        900_000
                    } else {
                        -2_000_000
                    };
                }
                if code == killers[0] {
                    return 800_000;
                }
                if code == killers[1] {
                    return 790_000;
                }
                self.history[Self::history_index(pos, m)][m.to() as usize]
            })
            .collect()
    }

    fn update_history(&mut self, pos: &Chess, m: Move, bonus: i32) {
        let h = &mut self.history[Self::history_index(pos, m)][m.to() as usize];
        // Gravity formula keeps values within ±MAX_HISTORY.
        *h += bonus - *h * bonus.abs() / MAX_HISTORY;
    }

    #[allow(clippy::too_many_arguments)]
    fn negamax(
        &mut self,
        pos: &Chess,
        key: u64,
        mut depth: i32,
        mut alpha: i32,
        mut beta: i32,
        ply: usize,
        null_done: bool,
    ) -> i32 {
        self.pv[ply].clear();
        if self.check_stop() {
            return 0;
        }
        let pv_node = beta - alpha > 1;
        let in_check = pos.is_check();
        if ply > 0 {
            if pos.halfmoves() >= 100 && !(in_check && pos.legal_moves().is_empty()) {
                return 0;
            }
            if self.is_repetition(key, pos.halfmoves()) || pos.is_insufficient_material() {
                return 0;
            }
            // Mate distance pruning.
            alpha = alpha.max(-MATE + ply as i32);
            beta = beta.min(MATE - ply as i32 - 1);
            if alpha >= beta {
                return alpha;
            }
        }
        if in_check {
            depth += 1;
        }
        if depth <= 0 {
            return self.quiesce(pos, alpha, beta, ply);
        }
        self.nodes += 1;
        if ply >= MAX_PLY {
            return evaluate(pos);
        }

        let mut tt_move = 0;
        if let Some(e) = self.tt.probe(key) {
            tt_move = e.mv;
            if !pv_node && ply > 0 && e.depth as i32 >= depth {
                let s = score_from_tt(e.score as i32, ply);
                match e.bound {
                    Bound::Exact => return s,
                    Bound::Lower if s >= beta => return s,
                    Bound::Upper if s <= alpha => return s,
                    _ => {}
                }
            }
        }

        let static_eval = if in_check { -INF } else { evaluate(pos) };
        if !pv_node && !in_check && beta.abs() < MATE_BOUND {
            // Reverse futility: far above beta at low depth.
            if depth <= RFP_MAX_DEPTH && static_eval - RFP_MARGIN * depth >= beta {
                return static_eval;
            }
            // Null move pruning.
            if !null_done
                && depth >= 3
                && static_eval >= beta
                && has_non_pawn_material(pos.board(), pos.turn())
            {
                if let Ok(null) = pos.clone().swap_turn() {
                    let r = 3 + depth / 6;
                    let null_key = key_of(&null);
                    self.keys.push(key);
                    let saved_floor = self.rep_floor;
                    self.rep_floor = self.keys.len();
                    let s = -self.negamax(
                        &null,
                        null_key,
                        depth - 1 - r,
                        -beta,
                        -beta + 1,
                        ply + 1,
                        true,
                    );
                    self.rep_floor = saved_floor;
                    self.keys.pop();
                    if self.stopped {
                        return 0;
                    }
                    if s >= beta {
                        return if s >= MATE_BOUND { beta } else { s };
                    }
                }
            }
        }

        let mut moves = pos.legal_moves();
        if ply == 0 && !self.root_filter.is_empty() {
            let filter = &self.root_filter;
            moves.retain(|m| filter.contains(&move_code(*m)));
        }
        if moves.is_empty() {
            return if in_check { -MATE + ply as i32 } else { 0 };
        }
        let mut scores = self.order_scores(pos, &moves, tt_move, ply);
        let original_alpha = alpha;
        let mut best_score = -INF;
        let mut best_move = 0u16;
        let mut searched = 0usize;
        let mut quiets: Vec<Move> = Vec::new();
        for i in 0..moves.len() {
            // Selection sort step: bring the best remaining move to i.
            let mut best_i = i;
            for j in i + 1..moves.len() {
                if scores[j] > scores[best_i] {
                    best_i = j;
                }
            }
            moves.swap(i, best_i);
            scores.swap(i, best_i);
            let m = moves[i];
            let is_quiet = !m.is_capture() && !m.is_promotion();
            let code = move_code(m);
            let is_killer = self.killers[ply].contains(&code);

            let mut child = pos.clone();
            child.play_unchecked(m);
            let gives_check = child.is_check();

            if !pv_node
                && !in_check
                && searched > 0
                && is_quiet
                && !gives_check
                && best_score > -MATE_BOUND
            {
                // Late move pruning: at shallow depth the late quiet moves rarely matter.
                if depth <= 3 && quiets.len() as i32 >= 4 + depth * depth * 2 {
                    continue;
                }
                // Futility pruning.
                if depth <= 2 && static_eval + FUTILITY_BASE + FUTILITY_PER_PLY * depth <= alpha {
                    continue;
                }
            }

            let child_key = key_of(&child);
            self.keys.push(key);
            let mut score;
            if searched == 0 {
                score = -self.negamax(&child, child_key, depth - 1, -beta, -alpha, ply + 1, false);
            } else {
                let mut r = 0;
                if depth >= 3 && is_quiet && !in_check && !gives_check && searched >= 2 {
                    r = lmr_reduction(depth, searched);
                    if pv_node {
                        r -= 1;
                    }
                    if is_killer {
                        r -= 1;
                    }
                    r = r.clamp(0, depth - 2);
                }
                score = -self.negamax(
                    &child,
                    child_key,
                    depth - 1 - r,
                    -alpha - 1,
                    -alpha,
                    ply + 1,
                    false,
                );
                if score > alpha && r > 0 {
                    score = -self.negamax(
                        &child,
                        child_key,
                        depth - 1,
                        -alpha - 1,
                        -alpha,
                        ply + 1,
                        false,
                    );
                }
                if score > alpha && score < beta {
                    score =
                        -self.negamax(&child, child_key, depth - 1, -beta, -alpha, ply + 1, false);
                }
            }
            self.keys.pop();
            if self.stopped {
                return 0;
            }
            searched += 1;
            if score > best_score {
                best_score = score;
                best_move = code;
                if score > alpha {
                    alpha = score;
                    let (head, tail) = self.pv.split_at_mut(ply + 1);
                    let line = &mut head[ply];
                    line.clear();
                    line.push(m);
                    line.extend_from_slice(&tail[0]);
                    if score >= beta {
                        if is_quiet {
                            let k = &mut self.killers[ply];
                            if k[0] != code {
                                k[1] = k[0];
                                k[0] = code;
                            }
                            let bonus = (depth * depth).min(400);
                            self.update_history(pos, m, bonus);
                            for &q in &quiets {
                                self.update_history(pos, q, -bonus);
                            }
                        }
                        break;
                    }
                }
            }
            if is_quiet {
                quiets.push(m);
            }
        }
        let bound = if best_score >= beta {
            Bound::Lower
        } else if alpha > original_alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        self.tt
            .store(key, best_move, score_to_tt(best_score, ply), depth, bound);
        best_score
    }

    fn quiesce(&mut self, pos: &Chess, mut alpha: i32, beta: i32, ply: usize) -> i32 {
        self.pv[ply].clear();
        self.nodes += 1;
        if self.check_stop() {
            return 0;
        }
        self.seldepth = self.seldepth.max(ply as u32);
        if ply >= MAX_PLY {
            return evaluate(pos);
        }
        let in_check = pos.is_check();
        let stand_pat = if in_check { -INF } else { evaluate(pos) };
        if stand_pat >= beta {
            return stand_pat;
        }
        alpha = alpha.max(stand_pat);
        let mut moves = pos.legal_moves();
        if in_check && moves.is_empty() {
            return -MATE + ply as i32;
        }
        if !in_check {
            moves.retain(|m| m.is_capture() || m.promotion() == Some(Role::Queen));
        }
        let mut scores: Vec<i32> = moves
            .iter()
            .map(|m| {
                let victim = if m.is_en_passant() {
                    Some(Role::Pawn)
                } else {
                    m.capture()
                };
                let v = victim.map(|r| SEE_VALUE[r as usize - 1]).unwrap_or(0)
                    + m.promotion()
                        .map(|r| SEE_VALUE[r as usize - 1])
                        .unwrap_or(0);
                v * 10 - m.role() as i32
            })
            .collect();
        let mut best = stand_pat;
        for i in 0..moves.len() {
            let mut best_i = i;
            for j in i + 1..moves.len() {
                if scores[j] > scores[best_i] {
                    best_i = j;
                }
            }
            moves.swap(i, best_i);
            scores.swap(i, best_i);
            let m = moves[i];
            if !in_check {
                let gain = scores[i] / 10;
                if stand_pat + gain + DELTA_MARGIN < alpha && !m.is_promotion() {
                    continue;
                }
                if see(pos, m) < 0 {
                    continue;
                }
            }
            let mut child = pos.clone();
            child.play_unchecked(m);
            let score = -self.quiesce(&child, -beta, -alpha, ply + 1);
            if self.stopped {
                return 0;
            }
            if score > best {
                best = score;
                if score > alpha {
                    alpha = score;
                    if score >= beta {
                        break;
                    }
                }
            }
        }
        best
    }
}

/// Mate scores are stored relative to the node, not the root.
fn score_to_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score + ply as i32
    } else if score <= -MATE_BOUND {
        score - ply as i32
    } else {
        score
    }
}

fn score_from_tt(score: i32, ply: usize) -> i32 {
    if score >= MATE_BOUND {
        score - ply as i32
    } else if score <= -MATE_BOUND {
        score + ply as i32
    } else {
        score
    }
}

#[cfg(test)]
#[path = "search_tests.rs"]
mod tests;
