//! OpenCV adapters: image files <-> [`RgbImage`].

use std::path::Path;

use opencv::core::{Mat, Vec3b};
use opencv::prelude::*;
use opencv::{imgcodecs, imgproc};

use super::image::RgbImage;
use super::VisionError;

/// Converts an 8-bit BGR OpenCV matrix to an RGB buffer.
pub fn rgb_from_bgr_mat(mat: &Mat) -> Result<RgbImage, VisionError> {
    if mat.empty() {
        return Err(VisionError::Input("empty image".into()));
    }
    let mut bgr = Mat::default();
    let src = if mat.typ() == opencv::core::CV_8UC3 {
        mat
    } else if mat.typ() == opencv::core::CV_8UC1 {
        imgproc::cvt_color_def(mat, &mut bgr, imgproc::COLOR_GRAY2BGR)?;
        &bgr
    } else if mat.typ() == opencv::core::CV_8UC4 {
        imgproc::cvt_color_def(mat, &mut bgr, imgproc::COLOR_BGRA2BGR)?;
        &bgr
    } else {
        return Err(VisionError::Input(format!(
            "unsupported pixel type {} (need 8-bit gray, BGR or BGRA)",
            mat.typ()
        )));
    };
    let cont;
    let src = if src.is_continuous() {
        src
    } else {
        cont = src.try_clone()?;
        &cont
    };
    let (w, h) = (src.cols() as usize, src.rows() as usize);
    let bytes = src.data_bytes()?;
    let mut out = RgbImage::new(w, h);
    for (o, i) in out.data.chunks_exact_mut(3).zip(bytes.chunks_exact(3)) {
        o[0] = i[2];
        o[1] = i[1];
        o[2] = i[0];
    }
    Ok(out)
}

/// An owned BGR matrix with the image's pixels.
pub fn bgr_mat_from_rgb(img: &RgbImage) -> Result<Mat, VisionError> {
    let mut bgr = img.data.clone();
    for p in bgr.chunks_exact_mut(3) {
        p.swap(0, 2);
    }
    let m = Mat::new_rows_cols_with_bytes::<Vec3b>(img.height as i32, img.width as i32, &bgr)?;
    Ok(m.try_clone()?)
}

/// Reads an image file (any format OpenCV decodes).
pub fn load_image(path: &Path) -> Result<RgbImage, VisionError> {
    if !path.is_file() {
        return Err(VisionError::Input(format!(
            "{}: no such image file",
            path.display()
        )));
    }
    let mat = imgcodecs::imread(path, imgcodecs::IMREAD_COLOR)?;
    if mat.empty() {
        return Err(VisionError::Input(format!(
            "{}: not an image OpenCV can decode",
            path.display()
        )));
    }
    rgb_from_bgr_mat(&mat)
}

/// Writes an image file; the format follows the extension (`.png`, `.jpg`).
pub fn save_image(img: &RgbImage, path: &Path) -> Result<(), VisionError> {
    let mat = bgr_mat_from_rgb(img)?;
    // Maximum PNG compression: overlays are committed for review.
    let params = opencv::core::Vector::<i32>::from_slice(&[imgcodecs::IMWRITE_PNG_COMPRESSION, 9]);
    let ok = imgcodecs::imwrite(path, &mat, &params)?;
    if !ok {
        return Err(VisionError::Input(format!(
            "{}: could not write image",
            path.display()
        )));
    }
    Ok(())
}

/// Encodes an image in memory: `ext` is `".png"` or `".jpg"` (JPEG at
/// `quality` 0..=100; ignored for PNG).
pub fn encode_image(img: &RgbImage, ext: &str, quality: i32) -> Result<Vec<u8>, VisionError> {
    let mat = bgr_mat_from_rgb(img)?;
    let params =
        opencv::core::Vector::<i32>::from_slice(&[imgcodecs::IMWRITE_JPEG_QUALITY, quality]);
    let mut buf = opencv::core::Vector::<u8>::new();
    if !imgcodecs::imencode(ext, &mat, &mut buf, &params)? {
        return Err(VisionError::Input(format!(
            "could not encode an image as {ext}"
        )));
    }
    Ok(buf.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_jpeg_decodes_to_the_same_size() {
        let mut img = RgbImage::new(40, 30);
        img.put(5, 5, [200, 10, 10]);
        let bytes = encode_image(&img, ".jpg", 80).unwrap();
        assert_eq!(&bytes[..2], &[0xff, 0xd8], "JPEG start-of-image marker");
        let buf = opencv::core::Vector::<u8>::from_slice(&bytes);
        let back = imgcodecs::imdecode(&buf, imgcodecs::IMREAD_COLOR).unwrap();
        assert_eq!((back.cols(), back.rows()), (40, 30));
    }

    #[test]
    fn png_round_trip_keeps_pixels_and_channel_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.png");
        let mut img = RgbImage::new(3, 2);
        img.put(0, 0, [255, 0, 0]);
        img.put(2, 1, [1, 2, 3]);
        save_image(&img, &path).unwrap();
        let back = load_image(&path).unwrap();
        assert_eq!(back, img);
    }

    #[test]
    fn missing_file_is_a_clear_error() {
        let err = load_image(Path::new("/nonexistent/x.png")).unwrap_err();
        assert!(err.to_string().contains("no such image file"), "{err}");
    }
}
