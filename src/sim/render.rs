//! The software renderer: per-pixel ray casting for the board and table
//! planes (exact under lens distortion, textured, with a soft shadow raster)
//! and a z-buffer rasteriser for pieces, hand, arm and the board's edges;
//! then the sensor: exposure, vignetting, blur, noise and JPEG.
//!
//! Everything is single-threaded and seeded, so the same inputs give the
//! same bytes.

use nalgebra::{Point3, Vector3};
use opencv::core::{Mat, Scalar, Size, Vector, BORDER_REFLECT, CV_32FC1, CV_8UC3};
use opencv::prelude::*;
use opencv::{imgcodecs, imgproc};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use shakmaty::Role;

use super::camera::{Camera, MIN_DEPTH_MM};
use super::mesh::{capsule, Mesh};
use super::pieces::{piece_mesh, shadow_discs};
use super::texture::{value_noise, wood, BoardTexture};
use super::truth::{FrameTruth, ObjectIds};
use super::world::{Capsule, Rgb, World, UNIT_PER_SQUARE};
use super::SimError;

/// How the simulated sensor degrades the picture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RenderOptions {
    /// Seed of the sensor noise.
    pub seed: u64,
    /// Gaussian sensor noise, standard deviation in 8-bit levels.
    pub noise_sigma: f32,
    /// Lens/focus blur, Gaussian sigma in pixels (0 = none).
    pub blur_sigma: f32,
    /// Exposure multiplier (1 = nominal).
    pub exposure: f32,
    /// Darkening toward the image corners, 0..1.
    pub vignetting: f32,
    /// JPEG round trip at this quality (1..=100), or none.
    pub jpeg_quality: Option<u8>,
    /// Segments around each piece's axis (detail vs speed).
    pub segments: usize,
}

impl RenderOptions {
    /// A clean picture: a touch of blur against jaggies, nothing else.
    pub fn clean() -> RenderOptions {
        RenderOptions {
            seed: 0,
            noise_sigma: 0.0,
            blur_sigma: 0.6,
            exposure: 1.0,
            vignetting: 0.0,
            jpeg_quality: None,
            segments: 24,
        }
    }

    /// A webcam-like picture with knobs drawn from `rng`.
    pub fn webcam(rng: &mut ChaCha8Rng) -> RenderOptions {
        RenderOptions {
            seed: rng.random(),
            noise_sigma: rng.random_range(1.0..4.0),
            blur_sigma: rng.random_range(0.6..1.3),
            exposure: rng.random_range(0.8..1.2),
            vignetting: rng.random_range(0.1..0.35),
            jpeg_quality: Some(rng.random_range(60..92)),
            segments: 24,
        }
    }

    fn validate(&self) -> Result<(), SimError> {
        let bad = |what: String| Err(SimError::BadOptions(what));
        if !(0.0..=64.0).contains(&self.noise_sigma) {
            return bad(format!("noise sigma {}: must be 0..=64", self.noise_sigma));
        }
        if !(0.0..=20.0).contains(&self.blur_sigma) {
            return bad(format!("blur sigma {}: must be 0..=20", self.blur_sigma));
        }
        if !(0.05..=20.0).contains(&self.exposure) {
            return bad(format!("exposure {}: must be 0.05..=20", self.exposure));
        }
        if !(0.0..=1.0).contains(&self.vignetting) {
            return bad(format!("vignetting {}: must be 0..=1", self.vignetting));
        }
        if let Some(q) = self.jpeg_quality {
            if !(1..=100).contains(&q) {
                return bad(format!("JPEG quality {q}: must be 1..=100"));
            }
        }
        if !(6..=128).contains(&self.segments) {
            return bad(format!("segments {}: must be 6..=128", self.segments));
        }
        Ok(())
    }
}

/// An 8-bit RGB picture, rows top to bottom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    /// `width * height * 3` bytes, R G B.
    pub data: Vec<u8>,
}

impl Image {
    /// The pixel at (x, y) as [r, g, b].
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    /// The picture as an OpenCV BGR `Mat` (what `imread` would give).
    pub fn to_bgr_mat(&self) -> Result<Mat, SimError> {
        let mut mat = Mat::new_rows_cols_with_default(
            self.height as i32,
            self.width as i32,
            CV_8UC3,
            Scalar::all(0.0),
        )
        .map_err(cv)?;
        let bytes = mat.data_bytes_mut().map_err(cv)?;
        for (dst, src) in bytes.chunks_exact_mut(3).zip(self.data.chunks_exact(3)) {
            dst[0] = src[2];
            dst[1] = src[1];
            dst[2] = src[0];
        }
        Ok(mat)
    }

    /// Reads a BGR 8-bit `Mat` of this image's size back into RGB.
    fn from_bgr_mat(mat: &Mat) -> Result<Image, SimError> {
        let bytes = mat.data_bytes().map_err(cv)?;
        let mut data = Vec::with_capacity(bytes.len());
        for px in bytes.chunks_exact(3) {
            data.extend_from_slice(&[px[2], px[1], px[0]]);
        }
        Ok(Image {
            width: mat.cols() as u32,
            height: mat.rows() as u32,
            data,
        })
    }

    /// JPEG bytes of the picture at a quality (1..=100).
    pub fn encode_jpeg(&self, quality: u8) -> Result<Vec<u8>, SimError> {
        let mat = self.to_bgr_mat()?;
        let mut buf = Vector::<u8>::new();
        let params = Vector::from_slice(&[
            imgcodecs::IMWRITE_JPEG_QUALITY,
            i32::from(quality.clamp(1, 100)),
        ]);
        imgcodecs::imencode(".jpg", &mat, &mut buf, &params).map_err(cv)?;
        Ok(buf.to_vec())
    }

    /// PNG bytes of the picture.
    pub fn encode_png(&self) -> Result<Vec<u8>, SimError> {
        let mat = self.to_bgr_mat()?;
        let mut buf = Vector::<u8>::new();
        imgcodecs::imencode(".png", &mat, &mut buf, &Vector::new()).map_err(cv)?;
        Ok(buf.to_vec())
    }
}

fn cv(e: opencv::Error) -> SimError {
    SimError::OpenCv(e.to_string())
}

/// One rendered picture and what is really in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub image: Image,
    pub truth: FrameTruth,
}

/// Renders one frame (builds a [`Renderer`] for the camera; keep a
/// `Renderer` to render many frames from one camera faster).
pub fn render(world: &World, camera: &Camera, options: &RenderOptions) -> Result<Frame, SimError> {
    Renderer::new(camera.clone()).render(world, options)
}

/// A renderer for one camera, caching its per-pixel rays, the baked board
/// texture and the piece meshes between frames.
#[derive(Debug)]
pub struct Renderer {
    camera: Camera,
    /// Ray direction per pixel in the board frame, scaled so that the
    /// parameter along it is the camera-frame depth.
    rays: Vec<[f32; 3]>,
    origin: Point3<f64>,
    texture: Option<(u64, BoardTexture)>,
    meshes: Option<(u64, Vec<Mesh>)>,
}

/// Millimetres per cell of the shadow raster on the board plane.
const SHADOW_CELL_MM: f64 = 2.0;
/// The shadow raster reaches this far beyond the board's frame (long
/// shadows of the arm and hand fall on the table).
const SHADOW_MARGIN_MM: f64 = 400.0;
/// The key light is kept at least this high above the horizon (sin of
/// ~12 degrees) so shadows stay finite.
const MIN_LIGHT_Z: f64 = 0.2;
/// Blinn-Phong exponent of the glossy surfaces.
const SHININESS: f32 = 24.0;

impl Renderer {
    pub fn new(camera: Camera) -> Renderer {
        let board_from_camera = camera.camera_from_board.inverse();
        let rot = board_from_camera.rotation;
        let mut rays = Vec::with_capacity((camera.width * camera.height) as usize);
        for v in 0..camera.height {
            for u in 0..camera.width {
                let r = camera.ray_camera(u as f64 + 0.5, v as f64 + 0.5);
                let d = rot * r;
                rays.push([d.x as f32, d.y as f32, d.z as f32]);
            }
        }
        Renderer {
            origin: board_from_camera * Point3::origin(),
            camera,
            rays,
            texture: None,
            meshes: None,
        }
    }

    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    /// Renders the world as this camera sees it.
    pub fn render(&mut self, world: &World, options: &RenderOptions) -> Result<Frame, SimError> {
        options.validate()?;
        let (w, h) = (self.camera.width as usize, self.camera.height as usize);
        let board = &world.board;
        let tex_key = world.texture_seed
            ^ board.square_mm.to_bits().rotate_left(7)
            ^ board.border_mm.to_bits().rotate_left(19)
            ^ (board.style as u64).rotate_left(41);
        if self.texture.as_ref().map(|t| t.0) != Some(tex_key) {
            self.texture = Some((tex_key, BoardTexture::bake(board, world.texture_seed)?));
        }
        let unit = UNIT_PER_SQUARE * board.square_mm;
        let mesh_key = unit.to_bits() ^ (options.segments as u64).rotate_left(50);
        if self.meshes.as_ref().map(|m| m.0) != Some(mesh_key) {
            let meshes = Role::ALL
                .iter()
                .map(|&r| piece_mesh(r, unit, options.segments))
                .collect();
            self.meshes = Some((mesh_key, meshes));
        }
        let light = light_of(world);
        let shadow = ShadowRaster::build(world, &light, unit)?;

        let mut buf = Buffers {
            w,
            h,
            colour: vec![[0.0; 3]; w * h],
            depth: vec![f32::INFINITY; w * h],
            ids: vec![ObjectIds::SCENE; w * h],
        };
        let texture =
            self.texture.as_ref().map(|t| &t.1).ok_or_else(|| {
                SimError::BadWorld("board texture missing after baking".to_owned())
            })?;
        self.shade_planes(world, texture, &shadow, &light, &mut buf);

        let meshes =
            &self.meshes.as_ref().map(|m| &m.1).ok_or_else(|| {
                SimError::BadWorld("piece meshes missing after building".to_owned())
            })?;
        let mut raster = Rasteriser {
            camera: &self.camera,
            eye: self.origin,
            light: &light,
        };
        // The board slab's edges (its top is the ray-cast plane).
        let edge = Material {
            colour: scale(board.border, 0.7),
            grain: 0.0,
            gloss: 0.05,
        };
        raster.draw(&board_edges(board), &edge, ObjectIds::SCENE, 0, &mut buf);

        for (i, p) in world.pieces.iter().enumerate() {
            let m = &meshes[role_index(p.piece.role)];
            let rot = nalgebra::Rotation3::from_axis_angle(&Vector3::z_axis(), p.rotation)
                * nalgebra::Rotation3::from_axis_angle(&Vector3::x_axis(), p.tilt);
            let mut placed = Mesh::default();
            placed.append(m, rot.matrix(), p.position.coords);
            let mat = world.set.material(p.piece.color);
            let material = Material {
                colour: mat.colour,
                grain: mat.grain,
                gloss: mat.gloss,
            };
            raster.draw(
                &placed,
                &material,
                ObjectIds::piece(i),
                world.texture_seed ^ (i as u64 * 7919),
                &mut buf,
            );
        }
        if let Some(hand) = &world.hand {
            for (k, c) in hand.capsules.iter().enumerate() {
                let colour = if k < hand.sleeve_capsules {
                    hand.sleeve
                } else {
                    hand.skin
                };
                let m = capsule(c.a, c.b, c.radius, 14);
                let material = Material {
                    colour,
                    grain: 0.0,
                    gloss: 0.12,
                };
                raster.draw(&m, &material, ObjectIds::HAND, 0, &mut buf);
            }
        }
        if let Some(arm) = &world.arm {
            for c in &arm.capsules {
                let m = capsule(c.a, c.b, c.radius, 12);
                let material = Material {
                    colour: arm.colour,
                    grain: 0.0,
                    gloss: 0.3,
                };
                raster.draw(&m, &material, ObjectIds::ARM, 0, &mut buf);
            }
        }

        let image = develop(&buf, options)?;
        let truth = FrameTruth::compute(world, &self.camera, &buf.ids)?;
        Ok(Frame { image, truth })
    }

    /// Ray-casts the board top, the table and the wall behind.
    fn shade_planes(
        &self,
        world: &World,
        texture: &BoardTexture,
        shadow: &ShadowRaster,
        light: &Light,
        buf: &mut Buffers,
    ) {
        let board = &world.board;
        let (lo, hi) = (-board.border_mm, board.play_mm() + board.border_mm);
        let o = self.origin;
        let t_board = -board.thickness_mm;
        let lit = &world.lighting;
        let centre = board.centre();
        // Hot spot of the lamp: off-centre toward the light.
        let hot = (
            centre.x + light.dir.x / light.dir.z * 150.0,
            centre.y + light.dir.y / light.dir.z * 150.0,
        );
        let reach2 = (board.fit_radius() * 1.6).powi(2);
        for (i, d) in self.rays.iter().enumerate() {
            let d = Vector3::new(d[0] as f64, d[1] as f64, d[2] as f64);
            if d.z >= -1e-9 || o.z <= 0.0 {
                buf.colour[i] = scale(WALL, lit.ambient + 0.3 * light.intensity);
                continue;
            }
            let t = -o.z / d.z;
            let p = o + d * t;
            let (t, p, base, gloss) = if p.x >= lo && p.x <= hi && p.y >= lo && p.y <= hi {
                (t, p, texture.sample(p.x, p.y), board.gloss)
            } else {
                let t = (t_board - o.z) / d.z;
                let p = o + d * t;
                (t, p, table_colour(world, p.x, p.y), 0.08)
            };
            let s = shadow.at(p.x, p.y);
            let falloff = 1.0
                - lit.falloff
                    * (((p.x - hot.0).powi(2) + (p.y - hot.1).powi(2)) / reach2).min(1.0) as f32;
            let direct =
                light.intensity * light.dir.z as f32 * (1.0 - lit.shadow_strength * s) * falloff;
            let v = (o - p).normalize();
            let hz = (light.dir + v).normalize().z.max(0.0) as f32;
            let spec = gloss * light.intensity * hz.powf(SHININESS) * (1.0 - s);
            let ambient = lit.ambient * falloff;
            buf.colour[i] =
                std::array::from_fn(|k| (base[k] * (ambient + direct) + spec) * light.tint[k]);
            buf.depth[i] = t as f32;
        }
    }
}

/// The four side faces of the board, cut into short pieces so that their
/// straight-line rasterisation stays close to the distorted projection.
fn board_edges(board: &super::world::BoardSpec) -> Mesh {
    let (lo, hi) = (-board.border_mm, board.play_mm() + board.border_mm);
    let corners = [(lo, lo), (hi, lo), (hi, hi), (lo, hi)];
    let mut m = Mesh::default();
    for k in 0..4 {
        let (a, b) = (corners[k], corners[(k + 1) % 4]);
        let normal = Vector3::new(b.1 - a.1, a.0 - b.0, 0.0).normalize();
        for s in 0..EDGE_PIECES {
            let (t0, t1) = (
                s as f64 / EDGE_PIECES as f64,
                (s + 1) as f64 / EDGE_PIECES as f64,
            );
            let p = |t: f64, z: f64| Point3::new(a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t, z);
            let base = m.positions.len() as u32;
            m.positions.extend([
                p(t0, -board.thickness_mm),
                p(t1, -board.thickness_mm),
                p(t1, 0.0),
                p(t0, 0.0),
            ]);
            m.normals.extend([normal; 4]);
            m.triangles.push([base, base + 1, base + 2]);
            m.triangles.push([base, base + 2, base + 3]);
        }
    }
    m
}

/// Pieces per board side for [`board_edges`].
const EDGE_PIECES: usize = 32;
/// Colour of whatever is behind the table (a wall), linear RGB.
const WALL: Rgb = [0.45, 0.45, 0.47];

fn table_colour(world: &World, x: f64, y: f64) -> Rgb {
    let g = if world.table.grain > 0.0 {
        world.table.grain
            * wood(
                x as f32 * 0.5,
                y as f32 * 0.5,
                0.2,
                world.texture_seed ^ 0x7AB1E,
            )
    } else {
        0.0
    };
    let blotch = 0.04 * value_noise(x as f32 * 0.004, y as f32 * 0.004, world.texture_seed);
    scale(world.table.colour, 1.0 + 0.12 * g + blotch)
}

fn scale(c: Rgb, f: f32) -> Rgb {
    [c[0] * f, c[1] * f, c[2] * f]
}

fn role_index(role: Role) -> usize {
    Role::ALL.iter().position(|&r| r == role).unwrap_or(0)
}

/// The key light as the renderer uses it.
struct Light {
    /// Unit vector toward the light.
    dir: Vector3<f64>,
    intensity: f32,
    ambient: f32,
    /// Light colour from its temperature, as partly corrected by the camera's white balance.
    tint: Rgb,
}

fn light_of(world: &World) -> Light {
    let l = &world.lighting;
    let mut dir = l.direction.try_normalize(1e-9).unwrap_or(Vector3::z());
    if dir.z < MIN_LIGHT_Z {
        dir.z = MIN_LIGHT_Z;
        dir = dir.normalize();
    }
    Light {
        dir,
        intensity: l.intensity,
        ambient: l.ambient,
        tint: temperature_tint(l.temperature_k),
    }
}

/// RGB gains of light at a colour temperature relative to 5500 K daylight,
/// halved toward neutral as a webcam's auto white balance would
/// (curve after Tanner Helland's blackbody fit).
pub fn temperature_tint(kelvin: f32) -> Rgb {
    let t = (kelvin.clamp(1500.0, 12000.0)) / 100.0;
    let r = if t <= 66.0 {
        1.0
    } else {
        (1.2929 * (t - 60.0).powf(-0.1332)).min(1.0)
    };
    let g = if t <= 66.0 {
        ((0.3901 * t.ln() - 0.6318).clamp(0.0, 1.0)).max(0.2)
    } else {
        (1.1298 * (t - 60.0).powf(-0.0755)).min(1.0)
    };
    let b = if t >= 66.0 {
        1.0
    } else if t <= 19.0 {
        0.2
    } else {
        (0.5432 * (t - 10.0).ln() - 1.1963).clamp(0.2, 1.0)
    };
    // Normalise to the green channel, then go halfway to neutral.
    let n = [r / g, 1.0, b / g];
    let mut out = [0.0; 3];
    for k in 0..3 {
        out[k] = 0.5 * (n[k] + 1.0);
    }
    let m = (out[0] + out[1] + out[2]) / 3.0;
    scale(out, 1.0 / m)
}

struct Buffers {
    w: usize,
    h: usize,
    colour: Vec<Rgb>,
    depth: Vec<f32>,
    ids: Vec<u16>,
}

/// Surface look of a mesh.
struct Material {
    colour: Rgb,
    grain: f32,
    gloss: f32,
}

struct Rasteriser<'a> {
    camera: &'a Camera,
    eye: Point3<f64>,
    light: &'a Light,
}

impl Rasteriser<'_> {
    /// Gouraud-shades and z-buffers a board-frame mesh.
    fn draw(&mut self, mesh: &Mesh, mat: &Material, id: u16, seed: u64, buf: &mut Buffers) {
        let cam = self.camera;
        // Vertex stage: project and light each vertex.
        let mut screen: Vec<Option<[f32; 3]>> = Vec::with_capacity(mesh.positions.len());
        let mut colours: Vec<Rgb> = Vec::with_capacity(mesh.positions.len());
        for (p, n) in mesh.positions.iter().zip(&mesh.normals) {
            let pc = cam.camera_from_board * p;
            screen.push(if pc.z > MIN_DEPTH_MM {
                cam.project_camera(&pc)
                    .map(|px| [px.x as f32, px.y as f32, (1.0 / pc.z) as f32])
            } else {
                None
            });
            let v = (self.eye - p).normalize();
            // Two-sided: a normal facing away from the eye is flipped.
            let n = if n.dot(&v) < 0.0 { -n } else { *n };
            let diff = n.dot(&self.light.dir).max(0.0) as f32;
            let h = (self.light.dir + v).normalize();
            let spec = mat.gloss * (n.dot(&h).max(0.0) as f32).powf(SHININESS * 1.5);
            let hemi = 0.55 + 0.45 * n.z as f32;
            let g = if mat.grain > 0.0 {
                mat.grain
                    * wood(
                        p.x as f32 * 2.0,
                        p.z as f32 * 0.6,
                        std::f32::consts::FRAC_PI_2,
                        seed,
                    )
            } else {
                0.0
            };
            let tone = 1.0 + 0.15 * g;
            let lum = self.light.ambient * hemi + self.light.intensity * diff;
            let c: Rgb = std::array::from_fn(|k| {
                (mat.colour[k] * tone * lum + spec * self.light.intensity) * self.light.tint[k]
            });
            colours.push(c);
        }
        // Pixel stage.
        for t in &mesh.triangles {
            let (Some(a), Some(b), Some(c)) = (
                screen[t[0] as usize],
                screen[t[1] as usize],
                screen[t[2] as usize],
            ) else {
                continue;
            };
            let area = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
            if area.abs() < 1e-6 {
                continue;
            }
            let min_x = a[0].min(b[0]).min(c[0]).floor().max(0.0) as i64;
            let max_x = (a[0].max(b[0]).max(c[0]).ceil() as i64).min(buf.w as i64 - 1);
            let min_y = a[1].min(b[1]).min(c[1]).floor().max(0.0) as i64;
            let max_y = (a[1].max(b[1]).max(c[1]).ceil() as i64).min(buf.h as i64 - 1);
            if min_x > max_x || min_y > max_y {
                continue;
            }
            let (ca, cb, cc) = (
                colours[t[0] as usize],
                colours[t[1] as usize],
                colours[t[2] as usize],
            );
            let inv = 1.0 / area;
            for y in min_y..=max_y {
                let py = y as f32 + 0.5;
                for x in min_x..=max_x {
                    let px = x as f32 + 0.5;
                    let w0 = ((b[0] - px) * (c[1] - py) - (b[1] - py) * (c[0] - px)) * inv;
                    let w1 = ((c[0] - px) * (a[1] - py) - (c[1] - py) * (a[0] - px)) * inv;
                    let w2 = 1.0 - w0 - w1;
                    if w0 < 0.0 || w1 < 0.0 || w2 < 0.0 {
                        continue;
                    }
                    let inv_z = w0 * a[2] + w1 * b[2] + w2 * c[2];
                    let z = 1.0 / inv_z;
                    let i = y as usize * buf.w + x as usize;
                    if z >= buf.depth[i] {
                        continue;
                    }
                    buf.depth[i] = z;
                    buf.ids[i] = id;
                    buf.colour[i] = [
                        w0 * ca[0] + w1 * cb[0] + w2 * cc[0],
                        w0 * ca[1] + w1 * cb[1] + w2 * cc[1],
                        w0 * ca[2] + w1 * cb[2] + w2 * cc[2],
                    ];
                }
            }
        }
    }
}

/// Soft shadows on the board plane: occluders (piece discs, hand and arm
/// spheres) projected along the light into a raster, then blurred.
struct ShadowRaster {
    x0: f64,
    y0: f64,
    n: usize,
    cells: Vec<f32>,
}

impl ShadowRaster {
    fn build(world: &World, light: &Light, unit: f64) -> Result<ShadowRaster, SimError> {
        let b = &world.board;
        let x0 = -b.border_mm - SHADOW_MARGIN_MM;
        let size = b.play_mm() + 2.0 * (b.border_mm + SHADOW_MARGIN_MM);
        let n = (size / SHADOW_CELL_MM).ceil() as usize;
        let mut r = ShadowRaster {
            x0,
            y0: x0,
            n,
            cells: vec![0.0; n * n],
        };
        let (sx, sy) = (light.dir.x / light.dir.z, light.dir.y / light.dir.z);
        let mut discs: Vec<(f64, f64, f64)> = Vec::new();
        for p in &world.pieces {
            for (zc, rad) in shadow_discs(p.piece.role, unit) {
                let z = p.position.z + zc;
                discs.push((p.position.x - sx * z, p.position.y - sy * z, rad));
            }
        }
        let mut capsules: Vec<&Capsule> = Vec::new();
        if let Some(h) = &world.hand {
            capsules.extend(&h.capsules);
        }
        if let Some(a) = &world.arm {
            capsules.extend(&a.capsules);
        }
        for c in capsules {
            let len = (c.b - c.a).norm();
            let steps = ((len / (c.radius * 0.5)).ceil() as usize).max(1);
            for k in 0..=steps {
                let q = c.a + (c.b - c.a) * (k as f64 / steps as f64);
                if q.z <= 0.0 {
                    continue;
                }
                discs.push((q.x - sx * q.z, q.y - sy * q.z, c.radius));
            }
        }
        for (cx, cy, rad) in discs {
            r.fill_disc(cx, cy, rad);
        }
        let softness = world.lighting.shadow_softness_mm.max(0.0) as f64 / SHADOW_CELL_MM;
        if softness > 0.3 {
            let mut mat =
                Mat::new_rows_cols_with_default(n as i32, n as i32, CV_32FC1, Scalar::all(0.0))
                    .map_err(cv)?;
            mat.data_typed_mut::<f32>()
                .map_err(cv)?
                .copy_from_slice(&r.cells);
            let mut out = Mat::default();
            imgproc::gaussian_blur(
                &mat,
                &mut out,
                Size::new(0, 0),
                softness,
                softness,
                BORDER_REFLECT,
            )
            .map_err(cv)?;
            r.cells
                .copy_from_slice(out.data_typed::<f32>().map_err(cv)?);
        }
        Ok(r)
    }

    fn fill_disc(&mut self, cx: f64, cy: f64, rad: f64) {
        let to = |v: f64, o: f64| (v - o) / SHADOW_CELL_MM;
        let (i0, i1) = (to(cx - rad, self.x0).floor(), to(cx + rad, self.x0).ceil());
        let (j0, j1) = (to(cy - rad, self.y0).floor(), to(cy + rad, self.y0).ceil());
        let n = self.n as f64;
        let (i0, i1) = (i0.max(0.0) as usize, i1.min(n - 1.0).max(-1.0));
        let (j0, j1) = (j0.max(0.0) as usize, j1.min(n - 1.0).max(-1.0));
        if i1 < 0.0 || j1 < 0.0 {
            return;
        }
        let r2 = rad * rad;
        for j in j0..=(j1 as usize) {
            let y = self.y0 + (j as f64 + 0.5) * SHADOW_CELL_MM;
            for i in i0..=(i1 as usize) {
                let x = self.x0 + (i as f64 + 0.5) * SHADOW_CELL_MM;
                if (x - cx).powi(2) + (y - cy).powi(2) <= r2 {
                    self.cells[j * self.n + i] = 1.0;
                }
            }
        }
    }

    /// Shadow 0 (lit) .. 1 (fully shadowed) at a board-plane point.
    fn at(&self, x: f64, y: f64) -> f32 {
        let i = ((x - self.x0) / SHADOW_CELL_MM).floor();
        let j = ((y - self.y0) / SHADOW_CELL_MM).floor();
        if i < 0.0 || j < 0.0 || i >= self.n as f64 || j >= self.n as f64 {
            return 0.0;
        }
        self.cells[j as usize * self.n + i as usize]
    }
}

/// The sensor: exposure, vignetting, gamma, blur, noise, JPEG.
fn develop(buf: &Buffers, o: &RenderOptions) -> Result<Image, SimError> {
    let (w, h) = (buf.w, buf.h);
    let (cx, cy) = (w as f32 / 2.0, h as f32 / 2.0);
    let r2max = cx * cx + cy * cy;
    // Gamma lookup over linear values 0..2 (brighter saturates).
    let lut: Vec<u8> = (0..=LUT_SIZE)
        .map(|i| {
            let v = i as f32 / LUT_SIZE as f32 * LUT_RANGE;
            (v.min(1.0).powf(1.0 / 2.2) * 255.0).round() as u8
        })
        .collect();
    let mut data = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            let i = y * w + x;
            let (dx, dy) = (x as f32 - cx, y as f32 - cy);
            let gain = o.exposure * (1.0 - o.vignetting * (dx * dx + dy * dy) / r2max);
            for k in 0..3 {
                let v = (buf.colour[i][k] * gain).clamp(0.0, LUT_RANGE);
                data[i * 3 + k] = lut[(v / LUT_RANGE * LUT_SIZE as f32) as usize];
            }
        }
    }
    let mut image = Image {
        width: w as u32,
        height: h as u32,
        data,
    };
    if o.blur_sigma > 0.0 {
        let mat = image.to_bgr_mat()?;
        let mut out = Mat::default();
        let s = o.blur_sigma as f64;
        imgproc::gaussian_blur(&mat, &mut out, Size::new(0, 0), s, s, BORDER_REFLECT)
            .map_err(cv)?;
        image = Image::from_bgr_mat(&out)?;
    }
    if o.noise_sigma > 0.0 {
        let mut rng = ChaCha8Rng::seed_from_u64(o.seed);
        // Sum of four uniforms (Irwin-Hall) is close enough to Gaussian
        // sensor noise and costs one 64-bit draw per sample.
        let norm = o.noise_sigma / IRWIN_HALL4_SD;
        for v in image.data.iter_mut() {
            let r = rng.next_u64();
            let s = ((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48)) as f32
                / 65535.0
                - 2.0;
            *v = (f32::from(*v) + s * norm).round().clamp(0.0, 255.0) as u8;
        }
    }
    if let Some(q) = o.jpeg_quality {
        let mat = image.to_bgr_mat()?;
        let mut bytes = Vector::<u8>::new();
        let params = Vector::from_slice(&[imgcodecs::IMWRITE_JPEG_QUALITY, i32::from(q)]);
        imgcodecs::imencode(".jpg", &mat, &mut bytes, &params).map_err(cv)?;
        let decoded = imgcodecs::imdecode(&bytes, imgcodecs::IMREAD_COLOR).map_err(cv)?;
        image = Image::from_bgr_mat(&decoded)?;
    }
    Ok(image)
}

/// Standard deviation of the sum of four uniforms on 0..1, each minus 1/2.
const IRWIN_HALL4_SD: f32 = 0.577_350_3;
const LUT_SIZE: usize = 4096;
const LUT_RANGE: f32 = 2.0;
