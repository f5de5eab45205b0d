//! The `chessbot` command: a thin layer over the library modules.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

mod arm_cli;

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
    /// The robot arm: reach audit, move plans, running moves, benchmarks.
    #[command(subcommand)]
    Arm(arm_cli::ArmCommand),
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
    logging::init(format, &config.log.filter);
    match cli.command {
        Command::Config => {
            println!("{config:#?}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Arm(cmd) => arm_cli::run(&config, cmd),
    }
}
