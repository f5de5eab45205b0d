//! The `chessbot` command: a thin layer over the library modules.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use chessbot::config::Config;
use chessbot::logging::{self, LogFormat};

#[derive(Parser, Debug)]
#[command(
    name = "chessbot",
    version,
    about = "Play chess on a real board against a robot arm"
)]
struct Cli {
    /// Configuration file, read on top of the shipped defaults.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Log as JSON lines instead of readable text.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Check the configuration and print it.
    Config,
    /// Run the built-in engine as a UCI engine on stdin/stdout.
    Uci,
    /// Play engines against each other: score, Elo difference, PGN.
    Match(MatchArgs),
    /// Measure performance.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(clap::Args, Debug)]
struct MatchArgs {
    /// Engine A: `builtin`, `builtin:LEVEL` (0-20) or a UCI command line with
    /// `;Name=value` options, e.g. "/usr/games/stockfish;UCI_LimitStrength=true;UCI_Elo=1500".
    #[arg(long)]
    a: String,
    /// Engine B, written like engine A.
    #[arg(long)]
    b: String,
    /// Number of games (colours alternate; each opening is played both ways).
    #[arg(long, default_value_t = 20)]
    games: usize,
    /// Seconds per move (`0.1`) or base+increment in seconds (`10+0.1`).
    #[arg(long, default_value = "0.1")]
    tc: String,
    /// Write the PGN of all games here (default: print it after the result).
    #[arg(long, value_name = "FILE")]
    pgn: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Built-in engine: nodes per second and time to depth on fixed positions.
    Engine {
        /// Depth searched in every position.
        #[arg(long, default_value_t = 12)]
        depth: u32,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn load_config(path: Option<&PathBuf>) -> anyhow::Result<Config> {
    Ok(match path {
        Some(p) => Config::load(p)?,
        None => Config::shipped().context("the built-in default configuration is broken")?,
    })
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let config = load_config(cli.config.as_ref())?;
    let format = if cli.log_json {
        LogFormat::Json
    } else {
        config.log.format
    };
    if matches!(cli.command, Command::Uci) {
        // UCI owns stdout; logs would corrupt the protocol, so none are set up.
        let stdin = std::io::stdin().lock();
        chessbot::engine::uci::serve(&config.engine, stdin, std::io::stdout())
            .context("UCI session failed")?;
        return Ok(ExitCode::SUCCESS);
    }
    logging::init(format, &config.log.filter);
    match cli.command {
        Command::Config => {
            println!("{config:#?}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Uci => Ok(ExitCode::SUCCESS),
        Command::Match(args) => run_match(&config, &args),
        Command::Bench {
            what: BenchCommand::Engine { depth },
        } => {
            bench_engine(&config, depth);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_match(config: &Config, args: &MatchArgs) -> anyhow::Result<ExitCode> {
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

fn bench_engine(config: &Config, depth: u32) {
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
