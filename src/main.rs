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
    /// Camera vision: read a board from a photo, evaluate on labelled photos.
    Vision {
        #[command(subcommand)]
        cmd: VisionCmd,
    },
}

#[derive(Subcommand, Debug)]
enum VisionCmd {
    /// Find the board in a photo and read every square (JSON on stdout).
    Read {
        /// The photo (any format OpenCV reads).
        #[arg(long, value_name = "FILE")]
        image: PathBuf,
        /// Calibration directory (board pose from `chessbot calibrate board`).
        #[arg(long, value_name = "DIR")]
        calibration: Option<PathBuf>,
        /// A labelled photo of the same board that teaches the classifier.
        #[arg(long, value_name = "IMAGE", requires = "reference_fen")]
        reference: Option<PathBuf>,
        /// Piece placement (FEN board part) of the reference photo.
        #[arg(long, value_name = "FEN", requires = "reference")]
        reference_fen: Option<String>,
        /// Where White sits in the image: bottom, top, left or right.
        #[arg(long, value_name = "SIDE")]
        white_at: Option<String>,
        /// Print JSON (the default; kept for scripts that pass it).
        #[arg(long)]
        json: bool,
        /// Write an overlay PNG showing the grid, square names and states.
        #[arg(long, value_name = "OUT.png")]
        overlay: Option<PathBuf>,
    },
    /// Evaluate localization and square reading on the labelled real photos.
    Eval {
        /// Root of the real data (contains webcam_wooden_boards/, green_vinyl_game/).
        #[arg(long, default_value = "../shared/data/real")]
        data: PathBuf,
        /// Also write every cell's features with its label to this CSV file.
        #[arg(long, value_name = "FILE")]
        dump_features: Option<PathBuf>,
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
    logging::init(format, &config.log.filter);
    match cli.command {
        Command::Config => {
            println!("{config:#?}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Vision { cmd } => run_vision(cmd),
    }
}

fn run_vision(cmd: VisionCmd) -> anyhow::Result<ExitCode> {
    use chessbot::vision::{eval, io, occupancy_from_fen, overlay, pipeline, Side};
    match cmd {
        VisionCmd::Read {
            image,
            calibration,
            reference,
            reference_fen,
            white_at,
            json: _,
            overlay: overlay_path,
        } => {
            let side: Option<Side> = white_at
                .as_deref()
                .map(|s| {
                    s.parse::<Side>()
                        .map_err(|e| anyhow::anyhow!("--white-at {e}"))
                })
                .transpose()?;
            let img = io::load_image(&image)?;
            let mut opts = pipeline::ReadOptions {
                white_at: side,
                ..Default::default()
            };
            if let Some(dir) = &calibration {
                let pose = chessbot::vision::calibrate::load_board_pose(dir)?;
                opts.white_at = opts.white_at.or(Some(pose.white_at));
                opts.tracked = Some(pose.location()?);
            }
            if let (Some(rp), Some(fen)) = (&reference, &reference_fen) {
                let reference = pipeline::Reference {
                    image: io::load_image(rp)?,
                    occupancy: occupancy_from_fen(fen).context("--reference-fen")?,
                    white_at: opts.white_at,
                };
                opts.model = Some(
                    pipeline::model_from_reference(&reference)
                        .with_context(|| format!("reference photo {}", rp.display()))?,
                );
            }
            let fr = pipeline::read_frame(&img, &opts)
                .with_context(|| format!("{}", image.display()))?;
            println!("{}", serde_json::to_string_pretty(&pipeline::to_json(&fr))?);
            if let Some(out) = overlay_path {
                let drawn = overlay::draw(
                    &img,
                    &fr.location,
                    Some(&fr.reading),
                    fr.orientation.white_at,
                    640,
                )?;
                io::save_image(&drawn, &out)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        VisionCmd::Eval {
            data,
            dump_features,
        } => {
            let sets = eval::load_real_sets(&data)
                .with_context(|| format!("reading labelled photos under {}", data.display()))?;
            if let Some(out) = dump_features {
                let mut rows = vec!["set,photo,cell,light,frac,mean_dev,piece_luma,local,frac_local,luma_local,truth".to_owned()];
                for set in &sets {
                    rows.extend(eval::feature_rows(set));
                }
                std::fs::write(&out, rows.join("\n") + "\n")
                    .with_context(|| format!("writing {}", out.display()))?;
            }
            let mut results = Vec::new();
            for set in sets {
                let name = set.first().map(|s| s.set.clone()).unwrap_or_default();
                results.push((name, eval::evaluate_set(&set)));
            }
            println!("{}", eval::report(&results));
            Ok(ExitCode::SUCCESS)
        }
    }
}
