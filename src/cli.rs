//! The bodies of the subcommands: read arguments, call the library, print.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use rand::{Rng, SeedableRng};

use chessbot::game::journal::{self, JournalRecord, Storage};
use chessbot::game::pgn::read_games;
use chessbot::game::replay::replay;
use chessbot::game::Game;

/// Exit status of `pgn replay` when a move is illegal or unreadable.
const EXIT_BAD_MOVE: u8 = 2;

pub fn pgn_replay(file: &Path) -> anyhow::Result<ExitCode> {
    let games = if file.as_os_str() == "-" {
        read_games(io::stdin().lock())
    } else {
        let f =
            std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        read_games(io::BufReader::new(f))
    };
    let games = match games {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {}: {e}", file.display());
            return Ok(ExitCode::from(EXIT_BAD_MOVE));
        }
    };
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    for (index, pgn) in games.iter().enumerate() {
        match replay(index, pgn) {
            Ok((_, summary)) => {
                for note in &summary.notes {
                    eprintln!("note: {}: {note}", file.display());
                }
                serde_json::to_writer(&mut out, &summary)?;
                out.write_all(b"\n")?;
            }
            Err(e) => {
                out.flush()?;
                eprintln!("error: {}: {e}", file.display());
                return Ok(ExitCode::from(EXIT_BAD_MOVE));
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Appends each record in pieces, pausing between them, so that a kill
/// from the torture test can land in the middle of a record.
struct SlowStorage {
    inner: journal::FileStorage,
    pause: Duration,
}

impl Storage for SlowStorage {
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        for piece in bytes.chunks(7) {
            self.inner.write_raw(piece)?;
            std::thread::sleep(self.pause);
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
    }
}

/// The seeded random game the journal writer plays (the test replays the
/// same one to know what the journal must contain).
pub fn seeded_game_moves(seed: u64, count: usize) -> Vec<String> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut game = Game::default();
    let mut out = Vec::new();
    while out.len() < count {
        let moves = game.legal_moves();
        if moves.is_empty() {
            break;
        }
        let mv = moves[rng.random_range(0..moves.len())];
        out.push(game.play(mv, None, None).expect("legal").uci.clone());
    }
    out
}

pub fn journal_writer(
    path: &Path,
    seed: u64,
    count: usize,
    pause_us: u64,
) -> anyhow::Result<ExitCode> {
    let moves = seeded_game_moves(seed, count);
    let (file_journal, mut game) = if path.exists() {
        let r = journal::resume(path)?;
        (r.journal, r.replayed.game)
    } else {
        let start = JournalRecord::Start {
            fen: chessbot::game::fen_of(&shakmaty::Chess::default()),
            white: "writer".into(),
            black: "writer".into(),
            started_ms: 0,
            setup: None,
        };
        (journal::create(path, &start)?, Game::default())
    };
    let records = file_journal.len();
    let mut journal = journal::Journal::new(
        SlowStorage {
            inner: file_journal.into_storage(),
            pause: Duration::from_micros(pause_us),
        },
        records,
    );
    let stdout = io::stdout();
    let mut out = stdout.lock();
    writeln!(out, "resumed {}", game.moves().len())?;
    out.flush()?;
    for uci in moves.iter().skip(game.moves().len()) {
        game.play_uci(uci)?;
        journal.append(&JournalRecord::Move {
            uci: uci.clone(),
            at_ms: None,
            used_ms: None,
            clock_ms: None,
        })?;
        writeln!(out, "ack {}", game.moves().len())?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Which arm `serve` drives.
pub enum ServeArm {
    None,
    /// The [arm] serial port.
    Real,
    /// The simulated bus, this many times faster than real time.
    Sim(f64),
}

impl ServeArm {
    pub fn from_flags(arm: bool, sim_arm: Option<f64>) -> anyhow::Result<ServeArm> {
        Ok(match (arm, sim_arm) {
            (_, Some(s)) if !(s > 0.0 && s.is_finite()) => {
                anyhow::bail!("--sim-arm {s}: the speed-up must be a positive number")
            }
            (_, Some(s)) => ServeArm::Sim(s),
            (true, None) => ServeArm::Real,
            (false, None) => ServeArm::None,
        })
    }

    /// The service's move player for this arm, connected.
    fn player(
        &self,
        config: &chessbot::config::Config,
    ) -> anyhow::Result<Option<Box<dyn chessbot::service::runtime::MovePlayer>>> {
        use chessbot::arm::bus::{open_serial, FeetechBus};
        use chessbot::arm::clock::{Clock, ManualClock, PacedClock, SystemClock};
        use chessbot::arm::setup::ArmSetup;
        use chessbot::service::arm_player::ArmPlayer;
        use chessbot::sim::bus::{SimBus, SimPort};
        use std::sync::Arc;
        let speed = match *self {
            ServeArm::None => return Ok(None),
            ServeArm::Real => None,
            ServeArm::Sim(speed) => Some(speed),
        };
        let setup = ArmSetup::load(&config.arm).context("cannot set up the arm")?;
        let timing = config.arm.bus_timing();
        Ok(Some(match speed {
            None => {
                let serial = open_serial(&config.arm.port, config.arm.baud)?;
                tracing::info!("arm: SO-101 on {}", config.arm.port);
                Box::new(ArmPlayer::new(
                    setup,
                    FeetechBus::new(serial, timing),
                    Arc::new(SystemClock::new()),
                ))
            }
            Some(speed) => {
                let clock: Arc<dyn Clock> =
                    Arc::new(PacedClock::new(Arc::new(ManualClock::new()), speed));
                let servos = setup.model.servo_ids().len() as u8;
                let (sim, pty) = SimPort::spawn(SimBus::with_servos(servos, clock.clone()))
                    .context("cannot open a pseudo-terminal for the simulated servo bus")?;
                tracing::info!("arm: simulated SO-101 on a pseudo-terminal, {speed}x real time");
                Box::new(
                    ArmPlayer::new(setup, FeetechBus::new(pty, timing), clock)
                        .keeping(Box::new(sim)),
                )
            }
        }))
    }
}

pub fn serve(
    mut config: chessbot::config::Config,
    bind: Option<std::net::SocketAddr>,
    source: crate::recog_cli::FrameSourceArgs,
    arm: ServeArm,
) -> anyhow::Result<ExitCode> {
    use chessbot::service::camera_task::{spawn_camera, CameraTaskOptions};
    use chessbot::service::camera_watch::CameraWatch;
    use chessbot::service::{core::Core, http, runtime::Service, voice::Voice};
    if let Some(b) = bind {
        config.service.bind = b;
        if let Err((key, value, allowed)) = config.service.check() {
            anyhow::bail!("--bind: {key} = {value}: {allowed}");
        }
    }
    let player = arm.player(&config)?;
    let core = Core::new(config.game.clone(), player.is_some())?;
    let voice = Voice::start(&config.service.voice_program, config.service.voice);
    let chooser = chessbot::service::engine_chooser::EngineChooser::from_config(
        &config.engine,
        chessbot::service::engine_chooser::ROBOT_MOVE_TIME,
    )
    .context("cannot start the engine named in [engine]")?;
    tracing::info!("engine: {}", chooser.name());
    let service = Service::new(
        core,
        voice,
        Some(Box::new(chooser)),
        player,
        Box::new(now_ms),
    );
    service.start_clock_ticker();
    if source.given() {
        let watch = CameraWatch::new(source.watcher_config(&config)?);
        // Open once here so a wrong path or device fails at start with its
        // message; the camera loop opens it again on its own thread and
        // retries later failures.
        tracing::info!("camera: {}", source.open(&config)?.describe());
        let cfg = config.clone();
        let src = source.clone();
        let open: chessbot::service::camera_task::OpenSource = Box::new(move || {
            src.open(&cfg)
                .map_err(|e| chessbot::camera::CameraError::Open(crate::error_text(&e)))
        });
        spawn_camera(
            service.clone(),
            open,
            watch,
            CameraTaskOptions {
                calibration_dir: Some(
                    source
                        .calibration
                        .clone()
                        .unwrap_or_else(|| config.vision.calibration_dir.clone()),
                ),
                recorded: source.recorded(),
                retry_delay: std::time::Duration::from_millis(config.camera.stall_timeout_ms),
            },
        );
    }
    let access = http::Access {
        token: config.service.token.clone(),
        public_reads: config.service.public_reads,
    };
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.service.bind)
            .await
            .with_context(|| format!("cannot listen on {}", config.service.bind))?;
        tracing::info!("web interface at http://{}/", listener.local_addr()?);
        axum::serve(listener, http::router(service, access))
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
