//! Timing of the vision pipeline (`chessbot bench vision`).

use std::time::{Duration, Instant};

use super::image::RgbImage;
use super::pipeline::{self, ReadOptions};
use super::{locate, VisionError};

/// Median and minimum of the timed runs.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub median: Duration,
    pub min: Duration,
    pub runs: usize,
}

fn time(
    runs: usize,
    mut f: impl FnMut() -> Result<(), VisionError>,
) -> Result<Timing, VisionError> {
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let s = Instant::now();
        f()?;
        t.push(s.elapsed());
    }
    t.sort();
    Ok(Timing {
        median: t[t.len() / 2],
        min: t[0],
        runs: t.len(),
    })
}

/// Times a full localization and a tracked 64-square read of `frame`
/// (scaled to 1280x720 first, the robot camera's mode).
pub fn bench(frame: &RgbImage, runs: usize) -> Result<(Timing, Timing), VisionError> {
    let img = if (frame.width, frame.height) == (1280, 720) {
        frame.clone()
    } else {
        frame.resized(1280, 720)
    };
    let loc = locate::locate_board(&img)?;
    let full = time(runs, || locate::locate_board(&img).map(|_| ()))?;
    let opts = ReadOptions {
        tracked: Some(loc),
        ..Default::default()
    };
    let tracked = time(runs, || {
        let r = pipeline::read_frame(&img, &opts)?;
        if !r.tracked {
            return Err(VisionError::BoardNotFound(
                "tracked location was not reused".into(),
            ));
        }
        Ok(())
    })?;
    Ok((full, tracked))
}
