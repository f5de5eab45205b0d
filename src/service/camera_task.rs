//! The camera loop of the running service: a thread that takes frames
//! from a [`FrameSource`], runs them through the [`CameraWatch`] and puts
//! what it decides into the game. A camera that fails is reported on the
//! page and by voice, and reopened until it comes back; the game is never
//! touched by a frame that could not be read.

use std::sync::Arc;
use std::time::Duration;

use super::camera_watch::CameraWatch;
use super::core::CameraStatus;
use super::runtime::Service;
use crate::camera::{CameraError, FrameSource};
use crate::recognition::WatchOutput;
use crate::vision::image::RgbImage;
use crate::vision::{io, overlay};

/// Opens (and after a failure reopens) the camera.
pub type OpenSource = Box<dyn FnMut() -> Result<Box<dyn FrameSource>, CameraError> + Send>;

/// A fresh picture for the page at most this often (frame time): encoding
/// costs ~5 ms a frame, and a person looking at the page needs no more.
pub const OVERLAY_EVERY_MS: u64 = 500;
/// Longer side of the picture on the page: the page shows it at most
/// ~640 px wide on a laptop.
const OVERLAY_MAX_SIDE: usize = 640;
/// JPEG quality of the picture (80: lines and labels stay sharp, ~40 kB).
const OVERLAY_JPEG_QUALITY: i32 = 80;
/// How often a recorded source (video, folder) checks whether a game is
/// running before it plays on.
const HOLD_POLL: Duration = Duration::from_millis(100);

/// How the loop runs.
#[derive(Debug, Clone)]
pub struct CameraTaskOptions {
    /// Where a board calibration made from the page is saved (`board.yml`);
    /// `None` keeps it for this run only.
    pub calibration_dir: Option<std::path::PathBuf>,
    /// Recorded frames (a video or a folder): they wait while no game is
    /// running or it is paused, instead of running past unseen.
    pub recorded: bool,
    /// Wait before reopening a camera that failed.
    pub retry_delay: Duration,
}

/// Starts the camera loop on its own thread; it ends when a recorded
/// source comes to its end.
pub fn spawn_camera(
    service: Arc<Service>,
    open: OpenSource,
    watch: CameraWatch,
    opts: CameraTaskOptions,
) -> std::thread::JoinHandle<()> {
    service.set_camera_loop();
    std::thread::spawn(move || run(service, open, watch, opts))
}

fn run(
    service: Arc<Service>,
    mut open: OpenSource,
    mut watch: CameraWatch,
    opts: CameraTaskOptions,
) {
    // Timestamps restart with each reopened source; the watcher needs them
    // to keep going forward.
    let mut last_ms = 0u64;
    let mut next_overlay_ms = 0u64;
    // The last frame read and not yet shown on the page: shown when a
    // recording ends, so the page keeps the final position, not one from
    // up to a second before.
    let mut unshown: Option<(RgbImage, WatchOutput)> = None;
    let mut was_lost = false;
    loop {
        let mut source = match open() {
            Ok(s) => s,
            Err(e) => {
                lost(&service, format!("cannot open the camera: {e}"));
                was_lost = true;
                std::thread::sleep(opts.retry_delay);
                continue;
            }
        };
        tracing::info!("camera: watching {}", source.describe());
        let base_ms = if last_ms == 0 { 0 } else { last_ms + 1 };
        loop {
            if opts.recorded {
                hold_while_no_game(&service);
            }
            let frame = match source.next_frame() {
                Ok(Some(f)) => f,
                Ok(None) => {
                    if let Some((image, out)) = unshown.take() {
                        match picture(&image, &out) {
                            Ok(jpeg) => service.set_camera_image(jpeg),
                            Err(e) => tracing::warn!("camera: picture for the page: {e}"),
                        }
                    }
                    let changed = service.core().set_camera(CameraStatus::Ended);
                    if changed {
                        service.apply(Vec::new());
                    }
                    tracing::info!("camera: {} came to its end", source.describe());
                    return;
                }
                Err(CameraError::Frame(why)) => {
                    tracing::warn!("camera: bad frame skipped: {why}");
                    continue;
                }
                Err(e) => {
                    lost(&service, format!("the camera stopped: {e}"));
                    was_lost = true;
                    std::thread::sleep(opts.retry_delay);
                    break;
                }
            };
            if was_lost {
                was_lost = false;
                let effects = service.core().camera_back();
                service.apply(effects);
            }
            let t_ms = base_ms + frame.timestamp.as_millis() as u64;
            last_ms = t_ms;
            watch.sync(&service.core());
            if service.take_board_calibration() {
                let text = recalibrate(&mut watch, &frame.image, opts.calibration_dir.as_deref());
                let effects = service.core().notify(text);
                service.apply(effects);
            }
            let out = match watch.look(&frame.image, t_ms) {
                Ok(out) => out,
                Err(e) => {
                    tracing::warn!("camera: frame {} not read: {e}", frame.index);
                    continue;
                }
            };
            let shown = t_ms >= next_overlay_ms;
            if shown {
                next_overlay_ms = t_ms + OVERLAY_EVERY_MS;
                match picture(&frame.image, &out) {
                    Ok(jpeg) => service.set_camera_image(jpeg),
                    Err(e) => tracing::warn!("camera: picture for the page: {e}"),
                }
            }
            let now = service.now_ms();
            let (effects, changed) = watch.apply(&mut service.core(), &out, now);
            if changed {
                service.apply(effects);
            }
            unshown = (!shown && opts.recorded).then_some((frame.image, out));
        }
    }
}

/// Finds the board again and saves it; what to tell the person.
fn recalibrate(watch: &mut CameraWatch, image: &RgbImage, dir: Option<&std::path::Path>) -> String {
    let pose = match watch.recalibrate(image) {
        Ok(p) => p,
        Err(e) => {
            return format!(
                "Calibration failed: {e}. Make sure the whole board is in view, nothing covers it, and try again."
            )
        }
    };
    let found = format!("Board found again, White at the {}", pose.white_at);
    let Some(dir) = dir else {
        return format!("{found}.");
    };
    let path = dir.join("board.yml");
    let saved = std::fs::create_dir_all(dir)
        .map_err(|e| e.to_string())
        .and_then(|_| {
            crate::vision::calibrate::save_board_pose(&pose, &path).map_err(|e| e.to_string())
        });
    match saved {
        Ok(()) => format!("{found}; saved to {}.", path.display()),
        Err(e) => format!(
            "{found}, but it could not be saved to {}: {e}.",
            path.display()
        ),
    }
}

/// The camera failed: say so once, show it, keep the game as it is.
fn lost(service: &Arc<Service>, detail: String) {
    tracing::warn!("camera: {detail}");
    let (changed, effects) = service.core().camera_lost(detail);
    if changed || !effects.is_empty() {
        service.apply(effects);
    }
}

fn hold_while_no_game(service: &Arc<Service>) {
    loop {
        let go = {
            let core = service.core();
            core.session().is_some() && !core.paused()
        };
        if go {
            return;
        }
        std::thread::sleep(HOLD_POLL);
    }
}

/// The frame with the grid and square states drawn over it (the raw
/// frame, scaled, when no board was read), as JPEG.
pub fn picture(image: &RgbImage, out: &WatchOutput) -> Result<Vec<u8>, crate::vision::VisionError> {
    let drawn = match (&out.reading, out.usable()) {
        (Some(r), true) => overlay::draw(
            image,
            &r.location,
            Some(&r.reading),
            r.orientation.white_at,
            OVERLAY_MAX_SIDE,
        )?,
        _ => image.fit_within(OVERLAY_MAX_SIDE).0,
    };
    io::encode_image(&drawn, ".jpg", OVERLAY_JPEG_QUALITY)
}
