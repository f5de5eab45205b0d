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
    }
}
