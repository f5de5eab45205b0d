//! The thin adapter that renders a scripted game to files: numbered frames,
//! `truth.jsonl` (one line per frame) and `camera.json` (the fixed camera,
//! board corners and grid). The only part of the simulator that writes files.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::opponent::{ScriptTruth, ScriptedGame};
use super::render::{RenderOptions, Renderer};
use super::truth::{CameraTruth, FrameTruth};
use super::SimError;

/// Picture format of the frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameFormat {
    Png,
    /// JPEG at a quality (the webcam stream format; small files).
    Jpeg(u8),
}

/// One line of `truth.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrameRecord {
    /// Frame file name inside the output folder.
    pub file: String,
    #[serde(flatten)]
    pub script: ScriptTruth,
    /// Whether the hand is visible in the picture.
    pub hand_visible: bool,
    /// Squares the hand hides, a1..h8 order.
    pub occluded: Vec<String>,
}

/// `camera.json`: what does not change during a game.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CameraRecord {
    pub corners: Vec<Option<[f64; 2]>>,
    pub grid: Vec<Option<[f64; 2]>>,
    pub camera: CameraTruth,
    pub fps: f64,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> SimError + '_ {
    move |e| SimError::Io(format!("{}: {e}", path.display()))
}

/// Renders every frame of `game` into `dir` (created if missing), calling
/// `progress(frame)` after each. Returns the number of frames written.
pub fn record_game(
    game: ScriptedGame,
    renderer: &mut Renderer,
    options: &RenderOptions,
    format: FrameFormat,
    fps: f64,
    dir: &Path,
    mut progress: impl FnMut(u64),
) -> Result<u64, SimError> {
    fs::create_dir_all(dir).map_err(io(dir))?;
    let truth_path = dir.join("truth.jsonl");
    let mut lines = BufWriter::new(File::create(&truth_path).map_err(io(&truth_path))?);
    let mut count = 0;
    let mut opts = *options;
    for (world, script) in game {
        // Fresh sensor noise every frame, still determined by the seed.
        opts.seed = options
            .seed
            .wrapping_add(script.frame.wrapping_mul(0x9E37_79B9));
        let frame = renderer.render(&world, &opts)?;
        if count == 0 {
            write_camera(dir, &frame.truth, fps)?;
        }
        let (ext, bytes) = match format {
            FrameFormat::Png => ("png", frame.image.encode_png()?),
            FrameFormat::Jpeg(q) => ("jpg", frame.image.encode_jpeg(q)?),
        };
        let file = format!("frame_{:06}.{ext}", script.frame);
        let path: PathBuf = dir.join(&file);
        fs::write(&path, bytes).map_err(io(&path))?;
        let record = FrameRecord {
            file,
            hand_visible: frame.truth.hand_visible,
            occluded: frame.truth.occluded_squares(),
            script,
        };
        let line =
            serde_json::to_string(&record).map_err(|e| SimError::Io(format!("truth line: {e}")))?;
        writeln!(lines, "{line}").map_err(io(&truth_path))?;
        count += 1;
        progress(count);
    }
    lines.flush().map_err(io(&truth_path))?;
    Ok(count)
}

fn write_camera(dir: &Path, truth: &FrameTruth, fps: f64) -> Result<(), SimError> {
    let rec = CameraRecord {
        corners: truth.corners.clone(),
        grid: truth.grid.clone(),
        camera: truth.camera.clone(),
        fps,
    };
    let path = dir.join("camera.json");
    let json = serde_json::to_string_pretty(&rec)
        .map_err(|e| SimError::Io(format!("camera.json: {e}")))?;
    fs::write(&path, json).map_err(io(&path))
}
