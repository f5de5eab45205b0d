//! `chessbot bench render`: milliseconds per frame for typical scenes.
//!
//! Single-threaded on purpose (OpenCV is told to use one thread) so the
//! number means "one core". Build with `--release`.

use std::fmt;
use std::time::Instant;

use super::camera::{CameraPreset, CameraSpec};
use super::render::Renderer;
use super::scene::{add_hand_over, Realism, SceneSpec};
use super::world::BoardStyle;
use super::SimError;

/// Timing of one scene configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchLine {
    pub name: String,
    /// Building the renderer (per-pixel rays), once per camera.
    pub setup_ms: f64,
    pub mean_ms: f64,
    pub min_ms: f64,
}

/// Timings of all configurations.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchReport {
    pub width: u32,
    pub height: u32,
    pub frames: u32,
    pub lines: Vec<BenchLine>,
}

impl fmt::Display for BenchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "render {}x{}, {} frames each, one thread{}",
            self.width,
            self.height,
            self.frames,
            if cfg!(debug_assertions) {
                " (DEBUG BUILD: use --release for real numbers)"
            } else {
                ""
            }
        )?;
        for l in &self.lines {
            writeln!(
                f,
                "  {:<44} setup {:7.1} ms   frame mean {:6.1} ms   min {:6.1} ms",
                l.name, l.setup_ms, l.mean_ms, l.min_ms
            )?;
        }
        Ok(())
    }
}

/// A middlegame with pieces all over the board.
const MIDDLEGAME: &str = "r1bq1rk1/pp2bppp/2n1pn2/3p4/2PP4/2N1PN2/PP2BPPP/R2QKB1R";

/// Renders each configuration `frames` times and reports the times.
pub fn bench_render(width: u32, height: u32, frames: u32) -> Result<BenchReport, SimError> {
    let _ = opencv::core::set_num_threads(1);
    let configs = [
        (
            "wooden, overhead, start position, clean",
            BoardStyle::Wooden,
            CameraPreset::Overhead,
            shakmaty::Board::default(),
            Realism::Clean,
            false,
        ),
        (
            "vinyl, angled, middlegame, webcam + hand",
            BoardStyle::Vinyl,
            CameraPreset::Angled,
            MIDDLEGAME
                .parse()
                .map_err(|e| SimError::BadWorld(format!("bench FEN: {e}")))?,
            Realism::Webcam,
            true,
        ),
        (
            "wooden, low corner, start position, webcam",
            BoardStyle::Wooden,
            CameraPreset::Low,
            shakmaty::Board::default(),
            Realism::Webcam,
            false,
        ),
    ];
    let frames = frames.max(1);
    let mut lines = Vec::new();
    for (name, style, preset, board, realism, hand) in configs {
        let spec = SceneSpec {
            board: style,
            set: None,
            camera: CameraSpec::Preset(preset),
            width,
            height,
            realism,
        };
        let mut scene = spec.build(&board, 42)?;
        if hand {
            add_hand_over(&mut scene.world, shakmaty::Square::E4, 42);
        }
        let t0 = Instant::now();
        let mut renderer = Renderer::new(scene.camera.clone());
        let setup_ms = t0.elapsed().as_secs_f64() * 1e3;
        let mut times = Vec::new();
        for i in 0..frames {
            scene.options.seed = u64::from(i);
            let t = Instant::now();
            renderer.render(&scene.world, &scene.options)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        lines.push(BenchLine {
            name: name.to_owned(),
            setup_ms,
            mean_ms: times.iter().sum::<f64>() / times.len() as f64,
            min_ms: times.iter().cloned().fold(f64::INFINITY, f64::min),
        });
    }
    Ok(BenchReport {
        width,
        height,
        frames,
        lines,
    })
}
