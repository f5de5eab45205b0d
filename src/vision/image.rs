//! Plain image buffers the vision algorithms work on (no OpenCV types here).

/// An 8-bit RGB image, rows top to bottom, pixels left to right.
#[derive(Debug, Clone, PartialEq)]
pub struct RgbImage {
    pub width: usize,
    pub height: usize,
    /// `width * height * 3` bytes, R G B per pixel.
    pub data: Vec<u8>,
}

/// A single-channel floating-point image (luminance, responses).
#[derive(Debug, Clone, PartialEq)]
pub struct GrayImage {
    pub width: usize,
    pub height: usize,
    pub data: Vec<f32>,
}

impl RgbImage {
    /// A black image.
    pub fn new(width: usize, height: usize) -> RgbImage {
        RgbImage {
            width,
            height,
            data: vec![0; width * height * 3],
        }
    }

    /// The pixel at integer coordinates (must be inside).
    pub fn get(&self, x: usize, y: usize) -> [u8; 3] {
        let i = (y * self.width + x) * 3;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// Sets the pixel at integer coordinates (must be inside).
    pub fn put(&mut self, x: usize, y: usize, rgb: [u8; 3]) {
        let i = (y * self.width + x) * 3;
        self.data[i..i + 3].copy_from_slice(&rgb);
    }

    /// Bilinear sample as floating RGB; `None` outside the image.
    pub fn sample(&self, x: f64, y: f64) -> Option<[f32; 3]> {
        if !(x >= 0.0 && y >= 0.0) || x > (self.width - 1) as f64 || y > (self.height - 1) as f64 {
            return None;
        }
        let x0 = (x.floor() as usize).min(self.width.saturating_sub(2));
        let y0 = (y.floor() as usize).min(self.height.saturating_sub(2));
        let fx = (x - x0 as f64) as f32;
        let fy = (y - y0 as f64) as f32;
        let x1 = (x0 + 1).min(self.width - 1);
        let y1 = (y0 + 1).min(self.height - 1);
        let mut out = [0f32; 3];
        for (c, o) in out.iter_mut().enumerate() {
            let p = |xx: usize, yy: usize| self.data[(yy * self.width + xx) * 3 + c] as f32;
            let top = p(x0, y0) * (1.0 - fx) + p(x1, y0) * fx;
            let bottom = p(x0, y1) * (1.0 - fx) + p(x1, y1) * fx;
            *o = top * (1.0 - fy) + bottom * fy;
        }
        Some(out)
    }

    /// Luminance (Rec. 601 weights), 0..255.
    pub fn to_gray(&self) -> GrayImage {
        let data = self
            .data
            .chunks_exact(3)
            .map(|p| luma([p[0] as f32, p[1] as f32, p[2] as f32]))
            .collect();
        GrayImage {
            width: self.width,
            height: self.height,
            data,
        }
    }

    /// Scaled copy (area average when shrinking, nearest when growing).
    /// A copy scaled down so its longer side is at most `max_side` (never
    /// up), and the scale used.
    pub fn fit_within(&self, max_side: usize) -> (RgbImage, f64) {
        let scale = (max_side as f64 / self.width.max(self.height) as f64).min(1.0);
        if scale >= 1.0 {
            return (self.clone(), 1.0);
        }
        let img = self.resized(
            (self.width as f64 * scale).round() as usize,
            (self.height as f64 * scale).round() as usize,
        );
        (img, scale)
    }

    pub fn resized(&self, width: usize, height: usize) -> RgbImage {
        let mut out = RgbImage::new(width.max(1), height.max(1));
        let sx = self.width as f64 / out.width as f64;
        let sy = self.height as f64 / out.height as f64;
        for y in 0..out.height {
            let ya = (y as f64 * sy) as usize;
            let yb = (((y + 1) as f64 * sy) as usize).clamp(ya + 1, self.height);
            for x in 0..out.width {
                let xa = (x as f64 * sx) as usize;
                let xb = (((x + 1) as f64 * sx) as usize).clamp(xa + 1, self.width);
                let mut acc = [0u32; 3];
                for yy in ya..yb {
                    for xx in xa..xb {
                        let p = self.get(xx, yy);
                        for c in 0..3 {
                            acc[c] += p[c] as u32;
                        }
                    }
                }
                let n = ((yb - ya) * (xb - xa)) as u32;
                out.put(
                    x,
                    y,
                    [(acc[0] / n) as u8, (acc[1] / n) as u8, (acc[2] / n) as u8],
                );
            }
        }
        out
    }
}

/// Luminance of a floating RGB triple (Rec. 601 weights).
pub fn luma(rgb: [f32; 3]) -> f32 {
    0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
}

impl GrayImage {
    /// A zero image.
    pub fn new(width: usize, height: usize) -> GrayImage {
        GrayImage {
            width,
            height,
            data: vec![0.0; width * height],
        }
    }

    pub fn at(&self, x: usize, y: usize) -> f32 {
        self.data[y * self.width + x]
    }

    /// Separable Gaussian blur with standard deviation `sigma` (edges clamped).
    pub fn blurred(&self, sigma: f32) -> GrayImage {
        let radius = (sigma * 3.0).ceil().max(1.0) as isize;
        let kernel: Vec<f32> = (-radius..=radius)
            .map(|i| (-(i * i) as f32 / (2.0 * sigma * sigma)).exp())
            .collect();
        let sum: f32 = kernel.iter().sum();
        let kernel: Vec<f32> = kernel.iter().map(|k| k / sum).collect();
        let (w, h) = (self.width as isize, self.height as isize);
        let mut tmp = GrayImage::new(self.width, self.height);
        for y in 0..h {
            for x in 0..w {
                let mut acc = 0.0;
                for (k, kv) in kernel.iter().enumerate() {
                    let xx = (x + k as isize - radius).clamp(0, w - 1);
                    acc += kv * self.data[(y * w + xx) as usize];
                }
                tmp.data[(y * w + x) as usize] = acc;
            }
        }
        let mut out = GrayImage::new(self.width, self.height);
        for y in 0..h {
            for x in 0..w {
                let mut acc = 0.0;
                for (k, kv) in kernel.iter().enumerate() {
                    let yy = (y + k as isize - radius).clamp(0, h - 1);
                    acc += kv * tmp.data[(yy * w + x) as usize];
                }
                out.data[(y * w + x) as usize] = acc;
            }
        }
        out
    }

    /// Bilinear sample; `None` outside the image.
    pub fn sample(&self, x: f64, y: f64) -> Option<f32> {
        if !(x >= 0.0 && y >= 0.0) || x > (self.width - 1) as f64 || y > (self.height - 1) as f64 {
            return None;
        }
        let x0 = (x.floor() as usize).min(self.width.saturating_sub(2));
        let y0 = (y.floor() as usize).min(self.height.saturating_sub(2));
        let x1 = (x0 + 1).min(self.width - 1);
        let y1 = (y0 + 1).min(self.height - 1);
        let fx = (x - x0 as f64) as f32;
        let fy = (y - y0 as f64) as f32;
        let top = self.at(x0, y0) * (1.0 - fx) + self.at(x1, y0) * fx;
        let bottom = self.at(x0, y1) * (1.0 - fx) + self.at(x1, y1) * fx;
        Some(top * (1.0 - fy) + bottom * fy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bilinear_sample_interpolates_between_pixels() {
        let mut img = RgbImage::new(2, 1);
        img.put(0, 0, [0, 0, 0]);
        img.put(1, 0, [100, 200, 50]);
        let s = img.sample(0.5, 0.0).unwrap();
        assert_eq!(s, [50.0, 100.0, 25.0]);
        assert!(img.sample(-0.1, 0.0).is_none());
        assert!(img.sample(1.5, 0.0).is_none());
    }

    #[test]
    fn fit_within_scales_the_longer_side_down_never_up() {
        let img = RgbImage::new(1280, 720);
        let (small, scale) = img.fit_within(640);
        assert_eq!((small.width, small.height, scale), (640, 360, 0.5));
        let (same, scale) = img.fit_within(2000);
        assert_eq!((same.width, same.height, scale), (1280, 720, 1.0));
    }

    #[test]
    fn blur_keeps_a_constant_image_constant() {
        let mut g = GrayImage::new(9, 7);
        g.data.iter_mut().for_each(|v| *v = 42.0);
        let b = g.blurred(1.5);
        assert!(b.data.iter().all(|v| (v - 42.0).abs() < 1e-3));
    }

    #[test]
    fn resize_averages_blocks() {
        let mut img = RgbImage::new(4, 2);
        for x in 0..4 {
            img.put(x, 0, [if x % 2 == 0 { 0 } else { 200 }, 0, 0]);
            img.put(x, 1, [100, 0, 0]);
        }
        let small = img.resized(2, 1);
        assert_eq!(small.get(0, 0), [100, 0, 0]);
    }
}
