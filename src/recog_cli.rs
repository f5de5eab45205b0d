//! `chessbot record`, `chessbot recognize` and `chessbot bench recognition`:
//! thin wrappers over `chessbot::recognition`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use shakmaty::{Chess, Color, Position};

use chessbot::camera::{self, FrameSource};
use chessbot::config::Config;
use chessbot::game::{position_from_fen, san_of, uci_of, Game};
use chessbot::recognition::photo::{recognize_photo, PhotoOptions};
use chessbot::recognition::watcher::{BoardWatcher, WatcherConfig};
use chessbot::recognition::{Disagreement, TrackEvent, Verdict};
use chessbot::vision::{io, Side};

/// Where frames come from: a recorded video, a folder of images or a live camera.
#[derive(clap::Args, Debug, Clone)]
pub struct FrameSourceArgs {
    /// A video file of the game.
    #[arg(long, value_name = "FILE", group = "source")]
    pub video: Option<PathBuf>,
    /// A folder of frames (name order).
    #[arg(long, value_name = "DIR", alias = "frames", group = "source")]
    pub images: Option<PathBuf>,
    /// A live camera (device index or name; [camera] in the config sets the mode).
    #[arg(long, value_name = "DEVICE", num_args = 0..=1, default_missing_value = "0", group = "source")]
    pub camera: Option<String>,
    /// Frame rate of an image folder.
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// Where White sits in the picture: bottom, top, left, right (default: decided from the start position).
    #[arg(long, value_name = "SIDE")]
    pub white_at: Option<String>,
    /// Calibration directory (board pose from `chessbot calibrate board`).
    #[arg(long, value_name = "DIR")]
    pub calibration: Option<PathBuf>,
}

impl FrameSourceArgs {
    /// Whether any source was given.
    pub fn given(&self) -> bool {
        self.video.is_some() || self.images.is_some() || self.camera.is_some()
    }

    /// Whether the frames are recorded (they can wait) rather than live.
    pub fn recorded(&self) -> bool {
        self.camera.is_none()
    }

    /// Opens the source.
    pub fn open(&self, config: &Config) -> anyhow::Result<Box<dyn FrameSource>> {
        Ok(match (&self.video, &self.images, &self.camera) {
            (Some(v), _, _) => Box::new(camera::VideoFile::open(v)?),
            (_, Some(d), _) => Box::new(camera::ImageFolder::open(d, self.fps)?),
            (_, _, Some(dev)) => camera::open_source(&camera::CameraConfig {
                source: "live".into(),
                device: dev.clone(),
                ..config.camera.clone()
            })?,
            _ => bail!("give the frames with --video FILE, --images DIR or --camera [DEVICE]"),
        })
    }

    /// The watcher's settings from the config and these options.
    pub fn watcher_config(&self, config: &Config) -> anyhow::Result<WatcherConfig> {
        let (white_at, location) =
            side_and_location(self.white_at.as_deref(), self.calibration.as_deref())?;
        Ok(WatcherConfig {
            white_at,
            location,
            cover_fraction: config.vision.motion_threshold,
            settle_frames: config.vision.settle_frames,
            ..WatcherConfig::default()
        })
    }
}

#[derive(clap::Args, Debug)]
pub struct RecordArgs {
    #[command(flatten)]
    pub source: FrameSourceArgs,
    /// Where to write the PGN (rewritten after every move).
    #[arg(long, value_name = "FILE", alias = "pgn")]
    pub out: PathBuf,
    /// The position at the start (default: the initial position).
    #[arg(long, value_name = "FEN")]
    pub start_fen: Option<String>,
    /// Print what each frame showed (busy, covered squares, best hypotheses) on stderr.
    #[arg(long)]
    pub trace: bool,
}

#[derive(clap::Args, Debug)]
pub struct RecognizeArgs {
    /// The position before the move (full FEN: side to move, castling, en passant).
    #[arg(long, value_name = "FEN", required_unless_present = "labels")]
    pub fen: Option<String>,
    /// The photo after the move.
    #[arg(
        long,
        value_name = "FILE",
        alias = "after",
        required_unless_present = "labels"
    )]
    pub image: Option<PathBuf>,
    /// A photo of the position before the move (teaches the classifier this board).
    #[arg(long, value_name = "FILE")]
    pub before: Option<PathBuf>,
    /// Evaluation: a `labels.csv` (filename,fen_board_part); every pair of
    /// consecutive photos whose labels differ by one legal move is
    /// recognized and the rate reported.
    #[arg(long, value_name = "CSV", conflicts_with_all = ["fen", "image"])]
    pub labels: Option<PathBuf>,
    /// Where White sits in the picture (default: decided from the position).
    #[arg(long, value_name = "SIDE")]
    pub white_at: Option<String>,
    /// Calibration directory (board pose from `chessbot calibrate board`).
    #[arg(long, value_name = "DIR")]
    pub calibration: Option<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Where White sits (`--white-at`, else the calibration's) and the board's
/// location from a calibration directory, if one is given.
fn side_and_location(
    white_at: Option<&str>,
    calibration: Option<&Path>,
) -> anyhow::Result<(
    Option<Side>,
    Option<chessbot::vision::locate::BoardLocation>,
)> {
    let side = parse_side(white_at)?;
    match calibration {
        Some(dir) => {
            let pose = chessbot::vision::calibrate::load_board_pose(dir)?;
            Ok((side.or(Some(pose.white_at)), Some(pose.location()?)))
        }
        None => Ok((side, None)),
    }
}

fn parse_side(s: Option<&str>) -> anyhow::Result<Option<Side>> {
    s.map(|s| {
        s.parse::<Side>()
            .map_err(|e| anyhow::anyhow!("--white-at {e}"))
    })
    .transpose()
}

fn describe_disagreements(d: &[Disagreement]) -> String {
    d.iter()
        .map(|x| {
            format!(
                "{} expected {} seen {}",
                x.square,
                x.expected.letter(),
                x.seen.letter()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Writes `text` to `path` through a temporary file and a rename, so a
/// crash never leaves a half-written PGN.
fn write_atomic(path: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = path.with_extension("pgn.tmp");
    std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// `chessbot record`.
pub fn record(config: &Config, args: &RecordArgs) -> anyhow::Result<ExitCode> {
    let start = match &args.start_fen {
        Some(f) => position_from_fen(f).context("--start-fen")?,
        None => Chess::default(),
    };
    let mut source = args.source.open(config)?;
    let wcfg = args.source.watcher_config(config)?;
    let mut watcher = BoardWatcher::new(start.clone(), wcfg);
    let mut game = Game::new(start);
    let tags = chessbot::game::pgn::PgnTags {
        event: "Game recorded by chessbot".into(),
        site: source.describe(),
        date: chrono::Local::now().format("%Y.%m.%d").to_string(),
        ..Default::default()
    };
    eprintln!("watching {}", source.describe());
    write_atomic(&args.out, &chessbot::game::pgn::write_pgn(&game, &tags))?;
    let (mut frames, mut unread, mut unexplained) = (0u64, 0u64, 0usize);
    let mut last_move_ms = 0u64;
    while let Some(frame) = source.next_frame()? {
        frames += 1;
        let t_ms = frame.timestamp.as_millis() as u64;
        let out = watcher.push(&frame.image, t_ms)?;
        if !out.usable() {
            unread += 1;
        }
        if args.trace {
            trace_frame(frame.index, t_ms, &out, watcher.position());
        }
        let Some(event) = out.event else { continue };
        let secs = t_ms as f64 / 1000.0;
        let mut played = Vec::new();
        match event {
            TrackEvent::Move {
                mv,
                confidence,
                promotion_unverified,
                ..
            } => {
                played.push(mv);
                let note = if promotion_unverified {
                    " (promotion piece not verified: queen assumed)"
                } else {
                    ""
                };
                println!(
                    "{secs:7.2}s  {}  {} (confidence {confidence:.3}){note}",
                    move_number(game.position()),
                    san_of(game.position(), mv)
                );
            }
            TrackEvent::Resynced { moves, .. } => {
                let mut p = game.position().clone();
                let sans: Vec<String> = moves
                    .iter()
                    .map(|m| {
                        let s = san_of(&p, *m);
                        p.play_unchecked(*m);
                        s
                    })
                    .collect();
                println!(
                    "{secs:7.2}s  lost track; recovered {} moves: {}",
                    moves.len(),
                    sans.join(" ")
                );
                played.extend(moves);
            }
            TrackEvent::Unexplained { disagreeing, .. } => {
                unexplained += 1;
                println!(
                    "{secs:7.2}s  the board matches no legal move: {}",
                    describe_disagreements(&disagreeing)
                );
            }
            TrackEvent::Unsure { candidates, .. } => {
                let sans: Vec<String> = candidates
                    .iter()
                    .map(|m| san_of(game.position(), *m))
                    .collect();
                println!(
                    "{secs:7.2}s  cannot tell the move played apart: one of {} (waiting for the board to show it)",
                    sans.join(", ")
                );
            }
            TrackEvent::Restored { .. } => {
                println!("{secs:7.2}s  the board shows the position again")
            }
            TrackEvent::Amended { was, now, .. } => {
                if game.moves().last().map(|r| r.mv) == Some(was) {
                    game.take_back()?;
                    println!(
                        "{secs:7.2}s  {}  {} (amended: the piece went on after {} looked finished)",
                        move_number(game.position()),
                        san_of(game.position(), now),
                        san_of(game.position(), was)
                    );
                    played.push(now);
                }
            }
            TrackEvent::RobotMoveVerified { .. } | TrackEvent::RobotMoveMismatch { .. } => {}
        }
        if !played.is_empty() {
            for mv in played {
                game.play(mv, Some(t_ms as i64), Some(t_ms - last_move_ms))?;
                last_move_ms = t_ms;
            }
            write_atomic(&args.out, &chessbot::game::pgn::write_pgn(&game, &tags))?;
        }
    }
    write_atomic(&args.out, &chessbot::game::pgn::write_pgn(&game, &tags))?;
    eprintln!(
        "{frames} frames ({unread} without a readable board), {} moves recognized, {unexplained} unexplained board(s); PGN in {}",
        game.moves().len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn trace_frame(index: u64, t_ms: u64, out: &chessbot::recognition::WatchOutput, pos: &Chess) {
    let verdict = match (&out.frame, &out.reading) {
        (chessbot::recognition::FrameUse::Read, Some(r)) => {
            let sc =
                chessbot::recognition::score(pos, &chessbot::recognition::photo::obs_of_reading(r));
            let top: Vec<String> = sc
                .hypotheses
                .iter()
                .take(2)
                .map(|h| format!("{}={:.3}", h.mv.map_or("none".into(), uci_of), h.posterior))
                .collect();
            let v = match sc.verdict {
                Verdict::Unexplained { disagreeing } => {
                    format!("unexplained [{}]", describe_disagreements(&disagreeing))
                }
                v => format!("{v:?}"),
            };
            format!("{} {v}", top.join(" "))
        }
        (f, _) => format!("{f:?}"),
    };
    eprintln!(
        "frame {index} {t_ms} ms busy {} covered {} {verdict}",
        out.busy,
        out.covered.len()
    );
}

fn move_number(pos: &Chess) -> String {
    let n = pos.fullmoves();
    match pos.turn() {
        Color::White => format!("{n}."),
        Color::Black => format!("{n}..."),
    }
}

/// `chessbot recognize`.
pub fn recognize(args: &RecognizeArgs) -> anyhow::Result<ExitCode> {
    let (white_at, location) =
        side_and_location(args.white_at.as_deref(), args.calibration.as_deref())?;
    let opts = PhotoOptions { white_at, location };
    if let Some(labels) = &args.labels {
        return recognize_labels(labels, &opts, args.json);
    }
    let (Some(fen), Some(image)) = (&args.fen, &args.image) else {
        bail!("give --fen and --image (or --labels)");
    };
    let pos = position_from_fen(fen).context("--fen")?;
    let after = io::load_image(image).with_context(|| format!("{}", image.display()))?;
    let before = args
        .before
        .as_ref()
        .map(|p| io::load_image(p).with_context(|| format!("{}", p.display())))
        .transpose()?;
    let r = recognize_photo(&pos, &after, before.as_ref(), &opts)?;
    let alternatives: Vec<serde_json::Value> = r
        .scored
        .hypotheses
        .iter()
        .skip(1)
        .take(3)
        .map(|h| {
            serde_json::json!({
                "move": h.mv.map(uci_of),
                "san": h.mv.map(|m| san_of(&pos, m)),
                "confidence": round3(h.posterior),
            })
        })
        .collect();
    let (status, mv, confidence) = match &r.scored.verdict {
        Verdict::Move { mv, confidence, .. } => ("move", Some(*mv), *confidence),
        Verdict::NoChange { confidence } => ("no_change", None, *confidence),
        Verdict::Unexplained { .. } => ("unexplained", None, 0.0),
        Verdict::Uncertain => (
            "uncertain",
            r.scored.hypotheses.first().and_then(|h| h.mv),
            r.scored.hypotheses.first().map_or(0.0, |h| h.posterior),
        ),
    };
    if args.json {
        let mut doc = serde_json::json!({
            "status": status,
            "move": mv.map(uci_of),
            "san": mv.map(|m| san_of(&pos, m)),
            "confidence": round3(confidence),
            "alternatives": alternatives,
            "calibrated": r.calibrated,
        });
        if !r.residual.is_empty() {
            doc["misread_squares"] = serde_json::to_value(&r.residual)?;
        }
        if status == "unexplained" {
            doc["disagreeing_squares"] = serde_json::to_value(&r.disagreeing)?;
        }
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        match (status, mv) {
            ("move", Some(m)) => println!(
                "{} {} (confidence {confidence:.3})",
                uci_of(m),
                san_of(&pos, m)
            ),
            ("uncertain", Some(m)) => println!(
                "uncertain: best guess {} {} (confidence {confidence:.3}); ask",
                uci_of(m),
                san_of(&pos, m)
            ),
            ("unexplained", _) => println!(
                "no legal move explains the photo: {}",
                describe_disagreements(&r.disagreeing)
            ),
            _ => println!("no change (confidence {confidence:.3})"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Castling rights a placement allows (king and rook on their squares).
fn castling_from_placement(board: &str) -> String {
    let occ = |sq: &str, piece: char| -> bool {
        let Ok(b) = board.parse::<shakmaty::fen::Fen>() else {
            return false;
        };
        let Ok(s) = sq.parse::<shakmaty::Square>() else {
            return false;
        };
        b.as_setup().board.piece_at(s).map(|p| p.char()) == Some(piece)
    };
    let mut s = String::new();
    if occ("e1", 'K') && occ("h1", 'R') {
        s.push('K');
    }
    if occ("e1", 'K') && occ("a1", 'R') {
        s.push('Q');
    }
    if occ("e8", 'k') && occ("h8", 'r') {
        s.push('k');
    }
    if occ("e8", 'k') && occ("a8", 'r') {
        s.push('q');
    }
    if s.is_empty() {
        s.push('-');
    }
    s
}

/// The move that turns placement `a` into placement `b`, and the position
/// before it (side to move: the colour that moved).
fn one_move_apart(a: &str, b: &str) -> Option<(Chess, shakmaty::Move)> {
    let castling = castling_from_placement(a);
    for turn in ["w", "b"] {
        let Ok(pos) = position_from_fen(&format!("{a} {turn} {castling} - 0 1")) else {
            continue;
        };
        for m in pos.legal_moves() {
            let mut p = pos.clone();
            p.play_unchecked(m);
            if p.board().board_fen().to_string() == b {
                return Some((pos, m));
            }
        }
    }
    None
}

fn recognize_labels(labels: &Path, opts: &PhotoOptions, json: bool) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(labels)
        .with_context(|| format!("cannot read {}", labels.display()))?;
    let dir = labels.parent().unwrap_or(Path::new("."));
    let rows: Vec<(String, String)> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (f, fen) = l.split_once(',')?;
            Some((f.trim().to_owned(), fen.trim().to_owned()))
        })
        .collect();
    let image_path = |f: &str| {
        let p = dir.join("images").join(f);
        if p.is_file() {
            p
        } else {
            dir.join(f)
        }
    };
    let (mut pairs, mut right) = (0usize, 0usize);
    let mut results = Vec::new();
    for w in rows.windows(2) {
        let ((fa, la), (fb, lb)) = (&w[0], &w[1]);
        let Some((pos, truth)) = one_move_apart(la, lb) else {
            continue;
        };
        pairs += 1;
        let before = io::load_image(&image_path(fa))?;
        let after = io::load_image(&image_path(fb))?;
        let (status, got) = match recognize_photo(&pos, &after, Some(&before), opts) {
            Ok(r) => match r.scored.verdict {
                Verdict::Move { mv, .. } => ("move".to_owned(), Some(mv)),
                Verdict::NoChange { .. } => ("no_change".to_owned(), None),
                Verdict::Unexplained { .. } => ("unexplained".to_owned(), None),
                Verdict::Uncertain => ("uncertain".to_owned(), None),
            },
            Err(e) => (format!("error: {e}"), None),
        };
        let ok = got == Some(truth);
        right += usize::from(ok);
        let line = format!(
            "{fa} -> {fb}: truth {} {}, got {} {}",
            uci_of(truth),
            san_of(&pos, truth),
            got.map_or("-".into(), uci_of),
            if ok { "ok" } else { status.as_str() }
        );
        if !json {
            println!("{line}");
        }
        results.push(serde_json::json!({
            "before": fa, "after": fb, "truth": uci_of(truth),
            "got": got.map(uci_of), "status": status, "right": ok,
        }));
    }
    let rate = if pairs > 0 {
        right as f64 / pairs as f64
    } else {
        0.0
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "pairs": pairs, "right": right, "rate": round3(rate), "results": results,
            }))?
        );
    } else {
        println!(
            "{right}/{pairs} consecutive pairs one legal move apart recognized ({:.1} %)",
            100.0 * rate
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `chessbot bench recognition`: simulated games across cameras, boards,
/// light, hands, sliding, quick replies and illegal-then-corrected moves.
/// `moves` is (moves drawn per game, how many of them to play: all when
/// `None`).
pub fn bench_recognition(
    games: std::ops::Range<usize>,
    (moves, play_only): (usize, Option<usize>),
    (verbose, answers): (bool, bool),
    dump_unexplained: Option<&Path>,
    seed: u64,
    width: u32,
    height: u32,
) -> anyhow::Result<ExitCode> {
    use chessbot::recognition::bench::{
        color_of_ply, queen_assumed_for, watch_sim_game_with, MoveOutcome, SimGame,
    };
    use chessbot::sim::opponent::{random_moves, OpponentStyle};
    use chessbot::sim::{Realism, SceneSpec};
    use chessbot::vision::{io, overlay};
    use rand::{Rng, SeedableRng};

    const BOARDS: [&str; 3] = ["wooden", "vinyl", "printed"];
    const CAMERAS: [&str; 3] = ["overhead", "angled", "low"];
    let (mut total, mut right, mut resynced, mut wrong, mut missed) = (0, 0, 0, 0, 0);
    let mut asked = 0usize;
    let mut piece_asked = 0usize;
    let (mut illegal, mut unexplained, mut amended) = (0usize, 0usize, 0usize);
    let mut latency = Vec::new();
    let mut since_release = Vec::new();
    let mut per_view: std::collections::BTreeMap<String, (usize, usize)> = Default::default();
    if let Some(dir) = dump_unexplained {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    let started = std::time::Instant::now();
    let n_games = games.len();
    for g in games {
        let gseed = seed + g as u64;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(gseed);
        let start = Chess::default();
        let mv = random_moves(&start, moves, &mut rng);
        let board = BOARDS[g % 3];
        let camera = CAMERAS[(g / 3) % 3];
        let robot = (g % 4 == 3).then_some(Color::White);
        // One illegal-then-corrected move in every other game, by the
        // person: against the robot, before the person's next ply.
        let illegal_before = if g % 2 == 1 && !mv.is_empty() {
            let k = rng.random_range(0..mv.len());
            if robot == Some(color_of_ply(&start, k)) {
                (k + 1..mv.len()).take(1).collect()
            } else {
                vec![k]
            }
        } else {
            Vec::new()
        };
        let game = SimGame {
            scene: SceneSpec {
                board: board.parse()?,
                set: None,
                camera: camera.parse()?,
                width,
                height,
                realism: Realism::Webcam,
            },
            start,
            moves: mv,
            style: OpponentStyle {
                illegal_before,
                ..OpponentStyle::default()
            },
            seed: gseed,
            robot,
            blind: None,
            answers,
            play_only,
        };
        // Illegal moves shown before a ply watched.
        let watched = game.watched().len();
        illegal += game
            .style
            .illegal_before
            .iter()
            .filter(|&&i| i < watched)
            .count();
        let mut dump_error = None;
        let r = watch_sim_game_with(&game, WatcherConfig::default(), |truth, out, _, image| {
            let (
                Some(dir),
                Some(
                    TrackEvent::Unexplained { .. }
                    | TrackEvent::RobotMoveMismatch { .. }
                    | TrackEvent::Resynced { .. },
                ),
                Some(read),
            ) = (dump_unexplained, &out.event, &out.reading)
            else {
                return;
            };
            let raw = dir.join(format!("game{g}_frame{}_raw.png", truth.frame));
            if let Err(e) = io::save_image(image, &raw) {
                dump_error.get_or_insert(anyhow::anyhow!("{}: {e}", raw.display()));
            }
            let path = dir.join(format!("game{g}_frame{}.png", truth.frame));
            let drawn = overlay::draw(
                image,
                &read.location,
                Some(&read.reading),
                read.orientation.white_at,
                image.width.max(image.height),
            );
            if let Err(e) = drawn.and_then(|d| io::save_image(&d, &path)) {
                dump_error.get_or_insert(anyhow::anyhow!("{}: {e}", path.display()));
            }
        })?;
        if let Some(e) = dump_error {
            return Err(e);
        }
        let (mut g_right, mut g_wrong) = (0, 0);
        for o in &r.outcomes {
            total += 1;
            match o {
                MoveOutcome::Right {
                    latency_ms,
                    since_release_ms,
                } => {
                    right += 1;
                    g_right += 1;
                    latency.push(*latency_ms);
                    since_release.push(*since_release_ms);
                }
                MoveOutcome::Resynced => resynced += 1,
                MoveOutcome::Wrong { .. } => {
                    wrong += 1;
                    g_wrong += 1;
                }
                MoveOutcome::Asked => asked += 1,
                MoveOutcome::PieceAsked => piece_asked += 1,
                MoveOutcome::Missed => missed += 1,
            }
        }
        unexplained += r.unexplained();
        amended += r.amended();
        let e = per_view.entry(format!("{board}/{camera}")).or_default();
        e.0 += r.outcomes.len();
        e.1 += g_right;
        println!(
            "game {g} (seed {gseed}, {board}, {camera}{}): {g_right}/{} right, {g_wrong} wrong, {} resynced, {}{} missed, {} unexplained, {} frames ({} unread)",
            if game.robot.is_some() { ", robot White" } else { "" },
            r.outcomes.len(),
            r.count(|o| matches!(o, MoveOutcome::Resynced)),
            if answers {
                format!("{} asked, ", r.count(|o| matches!(o, MoveOutcome::Asked)))
            } else {
                String::new()
            },
            r.count(|o| matches!(o, MoveOutcome::Missed)),
            r.unexplained(),
            r.frames,
            r.unread_frames
        );
        if verbose {
            println!("    played: {}", {
                let mut p = game.start.clone();
                game.watched()
                    .iter()
                    .map(|m| {
                        let s = san_of(&p, *m);
                        p.play_unchecked(*m);
                        s
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            });
            // The watcher's view of the game, replayed for SAN: its moves,
            // and the script's robot moves once verified on the board. A
            // move that does not fit (the replay lost step) is shown in UCI.
            let mut pos = game.start.clone();
            let mut plies = 0;
            fn step(pos: &mut Chess, plies: &mut usize, mv: shakmaty::Move) -> String {
                if !pos.is_legal(mv) {
                    return format!("{} (?)", uci_of(mv));
                }
                let s = san_of(pos, mv);
                pos.play_unchecked(mv);
                *plies += 1;
                s
            }
            let mut before_last = pos.clone();
            let mut answers = r.answers.iter().peekable();
            for (frame, ev) in &r.events {
                // The person's answers came before this event.
                while let Some(&&(at, ply)) = answers.peek().filter(|a| a.0 <= *frame) {
                    answers.next();
                    pos = game.position_after(ply);
                    plies = ply;
                    println!("    frame {at}: the person confirmed the position after {ply} plies");
                }
                let what = match ev {
                    TrackEvent::Move {
                        mv,
                        promotion_unverified,
                        ..
                    } => {
                        before_last = pos.clone();
                        match game.moves.get(plies).copied() {
                            Some(played)
                                if queen_assumed_for(played, *mv, *promotion_unverified) =>
                            {
                                let assumed = san_of(&pos, *mv);
                                format!(
                                    "move {assumed}, the queen assumed: the person enters {}",
                                    step(&mut pos, &mut plies, played)
                                )
                            }
                            _ => format!("move {}", step(&mut pos, &mut plies, *mv)),
                        }
                    }
                    TrackEvent::Amended { now, .. } => {
                        pos = before_last.clone();
                        plies = plies.saturating_sub(1);
                        format!("amended to {}", step(&mut pos, &mut plies, *now))
                    }
                    TrackEvent::Resynced { moves, .. } => {
                        let sans: Vec<String> = moves
                            .iter()
                            .map(|m| step(&mut pos, &mut plies, *m))
                            .collect();
                        format!("resynced {} moves: {}", moves.len(), sans.join(" "))
                    }
                    TrackEvent::RobotMoveVerified { .. } => {
                        if let Some(mv) = game.moves.get(plies).copied() {
                            step(&mut pos, &mut plies, mv);
                        }
                        format!("{ev:?}")
                    }
                    TrackEvent::Unexplained { disagreeing, .. } => {
                        format!("unexplained: {}", describe_disagreements(disagreeing))
                    }
                    TrackEvent::RobotMoveMismatch { disagreeing, .. } => {
                        format!(
                            "robot move mismatch: {}",
                            describe_disagreements(disagreeing)
                        )
                    }
                    e => format!("{e:?}"),
                };
                println!("    frame {frame}: {what}");
            }
            for (at, ply) in answers {
                println!("    frame {at}: the person confirmed the position after {ply} plies");
            }
            for (ply, ms) in &r.robot_waits {
                println!("    the robot's move at ply {ply} waited {ms:.0} ms for the watcher");
            }
        }
    }
    let pct = |a: usize| 100.0 * a as f64 / total.max(1) as f64;
    let quantile = |v: &mut Vec<f64>, q: f64| -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    println!();
    println!("| metric | value |");
    println!("|---|---|");
    println!("| games x moves | {n_games} x {moves} ({total} moves, {width}x{height}, 30 fps) |");
    println!(
        "| moves right (committed on their own) | {right} ({:.2} %) |",
        pct(right)
    );
    println!(
        "| moves recovered by resync | {resynced} ({:.2} %) |",
        pct(resynced)
    );
    println!("| wrong moves committed | {wrong} ({:.2} %) |", pct(wrong));
    if answers {
        println!(
            "| moves asked (the person confirmed the position) | {asked} ({:.2} %) |",
            pct(asked)
        );
    }
    println!(
        "| promotions to another piece, committed as the queen assumed and flagged (the person enters the piece) | {piece_asked} |"
    );
    println!("| moves missed | {missed} ({:.2} %) |", pct(missed));
    println!("| illegal moves shown / unexplained reports | {illegal} / {unexplained} |");
    println!("| moves amended after their commit (counted by the final move) | {amended} |");
    println!(
        "| latency after the hand is gone, median / p90 | {:.0} / {:.0} ms |",
        quantile(&mut latency, 0.5),
        quantile(&mut latency, 0.9)
    );
    println!(
        "| latency after the last piece was let go, median / p90 | {:.0} / {:.0} ms |",
        quantile(&mut since_release, 0.5),
        quantile(&mut since_release, 0.9)
    );
    for (view, (n, ok)) in &per_view {
        println!(
            "| right on {view} | {ok}/{n} ({:.1} %) |",
            100.0 * *ok as f64 / (*n).max(1) as f64
        );
    }
    println!("| wall time | {:.0} s |", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
