//! PPTX: one section per slide, in the presentation's order, headed by the
//! slide's title; the page is the slide's number. Speaker notes follow as a
//! sub-section ("Speaker notes"). Tables are text row by row.

use std::collections::HashMap;

use roxmltree::Node;

use super::archive::{self, Archive, Edge, edges, resolve};
use super::{BrokenReason, Extracted, Reader, Section};

const P: &str = "http://schemas.openxmlformats.org/presentationml/2006/main";
const A: &str = "http://schemas.openxmlformats.org/drawingml/2006/main";
const R: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
const RELS: &str = "http://schemas.openxmlformats.org/package/2006/relationships";
const NOTES_REL: &str =
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships/notesSlide";

/// Most slides read from one deck.
const MAX_SLIDES: usize = 5_000;

pub const NOTES_HEADING: &str = "Speaker notes";

pub fn extract(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    let mut zip = Archive::open(bytes, "PPTX")?;
    let presentation = zip.required("ppt/presentation.xml")?;
    let rels = relationships(&mut zip, "ppt/presentation.xml")?;
    let slide_paths: Vec<String> = archive::xml(&presentation, "PPTX", "ppt/presentation.xml")?
        .descendants()
        .filter(|n| n.has_tag_name((P, "sldId")))
        .filter_map(|n| rels.get(n.attribute((R, "id"))?).map(|(_, t)| t.clone()))
        .take(MAX_SLIDES)
        .collect();
    let core_title = zip.dc_title("docProps/core.xml")?;
    let mut sections = Vec::new();
    let mut first_title = None;
    for (i, path) in slide_paths.iter().enumerate() {
        let page = Some(i as u32 + 1);
        let Some(xml) = zip.text(path)? else {
            continue;
        };
        let slide = archive::xml(&xml, "PPTX", path)?;
        let (title, body) = slide_text(&slide);
        let heading_path: Vec<String> = title.iter().cloned().collect();
        if first_title.is_none() {
            first_title = title.clone();
        }
        sections.push(Section {
            heading_path: heading_path.clone(),
            text: body,
            page,
        });
        let notes_path = relationships(&mut zip, path)?
            .into_values()
            .find(|(kind, _)| kind == NOTES_REL)
            .map(|(_, target)| target);
        if let Some(notes_path) = notes_path
            && let Some(xml) = zip.text(&notes_path)?
        {
            let notes = archive::xml(&xml, "PPTX", &notes_path)?;
            let (_, text) = slide_text(&notes);
            let mut path = heading_path;
            path.push(NOTES_HEADING.into());
            sections.push(Section {
                heading_path: path,
                text,
                page,
            });
        }
    }
    Ok(Extracted {
        title: core_title.or(first_title).unwrap_or_default(),
        sections,
        reader: Reader::Native,
        ..Default::default()
    })
}

/// A part's relationships: id → (type, target part path).
fn relationships(
    zip: &mut Archive<'_>,
    part: &str,
) -> Result<HashMap<String, (String, String)>, BrokenReason> {
    let (dir, file) = part.rsplit_once('/').unwrap_or(("", part));
    let rels_path = format!("{dir}/_rels/{file}.rels");
    let Some(xml) = zip.text(&rels_path)? else {
        return Ok(HashMap::new());
    };
    Ok(archive::xml(&xml, "PPTX", &rels_path)?
        .descendants()
        .filter(|n| n.has_tag_name((RELS, "Relationship")))
        .filter(|n| n.attribute("TargetMode") != Some("External"))
        .filter_map(|n| {
            Some((
                n.attribute("Id")?.to_string(),
                (
                    n.attribute("Type").unwrap_or("").to_string(),
                    resolve(part, n.attribute("Target")?),
                ),
            ))
        })
        .collect())
}

/// A slide's (or notes page's) title and the rest of its text. The title is
/// the shape holding the title placeholder; slide-number, date and footer
/// placeholders and the slide image on a notes page are not text.
fn slide_text(doc: &roxmltree::Document<'_>) -> (Option<String>, String) {
    let mut title = None;
    let mut body = String::new();
    for shape in doc
        .descendants()
        .filter(|n| n.has_tag_name((P, "sp")) || n.has_tag_name((P, "graphicFrame")))
    {
        // A shape nested in a group is reached on its own.
        let placeholder = shape
            .descendants()
            .find(|n| n.has_tag_name((P, "ph")))
            .map(|ph| ph.attribute("type").unwrap_or("body"));
        let text = shape_text(shape);
        if text.trim().is_empty() {
            continue;
        }
        match placeholder {
            Some("title" | "ctrTitle") if title.is_none() => {
                title = Some(text.split_whitespace().collect::<Vec<_>>().join(" "));
            }
            Some("sldNum" | "dt" | "ftr" | "sldImg" | "hdr") => {}
            _ => {
                if !body.is_empty() {
                    body.push_str("\n\n");
                }
                body.push_str(text.trim());
            }
        }
    }
    (title, body)
}

/// A shape's paragraphs, one per line; a table's cells as `a | b` rows.
fn shape_text(shape: Node<'_, '_>) -> String {
    let mut out = String::new();
    let mut cells_in_row = 0;
    for edge in edges(shape) {
        match edge {
            Edge::Open(n)
                if n.is_text() && n.parent().is_some_and(|p| p.has_tag_name((A, "t"))) =>
            {
                out.push_str(n.text().unwrap_or(""));
            }
            Edge::Open(n) if n.has_tag_name((A, "tr")) => cells_in_row = 0,
            Edge::Open(n) if n.has_tag_name((A, "tc")) => {
                if cells_in_row > 0 {
                    out.truncate(out.trim_end_matches(' ').len());
                    out.push_str(" | ");
                }
                cells_in_row += 1;
            }
            Edge::Open(n) if n.has_tag_name((A, "br")) => out.push('\n'),
            Edge::Close(n) if n.has_tag_name((A, "p")) => {
                let in_cell = n.ancestors().any(|a| a.has_tag_name((A, "tc")));
                out.push(if in_cell { ' ' } else { '\n' });
            }
            Edge::Close(n) if n.has_tag_name((A, "tr")) => out.push('\n'),
            _ => {}
        }
    }
    out
}
