//! Frame sources: where camera frames come from.
//!
//! One trait, [`FrameSource`], with implementations for a folder of images
//! ([`ImageFolder`]), a video file ([`VideoFile`], OpenCV videoio) and a live
//! camera ([`live::LiveCamera`], nokhwa) and the simulator
//! ([`sim::SimCamera`]). Every frame carries a timestamp.

pub mod live;
pub mod sim;

use std::path::{Path, PathBuf};
use std::time::Duration;

use opencv::prelude::*;
use opencv::videoio;
use serde::Deserialize;

use crate::vision::image::RgbImage;
use crate::vision::io;

/// What went wrong with a frame source.
#[derive(Debug, thiserror::Error)]
pub enum CameraError {
    #[error("{0}")]
    Open(String),
    #[error("camera stalled: no frame for {0:?}")]
    Stalled(Duration),
    #[error("camera disconnected: {0}")]
    Disconnected(String),
    #[error("bad frame: {0}")]
    Frame(String),
}

/// One frame and when it was taken (since the source started).
#[derive(Debug, Clone)]
pub struct Frame {
    pub image: RgbImage,
    pub timestamp: Duration,
    /// Position in the source (0, 1, 2, ...).
    pub index: u64,
}

/// Anything that yields frames in order.
pub trait FrameSource {
    /// The next frame; `Ok(None)` at the end of a finite source.
    fn next_frame(&mut self) -> Result<Option<Frame>, CameraError>;
    /// A human-readable description (path, device, mode).
    fn describe(&self) -> String;
}

/// Image files in a folder, in name order; timestamps from a nominal rate.
pub struct ImageFolder {
    files: Vec<PathBuf>,
    next: usize,
    frame_interval: Duration,
    dir: PathBuf,
}

const IMAGE_EXTENSIONS: [&str; 6] = ["png", "jpg", "jpeg", "bmp", "tif", "tiff"];

impl ImageFolder {
    /// Lists the images in `dir` (`fps` sets the timestamps' spacing).
    pub fn open(dir: &Path, fps: f64) -> Result<ImageFolder, CameraError> {
        if !(fps > 0.0 && fps.is_finite()) {
            return Err(CameraError::Open(format!(
                "frame rate {fps}: must be positive"
            )));
        }
        let rd = std::fs::read_dir(dir)
            .map_err(|e| CameraError::Open(format!("{}: {e}", dir.display())))?;
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
            })
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(CameraError::Open(format!(
                "{}: no image files ({})",
                dir.display(),
                IMAGE_EXTENSIONS.join(", ")
            )));
        }
        Ok(ImageFolder {
            files,
            next: 0,
            frame_interval: Duration::from_secs_f64(1.0 / fps),
            dir: dir.to_owned(),
        })
    }
}

impl FrameSource for ImageFolder {
    fn next_frame(&mut self) -> Result<Option<Frame>, CameraError> {
        let Some(path) = self.files.get(self.next) else {
            return Ok(None);
        };
        let image = io::load_image(path)
            .map_err(|e| CameraError::Frame(format!("{}: {e}", path.display())))?;
        let index = self.next as u64;
        self.next += 1;
        Ok(Some(Frame {
            image,
            timestamp: self.frame_interval * index as u32,
            index,
        }))
    }

    fn describe(&self) -> String {
        format!(
            "image folder {} ({} images)",
            self.dir.display(),
            self.files.len()
        )
    }
}

/// A video file read through OpenCV; timestamps from the container.
pub struct VideoFile {
    cap: videoio::VideoCapture,
    path: PathBuf,
    index: u64,
    fps: f64,
}

impl VideoFile {
    pub fn open(path: &Path) -> Result<VideoFile, CameraError> {
        if !path.is_file() {
            return Err(CameraError::Open(format!(
                "{}: no such video file",
                path.display()
            )));
        }
        let cap = videoio::VideoCapture::from_file(path, videoio::CAP_ANY)
            .map_err(|e| CameraError::Open(format!("{}: {e}", path.display())))?;
        if !cap.is_opened().unwrap_or(false) {
            return Err(CameraError::Open(format!(
                "{}: OpenCV cannot decode this video",
                path.display()
            )));
        }
        let fps = cap.get(videoio::CAP_PROP_FPS).unwrap_or(0.0);
        Ok(VideoFile {
            cap,
            path: path.to_owned(),
            index: 0,
            fps,
        })
    }
}

impl FrameSource for VideoFile {
    fn next_frame(&mut self) -> Result<Option<Frame>, CameraError> {
        let mut mat = opencv::core::Mat::default();
        let ok = self
            .cap
            .read(&mut mat)
            .map_err(|e| CameraError::Frame(format!("{}: {e}", self.path.display())))?;
        if !ok || mat.empty() {
            return Ok(None);
        }
        let image = io::rgb_from_bgr_mat(&mat).map_err(|e| CameraError::Frame(e.to_string()))?;
        // Position of the frame just read; fall back to index / fps.
        let msec = self.cap.get(videoio::CAP_PROP_POS_MSEC).unwrap_or(-1.0);
        let timestamp = if self.fps > 0.0 {
            Duration::from_secs_f64(self.index as f64 / self.fps)
        } else {
            Duration::from_secs_f64(msec.max(0.0) / 1000.0)
        };
        let index = self.index;
        self.index += 1;
        Ok(Some(Frame {
            image,
            timestamp,
            index,
        }))
    }

    fn describe(&self) -> String {
        format!("video file {} ({:.1} fps)", self.path.display(), self.fps)
    }
}

/// `[camera]` configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CameraConfig {
    /// `live`, `video` or `folder`.
    pub source: String,
    /// Live camera: device index ("0") or a name substring.
    pub device: String,
    /// Video file or image folder for `video` / `folder`.
    pub path: PathBuf,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    /// `mjpeg`, `yuyv` or `any`.
    pub format: String,
    /// A live camera that delivers no frame for this long is stalled.
    pub stall_timeout_ms: u64,
    /// Reconnection attempts after a stall or disconnect.
    pub retries: u32,
}

impl Default for CameraConfig {
    fn default() -> Self {
        CameraConfig {
            source: "live".into(),
            device: "0".into(),
            path: PathBuf::new(),
            width: 1280,
            height: 720,
            fps: 30,
            format: "mjpeg".into(),
            stall_timeout_ms: 1000,
            retries: 3,
        }
    }
}

impl CameraConfig {
    /// Checks values the types do not constrain; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        if !["live", "video", "folder"].contains(&self.source.as_str()) {
            return Err(format!(
                "camera.source = {:?}: must be live, video or folder",
                self.source
            ));
        }
        if !["mjpeg", "yuyv", "any"].contains(&self.format.as_str()) {
            return Err(format!(
                "camera.format = {:?}: must be mjpeg, yuyv or any",
                self.format
            ));
        }
        if self.width == 0 || self.height == 0 || self.fps == 0 {
            return Err("camera.width, camera.height and camera.fps must be positive".into());
        }
        if self.stall_timeout_ms == 0 {
            return Err("camera.stall_timeout_ms must be positive".into());
        }
        if self.source != "live" && self.path.as_os_str().is_empty() {
            return Err(format!("camera.path must name the {} to read", self.source));
        }
        Ok(())
    }
}

/// Opens the source the configuration names.
pub fn open_source(cfg: &CameraConfig) -> Result<Box<dyn FrameSource>, CameraError> {
    cfg.validate().map_err(CameraError::Open)?;
    Ok(match cfg.source.as_str() {
        "video" => Box::new(VideoFile::open(&cfg.path)?),
        "folder" => Box::new(ImageFolder::open(&cfg.path, cfg.fps as f64)?),
        _ => Box::new(live::LiveCamera::open(live::LiveSettings::from_config(
            cfg,
        )?)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folder_yields_images_in_name_order_with_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        for (name, v) in [("b.png", 20u8), ("a.png", 10), ("c.txt", 0)] {
            if name.ends_with(".png") {
                let mut img = RgbImage::new(4, 3);
                img.put(0, 0, [v, v, v]);
                io::save_image(&img, &dir.path().join(name)).unwrap();
            } else {
                std::fs::write(dir.path().join(name), "x").unwrap();
            }
        }
        let mut src = ImageFolder::open(dir.path(), 10.0).unwrap();
        let f0 = src.next_frame().unwrap().unwrap();
        let f1 = src.next_frame().unwrap().unwrap();
        assert_eq!(f0.image.get(0, 0), [10, 10, 10]);
        assert_eq!(f1.image.get(0, 0), [20, 20, 20]);
        assert_eq!(f1.timestamp, Duration::from_millis(100));
        assert!(src.next_frame().unwrap().is_none());
    }

    #[test]
    fn empty_folder_and_missing_video_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let e = ImageFolder::open(dir.path(), 10.0).err().unwrap();
        assert!(e.to_string().contains("no image files"), "{e}");
        let e = VideoFile::open(&dir.path().join("x.avi")).err().unwrap();
        assert!(e.to_string().contains("no such video file"), "{e}");
    }

    #[test]
    fn config_validation_names_the_key() {
        let c = CameraConfig {
            format: "h264".into(),
            ..CameraConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("camera.format"));
        let c = CameraConfig {
            source: "video".into(),
            ..CameraConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("camera.path"));
        assert!(CameraConfig::default().validate().is_ok());
    }

    /// Needs ../shared/data/real (skips otherwise).
    #[test]
    fn video_file_reads_the_real_game_video() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../shared/data/real/webcam_wooden_boards/video/emptyBoard001.avi");
        if !path.is_file() {
            eprintln!(
                "SKIP: {} absent (real data set not available)",
                path.display()
            );
            return;
        }
        let mut v = VideoFile::open(&path).unwrap();
        let mut n = 0;
        let mut last = None;
        while let Some(f) = v.next_frame().unwrap() {
            assert_eq!((f.image.width, f.image.height), (640, 480));
            if let Some(t) = last {
                assert!(f.timestamp > t);
            }
            last = Some(f.timestamp);
            n += 1;
        }
        assert_eq!(n, 52, "README says 52 frames");
    }
}
