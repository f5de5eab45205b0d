//! The simulator as a frame source: renders the simulated world through its
//! camera, so the vision and recognition code runs unchanged on synthetic
//! frames (tests, benchmarks, the simulated robot game).

use std::time::Duration;

use super::{CameraError, Frame, FrameSource};
use crate::sim::{self, RenderOptions, Renderer, World};
use crate::vision::image::RgbImage;

/// The renderer's RGB buffer as the vision code's image type.
pub fn rgb_from_sim(image: sim::Image) -> RgbImage {
    RgbImage {
        width: image.width as usize,
        height: image.height as usize,
        data: image.data,
    }
}

/// Renders one frame of a scene: a convenience for benchmarks and tests.
pub fn render_scene(scene: &sim::Scene) -> Result<RgbImage, CameraError> {
    sim::render(&scene.world, &scene.camera, &scene.options)
        .map(|f| rgb_from_sim(f.image))
        .map_err(|e| CameraError::Frame(format!("simulator: {e}")))
}

/// A simulated camera watching a world that something else changes between
/// frames (a scripted person, the simulated arm). Frame timestamps advance at
/// the nominal rate, like a camera running at `fps`.
pub struct SimCamera<W: FnMut(u64) -> Option<World>> {
    renderer: Renderer,
    options: RenderOptions,
    next_world: W,
    interval: Duration,
    index: u64,
}

impl<W: FnMut(u64) -> Option<World>> SimCamera<W> {
    /// `next_world(i)` gives the world at frame `i`, or `None` when the
    /// stream ends.
    pub fn new(
        camera: sim::Camera,
        options: RenderOptions,
        fps: f64,
        next_world: W,
    ) -> Result<Self, CameraError> {
        if !(fps > 0.0 && fps.is_finite()) {
            return Err(CameraError::Open(format!(
                "simulated camera frame rate {fps}: must be positive"
            )));
        }
        Ok(SimCamera {
            renderer: Renderer::new(camera),
            options,
            next_world,
            interval: Duration::from_secs_f64(1.0 / fps),
            index: 0,
        })
    }
}

impl<W: FnMut(u64) -> Option<World>> FrameSource for SimCamera<W> {
    fn next_frame(&mut self) -> Result<Option<Frame>, CameraError> {
        let Some(world) = (self.next_world)(self.index) else {
            return Ok(None);
        };
        let frame = self
            .renderer
            .render(&world, &self.options)
            .map_err(|e| CameraError::Frame(format!("simulator: {e}")))?;
        let index = self.index;
        self.index += 1;
        Ok(Some(Frame {
            image: rgb_from_sim(frame.image),
            timestamp: self.interval * index as u32,
            index,
        }))
    }

    fn describe(&self) -> String {
        let c = self.renderer.camera();
        format!("simulated camera ({}x{})", c.width, c.height)
    }
}
