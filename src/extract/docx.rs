//! DOCX (Office Open XML): paragraphs styled Heading 1–9, or carrying an
//! outline level, become heading paths; tables become text row by row;
//! footnotes follow the paragraph that cites them. The title comes from the
//! core properties, else the Title-styled line, else the first heading.
//! Deleted text (tracked changes) and field codes are not text.

use std::collections::HashMap;

use roxmltree::Node;

use super::archive::{self, Archive, Edge, edges};
use super::flow::{Block, Flow};
use super::{BrokenReason, Extracted, Reader};

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

pub fn extract(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    let mut zip = Archive::open(bytes, "DOCX")?;
    let body = zip.required("word/document.xml")?;
    let styles = match zip.text("word/styles.xml")? {
        Some(xml) => style_blocks(&archive::xml(&xml, "DOCX", "word/styles.xml")?),
        None => HashMap::new(),
    };
    let notes = match zip.text("word/footnotes.xml")? {
        Some(xml) => footnotes(&archive::xml(&xml, "DOCX", "word/footnotes.xml")?),
        None => HashMap::new(),
    };
    let core_title = zip.dc_title("docProps/core.xml")?;
    let doc = archive::xml(&body, "DOCX", "word/document.xml")?;
    let mut flow = Flow::default();
    let mut block = Block::Body;
    for edge in edges(doc.root()) {
        match edge {
            Edge::Open(n)
                if n.is_text() && n.parent().is_some_and(|p| p.has_tag_name((W, "t"))) =>
            {
                flow.text(n.text().unwrap_or(""));
            }
            Edge::Open(n) if n.tag_name().namespace() == Some(W) => match n.tag_name().name() {
                "p" => {
                    flow.open_paragraph();
                    block = Block::Body;
                }
                "pStyle" => {
                    if let Some(b) = n.attribute((W, "val")).and_then(|id| styles.get(id)) {
                        block = *b;
                    }
                }
                "outlineLvl" if n.parent().is_some_and(|p| p.has_tag_name((W, "pPr"))) => {
                    if let Some(level) = outline_level(n) {
                        block = Block::Heading(level);
                    }
                }
                "tab" if in_run(n) => flow.text("\t"),
                "br" | "cr" => flow.text("\n"),
                "footnoteReference" => {
                    if let Some(note) = n.attribute((W, "id")).and_then(|id| notes.get(id)) {
                        flow.footnote(note.clone());
                    }
                }
                "tbl" => flow.open_table(),
                "tr" => flow.open_row(),
                "tc" => flow.open_cell(),
                _ => {}
            },
            Edge::Close(n) if n.tag_name().namespace() == Some(W) => match n.tag_name().name() {
                "p" => {
                    flow.close_paragraph(block);
                    block = Block::Body;
                }
                "tr" => flow.close_row(),
                "tbl" => flow.close_table(),
                _ => {}
            },
            _ => {}
        }
    }
    let (title, sections) = flow.finish();
    Ok(Extracted {
        title: core_title.unwrap_or(title),
        sections,
        reader: Reader::Native,
        ..Default::default()
    })
}

/// A `w:tab` inside a run is a tab character; one in the paragraph's
/// properties is a tab stop.
fn in_run(n: Node<'_, '_>) -> bool {
    n.parent().is_some_and(|p| p.has_tag_name((W, "r")))
}

/// `w:outlineLvl`'s 0-based level as a heading level; 9 means body text.
fn outline_level(n: Node<'_, '_>) -> Option<u8> {
    n.attribute((W, "val"))
        .and_then(|v| v.parse::<u8>().ok())
        .filter(|l| *l < 9)
        .map(|l| l + 1)
}

/// What each paragraph style makes of a paragraph: a heading (by its outline
/// level, or a name "heading N"), the title, or body text; through the
/// `basedOn` chain.
fn style_blocks(styles: &roxmltree::Document<'_>) -> HashMap<String, Block> {
    struct Style<'a> {
        own: Option<Block>,
        based_on: Option<&'a str>,
    }
    let mut by_id: HashMap<&str, Style<'_>> = HashMap::new();
    for s in styles
        .descendants()
        .filter(|n| n.has_tag_name((W, "style")))
    {
        let Some(id) = s.attribute((W, "styleId")) else {
            continue;
        };
        let child = |name: &str| s.children().find(|c| c.has_tag_name((W, name)));
        let name = child("name")
            .and_then(|n| n.attribute((W, "val")))
            .unwrap_or("")
            .to_ascii_lowercase();
        let outline = child("pPr")
            .and_then(|p| p.children().find(|c| c.has_tag_name((W, "outlineLvl"))))
            .and_then(outline_level);
        let named = name
            .strip_prefix("heading ")
            .and_then(|n| n.parse::<u8>().ok())
            .filter(|l| (1..=9).contains(l));
        let own = match (outline, named, name.as_str()) {
            (Some(l), _, _) | (None, Some(l), _) => Some(Block::Heading(l)),
            (None, None, "title") => Some(Block::Title),
            _ => None,
        };
        let based_on = child("basedOn").and_then(|b| b.attribute((W, "val")));
        by_id.insert(id, Style { own, based_on });
    }
    let mut out = HashMap::new();
    for id in by_id.keys() {
        let mut at = Some(*id);
        // A cycle in basedOn ends after a few hops.
        for _ in 0..16 {
            let Some(style) = at.and_then(|i| by_id.get(i)) else {
                break;
            };
            if let Some(b) = style.own {
                out.insert(id.to_string(), b);
                break;
            }
            at = style.based_on;
        }
    }
    out
}

/// Each footnote's text by its id (separator notes have none).
fn footnotes(doc: &roxmltree::Document<'_>) -> HashMap<String, String> {
    doc.descendants()
        .filter(|n| n.has_tag_name((W, "footnote")))
        .filter_map(|n| {
            let id = n.attribute((W, "id"))?;
            let text: Vec<&str> = n
                .descendants()
                .filter(|t| t.is_text() && t.parent().is_some_and(|p| p.has_tag_name((W, "t"))))
                .filter_map(|t| t.text())
                .collect();
            let text = text.concat();
            (!text.trim().is_empty()).then(|| (id.to_string(), text))
        })
        .collect()
}
