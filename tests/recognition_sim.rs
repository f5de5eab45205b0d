//! Move recognition on rendered frames: a scripted person plays moves with
//! a hand on the simulated board, the `BoardWatcher` watches the frames.
//! Small frames (480x360) keep the renders cheap in a debug build.

use chessbot::game::{parse_move, position_from_fen, uci_of};
use chessbot::recognition::bench::{watch_sim_game_with, MoveOutcome, SimGame, SimGameReport};
use chessbot::recognition::watcher::board_obs;
use chessbot::recognition::watcher::WatcherConfig;
use chessbot::recognition::{score, BoardObs, TrackEvent, WatchOutput};

use chessbot::sim::opponent::OpponentStyle;
use chessbot::sim::world::placed_on;
use chessbot::sim::{Placement, Realism, SceneSpec, World};
use chessbot::vision::image::RgbImage;
use rand::SeedableRng;
use shakmaty::{Bitboard, Board, Chess, Color, Move, Position, Square};

mod common;
use common::moves_from;

/// [`scene`] at 640x480, where a test needs the bench's frame size.
fn scene_640(board: &str, camera: &str) -> SceneSpec {
    SceneSpec {
        width: 640,
        height: 480,
        ..scene(board, camera)
    }
}

fn scene(board: &str, camera: &str) -> SceneSpec {
    SceneSpec {
        board: board.parse().unwrap(),
        set: None,
        camera: camera.parse().unwrap(),
        width: 480,
        height: 360,
        realism: Realism::Webcam,
    }
}

struct Case {
    start: Chess,
    moves: &'static str,
    style: OpponentStyle,
    spec: SceneSpec,
    seed: u64,
    robot: Option<Color>,
    blind: Option<(usize, usize)>,
    answers: bool,
}

impl Case {
    fn new(fen: &str, moves: &'static str) -> Case {
        Case {
            start: if fen.is_empty() {
                Chess::default()
            } else {
                position_from_fen(fen).unwrap()
            },
            moves,
            style: OpponentStyle::default(),
            spec: scene("wooden", "overhead"),
            seed: 1,
            robot: None,
            blind: None,
            answers: false,
        }
    }

    fn run(self) -> SimGameReport {
        let game = SimGame {
            scene: self.spec,
            moves: moves_from(&self.start, self.moves),
            start: self.start,
            style: self.style,
            seed: self.seed,
            robot: self.robot,
            blind: self.blind,
            answers: self.answers,
            play_only: None,
        };
        let debug = std::env::var_os("RECOG_DEBUG").is_some();
        let cfg = WatcherConfig {
            self_calibrate: std::env::var_os("RECOG_NO_LEARN").is_none(),
            ..WatcherConfig::default()
        };
        let report = watch_sim_game_with(&game, cfg, |truth, out, w, _| {
            if debug {
                let obs = board_obs_of(out);
                let v = obs.map(|o| {
                    let sc = score(w.position(), &o);
                    let top: Vec<String> = sc
                        .hypotheses
                        .iter()
                        .take(3)
                        .map(|h| format!("{:?}={:.3}", h.mv.map(uci_of), h.posterior))
                        .collect();
                    (sc.verdict, top)
                });
                eprintln!(
                    "{} ply {} {:?} hand {} busy {} covered {} {:?}",
                    truth.frame,
                    truth.ply,
                    truth.phase,
                    truth.hand,
                    out.busy,
                    out.covered.len(),
                    v
                );
            }
        })
        .unwrap();
        for (f, e) in &report.events {
            eprintln!("frame {f}: {e:?}");
        }
        eprintln!("outcomes: {:?}", report.outcomes);
        report
    }
}

fn board_obs_of(out: &WatchOutput) -> Option<BoardObs> {
    out.reading.as_ref().map(|r| board_obs(r, &[false; 64]))
}

fn ucis(ms: &[Move]) -> String {
    ms.iter().map(|m| uci_of(*m)).collect::<Vec<_>>().join(" ")
}

fn all_right(r: &SimGameReport) -> bool {
    r.outcomes
        .iter()
        .all(|o| matches!(o, MoveOutcome::Right { .. }))
        && r.final_position_right
}

fn style(f: impl FnOnce(&mut OpponentStyle)) -> OpponentStyle {
    let mut s = OpponentStyle {
        slide_chance: 0.0,
        off_centre_chance: 0.25,
        quick_reply_chance: 0.0,
        ..OpponentStyle::default()
    };
    f(&mut s);
    s
}

#[test]
fn a_quiet_move_and_its_reply_are_committed() {
    let r = Case::new("", "e4 e5").run();
    assert_eq!(ucis(&r.committed), "e2e4 e7e5");
    assert!(all_right(&r));
    assert_eq!(r.unexplained(), 0);
}

#[test]
fn captures_with_the_victim_removed_before_or_after() {
    let fen = "rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2";
    // After: the mover is set at the edge of the square, the victim taken
    // off, the mover pushed in.
    let mut c = Case::new(fen, "exd5 Qxd5");
    c.style = style(|s| s.capture_first_chance = 0.0);
    c.spec = scene("vinyl", "overhead");
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e4d5 d8d5");
    assert!(all_right(&r));
    // Before: the victim goes first.
    let mut c = Case::new(fen, "exd5");
    c.style = style(|s| s.capture_first_chance = 1.0);
    c.seed = 2;
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e4d5");
    assert!(all_right(&r));
}

const CASTLING: &str = "r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1";

#[test]
fn castling_both_ways_king_first() {
    let mut c = Case::new(CASTLING, "O-O O-O-O");
    c.style = style(|s| s.rook_first_chance = 0.0);
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e1g1 e8c8");
    assert!(all_right(&r));
}

#[test]
fn castling_both_ways_rook_first() {
    let mut c = Case::new(CASTLING, "O-O-O O-O");
    c.style = style(|s| s.rook_first_chance = 1.0);
    c.seed = 3;
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e1c1 e8g8");
    assert!(all_right(&r));
    assert_eq!(r.unexplained(), 0);
}

#[test]
fn en_passant_and_promotion() {
    let mut c = Case::new(
        "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",
        "exf6",
    );
    c.style = style(|s| s.capture_first_chance = 0.5);
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e5f6");
    assert!(all_right(&r));
    // Promotion: occupancy cannot tell the piece, so the queen is taken
    // and flagged as unverified.
    let mut c = Case::new("8/4P1k1/8/8/8/8/5K2/8 w - - 0 1", "e8=Q");
    c.seed = 4;
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e7e8q");
    assert!(all_right(&r));
    assert!(r.events.iter().any(|(_, e)| matches!(
        e,
        chessbot::recognition::TrackEvent::Move {
            promotion_unverified: true,
            ..
        }
    )));
    // An underpromotion is committed as the queen, flagged: the person,
    // told so, enters the knight, and the game goes on from it (the
    // king takes it). Counted as asked, not right and not wrong.
    let mut c = Case::new("8/4P1k1/8/8/8/8/5K2/8 w - - 0 1", "e8=N Kf8 Ke3 Kxe8");
    c.seed = 4;
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e7e8n g7f8 f2e3 f8e8");
    assert_eq!(r.outcomes[0], MoveOutcome::PieceAsked);
    assert!(
        r.outcomes[1..]
            .iter()
            .all(|o| matches!(o, MoveOutcome::Right { .. })),
        "{:?}",
        r.outcomes
    );
}

#[test]
fn a_piece_slid_across_squares_is_one_move() {
    let mut c = Case::new(
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2",
        "Qh5",
    );
    c.style = style(|s| s.slide_chance = 1.0);
    let r = c.run();
    assert_eq!(ucis(&r.committed), "d1h5");
    assert!(all_right(&r));
}

#[test]
fn a_quick_reply_after_the_robots_move_is_not_missed() {
    // The robot plays White: its moves are verified, Black answers at once.
    let mut c = Case::new("", "e4 e5 Nf3 Nc6");
    c.style = style(|s| s.quick_reply_chance = 1.0);
    c.robot = Some(Color::White);
    c.seed = 5;
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e2e4 e7e5 g1f3 b8c6");
    assert!(all_right(&r));
    let verified = r
        .events
        .iter()
        .filter(|(_, e)| {
            matches!(
                e,
                chessbot::recognition::TrackEvent::RobotMoveVerified { .. }
            )
        })
        .count();
    // Both robot moves are verified: the second waits until the quick
    // reply is committed, as the service's arm does.
    assert_eq!(verified, 2);
    assert!(
        matches!(r.robot_waits[..], [(2, ms)] if ms > 0.0),
        "{:?}",
        r.robot_waits
    );
}

#[test]
fn an_illegal_move_is_reported_then_the_right_move_committed() {
    let mut c = Case::new("", "e4");
    c.style = style(|s| s.illegal_before = vec![0]);
    c.seed = 6;
    let r = c.run();
    assert_eq!(r.unexplained(), 1, "{:?}", r.events);
    assert_eq!(ucis(&r.committed), "e2e4");
    assert!(all_right(&r));
}

#[test]
fn lost_track_is_recovered_by_a_resync() {
    // No frames from the start of 1... e5 until 2. Nf3 is done.
    let mut c = Case::new("", "e4 e5 Nf3");
    c.blind = Some((1, 2));
    c.seed = 7;
    let r = c.run();
    assert_eq!(ucis(&r.committed), "e2e4 e7e5 g1f3");
    assert!(matches!(r.outcomes[0], MoveOutcome::Right { .. }));
    assert_eq!(
        r.outcomes[1..],
        [MoveOutcome::Resynced, MoveOutcome::Resynced]
    );
    assert!(r.final_position_right);
}

#[test]
fn a_lost_track_beyond_the_search_is_answered_by_the_person_and_the_game_goes_on() {
    // No frames from 1... e5 until 3... Bc5: five plies, one more than the
    // lost-track search covers. The watcher reports the board; the person
    // confirms the position a few seconds later (as the service's
    // interface lets them), and the moves after that are read on their own.
    let mut c = Case::new("", "e4 e5 Nf3 Nc6 Bc4 Bc5 O-O Nf6 d3 d6 c3 O-O");
    c.blind = Some((1, 5));
    c.seed = 7;
    c.answers = true;
    let r = c.run();
    assert!(r.unexplained() >= 1, "the unexplained board is reported");
    assert_eq!(r.answers.len(), 1, "answered once: {:?}", r.answers);
    let asked = r.answers[0].1;
    assert!((6..=10).contains(&asked), "answered at ply {asked}");
    assert!(matches!(r.outcomes[0], MoveOutcome::Right { .. }));
    assert!(r.outcomes[1..asked]
        .iter()
        .all(|o| *o == MoveOutcome::Asked));
    assert!(
        r.outcomes[asked..]
            .iter()
            .all(|o| matches!(o, MoveOutcome::Right { .. })),
        "{:?}",
        r.outcomes
    );
    assert!(r.final_position_right);
}

/// Someone bumps the camera: the board is found elsewhere. The watcher
/// decides nothing while it confirms the new place (a second), adopts it
/// because it shows the believed position, and reads the next move there.
#[test]
fn a_bumped_camera_is_followed_and_the_next_move_read() {
    use chessbot::camera::sim::rgb_from_sim;
    use chessbot::recognition::BoardWatcher;
    use nalgebra::Translation3;
    let spec = scene("wooden", "overhead");
    let start = Chess::default();
    let after = {
        let mut p = start.clone();
        p.play_unchecked(parse_move(&start, "e4").unwrap());
        p
    };
    let before_scene = spec.build(start.board(), 1).unwrap();
    let after_scene = spec.build(after.board(), 1).unwrap();
    let mut bumped = before_scene.camera.clone();
    // 40 mm sideways at ~0.5 m: the board shifts by most of a square.
    bumped.camera_from_board = Translation3::new(40.0, 0.0, 0.0) * bumped.camera_from_board;
    let frame = |world: &chessbot::sim::World, cam: &chessbot::sim::Camera| {
        rgb_from_sim(
            chessbot::sim::render(world, cam, &before_scene.options)
                .unwrap()
                .image,
        )
    };
    let still_a = frame(&before_scene.world, &before_scene.camera);
    let still_b = frame(&before_scene.world, &bumped);
    let moved_b = frame(&after_scene.world, &bumped);
    let mut w = BoardWatcher::new(start.clone(), WatcherConfig::default());
    let mut t = 0;
    let mut events = Vec::new();
    let mut push = |w: &mut BoardWatcher, img, n: usize, events: &mut Vec<TrackEvent>| {
        for _ in 0..n {
            t += 33;
            events.extend(w.push(img, t).unwrap().event);
        }
    };
    push(&mut w, &still_a, 45, &mut events);
    let first = w.location().unwrap().corners;
    push(&mut w, &still_b, 20, &mut events);
    assert_eq!(w.location().unwrap().corners, first, "not adopted at once");
    push(&mut w, &still_b, 40, &mut events);
    let moved_px = (w.location().unwrap().corners[0][0] - first[0][0]).abs();
    assert!(
        moved_px > 10.0,
        "the new place was adopted ({moved_px:.1} px)"
    );
    assert!(events.is_empty(), "nothing decided on the bump: {events:?}");
    push(&mut w, &moved_b, 30, &mut events);
    assert!(
        matches!(events.as_slice(), [TrackEvent::Move { mv, .. }] if uci_of(*mv) == "e2e4"),
        "{events:?}"
    );
}

/// `world` with its pieces changed from `before` to `after` as a person
/// would: the pieces that stay stand where they stood, the ones that
/// arrive are put on their squares' centres. (Building a scene for the
/// new position would put every piece and the board's grain elsewhere.)
fn moved_world(world: &World, before: &Board, after: &Board) -> World {
    let mut w = world.clone();
    for sq in Square::ALL {
        if before.piece_at(sq) == after.piece_at(sq) {
            continue;
        }
        if let Some(i) = w.piece_index_on(sq) {
            w.pieces.remove(i);
        }
        if let Some(piece) = after.piece_at(sq) {
            let centred = Placement {
                max_offset: 0.0,
                max_rotation_deg: 0.0,
            };
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
            w.pieces
                .push(placed_on(&w.board, sq, piece, centred, &mut rng));
        }
    }
    w
}

/// A still frame of `pos` and one of `after` on the same scene (built for
/// `pos` with `seed`).
fn render_move(spec: &SceneSpec, seed: u64, pos: &Chess, after: &Chess) -> (RgbImage, RgbImage) {
    let s = spec.build(pos.board(), seed).unwrap();
    let moved = moved_world(&s.world, pos.board(), after.board());
    (render_world(&s, &s.world), render_world(&s, &moved))
}

/// `world` seen by `scene`'s camera.
fn render_world(scene: &chessbot::sim::Scene, world: &World) -> RgbImage {
    chessbot::camera::sim::rgb_from_sim(
        chessbot::sim::render(world, &scene.camera, &scene.options)
            .unwrap()
            .image,
    )
}

/// The camera pose a frame's board gives, and the side White sits on.
fn pose_of(
    frame: &RgbImage,
) -> (
    chessbot::vision::viewpoint::Viewpoint,
    chessbot::vision::orientation::Side,
) {
    use chessbot::vision::pipeline::{read_frame, ReadOptions};
    let read = read_frame(frame, &ReadOptions::default()).unwrap();
    let view = chessbot::vision::viewpoint::estimate(&read.location).unwrap();
    (view, read.orientation.white_at)
}

/// A watcher that saw `before` settle for a second, then `mv` played (one
/// still image each, rendered with `seed`), and what it reported; and what
/// a watcher that saw only the position after reported.
fn watch_before_and_after(
    spec: &SceneSpec,
    seed: u64,
    before: &Chess,
    mv: Move,
) -> (Vec<TrackEvent>, Vec<TrackEvent>) {
    use chessbot::recognition::BoardWatcher;
    let mut after = before.clone();
    after.play_unchecked(mv);
    let (img_before, img_after) = render_move(spec, seed, before, &after);
    let push = |w: &mut BoardWatcher, img, n: usize, t: &mut u64, events: &mut Vec<TrackEvent>| {
        for _ in 0..n {
            *t += 33;
            events.extend(w.push(img, *t).unwrap().event);
        }
    };
    let (mut t, mut seen_both) = (0, Vec::new());
    let mut w = BoardWatcher::new(before.clone(), WatcherConfig::default());
    push(&mut w, &img_before, 30, &mut t, &mut seen_both);
    push(&mut w, &img_after, 45, &mut t, &mut seen_both);
    let (mut t, mut seen_after) = (0, Vec::new());
    let mut w = BoardWatcher::new(before.clone(), WatcherConfig::default());
    push(&mut w, &img_after, 45, &mut t, &mut seen_after);
    (seen_both, seen_after)
}

/// From the low camera the back rank hides behind the pawns: after `Bd7`
/// the squares c8, d8 and e8 all still look occupied, so `Bd7`, `Qd7` and
/// `Kd7` explain the squares alike. The bishop's silhouette is gone from
/// the picture, though, and the queen's and king's are not: compared with
/// the settled frame before the move, the watcher commits `Bd7`. A watcher
/// that never saw the position before has nothing to compare with and
/// commits no other move (until the thirty-second session it committed
/// nothing: the squares already put `Bd7` first, c8 in the shadow of the
/// bishop that arrived in front of it, but a piece read gone behind a
/// piece as tall made the board unexplained; such a piece is now excused).
#[test]
fn the_piece_that_left_tells_apart_moves_to_the_same_square() {
    let spec = scene_640("wooden", "low");
    let before =
        position_from_fen("rnbqkbnr/ppp1pppp/3p4/8/8/2P1P3/PP1P1PPP/RNBQKBNR b KQkq - 0 2")
            .unwrap();
    let bd7 = parse_move(&before, "Bd7").unwrap();
    // Seed 10: a set-up where c8 looks occupied after the move (on others
    // the squares alone decide it; see the control below). Seed 2 was one
    // until the learned classifier saw outlines and shading, seed 5 until
    // it saw the axis profile: of seeds 1-16, the picture after alone now
    // reads c8 empty on all but 3 (misread elsewhere) and 10.
    let (both, only_after) = watch_before_and_after(&spec, 10, &before, bd7);
    assert!(
        matches!(both.as_slice(), [TrackEvent::Move { mv, .. }] if *mv == bd7),
        "{both:?}"
    );
    // Without the frame before: never the queen's or the king's move.
    assert!(
        only_after
            .iter()
            .all(|e| !matches!(e, TrackEvent::Move { mv, .. } if *mv != bd7)),
        "{only_after:?}"
    );
}

/// The picture-change model on rendered pairs of still frames (before and
/// after the move, pieces centred): the move played must explain the
/// change with a cost of at most `FIT_COST` and beat "nothing changed" and
/// the moves the squares confuse it with by `CHANGE_MARGIN` on the samples
/// that tell each pair apart (measured: 0.43 at least): a king
/// stepping behind a pawn, a bishop leaving the back rank at the low
/// view, a capture, castling, en passant. The squares the move changes
/// must not count as unchanged in the picture, and most others must.
#[test]
fn the_move_played_explains_the_change_in_the_picture() {
    use chessbot::recognition::change::{explain_change, square_changes};
    use chessbot::recognition::scoring::{CHANGE_MARGIN, FIT_COST};
    let cases = [
        (
            "vinyl",
            "angled",
            5,
            "e3 e6 a4 Bb4 Ne2 Bxd2+ Nxd2 h6 b3",
            "Kf8",
            "Ke7",
        ),
        ("wooden", "low", 2, "c3 d6 e3", "Bd7", "Qd7 Kd7 Nd7"),
        ("printed", "angled", 3, "e4 d5", "exd5", "e5 Qh5"),
        (
            "wooden",
            "angled",
            4,
            "e4 e5 Nf3 Nc6 Bc4 Bc5",
            "O-O",
            "Kf1 Rf1",
        ),
        ("vinyl", "low", 6, "e4 a6 e5 d5", "exd6", "e6 d4"),
        // The knight leaves from in front of the g7 pawn: the pawn's
        // picture changes though black stands there before and after.
        ("vinyl", "low", 8, "f3 b6 c3 Na6 Na3", "Nf6", "g6 g5"),
        ("printed", "overhead", 7, "d4 Nf6 c4 e6", "Nc3", "Nd2 Na3"),
    ];
    for (board, camera, seed, moves, played, rivals) in cases {
        let spec = scene_640(board, camera);
        let before = {
            let mut p = Chess::default();
            for m in moves_from(&Chess::default(), moves) {
                p.play_unchecked(m);
            }
            p
        };
        let board_after = |m: &str| {
            let mut p = before.clone();
            p.play_unchecked(parse_move(&before, m).unwrap());
            p.board().clone()
        };
        let mut candidates = vec![board_after(played), before.board().clone()];
        candidates.extend(rivals.split_whitespace().map(board_after));
        let mut after = before.clone();
        after.play_unchecked(parse_move(&before, played).unwrap());
        let (img_before, img_after) = render_move(&spec, seed, &before, &after);
        let (view, side) = pose_of(&img_before);
        let costs = explain_change(
            &img_before,
            &img_after,
            &view,
            side,
            before.board(),
            &candidates,
        )
        .unwrap_or_else(|| panic!("{played} ({board}, {camera}): too few telling samples"));
        // Every square the move changes changed in the picture; most
        // others did not.
        let changes = square_changes(&img_before, &img_after, &view, side, before.board());
        let unchanged = changes.unchanged;
        for sq in Square::ALL {
            if before.board().piece_at(sq) != after.board().piece_at(sq) {
                assert!(
                    changes.changed.contains(sq),
                    "{played} ({board}, {camera}): {sq}"
                );
            }
        }
        assert!(
            unchanged.count() >= 48,
            "{played} ({board}, {camera}): {unchanged:?}"
        );
        let margins: Vec<Option<f32>> = costs[1..].iter().map(|f| costs[0].margin_to(f)).collect();
        let means: Vec<f32> = costs.iter().map(|f| f.cost).collect();
        assert!(
            costs[0].cost <= FIT_COST,
            "{played} ({board}, {camera}): {means:?}"
        );
        assert!(
            margins
                .iter()
                .all(|m| m.is_some_and(|m| m >= CHANGE_MARGIN)),
            "{played} ({board}, {camera}): {means:?} {margins:?}"
        );
    }
}

/// A hand that rests, still, on the piece it just put down is in the frame
/// the move is decided on. At the low view it shows only above the board's
/// far edge, up the squares' axes, and the motion detector (which watches
/// the board's floor) sees it neither rest nor leave. The position's
/// reference picture must not keep it: once the hand has gone and the
/// scene is still again, the clean frame is the reference.
#[test]
fn a_hand_resting_on_the_piece_it_put_down_is_not_kept_in_the_reference() {
    use chessbot::recognition::BoardWatcher;
    use chessbot::sim::world::{Hand, SKIN_TONES, UNIT_PER_SQUARE};
    use nalgebra::{Point3, Vector3};

    let spec = scene_640("printed", "low");
    let before = position_from_fen("2b3k1/1Q3ppp/8/8/8/8/5PPP/6K1 w - - 0 1").unwrap();
    let mv = parse_move(&before, "Qxc8+").unwrap();
    let mut after = before.clone();
    after.play_unchecked(mv);
    let s = spec.build(before.board(), 4).unwrap();
    let moved = moved_world(&s.world, before.board(), after.board());
    let render = |w: &World| render_world(&s, w);
    // The fingertips on the queen's top, the arm from Black's side; then
    // the hand drawn back and up, out of the picture in four frames.
    let unit = UNIT_PER_SQUARE * moved.board.square_mm;
    let c = moved.board.square_centre(Square::C8);
    let top = chessbot::sim::pieces::height_mm(shakmaty::Role::Queen, unit);
    let hand_at = |k: f64| {
        let mut w = moved.clone();
        let grip = Point3::new(c.x, c.y + 100.0 * k, top + 8.0 + 70.0 * k);
        w.hand = Some(Hand::reaching(
            grip,
            Vector3::y(),
            SKIN_TONES[1],
            [0.2, 0.3, 0.5],
        ));
        render(&w)
    };
    let img_before = render(&s.world);
    let resting = hand_at(0.0);
    let leaving: Vec<RgbImage> = (1..=4).map(|k| hand_at(f64::from(k))).collect();
    let clean = render(&moved);

    let mut w = BoardWatcher::new(before.clone(), WatcherConfig::default());
    // (time, events so far, whether a frame after the decision was busy)
    let mut seen = (0u64, Vec::new(), false);
    let push = |w: &mut BoardWatcher,
                img: &RgbImage,
                n: usize,
                seen: &mut (u64, Vec<TrackEvent>, bool)| {
        for _ in 0..n {
            seen.0 += 33;
            let out = w.push(img, seen.0).unwrap();
            if seen.1.iter().any(|e| matches!(e, TrackEvent::Move { .. })) {
                seen.2 |= out.busy;
            }
            seen.1.extend(out.event);
        }
    };
    push(&mut w, &img_before, 30, &mut seen);
    // Resting until the move is decided, and half a second on.
    while seen.1.is_empty() && seen.0 < 3000 {
        push(&mut w, &resting, 1, &mut seen);
    }
    push(&mut w, &resting, 15, &mut seen);
    assert!(
        matches!(seen.1.as_slice(), [TrackEvent::Move { mv: m, .. }] if *m == mv),
        "{:?}",
        seen.1
    );
    assert!(w.reference_image() == Some(&resting));
    for img in &leaving {
        push(&mut w, img, 1, &mut seen);
    }
    push(&mut w, &clean, 10, &mut seen);
    // The floor never moved: the hand was over the board unseen.
    assert!(!seen.2, "the motion detector saw the hand leave");
    // Where the hand was, the reference now shows what the clean frame
    // shows (it may be a frame of the hand's way out that no longer
    // reaches the pieces).
    let reference = w.reference_image().expect("a reference of the position");
    let luma = |img: &RgbImage, i: usize| {
        let p = &img.data[3 * i..3 * i + 3];
        0.299 * f32::from(p[0]) + 0.587 * f32::from(p[1]) + 0.114 * f32::from(p[2])
    };
    let hand: Vec<usize> = (0..clean.width * clean.height)
        .filter(|&i| (luma(&resting, i) - luma(&clean, i)).abs() > 30.0)
        .collect();
    assert!(
        hand.len() > 500,
        "the hand covers only {} pixels",
        hand.len()
    );
    let kept = hand
        .iter()
        .filter(|&&i| (luma(reference, i) - luma(&clean, i)).abs() > 30.0)
        .count();
    assert!(
        kept * 20 < hand.len(),
        "the reference still shows the hand in {kept} of its {} pixels",
        hand.len()
    );
}

/// A piece that hardly stands out from the bare squares of its colour
/// (a white pawn on a white square) may leave without changing the
/// picture, so its unchanged picture must not be taken to show it still
/// standing (`SquareChanges::camouflaged`; seed-71 printed/angled bench
/// game, game seed 76, ply 5: only 1 of the pawn's 38 visible samples on
/// c2 stood out by more than the bare squares' spread, and the game
/// stalled for 36 moves). On a picture where the whole board is one flat
/// grey, every piece is camouflaged; one painted dark where it stands is
/// not, and no empty square ever is. On a picture shaded from one side
/// to the other, a pawn that stands out from the bare squares' median by
/// little more than `CHANGE_LUMA`, within their spread, is camouflaged.
#[test]
fn a_piece_that_does_not_stand_out_from_its_square_is_camouflaged() {
    use chessbot::recognition::change::square_changes;
    let spec = scene_640("printed", "angled");
    let pos = Chess::default();
    let s = spec.build(pos.board(), 76).unwrap();
    let frame = render_world(&s, &s.world);
    let (view, side) = pose_of(&frame);
    // Grey at 180, or shaded from 140 to 220 across the picture.
    let grey = |shade: f64| {
        let mut img = RgbImage::new(frame.width, frame.height);
        for y in 0..frame.height {
            for x in 0..frame.width {
                let l = (180.0 + shade * (x as f64 / frame.width as f64 - 0.5)) as u8;
                img.put(x, y, [l, l, l]);
            }
        }
        img
    };
    let changes = |img: &RgbImage| square_changes(img, img, &view, side, pos.board());
    let flat = grey(0.0);
    let all = changes(&flat);
    assert_eq!(all.camouflaged, pos.board().occupied());
    assert_eq!(all.unchanged, Bitboard::FULL);
    // The pawn on c2 painted in `luma`, base to top.
    let painted = |img: &RgbImage, luma: u8| {
        let (c, r) = side.cell_of_square(Square::C2 as usize);
        let mut shown = img.clone();
        for k in 0..=10 {
            let z = 0.06 * f64::from(k);
            let [u, v] = view.project(c as f64 + 0.5, r as f64 + 0.5, z).unwrap();
            for dy in -14i64..=14 {
                for dx in -14i64..=14 {
                    let (x, y) = (u as i64 + dx, v as i64 + dy);
                    if x >= 0 && y >= 0 && (x as usize) < img.width && (y as usize) < img.height {
                        shown.put(x as usize, y as usize, [luma, luma, luma]);
                    }
                }
            }
        }
        shown
    };
    let one = changes(&painted(&flat, 30));
    assert!(
        !one.camouflaged.contains(Square::C2),
        "{:?}",
        one.camouflaged
    );
    assert!(one.camouflaged.contains(Square::H2));
    assert!((one.camouflaged & !pos.board().occupied()).is_empty());
    // Shaded: 40 below the bare squares' median of about 180 stands out
    // by more than CHANGE_LUMA (30) but not by more than their spread.
    let shaded = grey(80.0);
    assert!(changes(&painted(&shaded, 140))
        .camouflaged
        .contains(Square::C2));
    assert!(!changes(&painted(&shaded, 30))
        .camouflaged
        .contains(Square::C2));
    // Flat, 40 below stands out.
    assert!(!changes(&painted(&flat, 140))
        .camouflaged
        .contains(Square::C2));
}

/// From the low camera over a1, the pawn stepping from g2 to g3 leaves
/// from behind the king and the bishop in front of g2, which hide most of
/// its silhouette and all of the square's floor: counted over every sample,
/// g2's picture looked unchanged (3 of the move's 20 telling samples
/// changed where "nothing changed" predicted none) and, g2 still reading
/// White (the pawn on g3 behind it), `g3` paid for emptying a square whose
/// piece still showed. The squares read "nothing changed" at 0.998 and the
/// game stalled on its first move (seed-71 printed/low, game seed 79).
/// Only the samples no other piece may hide count: g2 is not unchanged,
/// g3 (the pawn arrived in plain view) changed, and the squares far from
/// the move still look unchanged.
#[test]
fn a_piece_leaving_from_behind_others_does_not_look_unchanged() {
    use chessbot::recognition::change::square_changes;
    let spec = scene_640("printed", "low");
    let before = Chess::default();
    let mut after = before.clone();
    after.play_unchecked(parse_move(&before, "g3").unwrap());
    let (img_before, img_after) = render_move(&spec, 79, &before, &after);
    let (view, side) = pose_of(&img_before);
    let c = square_changes(&img_before, &img_after, &view, side, before.board());
    assert!(!c.unchanged.contains(Square::G2), "{:?}", c.unchanged);
    assert!(c.changed.contains(Square::G3), "{:?}", c.changed);
    for sq in [Square::A1, Square::B2, Square::D7, Square::E5, Square::H8] {
        assert!(c.unchanged.contains(sq), "{sq}: {:?}", c.unchanged);
    }
}

/// Seed-61 printed/low (game seed 69): after `...Qe7` the queen's d8
/// still read occupied, so the squares alone made `...Nge7` the only
/// contender and only it was measured against the picture; with d8's
/// picture known to have changed, `...Qe7` led `...Nce7` and `...Nge7`
/// (0.41 / 0.29 / 0.29) but, never measured, was never picked, and the
/// game stalled there. The scripted game of the bench, to that move.
#[test]
fn a_move_that_leads_once_the_picture_is_known_is_measured_against_it() {
    let mut c = Case::new("", "e4 Nc6 Ke2 b5 Ke1 e5 Bxb5 Bb4 b3 Qe7");
    c.spec = scene_640("printed", "low");
    c.seed = 69;
    let r = c.run();
    assert!(all_right(&r), "{:?}", r.outcomes);
}
