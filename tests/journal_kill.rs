//! Kill-at-random: a process appending moves to the journal is killed
//! (SIGKILL) at random moments, many of them in the middle of writing a
//! record; every restart must recover exactly the moves that were
//! acknowledged (plus, at most, the one whose acknowledgement the kill
//! swallowed), and never a damaged one.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chessbot::game::journal::{decode, replay_records};
use rand::{Rng, SeedableRng};

const MOVES: usize = 60;
const KILLS: usize = 40;

fn writer(path: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_chessbot"));
    c.args(["debug", "journal-writer", "--seed", "7", "--moves"])
        .arg(MOVES.to_string())
        .arg("--path")
        .arg(path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

/// Recovered moves (UCI) and whether a torn tail was found, read-only.
fn recovered(path: &std::path::Path) -> (Vec<String>, bool) {
    let bytes = std::fs::read(path).unwrap_or_default();
    if bytes.is_empty() {
        return (Vec::new(), false);
    }
    let d = decode(&bytes).expect("a killed writer never leaves a corrupt journal");
    if d.records.is_empty() {
        return (Vec::new(), d.torn_line.is_some());
    }
    let r = replay_records(&d.records).expect("recovered records replay legally");
    (
        r.game.moves().iter().map(|m| m.uci.clone()).collect(),
        d.torn_line.is_some(),
    )
}

#[test]
fn every_restart_recovers_exactly_the_acknowledged_moves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("game.journal");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2026);
    let mut snapshots: Vec<Vec<String>> = Vec::new();
    let mut torn = 0;
    let mut kills = 0;
    while kills < KILLS {
        let mut before = recovered(&path).0.len();
        if before == MOVES {
            // Finished: start a fresh game so that kills keep landing in writes.
            std::fs::remove_file(&path).unwrap();
            before = 0;
        }
        let mut child = writer(&path).spawn().unwrap();
        let acked = Arc::new(AtomicUsize::new(0));
        let (started_tx, started) = std::sync::mpsc::channel();
        let reader = {
            let acked = acked.clone();
            let out = child.stdout.take().unwrap();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if line.starts_with("resumed ") {
                        let _ = started_tx.send(());
                    }
                    if let Some(n) = line.strip_prefix("ack ") {
                        acked.store(n.parse().unwrap(), Ordering::SeqCst);
                    }
                }
            })
        };
        // Time the kill from the moment the writer starts writing, so that a
        // slow process start on a loaded machine does not eat the window.
        started
            .recv_timeout(Duration::from_secs(30))
            .expect("the writer did not start within 30 s");
        std::thread::sleep(Duration::from_micros(rng.random_range(0..40_000)));
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        kills += 1;

        let (moves, was_torn) = recovered(&path);
        torn += usize::from(was_torn);
        let acked = acked.load(Ordering::SeqCst);
        if acked > 0 {
            assert!(
                moves.len() == acked || moves.len() == acked + 1,
                "acknowledged {acked} moves, recovered {}",
                moves.len()
            );
        }
        assert!(
            moves.len() >= before,
            "lost moves: {before} -> {}",
            moves.len()
        );
        snapshots.push(moves);
    }
    // Let the last game run to the end undisturbed.
    let status = writer(&path).stdout(Stdio::null()).status().unwrap();
    assert!(status.success());
    let (full, _) = recovered(&path);
    assert_eq!(full.len(), MOVES);
    // Every recovery was a prefix of the one true game (same seed): no
    // move was ever damaged or invented.
    for s in &snapshots {
        assert_eq!(s[..], full[..s.len()]);
    }
    assert!(torn > 0, "no kill landed mid-record in {KILLS} tries");
    eprintln!("{KILLS} kills, {torn} torn records dropped");
}
