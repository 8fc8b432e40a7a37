//! [`PhotoProcessor`] with the `image` crate (decoding JPEG, PNG and WebP, resizing) and
//! `jpeg-encoder` (encoding, which the stripped thumbnail needs: see [`stripped`]).
//!
//! A photo is decoded once (its EXIF orientation applied, transparency laid on white), then cut
//! into the box sizes `domain::media::photo_sizes` plans, each resized from the next larger one,
//! and JPEG-encoded. Decoding is bounded: the dimensions are read from the header and refused
//! before any pixel is decoded, and the decoder's allocations are capped.

use std::io::Cursor;

use application::media::{PhotoError, PhotoProcessor, PhotoSizeImage, ProcessedPhoto};
use domain::media::photo_sizes::{fit_in_box, photo_dimensions_ok, photo_size_plan, STRIPPED_BOX};
use image::imageops::FilterType;
use image::{DynamicImage, ImageDecoder, ImageReader, Limits, RgbImage};
use jpeg_encoder::{ColorType, Encoder};

/// The JPEG quality of the stored sizes (what Telegram's own photos look like: no visible
/// artefacts at a fraction of a lossless size).
pub const PHOTO_JPEG_QUALITY: u8 = 87;
/// The quality of the stripped thumbnail. Fixed by the format: clients put back a header whose
/// quantization tables are the standard ones at quality 20.
pub const STRIPPED_JPEG_QUALITY: u8 = 20;
/// The most the decoder may allocate for one photo: the largest accepted photo (5000 × 5000,
/// RGBA) with room for the decoder's own buffers.
pub const MAX_DECODE_ALLOC_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct ImagePhotos;

impl PhotoProcessor for ImagePhotos {
    fn process(&self, bytes: &[u8]) -> Result<ProcessedPhoto, PhotoError> {
        let image = decode(bytes)?;
        let (width, height) = (image.width(), image.height());
        let plan = photo_size_plan(width, height);
        let mut sizes = Vec::with_capacity(plan.len());
        // Largest first, each from the one before: a smaller source resizes faster.
        let mut current = image;
        for &(kind, w, h) in plan.iter().rev() {
            if (current.width(), current.height()) != (w, h) {
                current = current.resize_exact(w, h, FilterType::Triangle);
            }
            sizes.push(PhotoSizeImage {
                kind,
                width: w,
                height: h,
                jpeg: encode(&current.to_rgb8(), PHOTO_JPEG_QUALITY)?,
            });
        }
        sizes.reverse();
        let (w, h) = fit_in_box(current.width(), current.height(), STRIPPED_BOX);
        let tiny = current.resize_exact(w, h, FilterType::Triangle).to_rgb8();
        Ok(ProcessedPhoto {
            width,
            height,
            sizes,
            stripped: stripped(&encode(&tiny, STRIPPED_JPEG_QUALITY)?)?,
        })
    }
}

/// The photo's pixels, upright and opaque.
fn decode(bytes: &[u8]) -> Result<DynamicImage, PhotoError> {
    let reader = || {
        ImageReader::new(Cursor::new(bytes))
            .with_guessed_format()
            .map_err(|_| PhotoError::NotAnImage)
    };
    // The header alone first: a refused size is never decoded.
    let (width, height) = reader()?
        .into_dimensions()
        .map_err(|_| PhotoError::NotAnImage)?;
    if !photo_dimensions_ok(width, height) {
        return Err(PhotoError::InvalidDimensions { width, height });
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(width);
    limits.max_image_height = Some(height);
    limits.max_alloc = Some(MAX_DECODE_ALLOC_BYTES);
    let mut reader = reader()?;
    reader.limits(limits);
    let mut decoder = reader.into_decoder().map_err(|_| PhotoError::NotAnImage)?;
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut image = DynamicImage::from_decoder(decoder).map_err(|_| PhotoError::NotAnImage)?;
    image.apply_orientation(orientation);
    if image.color().has_alpha() {
        image = DynamicImage::ImageRgb8(on_white(&image));
    }
    Ok(image)
}

/// Transparent pixels laid on white (a JPEG has no alpha; black would show instead).
fn on_white(image: &DynamicImage) -> RgbImage {
    let rgba = image.to_rgba8();
    RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
        let [r, g, b, a] = rgba.get_pixel(x, y).0;
        let blend =
            |c: u8| ((u16::from(c) * u16::from(a) + 255 * (255 - u16::from(a)) + 127) / 255) as u8;
        image::Rgb([blend(r), blend(g), blend(b)])
    })
}

/// Baseline JPEG with the standard Huffman tables, 4:2:0 below quality 90, no restart markers.
fn encode(rgb: &RgbImage, quality: u8) -> Result<Vec<u8>, PhotoError> {
    let invalid = || PhotoError::InvalidDimensions {
        width: rgb.width(),
        height: rgb.height(),
    };
    let (w, h) = (
        u16::try_from(rgb.width()).map_err(|_| invalid())?,
        u16::try_from(rgb.height()).map_err(|_| invalid())?,
    );
    let mut out = Vec::new();
    Encoder::new(&mut out, quality)
        .encode(rgb.as_raw(), w, h, ColorType::Rgb)
        .map_err(|_| invalid())?;
    Ok(out)
}

/// Telegram's photoStrippedSize of a JPEG of at most 255 × 255: `[1, height, width]` and the
/// entropy-coded scan, without the file's header and its end marker. Clients (tdesktop's
/// `Images::FromStripped`, Telethon's `utils.stripped_photo_to_jpg`) put back a fixed header:
/// the standard quantization tables at quality 20, 4:2:0 YCbCr, the standard Huffman tables, one
/// baseline scan. [`encode`] at [`STRIPPED_JPEG_QUALITY`] writes exactly those, so the scan
/// decodes under the clients' header.
pub fn stripped(jpeg: &[u8]) -> Result<Vec<u8>, PhotoError> {
    let broken = || PhotoError::NotAnImage;
    let mut pos = 2; // after SOI
    let mut dims = None;
    loop {
        let marker = *jpeg.get(pos + 1).ok_or_else(broken)?;
        if jpeg[pos] != 0xFF {
            return Err(broken());
        }
        let len = usize::from(u16::from_be_bytes([
            *jpeg.get(pos + 2).ok_or_else(broken)?,
            *jpeg.get(pos + 3).ok_or_else(broken)?,
        ]));
        if marker == 0xC0 {
            // SOF0: precision, height, width.
            let at = |i: usize| jpeg.get(pos + 4 + i).copied().ok_or_else(broken);
            let height = u16::from_be_bytes([at(1)?, at(2)?]);
            let width = u16::from_be_bytes([at(3)?, at(4)?]);
            dims = Some((
                u8::try_from(height).map_err(|_| broken())?,
                u8::try_from(width).map_err(|_| broken())?,
            ));
        }
        if marker == 0xDA {
            let scan = pos + 2 + len;
            let end = jpeg
                .len()
                .checked_sub(2)
                .filter(|&e| e >= scan)
                .ok_or_else(broken)?;
            let (height, width) = dims.ok_or_else(broken)?;
            let mut out = Vec::with_capacity(3 + end - scan);
            out.extend_from_slice(&[1, height, width]);
            out.extend_from_slice(&jpeg[scan..end]);
            return Ok(out);
        }
        pos += 2 + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::{ImageFormat, Rgba, RgbaImage};

    fn gradient(width: u32, height: u32) -> RgbImage {
        RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x * 255 / width) as u8, (y * 255 / height) as u8, 128])
        })
    }

    fn encoded(image: DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        image.write_to(&mut out, format).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_large_photo_gets_every_size_never_upscaled() {
        let jpeg = encoded(
            DynamicImage::ImageRgb8(gradient(3000, 2000)),
            ImageFormat::Jpeg,
        );
        let p = ImagePhotos.process(&jpeg).unwrap();
        assert_eq!((p.width, p.height), (3000, 2000));
        let kinds: Vec<(char, u32, u32)> = p
            .sizes
            .iter()
            .map(|s| (s.kind, s.width, s.height))
            .collect();
        assert_eq!(
            kinds,
            vec![
                ('s', 100, 67),
                ('m', 320, 213),
                ('x', 800, 533),
                ('y', 1280, 853),
                ('w', 2560, 1707)
            ]
        );
        for size in &p.sizes {
            let back = image::load_from_memory_with_format(&size.jpeg, ImageFormat::Jpeg).unwrap();
            assert_eq!((back.width(), back.height()), (size.width, size.height));
        }
        // Bigger sizes are bigger files.
        assert!(p
            .sizes
            .windows(2)
            .all(|w| w[0].jpeg.len() < w[1].jpeg.len()));
    }

    #[test]
    fn a_small_png_keeps_its_own_size_as_the_largest() {
        let png = encoded(
            DynamicImage::ImageRgb8(gradient(500, 400)),
            ImageFormat::Png,
        );
        let p = ImagePhotos.process(&png).unwrap();
        let kinds: Vec<(char, u32, u32)> = p
            .sizes
            .iter()
            .map(|s| (s.kind, s.width, s.height))
            .collect();
        assert_eq!(
            kinds,
            vec![('s', 100, 80), ('m', 320, 256), ('x', 500, 400)]
        );
    }

    #[test]
    fn webp_and_transparency_are_read() {
        let mut rgba = RgbaImage::from_pixel(64, 32, Rgba([255, 0, 0, 0]));
        rgba.put_pixel(0, 0, Rgba([0, 0, 255, 255]));
        let webp = encoded(DynamicImage::ImageRgba8(rgba.clone()), ImageFormat::WebP);
        let p = ImagePhotos.process(&webp).unwrap();
        assert_eq!((p.width, p.height), (64, 32));
        let png = encoded(DynamicImage::ImageRgba8(rgba), ImageFormat::Png);
        let p = ImagePhotos.process(&png).unwrap();
        let s = image::load_from_memory(&p.sizes[0].jpeg).unwrap().to_rgb8();
        // The transparent area is white, not black.
        let px = s.get_pixel(40, 20).0;
        assert!(px.iter().all(|&c| c > 230), "{px:?}");
    }

    #[test]
    fn what_is_not_an_image_is_refused() {
        assert_eq!(
            ImagePhotos.process(b"hello, not a photo"),
            Err(PhotoError::NotAnImage)
        );
        assert_eq!(ImagePhotos.process(&[]), Err(PhotoError::NotAnImage));
        // Cut inside its header (a JPEG cut in its scan still decodes, greyed, as browsers
        // show it).
        let mut jpeg = encoded(
            DynamicImage::ImageRgb8(gradient(200, 100)),
            ImageFormat::Jpeg,
        );
        jpeg.truncate(300);
        assert_eq!(ImagePhotos.process(&jpeg), Err(PhotoError::NotAnImage));
        let mut fake = vec![0xFF, 0xD8, 0xFF, 0xE0];
        fake.extend_from_slice(&[0x42; 500]);
        assert_eq!(ImagePhotos.process(&fake), Err(PhotoError::NotAnImage));
    }

    #[test]
    fn dimensions_are_refused_from_the_header() {
        let thin = encoded(
            DynamicImage::ImageRgb8(gradient(2100, 100)),
            ImageFormat::Png,
        );
        assert_eq!(
            ImagePhotos.process(&thin),
            Err(PhotoError::InvalidDimensions {
                width: 2100,
                height: 100
            })
        );
        let ok = encoded(
            DynamicImage::ImageRgb8(gradient(2000, 100)),
            ImageFormat::Png,
        );
        assert!(ImagePhotos.process(&ok).is_ok());
    }

    /// The client's header, as Telethon and tdesktop build it: the segments of a baseline JPEG
    /// encoded at quality 20 up to its scan, with the dimensions patched in. Taken here from
    /// our own encoding of another picture, which proves the header does not depend on the
    /// picture (only the patched bytes do) and that the stripped scan decodes under it.
    #[test]
    fn the_stripped_thumbnail_decodes_under_a_header_made_for_another_picture() {
        let other = encode(&gradient(13, 7), STRIPPED_JPEG_QUALITY).unwrap();
        let header_end = other.len() - (stripped(&other).unwrap().len() - 3) - 2;
        let header = &other[..header_end];

        let photo = encoded(
            DynamicImage::ImageRgb8(gradient(1000, 500)),
            ImageFormat::Jpeg,
        );
        let p = ImagePhotos.process(&photo).unwrap();
        assert_eq!(&p.stripped[..3], &[1, 20, 40]);
        let mut rebuilt = header.to_vec();
        // SOF0's height and width, at the places the clients patch.
        let sof = header.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        rebuilt[sof + 5..sof + 9].copy_from_slice(&[0, p.stripped[1], 0, p.stripped[2]]);
        rebuilt.extend_from_slice(&p.stripped[3..]);
        rebuilt.extend_from_slice(&[0xFF, 0xD9]);
        let back = image::load_from_memory_with_format(&rebuilt, ImageFormat::Jpeg).unwrap();
        assert_eq!((back.width(), back.height()), (40, 20));
        // The gradient survives: left is darker red than right.
        let rgb = back.to_rgb8();
        assert!(rgb.get_pixel(2, 10).0[0] + 100 < rgb.get_pixel(37, 10).0[0]);
        assert!(
            p.stripped.len() < 1500,
            "a stripped thumbnail is small: {}",
            p.stripped.len()
        );
    }

    #[test]
    fn the_header_the_clients_use_has_the_standard_tables_at_quality_20() {
        let jpeg = encode(&gradient(40, 40), STRIPPED_JPEG_QUALITY).unwrap();
        // DQT 0 begins with the DC step 16 × 2.5 = 40 ('(' in Telethon's header), DQT 1 with
        // 17 × 2.5 = 43 ('+'); SOF0 says Y 2×2 with table 0 and Cb, Cr 1×1 with table 1.
        let dqt: Vec<usize> = jpeg
            .windows(2)
            .enumerate()
            .filter(|(_, w)| w == &[0xFF, 0xDB])
            .map(|(i, _)| i)
            .collect();
        let tables: Vec<(u8, u8)> = dqt
            .iter()
            .flat_map(|&i| {
                let len = usize::from(u16::from_be_bytes([jpeg[i + 2], jpeg[i + 3]]));
                jpeg[i + 4..i + 2 + len]
                    .chunks(65)
                    .map(|t| (t[0], t[1]))
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(tables, vec![(0, 40), (1, 43)]);
        // (Component ids are the header's own business: the scan is the same whatever they are.)
        let sof = jpeg.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
        let c = &jpeg[sof + 9..sof + 19];
        assert_eq!(
            [c[0], c[2], c[3], c[5], c[6], c[8], c[9]],
            [3, 0x22, 0, 0x11, 1, 0x11, 1]
        );
        assert!(
            !jpeg.windows(2).any(|w| w == [0xFF, 0xDD]),
            "no restart interval"
        );
    }
}
