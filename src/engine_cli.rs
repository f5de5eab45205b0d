//! `chessbot uci`, `chessbot match` and `chessbot bench engine`: thin
//! wrappers over `chessbot::engine`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use chessbot::config::Config;

#[derive(clap::Args, Debug)]
pub struct MatchArgs {
    /// Engine A: `builtin`, `builtin:LEVEL` (0-20) or a UCI command line with
    /// `;Name=value` options, e.g. "/usr/games/stockfish;UCI_LimitStrength=true;UCI_Elo=1500".
    #[arg(long)]
    pub a: String,
    /// Engine B, written like engine A.
    #[arg(long)]
    pub b: String,
    /// Number of games (colours alternate; each opening is played both ways).
    #[arg(long, default_value_t = 20)]
    pub games: usize,
    /// Seconds per move (`0.1`) or base+increment in seconds (`10+0.1`).
    #[arg(long, default_value = "0.1")]
    pub tc: String,
    /// Write the PGN of all games here (default: print it after the result).
    #[arg(long, value_name = "FILE")]
    pub pgn: Option<PathBuf>,
}

/// `chessbot uci`: the built-in engine on stdin/stdout. Nothing else may write to stdout.
pub fn uci(config: &Config) -> anyhow::Result<ExitCode> {
    let stdin = std::io::stdin().lock();
    chessbot::engine::uci::serve(&config.engine, stdin, std::io::stdout())
        .context("UCI session failed")?;
    Ok(ExitCode::SUCCESS)
}

pub fn run_match(config: &Config, args: &MatchArgs) -> anyhow::Result<ExitCode> {
    use chessbot::engine::matches::{player_from_spec, run_match, TimeControl};
    use chessbot::engine::MonotonicClock;
    let tc = TimeControl::parse(&args.tc)?;
    // The built-in engine keeps back little time: the match runner measures
    // the move time on the same machine, with no network or robot latency.
    let overhead = std::time::Duration::from_millis(10);
    let mut a = player_from_spec(&args.a, config.engine.hash_mb, overhead, 1)?;
    let mut b = player_from_spec(&args.b, config.engine.hash_mb, overhead, 2)?;
    let bar = indicatif::ProgressBar::new(args.games as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} games {msg} [{elapsed}]")
            .context("progress bar template")?,
    );
    let (records, tally) = run_match(
        a.as_mut(),
        b.as_mut(),
        args.games,
        tc,
        &MonotonicClock::default(),
        &mut |_, t| {
            bar.inc(1);
            bar.set_message(format!("+{} ={} -{}", t.wins, t.draws, t.losses));
        },
    );
    bar.finish();
    let pgn: String = records.iter().map(|r| r.pgn("chessbot match")).collect();
    println!(
        "{} vs {}, {} games, tc {}",
        a.name(),
        b.name(),
        tally.games(),
        args.tc
    );
    println!(
        "score of A: {:.1}/{} (+{} ={} -{})",
        tally.points(),
        tally.games(),
        tally.wins,
        tally.draws,
        tally.losses
    );
    if let Some((elo, err)) = tally.elo() {
        if tally.wins + tally.draws == 0 || tally.losses + tally.draws == 0 {
            // A 0% or 100% score has no finite Elo; the clamped figure is only a bound.
            println!("Elo difference A-B: beyond {elo:+.0} (one side scored every point)");
        } else {
            println!("Elo difference A-B: {elo:+.0} +/- {err:.0} (95%)");
        }
    }
    let failures = a.failures() + b.failures();
    if failures > 0 {
        println!("engine failures recovered: {failures}");
    }
    for r in &records {
        if r.reason.contains("time") || r.reason.contains("illegal") || r.reason.contains("no move")
        {
            println!("game {}: {}", r.round, r.reason);
        }
    }
    match &args.pgn {
        Some(path) => {
            std::fs::write(path, pgn).with_context(|| format!("writing {}", path.display()))?
        }
        None => print!("\n{pgn}"),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn bench_engine(config: &Config, depth: u32) {
    use chessbot::engine::bench::run_bench;
    use chessbot::engine::MonotonicClock;
    println!(
        "{:<12} {:>5} {:>10} {:>9} {:>9}  best",
        "position", "depth", "nodes", "time ms", "knps"
    );
    let rows = run_bench(
        depth,
        config.engine.hash_mb,
        &MonotonicClock::default(),
        &mut |r| {
            println!(
                "{:<12} {:>5} {:>10} {:>9} {:>9}  {}",
                r.name,
                r.depth,
                r.nodes,
                r.time.as_millis(),
                r.nps() / 1000,
                r.best_move
            );
        },
    );
    let nodes: u64 = rows.iter().map(|r| r.nodes).sum();
    let secs: f64 = rows.iter().map(|r| r.time.as_secs_f64()).sum();
    println!(
        "total: {nodes} nodes in {:.2} s = {:.0} knps",
        secs,
        nodes as f64 / secs.max(1e-6) / 1000.0
    );
}
