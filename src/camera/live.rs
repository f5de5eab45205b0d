//! Live camera through nokhwa, with stall detection and reconnection.
//!
//! Frames are grabbed on a worker thread and handed over through a channel;
//! the consumer waits at most the stall timeout (1 s by default) for each,
//! so a camera that hangs or disappears is reported within a second, and
//! the next call reopens it (up to `retries` times in a row).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nokhwa::pixel_format::RgbFormat;
use nokhwa::utils::{
    CameraFormat, CameraIndex, FrameFormat, RequestedFormat, RequestedFormatType, Resolution,
};
use nokhwa::Camera;

use super::{CameraConfig, CameraError, Frame, FrameSource};
use crate::vision::image::RgbImage;

/// What to open.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveSettings {
    /// Device index ("0") or a substring of the device's name.
    pub device: String,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    /// `None`: any format.
    pub format: Option<FrameFormat>,
    pub stall_timeout: Duration,
    pub retries: u32,
}

impl LiveSettings {
    pub fn from_config(cfg: &CameraConfig) -> Result<LiveSettings, CameraError> {
        let format = match cfg.format.as_str() {
            "mjpeg" => Some(FrameFormat::MJPEG),
            "yuyv" => Some(FrameFormat::YUYV),
            "any" => None,
            other => {
                return Err(CameraError::Open(format!(
                    "camera.format {other:?}: must be mjpeg, yuyv or any"
                )))
            }
        };
        Ok(LiveSettings {
            device: cfg.device.clone(),
            width: cfg.width,
            height: cfg.height,
            fps: cfg.fps,
            format,
            stall_timeout: Duration::from_millis(cfg.stall_timeout_ms),
            retries: cfg.retries,
        })
    }
}

/// Something that grabs one frame at a time (a camera, or a fake in tests).
pub type Grab = Box<dyn FnMut() -> Result<RgbImage, String>>;
/// Opens a grabber (on the worker thread: camera handles are not `Send`).
pub type Opener = Arc<dyn Fn() -> Result<Grab, String> + Send + Sync>;

/// Frames from a grabber running on its own thread, with a stall timeout.
pub struct ThreadedGrabber {
    rx: Receiver<Result<RgbImage, String>>,
    stop: Arc<AtomicBool>,
    worker: Option<JoinHandle<()>>,
}

impl ThreadedGrabber {
    /// Starts the worker; waits for the open to succeed or fail.
    pub fn start(open: Opener, open_timeout: Duration) -> Result<ThreadedGrabber, CameraError> {
        let (tx, rx) = mpsc::sync_channel::<Result<RgbImage, String>>(1);
        let (open_tx, open_rx) = mpsc::channel::<Result<(), String>>();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_w = stop.clone();
        let worker = std::thread::spawn(move || {
            let mut grab = match open() {
                Ok(g) => {
                    let _ = open_tx.send(Ok(()));
                    g
                }
                Err(e) => {
                    let _ = open_tx.send(Err(e));
                    return;
                }
            };
            while !stop_w.load(Ordering::Relaxed) {
                let r = grab();
                let failed = r.is_err();
                if tx.send(r).is_err() || failed {
                    return;
                }
            }
        });
        match open_rx.recv_timeout(open_timeout) {
            Ok(Ok(())) => Ok(ThreadedGrabber {
                rx,
                stop,
                worker: Some(worker),
            }),
            Ok(Err(e)) => Err(CameraError::Open(e)),
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                Err(CameraError::Open(format!(
                    "camera did not open within {open_timeout:?}"
                )))
            }
        }
    }

    /// The next frame, or `Stalled` after `timeout` without one.
    pub fn next(&mut self, timeout: Duration) -> Result<RgbImage, CameraError> {
        match self.rx.recv_timeout(timeout) {
            Ok(Ok(img)) => Ok(img),
            Ok(Err(e)) => Err(CameraError::Disconnected(e)),
            Err(RecvTimeoutError::Timeout) => Err(CameraError::Stalled(timeout)),
            Err(RecvTimeoutError::Disconnected) => {
                Err(CameraError::Disconnected("frame thread ended".into()))
            }
        }
    }
}

impl Drop for ThreadedGrabber {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A stalled grab may never return; do not wait for that thread.
        if let Some(w) = self.worker.take() {
            if w.is_finished() {
                let _ = w.join();
            }
        }
    }
}

/// A live camera with stall detection and automatic reopening.
pub struct LiveCamera {
    settings: LiveSettings,
    opener: Opener,
    grabber: Option<ThreadedGrabber>,
    started: Instant,
    index: u64,
    failures_in_a_row: u32,
    description: String,
}

fn parse_index(device: &str) -> CameraIndex {
    match device.trim().parse::<u32>() {
        Ok(i) => CameraIndex::Index(i),
        Err(_) => CameraIndex::String(device.to_owned()),
    }
}

/// Opens the nokhwa camera with the requested mode, or explains what the
/// device offers instead.
fn open_nokhwa(s: &LiveSettings) -> Result<Camera, String> {
    let index = match parse_index(&s.device) {
        CameraIndex::String(name) => {
            let devices = nokhwa::query(nokhwa::utils::ApiBackend::Auto)
                .map_err(|e| format!("cannot list cameras: {e}"))?;
            let found = devices.iter().find(|d| d.human_name().contains(&name));
            match found {
                Some(d) => d.index().clone(),
                None => {
                    let names: Vec<String> = devices
                        .iter()
                        .map(|d| format!("{} ({})", d.human_name(), d.index()))
                        .collect();
                    return Err(format!(
                        "no camera named like {name:?}; found: {}",
                        if names.is_empty() {
                            "none".into()
                        } else {
                            names.join(", ")
                        }
                    ));
                }
            }
        }
        i => i,
    };
    let res = Resolution::new(s.width, s.height);
    let wanted = CameraFormat::new(res, s.format.unwrap_or(FrameFormat::MJPEG), s.fps);
    let req = if s.format.is_some() {
        RequestedFormat::new::<RgbFormat>(RequestedFormatType::Exact(wanted))
    } else {
        RequestedFormat::new::<RgbFormat>(RequestedFormatType::Closest(wanted))
    };
    match Camera::new(index.clone(), req) {
        Ok(mut cam) => {
            cam.open_stream()
                .map_err(|e| format!("camera {index}: cannot start streaming: {e}"))?;
            Ok(cam)
        }
        Err(e) => {
            // List what the device does offer.
            let offered = Camera::new(
                index.clone(),
                RequestedFormat::new::<RgbFormat>(RequestedFormatType::None),
            )
            .and_then(|mut c| c.compatible_camera_formats())
            .map(|fs| {
                fs.iter()
                    .map(|f| {
                        format!(
                            "{}x{}@{} {}",
                            f.width(),
                            f.height(),
                            f.frame_rate(),
                            f.format()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_else(|e2| format!("(cannot list formats: {e2})"));
            Err(format!(
                "camera {index}: cannot open {}x{}@{} {:?}: {e}; the device offers: {offered}",
                s.width, s.height, s.fps, s.format
            ))
        }
    }
}

impl LiveCamera {
    /// Opens a nokhwa camera.
    pub fn open(settings: LiveSettings) -> Result<LiveCamera, CameraError> {
        let s = settings.clone();
        let opener: Opener = Arc::new(move || {
            let mut cam = open_nokhwa(&s)?;
            Ok(Box::new(move || {
                let buf = cam.frame().map_err(|e| e.to_string())?;
                let img = buf.decode_image::<RgbFormat>().map_err(|e| e.to_string())?;
                let (w, h) = (img.width() as usize, img.height() as usize);
                Ok(RgbImage {
                    width: w,
                    height: h,
                    data: img.into_raw(),
                })
            }) as Grab)
        });
        let description = format!(
            "live camera {} {}x{}@{}",
            settings.device, settings.width, settings.height, settings.fps
        );
        LiveCamera::with_opener(settings, opener, description)
    }

    /// A camera from any opener (tests use fakes).
    pub fn with_opener(
        settings: LiveSettings,
        opener: Opener,
        description: String,
    ) -> Result<LiveCamera, CameraError> {
        let grabber = ThreadedGrabber::start(opener.clone(), settings.stall_timeout * 5)?;
        Ok(LiveCamera {
            settings,
            opener,
            grabber: Some(grabber),
            started: Instant::now(),
            index: 0,
            failures_in_a_row: 0,
            description,
        })
    }
}

impl FrameSource for LiveCamera {
    fn next_frame(&mut self) -> Result<Option<Frame>, CameraError> {
        if self.grabber.is_none() {
            if self.failures_in_a_row > self.settings.retries {
                return Err(CameraError::Disconnected(format!(
                    "gave up after {} reconnection attempts",
                    self.settings.retries
                )));
            }
            match ThreadedGrabber::start(self.opener.clone(), self.settings.stall_timeout * 5) {
                Ok(g) => self.grabber = Some(g),
                Err(e) => {
                    self.failures_in_a_row += 1;
                    return Err(e);
                }
            }
        }
        let Some(g) = self.grabber.as_mut() else {
            return Err(CameraError::Disconnected("no camera".into()));
        };
        match g.next(self.settings.stall_timeout) {
            Ok(image) => {
                self.failures_in_a_row = 0;
                let index = self.index;
                self.index += 1;
                Ok(Some(Frame {
                    image,
                    timestamp: self.started.elapsed(),
                    index,
                }))
            }
            Err(e) => {
                // Drop the grabber: the next call reopens the camera.
                self.grabber = None;
                self.failures_in_a_row += 1;
                tracing::warn!(camera = %self.description, error = %e, "camera failed; will reopen");
                Err(e)
            }
        }
    }

    fn describe(&self) -> String {
        self.description.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    fn settings(timeout_ms: u64) -> LiveSettings {
        LiveSettings {
            device: "fake".into(),
            width: 4,
            height: 4,
            fps: 30,
            format: None,
            stall_timeout: Duration::from_millis(timeout_ms),
            retries: 2,
        }
    }

    #[test]
    fn a_stalled_camera_is_reported_within_the_timeout_and_reopened() {
        let opens = Arc::new(AtomicU32::new(0));
        let o = opens.clone();
        // First opening delivers 2 frames then hangs; later ones work.
        let opener: Opener = Arc::new(move || {
            let n = o.fetch_add(1, Ordering::SeqCst);
            let mut k = 0;
            Ok(Box::new(move || {
                k += 1;
                if n == 0 && k > 2 {
                    std::thread::sleep(Duration::from_secs(3));
                }
                Ok(RgbImage::new(4, 4))
            }) as Grab)
        });
        let mut cam = LiveCamera::with_opener(settings(200), opener, "fake".into()).unwrap();
        assert!(cam.next_frame().unwrap().is_some());
        assert!(cam.next_frame().unwrap().is_some());
        let t = Instant::now();
        let err = cam.next_frame().unwrap_err();
        assert!(matches!(err, CameraError::Stalled(_)), "{err}");
        assert!(t.elapsed() < Duration::from_millis(900));
        // Reopened on the next call.
        let f = cam.next_frame().unwrap().unwrap();
        assert_eq!(f.index, 2);
        assert_eq!(opens.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_camera_that_cannot_open_says_why() {
        let opener: Opener = Arc::new(|| Err("device offers: 640x480@30 YUYV".to_owned()));
        let err = LiveCamera::with_opener(settings(100), opener, "fake".into())
            .err()
            .unwrap();
        assert!(err.to_string().contains("offers"), "{err}");
    }

    /// Needs a real camera at index 0: `cargo test --lib camera::live -- --ignored`.
    #[test]
    #[ignore = "needs a camera attached"]
    fn real_camera_delivers_frames() {
        let mut cam =
            LiveCamera::open(LiveSettings::from_config(&CameraConfig::default()).unwrap()).unwrap();
        let f = cam.next_frame().unwrap().unwrap();
        assert!(f.image.width > 0);
    }
}
