//! The `chessbot` command: a thin layer over the library modules.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use chessbot::config::Config;
use chessbot::logging::{self, LogFormat};

mod arm_cli;
mod cli;
mod engine_cli;
mod play_cli;
mod recog_cli;
mod sim_cli;
mod vision_cli;

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
    /// Work with PGN files.
    #[command(subcommand)]
    Pgn(PgnCommand),
    /// Run the robot service: web interface, game loop, voice.
    Serve {
        /// Address to bind instead of the configured one.
        #[arg(long)]
        bind: Option<std::net::SocketAddr>,
        /// A camera (or a recorded video or image folder) watching the
        /// board: moves made on the board are read from it. Without one,
        /// moves are entered on the page.
        #[command(flatten)]
        source: recog_cli::FrameSourceArgs,
        /// Drive the arm on the [arm] serial port: it moves the robot's
        /// pieces, and the person's in assist mode.
        #[arg(long, conflicts_with = "sim_arm")]
        arm: bool,
        /// Drive a simulated arm instead: the real driver over the
        /// simulated servo bus on a pseudo-terminal, SPEED times faster
        /// than real time.
        #[arg(long, value_name = "SPEED", num_args = 0..=1, default_missing_value = "4")]
        sim_arm: Option<f64>,
    },
    /// Play a whole robot game: `play --sim` against the simulator (`--headless` for a summary).
    Play(play_cli::PlayArgs),
    /// The robot arm: reach audit, move plans, running moves, calibration, benchmarks.
    #[command(subcommand)]
    Arm(arm_cli::ArmCommand),
    /// The simulated board and camera: render frames and scripted games.
    #[command(subcommand)]
    Sim(sim_cli::SimCommand),
    /// Camera vision: read a board from a photo, evaluate on labelled photos.
    #[command(subcommand)]
    Vision(vision_cli::VisionCmd),
    /// Calibrate the camera, the board pose in the image, the servos or the board-to-arm placement.
    #[command(subcommand)]
    Calibrate(CalibrateCommand),
    /// Watch a game between two people (video, frames or camera) and write its PGN.
    Record(recog_cli::RecordArgs),
    /// Which legal move a photo shows, from a known position.
    Recognize(recog_cli::RecognizeArgs),
    /// Run the built-in engine as a UCI engine on stdin/stdout.
    Uci,
    /// Play engines against each other: score, Elo difference, PGN.
    Match(engine_cli::MatchArgs),
    /// Measure performance.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Developer tools used by the test suite.
    #[command(subcommand, hide = true)]
    Debug(DebugCommand),
}

#[derive(Subcommand, Debug)]
enum PgnCommand {
    /// Replay every game with full rule validation; one JSON line per game.
    /// Exits with status 2 on an illegal or unreadable move.
    Replay {
        /// The PGN file (`-` for standard input).
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum CalibrateCommand {
    #[command(flatten)]
    Vision(vision_cli::CalibrateCmd),
    /// Servo calibration (LeRobot's homing and range procedure), same as `arm calibrate-servos`.
    Servos {
        #[arg(long)]
        port: Option<String>,
    },
    /// Board-to-arm placement by touching squares, same as `arm calibrate`.
    Arm {
        #[arg(long)]
        port: Option<String>,
        /// Squares to touch (at least 3, not on one line).
        #[arg(long, value_delimiter = ',', default_value = "a1,h1,h8,a8")]
        squares: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
enum BenchCommand {
    /// Built-in engine: nodes per second and time to depth on fixed positions.
    Engine {
        /// Depth searched in every position.
        #[arg(long, default_value_t = 12)]
        depth: u32,
    },
    /// Vision: full board localization and a tracked 64-square read at 1280x720.
    Vision {
        /// A photo of a board (scaled to 1280x720); default: a simulated webcam frame.
        #[arg(long, value_name = "FILE")]
        image: Option<PathBuf>,
        /// Timed runs of each.
        #[arg(long, default_value_t = 30)]
        runs: usize,
    },
    /// Move recognition on long simulated games (use a release build).
    Recognition {
        #[arg(long, default_value_t = 9)]
        games: usize,
        /// Index of the first game (games cycle boards wooden/vinyl/printed,
        /// then cameras overhead/angled/low every three games: --from 3
        /// starts with the angled views).
        #[arg(long, default_value_t = 0)]
        from: usize,
        /// List every event of every game (moves, resyncs, unexplained boards with their squares).
        #[arg(long)]
        verbose: bool,
        /// Moves per game.
        #[arg(long, default_value_t = 40)]
        moves: usize,
        /// Watch only the first K moves of each game, the game being drawn
        /// and scripted as for --moves, so that those K moves are played
        /// frame for frame as in the whole game (to trace a failure late in
        /// a long game quickly).
        #[arg(long, value_name = "K")]
        play_only: Option<usize>,
        /// The scripted person answers the watcher's reports of a board it
        /// cannot explain by confirming the position a few seconds later,
        /// as the web interface lets a person do (without it a lost track
        /// stays lost and every later move counts as missed).
        #[arg(long)]
        answers: bool,
        /// Write each frame on which the watcher reports a board it cannot
        /// explain, a robot move the board does not show or a lost track
        /// recovered (resynced), with the squares it read drawn over it
        /// (`game{G}_frame{N}.png`) and as the camera saw it
        /// (`game{G}_frame{N}_raw.png`), into this folder, to trace a
        /// stall or a wrong resync.
        #[arg(long, value_name = "DIR")]
        dump_unexplained: Option<std::path::PathBuf>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 640)]
        width: u32,
        #[arg(long, default_value_t = 480)]
        height: u32,
    },
    /// Simulator: milliseconds per rendered frame (use a release build).
    Render {
        #[arg(long, default_value_t = 1280)]
        width: u32,
        #[arg(long, default_value_t = 720)]
        height: u32,
        /// Frames per configuration.
        #[arg(long, default_value_t = 10)]
        frames: u32,
    },
}

#[derive(Subcommand, Debug)]
enum DebugCommand {
    /// Appends the moves of a seeded random game to a journal, resuming it
    /// if it exists, printing `ack N` once move N is durable. Writes each
    /// record in small pieces so that a kill can land mid-record.
    JournalWriter {
        #[arg(long)]
        path: PathBuf,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 60)]
        moves: usize,
        /// Microseconds to pause between the pieces of a record.
        #[arg(long, default_value_t = 200)]
        pause_us: u64,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", error_text(&err));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by ": ", like anyhow's `{:#}`, but
/// without a cause its wrapper's message already quotes (our errors print
/// `"game: {0}"` and also name `{0}` as their source), so nothing is said
/// twice.
pub(crate) fn error_text(err: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in err.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
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
        return engine_cli::uci(&config);
    }
    logging::init(format, &config.log.filter);
    match cli.command {
        Command::Config => {
            println!("{config:#?}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Pgn(PgnCommand::Replay { file }) => cli::pgn_replay(&file),
        Command::Serve {
            bind,
            source,
            arm,
            sim_arm,
        } => cli::serve(
            config,
            bind,
            source,
            cli::ServeArm::from_flags(arm, sim_arm)?,
        ),
        Command::Play(args) => play_cli::run(config, args),
        Command::Arm(cmd) => arm_cli::run(&config, cmd),
        Command::Sim(cmd) => sim_cli::run(cmd),
        Command::Bench(BenchCommand::Recognition {
            games,
            from,
            verbose,
            moves,
            play_only,
            answers,
            dump_unexplained,
            seed,
            width,
            height,
        }) => recog_cli::bench_recognition(
            from..from + games,
            (moves, play_only),
            (verbose, answers),
            dump_unexplained.as_deref(),
            seed,
            width,
            height,
        ),
        Command::Bench(BenchCommand::Render {
            width,
            height,
            frames,
        }) => sim_cli::bench_render(width, height, frames),
        Command::Vision(cmd) => vision_cli::run_vision(cmd),
        Command::Calibrate(CalibrateCommand::Vision(cmd)) => vision_cli::run_calibrate(cmd),
        Command::Calibrate(CalibrateCommand::Servos { port }) => {
            arm_cli::run(&config, arm_cli::ArmCommand::CalibrateServos { port })
        }
        Command::Calibrate(CalibrateCommand::Arm { port, squares }) => {
            arm_cli::run(&config, arm_cli::ArmCommand::Calibrate { port, squares })
        }
        Command::Bench(BenchCommand::Vision { image, runs }) => {
            vision_cli::bench_vision(image.as_deref(), runs)
        }
        Command::Record(args) => recog_cli::record(&config, &args),
        Command::Recognize(args) => recog_cli::recognize(&args),
        Command::Uci => engine_cli::uci(&config),
        Command::Match(args) => engine_cli::run_match(&config, &args),
        Command::Bench(BenchCommand::Engine { depth }) => {
            engine_cli::bench_engine(&config, depth);
            Ok(ExitCode::SUCCESS)
        }
        Command::Debug(DebugCommand::JournalWriter {
            path,
            seed,
            moves,
            pause_us,
        }) => cli::journal_writer(&path, seed, moves, pause_us),
    }
}
