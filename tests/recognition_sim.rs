//! Move recognition on rendered frames: a scripted person plays moves with
//! a hand on the simulated board, the `BoardWatcher` watches the frames.
//! Small frames (480x360) keep the renders cheap in a debug build.

use chessbot::game::{parse_move, uci_of};
use chessbot::recognition::bench::{watch_sim_game, MoveOutcome, SimGame, SimGameReport};
use chessbot::recognition::watcher::WatcherConfig;

use chessbot::sim::opponent::OpponentStyle;
use chessbot::sim::{Realism, SceneSpec};
use shakmaty::{Chess, Move, Position};

fn moves_from(start: &Chess, text: &str) -> Vec<Move> {
    let mut p = start.clone();
    text.split_whitespace()
        .map(|m| {
            let mv = parse_move(&p, m).unwrap_or_else(|e| panic!("{m}: {e}"));
            p.play_unchecked(mv);
            mv
        })
        .collect()
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

fn run(
    start: &Chess,
    moves: &str,
    style: OpponentStyle,
    spec: SceneSpec,
    seed: u64,
) -> SimGameReport {
    let game = SimGame {
        scene: spec,
        start: start.clone(),
        moves: moves_from(start, moves),
        style,
        seed,
    };
    let report = watch_sim_game(&game, WatcherConfig::default()).unwrap();
    for (f, e) in &report.events {
        eprintln!("frame {f}: {e:?}");
    }
    report
}

fn ucis(ms: &[Move]) -> String {
    ms.iter().map(|m| uci_of(*m)).collect::<Vec<_>>().join(" ")
}

#[test]
fn a_quiet_move_and_its_reply_are_committed() {
    let start = Chess::default();
    let r = run(
        &start,
        "e4 e5",
        OpponentStyle::default(),
        scene("wooden", "overhead"),
        1,
    );
    assert_eq!(ucis(&r.committed()), "e2e4 e7e5");
    assert!(
        r.outcomes
            .iter()
            .all(|o| matches!(o, MoveOutcome::Right { .. })),
        "{:?}",
        r.outcomes
    );
    assert!(r.final_position_right);
    assert_eq!(r.unexplained(), 0);
}
