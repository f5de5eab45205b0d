//! `chessbot sim ...` and `chessbot bench render`: thin wrappers over `chessbot::sim`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Render one frame of a position and its ground truth.
    Render(SimRenderArgs),
    /// Render a scripted person playing a game: numbered frames + truth.jsonl.
    Game(SimGameArgs),
}

#[derive(clap::Args, Debug)]
pub struct SimGameArgs {
    /// The moves (`1. e4 e5 2. Nf3`, SAN or UCI), or a file holding them.
    #[arg(long, conflicts_with = "random")]
    pub moves: Option<String>,
    /// Play this many random legal moves instead.
    #[arg(long)]
    pub random: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// overhead, angled, low, or x,y,z,yaw,pitch,roll.
    #[arg(long, default_value = "overhead", allow_hyphen_values = true)]
    pub camera: String,
    /// wooden, vinyl or printed.
    #[arg(long, default_value = "wooden")]
    pub board: String,
    #[arg(long, default_value_t = 640)]
    pub width: u32,
    #[arg(long, default_value_t = 480)]
    pub height: u32,
    #[arg(long, default_value_t = 30.0)]
    pub fps: f64,
    /// Before these plies (1 = the first move) the person first makes an illegal move and takes it back.
    #[arg(long, value_delimiter = ',')]
    pub illegal: Vec<usize>,
    /// Write PNG frames instead of JPEG.
    #[arg(long)]
    pub png: bool,
    /// Output folder.
    #[arg(long)]
    pub out: PathBuf,
}

#[derive(clap::Args, Debug)]
pub struct SimRenderArgs {
    /// The position (a full FEN or just its piece-placement part).
    #[arg(long, default_value = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR")]
    pub fen: String,
    /// Seed of every random choice (same seed, same bytes).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// overhead, angled, low, or x,y,z,yaw,pitch,roll (mm and degrees, board frame).
    #[arg(long, default_value = "angled", allow_hyphen_values = true)]
    pub camera: String,
    /// wooden, vinyl or printed.
    #[arg(long, default_value = "wooden")]
    pub board: String,
    #[arg(long, default_value_t = 1280)]
    pub width: u32,
    #[arg(long, default_value_t = 720)]
    pub height: u32,
    /// A clean picture (centred pieces, no noise/JPEG) instead of a webcam-like one.
    #[arg(long)]
    pub clean: bool,
    /// Put a hand reaching for this square into the picture (e.g. e4).
    #[arg(long, value_name = "SQUARE")]
    pub hand: Option<String>,
    /// Put the robot arm's silhouette over this square (gripper 60 mm above it).
    #[arg(long, value_name = "SQUARE")]
    pub arm: Option<String>,
    /// Where to write the PNG.
    #[arg(long)]
    pub out: PathBuf,
    /// Where to write the ground truth JSON.
    #[arg(long)]
    pub truth: Option<PathBuf>,
}

/// Runs one `chessbot sim` subcommand.
pub fn run(cmd: SimCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SimCommand::Render(args) => sim_render(&args),
        SimCommand::Game(args) => sim_game(&args),
    }
}

/// `chessbot bench render`: milliseconds per rendered frame.
pub fn bench_render(width: u32, height: u32, frames: u32) -> anyhow::Result<ExitCode> {
    let report = chessbot::sim::bench::bench_render(width, height, frames)?;
    print!("{report}");
    Ok(ExitCode::SUCCESS)
}

fn sim_game(args: &SimGameArgs) -> anyhow::Result<ExitCode> {
    use chessbot::sim::opponent::{parse_moves, random_moves, OpponentStyle, ScriptedGame};
    use chessbot::sim::record::{record_game, FrameFormat};
    use chessbot::sim::{Realism, Renderer, SceneSpec};
    use rand::SeedableRng;
    use shakmaty::Position;

    let start = shakmaty::Chess::default();
    let moves = match (&args.moves, args.random) {
        (Some(text), _) => {
            let path = std::path::Path::new(text);
            let text = if path.is_file() {
                std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?
            } else {
                text.clone()
            };
            parse_moves(&start, &text)?
        }
        (None, Some(n)) => {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(args.seed);
            random_moves(&start, n, &mut rng)
        }
        (None, None) => anyhow::bail!("give the moves with --moves or ask for --random N"),
    };
    let spec = SceneSpec {
        board: args.board.parse()?,
        set: None,
        camera: args.camera.parse()?,
        width: args.width,
        height: args.height,
        realism: Realism::Webcam,
    };
    let scene = spec.build(start.board(), args.seed)?;
    let style = OpponentStyle {
        fps: args.fps,
        illegal_before: args.illegal.iter().map(|p| p.saturating_sub(1)).collect(),
        ..OpponentStyle::default()
    };
    let game = ScriptedGame::new(scene.world, start, &moves, style, args.seed)?;
    let total = game.frame_count();
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(indicatif::ProgressStyle::with_template(
        "{bar:40} {pos}/{len} frames ({per_sec}, eta {eta})",
    )?);
    let mut renderer = Renderer::new(scene.camera);
    let format = if args.png {
        FrameFormat::Png
    } else {
        FrameFormat::Jpeg(GAME_JPEG_QUALITY)
    };
    let n = record_game(
        game,
        &mut renderer,
        &scene.options,
        format,
        args.fps,
        &args.out,
        |_| bar.inc(1),
    )?;
    bar.finish();
    println!(
        "wrote {n} frames of {} moves to {}",
        moves.len(),
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Gripper height above the board for `sim render --arm` (hovering over a piece).
const ARM_RENDER_HEIGHT_MM: f64 = 60.0;

/// JPEG quality of game frames (a webcam stream's typical quality).
const GAME_JPEG_QUALITY: u8 = 85;

fn sim_render(args: &SimRenderArgs) -> anyhow::Result<ExitCode> {
    use chessbot::sim::{scene, Realism, SceneSpec};
    let placement = args.fen.split_whitespace().next().unwrap_or("");
    let board: shakmaty::Board = placement
        .parse()
        .with_context(|| format!("--fen `{}` is not a FEN", args.fen))?;
    let spec = SceneSpec {
        board: args.board.parse()?,
        set: None,
        camera: args.camera.parse()?,
        width: args.width,
        height: args.height,
        realism: if args.clean {
            Realism::Clean
        } else {
            Realism::Webcam
        },
    };
    let mut scene = spec.build(&board, args.seed)?;
    if let Some(sq) = &args.hand {
        let sq: shakmaty::Square = sq
            .parse()
            .with_context(|| format!("--hand `{sq}` is not a square like e4"))?;
        scene::add_hand_over(&mut scene.world, sq, args.seed);
    }
    if let Some(sq) = &args.arm {
        let sq: shakmaty::Square = sq
            .parse()
            .with_context(|| format!("--arm `{sq}` is not a square like e4"))?;
        scene::add_arm_over(&mut scene.world, sq, ARM_RENDER_HEIGHT_MM);
    }
    let frame = chessbot::sim::render(&scene.world, &scene.camera, &scene.options)?;
    std::fs::write(&args.out, frame.image.encode_png()?)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    if let Some(path) = &args.truth {
        let json = serde_json::to_string_pretty(&frame.truth)?;
        std::fs::write(path, json).with_context(|| format!("cannot write {}", path.display()))?;
    }
    println!(
        "wrote {} ({}x{}, camera at {:.0},{:.0},{:.0} mm)",
        args.out.display(),
        frame.image.width,
        frame.image.height,
        frame.truth.camera.position[0],
        frame.truth.camera.position[1],
        frame.truth.camera.position[2]
    );
    Ok(ExitCode::SUCCESS)
}
