//! ODT (OpenDocument text): `text:h` with its `outline-level` becomes a heading
//! path; paragraphs, lists and tables (row by row) are text; a note's body
//! follows the paragraph that cites it. The title comes from the document's
//! metadata, else a paragraph styled Title, else the first heading.

use roxmltree::Node;

use super::archive::{self, Archive, Edge, edges};
use super::flow::{Block, Flow};
use super::{BrokenReason, Extracted, Reader};

const TEXT: &str = "urn:oasis:names:tc:opendocument:xmlns:text:1.0";
const TABLE: &str = "urn:oasis:names:tc:opendocument:xmlns:table:1.0";
const OFFICE: &str = "urn:oasis:names:tc:opendocument:xmlns:office:1.0";

pub fn extract(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    let mut zip = Archive::open(bytes, "ODT")?;
    let content = zip.required("content.xml")?;
    let meta_title = zip.dc_title("meta.xml")?;
    let doc = archive::xml(&content, "ODT", "content.xml")?;
    let Some(body) = doc.descendants().find(|n| n.has_tag_name((OFFICE, "text"))) else {
        return Err(archive::corrupt("ODT", "no office:text body"));
    };
    let mut flow = Flow::default();
    // Inside a note's citation mark or an annotation: not running text.
    let mut hidden = 0usize;
    for edge in edges(body) {
        match edge {
            Edge::Open(n) if n.is_text() => {
                if hidden == 0 {
                    flow.text(n.text().unwrap_or(""));
                }
            }
            Edge::Open(n) if is(n, TEXT, "note") => {
                flow.footnote(note_text(n));
                hidden += 1;
            }
            Edge::Close(n) if is(n, TEXT, "note") => hidden -= 1,
            Edge::Open(n) if is(n, OFFICE, "annotation") => hidden += 1,
            Edge::Close(n) if is(n, OFFICE, "annotation") => hidden -= 1,
            _ if hidden > 0 => {}
            Edge::Open(n) => match (n.tag_name().namespace(), n.tag_name().name()) {
                (Some(TEXT), "p" | "h") => flow.open_paragraph(),
                (Some(TEXT), "s") => {
                    let count = n
                        .attribute((TEXT, "c"))
                        .and_then(|c| c.parse::<usize>().ok())
                        .unwrap_or(1)
                        .min(64);
                    flow.text(&" ".repeat(count));
                }
                (Some(TEXT), "tab") => flow.text("\t"),
                (Some(TEXT), "line-break") => flow.text("\n"),
                (Some(TABLE), "table") => flow.open_table(),
                (Some(TABLE), "table-row") => flow.open_row(),
                (Some(TABLE), "table-cell") => flow.open_cell(),
                _ => {}
            },
            Edge::Close(n) => match (n.tag_name().namespace(), n.tag_name().name()) {
                (Some(TEXT), "h") => flow.close_paragraph(Block::Heading(heading_level(n))),
                (Some(TEXT), "p") => flow.close_paragraph(
                    if n.attribute((TEXT, "style-name"))
                        .is_some_and(|s| s.eq_ignore_ascii_case("title"))
                    {
                        Block::Title
                    } else {
                        Block::Body
                    },
                ),
                (Some(TABLE), "table-row") => flow.close_row(),
                (Some(TABLE), "table") => flow.close_table(),
                _ => {}
            },
        }
    }
    let (title, sections) = flow.finish();
    Ok(Extracted {
        title: meta_title.unwrap_or(title),
        sections,
        reader: Reader::Native,
        ..Default::default()
    })
}

fn is(n: Node<'_, '_>, ns: &str, name: &str) -> bool {
    n.has_tag_name((ns, name))
}

/// `text:outline-level`, 1 when absent (the schema's default).
fn heading_level(n: Node<'_, '_>) -> u8 {
    n.attribute((TEXT, "outline-level"))
        .and_then(|l| l.parse::<u8>().ok())
        .filter(|l| *l >= 1)
        .unwrap_or(1)
        .min(10)
}

/// The text of a note's body (its citation mark is not part of it).
fn note_text(note: Node<'_, '_>) -> String {
    note.descendants()
        .find(|n| is(*n, TEXT, "note-body"))
        .map(|b| {
            b.descendants()
                .filter(|t| t.is_text())
                .filter_map(|t| t.text())
                .collect::<Vec<_>>()
                .join("")
        })
        .unwrap_or_default()
}
