//! EPUB 2 and 3: the chapters in spine order, each read by the HTML reader.
//! A chapter's title comes from the table of contents (EPUB 3's nav
//! document, else EPUB 2's NCX), then from its own headings; it heads the
//! chapter's heading paths. The "page" is the chapter's number.

use std::collections::HashMap;

use roxmltree::Node;

use super::archive::{self, Archive, resolve};
use super::{BrokenReason, Extracted, Reader, Section, html};

const CONTAINER: &str = "urn:oasis:names:tc:opendocument:xmlns:container";
const OPF: &str = "http://www.idpf.org/2007/opf";
const DC: &str = "http://purl.org/dc/elements/1.1/";
const NCX: &str = "http://www.daisy.org/z3986/2005/ncx/";
const XHTML: &str = "http://www.w3.org/1999/xhtml";
const OPS: &str = "http://www.idpf.org/2007/ops";

/// Most chapters read from one book.
const MAX_CHAPTERS: usize = 5_000;

struct Item {
    href: String,
    media_type: String,
    properties: String,
}

pub fn extract(bytes: &[u8]) -> Result<Extracted, BrokenReason> {
    let mut zip = Archive::open(bytes, "EPUB")?;
    let container = zip.required("META-INF/container.xml")?;
    let opf_path = archive::xml(&container, "EPUB", "META-INF/container.xml")?
        .descendants()
        .find(|n| n.has_tag_name((CONTAINER, "rootfile")))
        .and_then(|n| n.attribute("full-path"))
        .map(String::from)
        .ok_or_else(|| archive::corrupt("EPUB", "no rootfile in META-INF/container.xml"))?;
    let opf_text = zip.required(&opf_path)?;
    let opf = archive::xml(&opf_text, "EPUB", &opf_path)?;

    let title = opf
        .descendants()
        .find(|n| n.has_tag_name((DC, "title")))
        .and_then(|n| n.text())
        .map(|t| t.trim().to_string())
        .unwrap_or_default();
    let items: HashMap<&str, Item> = opf
        .descendants()
        .filter(|n| n.has_tag_name((OPF, "item")))
        .filter_map(|n| {
            Some((
                n.attribute("id")?,
                Item {
                    href: resolve(&opf_path, n.attribute("href")?),
                    media_type: n.attribute("media-type").unwrap_or("").to_string(),
                    properties: n.attribute("properties").unwrap_or("").to_string(),
                },
            ))
        })
        .collect();
    let spine = opf.descendants().find(|n| n.has_tag_name((OPF, "spine")));
    let toc = toc(&mut zip, &items, spine)?;

    let chapters: Vec<&Item> = spine
        .into_iter()
        .flat_map(|s| s.children())
        .filter(|n| n.has_tag_name((OPF, "itemref")))
        .filter(|n| n.attribute("linear") != Some("no"))
        .filter_map(|n| items.get(n.attribute("idref")?))
        .filter(|i| i.media_type.contains("html"))
        .take(MAX_CHAPTERS)
        .collect();
    if chapters.is_empty() {
        return Err(archive::corrupt("EPUB", "no chapters in its spine"));
    }
    let mut sections = Vec::new();
    for (i, item) in chapters.iter().enumerate() {
        let Some(raw) = zip.text(&item.href)? else {
            continue;
        };
        let chapter = html::extract(&raw);
        let name = toc
            .get(item.href.as_str())
            .cloned()
            .or_else(|| Some(chapter.title.clone()).filter(|t| !t.trim().is_empty()));
        for s in chapter.sections {
            let mut heading_path = s.heading_path;
            if let Some(name) = &name
                && heading_path.first() != Some(name)
            {
                heading_path.insert(0, name.clone());
            }
            sections.push(Section {
                heading_path,
                text: s.text,
                page: Some(i as u32 + 1),
            });
        }
    }
    Ok(Extracted {
        title,
        sections,
        reader: Reader::Native,
        ..Default::default()
    })
}

/// Chapter titles by the chapter's path: from the EPUB 3 nav document
/// (`<nav epub:type="toc">`), else the EPUB 2 NCX. The first entry that
/// points into a chapter names it. A table of contents that does not parse
/// leaves the chapters to be named by their own headings.
fn toc(
    zip: &mut Archive<'_>,
    items: &HashMap<&str, Item>,
    spine: Option<Node<'_, '_>>,
) -> Result<HashMap<String, String>, BrokenReason> {
    let mut out = HashMap::new();
    if let Some(nav) = items
        .values()
        .find(|i| i.properties.split_whitespace().any(|p| p == "nav"))
        && let Some(xml) = zip.text(&nav.href)?
        && let Ok(doc) = archive::xml(&xml, "EPUB", &nav.href)
    {
        let toc_nav = doc
            .descendants()
            .find(|n| n.has_tag_name((XHTML, "nav")) && n.attribute((OPS, "type")) == Some("toc"));
        for a in toc_nav
            .into_iter()
            .flat_map(|n| n.descendants())
            .filter(|n| n.has_tag_name((XHTML, "a")))
        {
            if let Some(href) = a.attribute("href") {
                let label = label(a);
                if !label.is_empty() {
                    out.entry(resolve(&nav.href, href)).or_insert(label);
                }
            }
        }
        if !out.is_empty() {
            return Ok(out);
        }
    }
    let ncx = spine
        .and_then(|s| s.attribute("toc"))
        .and_then(|id| items.get(id));
    if let Some(ncx) = ncx
        && let Some(xml) = zip.text(&ncx.href)?
        && let Ok(doc) = archive::xml(&xml, "EPUB", &ncx.href)
    {
        for point in doc
            .descendants()
            .filter(|n| n.has_tag_name((NCX, "navPoint")))
        {
            let text = point
                .children()
                .find(|c| c.has_tag_name((NCX, "navLabel")))
                .map(label)
                .unwrap_or_default();
            let src = point
                .children()
                .find(|c| c.has_tag_name((NCX, "content")))
                .and_then(|c| c.attribute("src"));
            if let (false, Some(src)) = (text.is_empty(), src) {
                out.entry(resolve(&ncx.href, src)).or_insert(text);
            }
        }
    }
    Ok(out)
}

/// An element's text, whitespace collapsed.
fn label(n: Node<'_, '_>) -> String {
    let text: Vec<&str> = n
        .descendants()
        .filter(|t| t.is_text())
        .filter_map(|t| t.text())
        .collect();
    text.concat()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
