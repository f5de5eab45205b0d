//! `chessbot play --sim`: a whole robot game against the simulator (the
//! work is in `chessbot::sim::robot_game`; this parses, prints and serves).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;

use chessbot::config::{Config, GameConfig};
use chessbot::sim::robot_game::{
    parse_faults, CoreHost, PlayMode, PlaySpec, SimRobotGame, VisionSpec,
};

/// Speed-up of the live view when none is given: a 10 s arm move takes 2.5 s.
const LIVE_SPEED: f64 = 4.0;

#[derive(Args, Debug)]
pub struct PlayArgs {
    /// Play against the simulator: simulated board, camera, person and servo bus.
    #[arg(long)]
    sim: bool,
    /// Plies to play (the game may end sooner).
    #[arg(long, default_value_t = 40)]
    moves: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The robot's engine level, 0 (beginner) ..= 20.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u8).range(0..=20))]
    level: u8,
    /// The simulated person's level (they choose moves with the engine too).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(0..=20))]
    person_level: u8,
    /// Speed-up over real time of the arm (0 = as fast as possible; the
    /// default is 0 headless and 4 with the web view).
    #[arg(long)]
    speed: Option<f64>,
    /// Faults to inject: servo-dead@PLY[:ID], corrupt@PLY[:ID[:N]], kill@PLY[:MS], illegal@PLY,
    /// camera-lost@PLY[:MS], engine-crash@PLY.
    #[arg(long, default_value = "")]
    faults: String,
    /// No web page: play, then print a summary.
    #[arg(long)]
    headless: bool,
    /// Record mode: two simulated people, no arm.
    #[arg(long)]
    record: bool,
    /// See the board through rendered camera frames and vision (slower)
    /// instead of the simulator's ground truth.
    #[arg(long)]
    vision: bool,
    /// Camera for --vision: overhead, angled, low or x,y,z,yaw,pitch,roll.
    #[arg(long, default_value = "overhead")]
    camera: String,
    /// Frame size for --vision.
    #[arg(long, default_value_t = 480)]
    width: u32,
    #[arg(long, default_value_t = 360)]
    height: u32,
    /// Where the journal and the finished PGN go (a game left here is resumed).
    #[arg(long, default_value = "sim-play")]
    dir: PathBuf,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Address of the web page instead of the configured one.
    #[arg(long)]
    bind: Option<std::net::SocketAddr>,
}

pub fn run(mut config: Config, args: PlayArgs) -> anyhow::Result<ExitCode> {
    if !args.sim {
        anyhow::bail!(
            "`chessbot play` needs --sim (a whole game against the simulator); on a real board run `chessbot serve --camera 0 --calibration calibration --arm` and start the game in its web page"
        );
    }
    if let Some(s) = args.speed {
        if !(s >= 0.0 && s.is_finite()) {
            anyhow::bail!("--speed {s}: must be 0 (as fast as possible) or a positive factor");
        }
    }
    let mut spec = PlaySpec::new(GameConfig {
        games_dir: args.dir.join("games"),
        journal_dir: args.dir.join("journal"),
        event: "Simulated game".to_owned(),
        site: "chessbot simulator".to_owned(),
        time_control: String::new(),
    });
    spec.mode = if args.record {
        PlayMode::Record
    } else {
        PlayMode::Play
    };
    spec.plies = args.moves;
    spec.seed = args.seed;
    spec.level = args.level;
    spec.person_level = args.person_level;
    spec.faults = parse_faults(&args.faults)?;
    if !args.headless
        && spec
            .faults
            .iter()
            .any(|f| f.kind == chessbot::sim::robot_game::FaultKind::EngineCrash)
    {
        anyhow::bail!(
            "--faults engine-crash needs --headless: in the live view the web service's own engine chooses the robot's moves"
        );
    }
    if args.vision {
        spec.vision = Some(VisionSpec {
            camera: args
                .camera
                .parse()
                .map_err(|e| anyhow::anyhow!("--camera: {e}"))?,
            width: args.width,
            height: args.height,
        });
    }
    let speed = args
        .speed
        .unwrap_or(if args.headless { 0.0 } else { LIVE_SPEED });
    spec.speed = (speed > 0.0).then_some(speed);
    let game = SimRobotGame::new(spec.clone()).context("cannot set up the simulated game")?;
    let summary = if args.headless {
        game.run()?
    } else {
        if let Some(b) = args.bind {
            config.service.bind = b;
        }
        if let Err((key, value, allowed)) = config.service.check() {
            anyhow::bail!("{key} = {value}: {allowed}");
        }
        live(config, spec, game)?
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.to_text());
    }
    Ok(if summary.paused_reason.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Plays with the web service showing the game; the page stays up until Ctrl-C.
fn live(
    config: Config,
    spec: PlaySpec,
    game: SimRobotGame,
) -> anyhow::Result<chessbot::sim::robot_game::Summary> {
    use chessbot::service::runtime::{MoveChooser, MovePlayer};
    use chessbot::service::{core::Core, http, runtime::Service, voice::Voice};
    use chessbot::sim::robot_game::{sim_arm_player, EngineChooser, ENGINE_NODES};
    let core = Core::new(spec.game.clone(), spec.mode == PlayMode::Play)?;
    let voice = Voice::start(&config.service.voice_program, config.service.voice);
    // The service's own engine chooses the robot's moves; its arm is the
    // simulated one, driven by the game loop.
    let (player, link) = sim_arm_player();
    let chooser = EngineChooser::new(spec.seed, ENGINE_NODES);
    let play = spec.mode == PlayMode::Play;
    let chooser = play.then(|| Box::new(chooser) as Box<dyn MoveChooser>);
    let player = play.then(|| Box::new(player) as Box<dyn MovePlayer>);
    let service = Service::new(
        core,
        voice,
        chooser,
        player,
        Box::new(|| chrono::Utc::now().timestamp_millis()),
    );
    service.start_clock_ticker();
    let access = http::Access {
        token: config.service.token.clone(),
        public_reads: config.service.public_reads,
    };
    let rt = tokio::runtime::Runtime::new()?;
    let listener = rt
        .block_on(tokio::net::TcpListener::bind(config.service.bind))
        .with_context(|| format!("cannot listen on {}", config.service.bind))?;
    println!(
        "watch the game at http://{}/ (Ctrl-C stops)",
        listener.local_addr()?
    );
    let router = http::router(service.clone(), access);
    let server = rt.spawn(async move {
        let _ = axum::serve(listener, router)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await;
    });
    let host: Arc<dyn CoreHost> = Arc::new(service);
    let game = match spec.mode {
        PlayMode::Play => game.hosted_by(host).with_service_arm(link),
        PlayMode::Record => game.hosted_by(host),
    };
    let summary = std::thread::spawn(move || game.run())
        .join()
        .map_err(|_| anyhow::anyhow!("the simulated game crashed"))??;
    println!("game over; the page stays up until Ctrl-C");
    print!("{}", summary.to_text());
    rt.block_on(server)?;
    Ok(summary)
}
