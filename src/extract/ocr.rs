//! OCR through the `tesseract` program (Debian `tesseract-ocr` and its
//! language packs), and PDF pages rendered for it by poppler's `pdftoppm`.
//! Both run as children of the extraction worker, in its process group and
//! under its limits: a page that hangs or crashes them is that page's
//! failure, never the caller's.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::{BrokenReason, Extracted, Reader, Section, program};

/// Rendering resolution for OCR: Tesseract is trained on text near 300 dpi.
pub const DPI: u32 = 300;

/// What this machine can OCR with.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Ocr {
    /// Tesseract and its languages (the `osd` script detector is not one).
    Ready {
        version: String,
        languages: Vec<String>,
    },
    Missing,
}

impl Ocr {
    /// Asks `tesseract` for its version and installed languages.
    pub fn probe() -> Ocr {
        match (ask_tesseract("--version"), languages()) {
            (Some(version), Some(languages)) => Ocr::Ready {
                version: version.lines().next().unwrap_or("").trim().to_string(),
                languages,
            },
            _ => Ocr::Missing,
        }
    }
}

/// What `tesseract ARG` prints, if it runs (older builds print to stderr).
fn ask_tesseract(arg: &str) -> Option<String> {
    let o = Command::new("tesseract")
        .arg(arg)
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    Some(s)
}

/// The installed languages (the `osd` script detector is not one); `None`
/// when Tesseract is missing or has none.
fn languages() -> Option<Vec<String>> {
    let languages: Vec<String> = ask_tesseract("--list-langs")?
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "osd")
        .map(String::from)
        .collect();
    (!languages.is_empty()).then_some(languages)
}

/// An image file (PNG, JPEG, TIFF) read by OCR: one section per page (a
/// multi-page TIFF has several).
pub fn image(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    let text = tesseract(bytes)?;
    let sections: Vec<Section> = text
        .split('\u{c}')
        .enumerate()
        .map(|(i, page)| Section {
            heading_path: Vec::new(),
            text: page.to_string(),
            page: Some(i as u32 + 1),
        })
        .collect();
    if sections.iter().all(|s| s.text.trim().is_empty()) {
        return Err(BrokenReason::NoTextInImage);
    }
    Ok(Extracted {
        title: String::new(),
        sections,
        reader: Reader::Tesseract,
        ..Default::default()
    })
}

/// One PDF page rendered at [`DPI`] and read by OCR: its text (may be empty).
pub fn pdf_page(bytes: &[u8], page: u32) -> Result<String, BrokenReason> {
    let dir = scratch_dir()?;
    let root = dir.0.join("page");
    let rendered = program::run(
        Command::new("pdftoppm")
            .args([
                "-f",
                &page.to_string(),
                "-l",
                &page.to_string(),
                "-r",
                &DPI.to_string(),
                "-gray",
                "-png",
                "-singlefile",
                "-",
            ])
            .arg(&root),
        bytes,
    );
    match rendered {
        Err(program::Missing) => {
            return Err(BrokenReason::OcrUnavailable(
                "pdftoppm (poppler-utils)".into(),
            ));
        }
        Ok((status, _)) if !status.success() => {
            return Err(BrokenReason::OcrFailed(format!(
                "pdftoppm could not render page {page} ({status})"
            )));
        }
        Ok(_) => {}
    }
    let png = std::fs::read(root.with_extension("png"))
        .map_err(|e| BrokenReason::OcrFailed(format!("page {page} was not rendered: {e}")))?;
    tesseract(&png)
}

/// Runs tesseract on an image's bytes: its text, pages split by form feeds.
fn tesseract(image: &[u8]) -> Result<String, BrokenReason> {
    // Every installed language (`eng+deu+…`).
    let Some(langs) = languages().map(|l| l.join("+")) else {
        return Err(BrokenReason::OcrUnavailable(
            "tesseract (tesseract-ocr)".into(),
        ));
    };
    let mut cmd = Command::new("tesseract");
    // One thread: OpenMP's spinning threads cost more than they give on a
    // small machine, and documents are OCRed one worker each.
    cmd.env("OMP_THREAD_LIMIT", "1")
        .args(["stdin", "stdout", "-l", &langs, "--psm", "3"]);
    match program::run(&mut cmd, image) {
        Err(program::Missing) => Err(BrokenReason::OcrUnavailable(
            "tesseract (tesseract-ocr)".into(),
        )),
        Ok((status, _)) if !status.success() => Err(BrokenReason::OcrFailed(format!(
            "tesseract could not read the image ({status})"
        ))),
        Ok((_, out)) => Ok(String::from_utf8_lossy(&out).into_owned()),
    }
}

/// A folder for one page's image, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch_dir() -> Result<Scratch, BrokenReason> {
    let dir = std::env::temp_dir().join(format!(
        "carrel-ocr-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| {
        BrokenReason::OcrFailed(format!("no scratch folder for the page image: {e}"))
    })?;
    Ok(Scratch(dir))
}
