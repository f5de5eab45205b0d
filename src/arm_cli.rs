//! `chessbot arm ...`: the arm's subcommands (argument parsing, prompts, printing;
//! the work is in `chessbot::arm`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Subcommand;

use chessbot::arm::audit;
use chessbot::arm::bench as arm_bench;
use chessbot::arm::bus::{open_serial, BusPort, FeetechBus};
use chessbot::arm::calibrate;
use chessbot::arm::calibration::Calibration;
use chessbot::arm::clock::{Clock, SystemClock};
use chessbot::arm::config::StopMode;
use chessbot::arm::plan::{Planner, SlotState};
use chessbot::arm::run::Executor;
use chessbot::arm::setup::ArmSetup;
use chessbot::config::Config;
use chessbot::sim::bus::{SimBus, SimPort};

#[derive(Subcommand, Debug)]
pub enum ArmCommand {
    /// Can the arm reach every square, graveyard and reserve slot? Non-zero exit if not.
    Audit {
        /// Print the full report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print the arm's plan for a move: steps, tool positions, joints, servo steps, durations.
    Plan {
        /// Position before the move.
        #[arg(long)]
        fen: String,
        /// The move (UCI such as e7e8q, or SAN).
        #[arg(long = "move", value_name = "MOVE")]
        mv: String,
        /// Graveyard slots already taken.
        #[arg(long, default_value_t = 0)]
        graveyard_used: usize,
        #[arg(long)]
        json: bool,
    },
    /// Execute a move on the servo bus (a real port, or --sim for the simulated bus).
    Run {
        /// Serial port (default: [arm] port from the config).
        #[arg(long, conflicts_with = "sim")]
        port: Option<String>,
        /// Run against the simulated servo bus on a pseudo-terminal, in real time.
        #[arg(long)]
        sim: bool,
        #[arg(long)]
        fen: String,
        #[arg(long = "move", value_name = "MOVE")]
        mv: String,
        #[arg(long, default_value_t = 0)]
        graveyard_used: usize,
    },
    /// Board-to-arm calibration: with torque off, put the tool on square centres when asked.
    Calibrate {
        #[arg(long)]
        port: Option<String>,
        /// Squares to touch (at least 3, not on one line).
        #[arg(long, value_delimiter = ',', default_value = "a1,h1,h8,a8")]
        squares: Vec<String>,
    },
    /// Servo calibration (LeRobot's procedure and JSON format), written to [arm] calibration.
    CalibrateServos {
        #[arg(long)]
        port: Option<String>,
    },
    /// Stop the arm: every servo holds where it is (or lets go with --release).
    Stop {
        #[arg(long)]
        port: Option<String>,
        /// Switch torque off instead of holding (the arm sags: support it).
        #[arg(long)]
        release: bool,
    },
    /// Read every servo: position, load, voltage, temperature; joint angles and tool point.
    State {
        #[arg(long)]
        port: Option<String>,
    },
    /// Import a LeRobot calibration JSON (checked against the arm model) into [arm] calibration.
    ImportCalibration {
        /// LeRobot's file, e.g. ~/.cache/huggingface/lerobot/calibration/robots/so101_follower/ID.json
        file: PathBuf,
    },
    /// Serve a simulated SO-101 servo bus on a pseudo-terminal until Ctrl-C (for --port).
    SimBus,
    /// Measure IK time per solve and the estimated arm time per kind of move.
    Bench {
        /// Number of IK solves to time.
        #[arg(long, default_value_t = 200_000)]
        solves: usize,
        #[arg(long)]
        json: bool,
    },
}

/// Runs one `chessbot arm ...` subcommand.
pub fn run(config: &Config, cmd: ArmCommand) -> anyhow::Result<ExitCode> {
    let setup = ArmSetup::load(&config.arm).context("cannot set up the arm")?;
    for note in &setup.notes {
        tracing::warn!("{note}");
    }
    match cmd {
        ArmCommand::Audit { json } => {
            let report = audit::audit(&setup);
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.to_text());
            }
            Ok(if report.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        ArmCommand::Plan {
            fen,
            mv,
            graveyard_used,
            json,
        } => {
            let mut slots = SlotState {
                graveyard_used,
                ..SlotState::default()
            };
            let plan = Planner::new(&setup).plan_text(&fen, &mv, None, &mut slots)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print!("{}", plan.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
        ArmCommand::Run {
            port,
            sim,
            fen,
            mv,
            graveyard_used,
        } => {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
            let timing = config.arm.bus_timing();
            let mut slots = SlotState {
                graveyard_used,
                ..SlotState::default()
            };
            if sim {
                let (_sim, pty) = SimPort::spawn(SimBus::with_servos(6, clock.clone()))
                    .context("cannot open a pseudo-terminal for the simulated bus")?;
                run_move(
                    FeetechBus::new(pty, timing),
                    &setup,
                    clock,
                    &fen,
                    &mv,
                    &mut slots,
                )
            } else {
                let path = port.unwrap_or_else(|| config.arm.port.clone());
                let serial = open_serial(&path, config.arm.baud)?;
                run_move(
                    FeetechBus::new(serial, timing),
                    &setup,
                    clock,
                    &fen,
                    &mv,
                    &mut slots,
                )
            }
        }
        ArmCommand::Calibrate { port, squares } => {
            let squares = squares
                .iter()
                .map(|s| {
                    s.trim()
                        .parse::<shakmaty::Square>()
                        .map_err(|_| anyhow::anyhow!("{s:?} is not a square such as a1"))
                })
                .collect::<anyhow::Result<Vec<_>>>()?;
            let mut bus = open_bus(config, port)?;
            println!("Torque goes off: hold the arm.");
            let cal = calibrate::calibrate_board(&mut bus, &setup, &squares, |sq| {
                println!("Put the gripper tip on the centre of {sq} and press enter.");
                std::io::stdin().read_line(&mut String::new()).map(|_| ())
            })?;
            for (sq, r) in cal.squares.iter().zip(&cal.residuals_mm) {
                println!("{sq}: residual {r:.1} mm");
            }
            println!(
                "measured square {:.1} mm; board at ({:.3}, {:.3}, {:.3}) m, yaw {:.2} degrees",
                cal.measured_square_m * 1000.0,
                cal.board.x_m,
                cal.board.y_m,
                cal.board.z_m,
                cal.board.yaw_deg
            );
            write_file(&config.arm.board_calibration, &cal.to_json())?;
            Ok(ExitCode::SUCCESS)
        }
        ArmCommand::CalibrateServos { port } => {
            let mut bus = open_bus(config, port)?;
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let cal = calibrate::calibrate_servos(
                &mut bus,
                &setup.model,
                &SystemClock::new(),
                || {
                    println!("Torque is off. Move the arm to the middle of every joint's range and press enter.");
                    std::io::stdin().read_line(&mut String::new()).map(|_| ())
                },
                {
                    // Prompted only once the mid pose is taken, so the two
                    // enter presses go to the right questions.
                    let mut started = false;
                    move || {
                        if !started {
                            started = true;
                            println!(
                                "Now move every joint through its whole range, then press enter."
                            );
                            let done = done.clone();
                            std::thread::spawn(move || {
                                let _ = std::io::stdin().read_line(&mut String::new());
                                done.store(true, std::sync::atomic::Ordering::SeqCst);
                            });
                        }
                        done.load(std::sync::atomic::Ordering::SeqCst)
                    }
                },
            )?;
            for (name, m) in &cal.motors {
                println!(
                    "{name:<14} id {} offset {:+5} range {}..{}",
                    m.id, m.homing_offset, m.range_min, m.range_max
                );
            }
            write_file(&config.arm.calibration, &cal.to_json())?;
            Ok(ExitCode::SUCCESS)
        }
        ArmCommand::Stop { port, release } => {
            let mut setup = setup.clone();
            setup.safety.on_stop = if release {
                StopMode::Release
            } else {
                StopMode::Hold
            };
            let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
            let mut ex = Executor::new(open_bus(config, port)?, &setup, clock);
            let report = ex.emergency_stop();
            println!("{report}");
            Ok(if report.failed.is_empty() && !report.port_lost {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        ArmCommand::State { port } => {
            let mut bus = open_bus(config, port)?;
            let ids = setup.model.servo_ids();
            let states = bus.read_states(&ids)?;
            for s in &states {
                println!(
                    "servo {}: step {:>4}  speed {:>5}  load {:>5.1} %  {:.1} V  {} C",
                    s.id,
                    s.position,
                    s.speed,
                    f64::from(s.load_permille) / 10.0,
                    f64::from(s.voltage_decivolt) / 10.0,
                    s.temperature_c
                );
            }
            let p = calibrate::tool_point_now(&mut bus, &setup)?;
            let b = setup.board.arm_from_board.inverse_transform_point(&p);
            println!(
                "tool point: arm ({:+.3}, {:+.3}, {:+.3}) m, board ({:+.3}, {:+.3}, {:+.3}) m",
                p.x, p.y, p.z, b.x, b.y, b.z
            );
            Ok(ExitCode::SUCCESS)
        }
        ArmCommand::ImportCalibration { file } => {
            let cal = Calibration::load(&file)?;
            // The joints must all be there with the model's IDs and usable ranges.
            ArmSetup::new(
                setup.model.clone(),
                cal.clone(),
                &config.arm,
                &file.display().to_string(),
                Vec::new(),
            )?;
            write_file(&config.arm.calibration, &cal.to_json())?;
            Ok(ExitCode::SUCCESS)
        }
        ArmCommand::SimBus => {
            let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
            // Keep the driver's end open: the simulator stops when it closes.
            let (sim, _slave) = SimPort::spawn(SimBus::with_servos(6, clock))
                .context("cannot open a pseudo-terminal")?;
            println!(
                "simulated servo bus on {} (Ctrl-C stops it)",
                sim.path().unwrap_or("?")
            );
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(tokio::signal::ctrl_c())?;
            Ok(ExitCode::SUCCESS)
        }
        ArmCommand::Bench { solves, json } => {
            let b = arm_bench::run(&setup, solves.max(1))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&b)?);
            } else {
                print!("{}", b.to_text());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Opens the servo bus on `port` or the configured one.
fn open_bus(
    config: &Config,
    port: Option<String>,
) -> anyhow::Result<FeetechBus<Box<dyn serialport::SerialPort>>> {
    let path = port.unwrap_or_else(|| config.arm.port.clone());
    let timing = config.arm.bus_timing();
    Ok(FeetechBus::new(
        open_serial(&path, config.arm.baud)?,
        timing,
    ))
}

/// Writes a calibration file, creating its directory.
fn write_file(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("written to {}", path.display());
    Ok(())
}

/// Connects, plans from the present pose, executes with Ctrl-C as emergency stop.
fn run_move<P: BusPort>(
    bus: FeetechBus<P>,
    setup: &ArmSetup,
    clock: Arc<dyn Clock>,
    fen: &str,
    mv: &str,
    slots: &mut SlotState,
) -> anyhow::Result<ExitCode> {
    let mut ex = Executor::new(bus, setup, clock);
    let flag = ex.stop_flag();
    std::thread::spawn(move || {
        if let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            rt.block_on(async {
                // Ctrl-C or SIGTERM (a service manager stopping us) stops the arm.
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
                let terminated = async {
                    match term.as_mut() {
                        Some(t) => t.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminated => {}
                }
                flag.store(true, std::sync::atomic::Ordering::SeqCst);
            });
        }
    });
    let start = ex.connect()?;
    let plan = Planner::new(setup).plan_text(fen, mv, Some(start), slots)?;
    println!(
        "executing {} ({} steps, estimated {:.1} s); Ctrl-C stops the arm",
        plan.uci,
        plan.steps.len(),
        plan.total_s
    );
    let report = ex.execute(&plan)?;
    println!(
        "done: {} steps in {:.1} s, every arrival verified",
        report.steps,
        report.elapsed.as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
