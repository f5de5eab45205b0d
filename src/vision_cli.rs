//! `chessbot vision ...`, `chessbot calibrate camera|board` and
//! `chessbot bench vision`: thin wrappers over `chessbot::vision`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;

#[derive(Subcommand, Debug)]
pub enum CalibrateCmd {
    /// Camera intrinsics from photos of a printed checkerboard.
    Camera {
        /// Folder with the checkerboard photos.
        #[arg(long, value_name = "DIR")]
        images: PathBuf,
        /// Inner corners per row and column, e.g. 9x6.
        #[arg(long, value_name = "COLSxROWS")]
        pattern: String,
        /// Side of one printed square in millimetres.
        #[arg(long, value_name = "MM")]
        square_mm: f64,
        /// Output directory (camera.yml is written there).
        #[arg(long, value_name = "DIR", default_value = "calibration")]
        out: PathBuf,
    },
    /// Board pose from one frame of the empty board or the start position.
    Board {
        /// The frame.
        #[arg(long, value_name = "FILE")]
        image: PathBuf,
        /// Manual fallback: outer corners a8 h8 h1 a1 as "x,y x,y x,y x,y".
        #[arg(long, value_name = "\"x,y x,y x,y x,y\"")]
        corners: Option<String>,
        /// Where White sits: bottom, top, left, right (default: decided from the frame).
        #[arg(long, value_name = "SIDE")]
        white_at: Option<String>,
        /// Board square size in millimetres (for the 3D pose with camera.yml).
        #[arg(long, value_name = "MM")]
        square_mm: Option<f64>,
        /// Calibration directory (board.yml written there; camera.yml read if present).
        #[arg(long, value_name = "DIR", default_value = "calibration")]
        out: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum VisionCmd {
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
        /// Longer side of the overlay image in pixels.
        #[arg(long, default_value_t = 640)]
        overlay_size: usize,
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
    /// Evaluate localization and square reading on rendered frames, by camera view.
    EvalSim {
        /// Number of frames (views take turns: overhead, player, side, corner, low).
        #[arg(long, default_value_t = 500)]
        frames: usize,
        /// Master seed: the same seed renders the same frames.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 1280)]
        width: u32,
        #[arg(long, default_value_t = 720)]
        height: u32,
        /// Also list every frame that was not read perfectly.
        #[arg(long)]
        failures: bool,
        /// Write overlays (grid and states found) of imperfect frames here.
        #[arg(long, value_name = "DIR")]
        dump: Option<PathBuf>,
        /// At most this many overlays.
        #[arg(long, default_value_t = 12)]
        dump_max: usize,
        /// Only these frames (indices as listed by --failures, comma-separated), to trace them.
        #[arg(long, value_delimiter = ',', value_name = "N,N,...")]
        only: Vec<usize>,
        /// Read each frame calibrated: taught by a frame of the start position from the same camera.
        #[arg(long)]
        calibrated: bool,
        /// Also write every cell's features, view context and truth to this CSV file.
        #[arg(long, value_name = "FILE")]
        dump_features: Option<PathBuf>,
    },
}

pub fn run_vision(cmd: VisionCmd) -> anyhow::Result<ExitCode> {
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
            overlay_size,
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
                    overlay_size,
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
                let mut rows = vec![chessbot::vision::eval_sim::feature_header()];
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
        VisionCmd::EvalSim {
            frames,
            seed,
            width,
            height,
            failures,
            dump,
            dump_max,
            only,
            calibrated,
            dump_features,
        } => {
            use chessbot::vision::eval_sim;
            let t0 = std::time::Instant::now();
            let indices: Vec<usize> = if only.is_empty() {
                (0..frames).collect()
            } else {
                only
            };
            let frames = indices.len();
            if let Some(out) = &dump_features {
                let mut rows = vec![eval_sim::feature_header()];
                for &i in &indices {
                    let spec = eval_sim::frame_spec(seed, i, width, height)?;
                    let (img, truth) = eval_sim::render_frame(&spec, width, height)?;
                    rows.extend(eval_sim::feature_rows(&spec, &img, &truth));
                    if (i + 1) % 50 == 0 {
                        eprintln!("{} frames dumped", i + 1);
                    }
                }
                std::fs::write(out, rows.join("\n") + "\n")
                    .with_context(|| format!("writing {}", out.display()))?;
                return Ok(ExitCode::SUCCESS);
            }
            let regime = if calibrated {
                eval_sim::Regime::Calibrated
            } else {
                eval_sim::Regime::Cold
            };
            let results = eval_sim::evaluate(indices, seed, width, height, regime, |r| {
                if (r.spec.index + 1) % 50 == 0 {
                    eprintln!("{} frames done", r.spec.index + 1);
                }
            })
            .context("rendering the synthetic frames")?;
            let mut reads: Vec<f64> = results.iter().map(|r| r.read_s * 1e3).collect();
            reads.sort_by(f64::total_cmp);
            println!(
                "{frames} rendered frames, {width}x{height}, seed {seed}, {regime:?}; corner tolerance {} square; {:.0} s in all, median read {:.1} ms\n",
                eval_sim::CORNER_TOLERANCE_SQUARES,
                t0.elapsed().as_secs_f64(),
                reads.get(reads.len() / 2).copied().unwrap_or(f64::NAN)
            );
            println!("{}", eval_sim::report(&results));
            if failures {
                for line in eval_sim::failures(&results) {
                    println!("{line}");
                }
            }
            if let Some(dir) = dump {
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let bad = results.iter().filter(|r| {
                    !r.score.localized
                        || r.score.orientation_ok == Some(false)
                        || r.score.squares.is_some_and(|e| e.wrong() > 0)
                });
                for r in bad.take(dump_max) {
                    let (img, _) = eval_sim::render_frame(&r.spec, width, height)?;
                    let out = dir.join(format!("frame_{:04}.png", r.spec.index));
                    let opts = eval_sim::read_options(&r.spec, width, height, regime)?;
                    match pipeline::read_frame(&img, &opts) {
                        Ok(fr) => {
                            let drawn = overlay::draw(
                                &img,
                                &fr.location,
                                Some(&fr.reading),
                                fr.orientation.white_at,
                                width.max(height) as usize,
                            )?;
                            io::save_image(&drawn, &out)?;
                        }
                        Err(_) => io::save_image(&img, &out)?,
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

pub fn run_calibrate(cmd: CalibrateCmd) -> anyhow::Result<ExitCode> {
    use chessbot::vision::{calibrate, io, pipeline, Side};
    match cmd {
        CalibrateCmd::Camera {
            images,
            pattern,
            square_mm,
            out,
        } => {
            let (cols, rows) = pattern
                .split_once(['x', 'X'])
                .and_then(|(c, r)| {
                    Some((
                        c.trim().parse::<usize>().ok()?,
                        r.trim().parse::<usize>().ok()?,
                    ))
                })
                .ok_or_else(|| {
                    anyhow::anyhow!("--pattern {pattern:?}: expected COLSxROWS, e.g. 9x6")
                })?;
            let mut paths: Vec<PathBuf> = std::fs::read_dir(&images)
                .with_context(|| format!("reading {}", images.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                        ["png", "jpg", "jpeg", "bmp"].contains(&e.to_ascii_lowercase().as_str())
                    })
                })
                .collect();
            paths.sort();
            let imgs = paths
                .iter()
                .map(|p| io::load_image(p))
                .collect::<Result<Vec<_>, _>>()?;
            let cal = calibrate::calibrate_camera(&imgs, cols, rows, square_mm)?;
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            let path = out.join("camera.yml");
            calibrate::save_camera(&cal, &path)?;
            println!(
                "{} views of {} used; RMS reprojection error {:.3} px; fx {:.1} fy {:.1} cx {:.1} cy {:.1}; written to {}",
                cal.views,
                imgs.len(),
                cal.rms_px,
                cal.camera_matrix[0],
                cal.camera_matrix[4],
                cal.camera_matrix[2],
                cal.camera_matrix[5],
                path.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        CalibrateCmd::Board {
            image,
            corners,
            white_at,
            square_mm,
            out,
        } => {
            let img = io::load_image(&image)?;
            let given: Option<Side> = white_at
                .as_deref()
                .map(|s| {
                    s.parse::<Side>()
                        .map_err(|e| anyhow::anyhow!("--white-at {e}"))
                })
                .transpose()?;
            let (grid_corners, side) = match corners {
                Some(text) => {
                    let named = calibrate::parse_corners(&text)?;
                    let side = given.unwrap_or(Side::Bottom);
                    (calibrate::grid_corners_from_named(named, side), side)
                }
                None => {
                    let opts = pipeline::ReadOptions {
                        white_at: given,
                        ..Default::default()
                    };
                    let fr = pipeline::read_frame(&img, &opts)
                        .context("finding the board automatically (use --corners to give them)")?;
                    (fr.location.corners, fr.orientation.white_at)
                }
            };
            let cam_path = out.join("camera.yml");
            let camera_from_board = match (square_mm, cam_path.is_file()) {
                (Some(mm), true) => {
                    let cal = calibrate::load_camera(&cam_path)?;
                    Some(calibrate::solve_board_pose(&cal, &grid_corners, mm)?)
                }
                _ => None,
            };
            let pose = calibrate::BoardPose {
                grid_corners,
                image_size: (img.width, img.height),
                white_at: side,
                camera_from_board,
            };
            std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
            let path = out.join("board.yml");
            calibrate::save_board_pose(&pose, &path)?;
            println!("board pose (White at {side}) written to {}", path.display());
            if let Some((r, t)) = camera_from_board {
                println!("camera_from_board: rvec {r:.4?} tvec_mm {t:.1?}");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `chessbot bench vision`: full localization and a tracked read of one
/// photo, or of a simulated 1280x720 webcam frame of the start position.
pub fn bench_vision(image: Option<&Path>, runs: usize) -> anyhow::Result<ExitCode> {
    use chessbot::vision::{bench, io};
    let img = match image {
        Some(path) => io::load_image(path)?,
        None => {
            use chessbot::sim::{BoardStyle, CameraSpec, Realism, SceneSpec};
            let spec = SceneSpec {
                board: BoardStyle::Wooden,
                set: None,
                camera: "angled".parse::<CameraSpec>()?,
                width: 1280,
                height: 720,
                realism: Realism::Webcam,
            };
            let scene = spec.build(&shakmaty::Board::default(), 1)?;
            println!("image: simulated webcam frame of the start position (seed 1)");
            chessbot::camera::sim::render_scene(&scene)?
        }
    };
    let (full, tracked) = bench::bench(&img, runs)?;
    println!(
        "full localization (1280x720): median {:.2} ms, min {:.2} ms over {} runs",
        full.median.as_secs_f64() * 1e3,
        full.min.as_secs_f64() * 1e3,
        full.runs
    );
    println!(
        "tracked read of 64 squares (1280x720): median {:.2} ms, min {:.2} ms over {} runs",
        tracked.median.as_secs_f64() * 1e3,
        tracked.min.as_secs_f64() * 1e3,
        tracked.runs
    );
    Ok(ExitCode::SUCCESS)
}
