//! The ZIP container of DOCX, ODT, EPUB and PPTX, read under caps, and their
//! XML parts parsed without DTDs. A ZIP bomb, a truncated archive, an
//! encrypted entry or an encrypted Office file each becomes a listed
//! [`BrokenReason`], never a hang or an out-of-memory.

use std::io::{Cursor, Read};

use super::BrokenReason;

/// Most entries an archive may list. A long book is a few hundred; past
/// this the central directory alone is a denial of service.
pub const MAX_ENTRIES: usize = 20_000;

/// Most bytes one part may inflate to. The XML of a 500-page document is a
/// few MB.
pub const MAX_PART_BYTES: u64 = 64 << 20;

/// Most bytes all the parts read from one file may inflate to.
pub const MAX_TOTAL_BYTES: u64 = 256 << 20;

/// Most XML nodes one part may hold (roxmltree's own limit, lowered).
const MAX_XML_NODES: u32 = 4_000_000;

/// The OLE2 compound-file magic: an encrypted OOXML file (its package sits
/// in an `EncryptedPackage` stream) or a legacy `.doc`/`.xls`/`.ppt`.
const COMPOUND_FILE: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";

/// One archive being read, with what its parts have inflated to so far.
pub struct Archive<'a> {
    zip: zip::ZipArchive<Cursor<&'a [u8]>>,
    format: &'static str,
    inflated: u64,
}

impl<'a> Archive<'a> {
    /// Opens `bytes` as the ZIP container of `format` ("DOCX", "EPUB", …).
    pub fn open(bytes: &'a [u8], format: &'static str) -> Result<Archive<'a>, BrokenReason> {
        if bytes.starts_with(COMPOUND_FILE) {
            return Err(if utf16_contains(bytes, "EncryptedPackage") {
                BrokenReason::PasswordProtected {
                    format: format.into(),
                }
            } else {
                BrokenReason::LegacyOffice
            });
        }
        let zip = zip::ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| corrupt(format, &format!("not a ZIP container: {e}")))?;
        if zip.len() > MAX_ENTRIES {
            return Err(corrupt(
                format,
                &format!("{} entries, over the cap of {MAX_ENTRIES}", zip.len()),
            ));
        }
        Ok(Archive {
            zip,
            format,
            inflated: 0,
        })
    }

    /// One part's text, `None` when the archive has no such part.
    pub fn text(&mut self, name: &str) -> Result<Option<String>, BrokenReason> {
        let name = name.trim_start_matches('/');
        let format = self.format;
        let mut part = match self.zip.by_name(name) {
            Ok(p) => p,
            Err(zip::result::ZipError::FileNotFound) => return Ok(None),
            Err(e) if e.to_string().to_ascii_lowercase().contains("password") => {
                return Err(BrokenReason::PasswordProtected {
                    format: format.into(),
                });
            }
            Err(e) => return Err(corrupt(format, &format!("{name}: {e}"))),
        };
        if part.encrypted() {
            return Err(BrokenReason::PasswordProtected {
                format: format.into(),
            });
        }
        let cap = MAX_PART_BYTES.min(MAX_TOTAL_BYTES - self.inflated);
        let mut bytes = Vec::new();
        // The header's sizes are not trusted: what inflates is counted.
        (&mut part)
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| corrupt(format, &format!("{name}: {e}")))?;
        if bytes.len() as u64 > cap {
            return Err(BrokenReason::DecompressionBomb {
                limit_mb: cap >> 20,
            });
        }
        self.inflated += bytes.len() as u64;
        let text = String::from_utf8(bytes)
            .map_err(|_| corrupt(format, &format!("{name} is not UTF-8")))?;
        blank_doctype(text)
            .map(Some)
            .map_err(|why| corrupt(format, &format!("{name}: {why} is refused")))
    }

    /// The Dublin Core title in a metadata part (`docProps/core.xml`,
    /// `meta.xml`), if the part and a non-blank title are there.
    pub fn dc_title(&mut self, part: &str) -> Result<Option<String>, BrokenReason> {
        let format = self.format;
        let Some(text) = self.text(part)? else {
            return Ok(None);
        };
        Ok(xml(&text, format, part)?
            .descendants()
            .find(|n| n.has_tag_name(("http://purl.org/dc/elements/1.1/", "title")))
            .and_then(|n| n.text())
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(String::from))
    }

    /// A part that must be there.
    pub fn required(&mut self, name: &str) -> Result<String, BrokenReason> {
        let format = self.format;
        self.text(name)?
            .ok_or_else(|| corrupt(format, &format!("no {name}")))
    }
}

/// Parses one XML part (read by [`Archive::text`], so any document type
/// declaration is already blanked). DTDs are refused: no entity is ever
/// expanded.
pub fn xml<'x>(
    text: &'x str,
    format: &str,
    part: &str,
) -> Result<roxmltree::Document<'x>, BrokenReason> {
    let options = roxmltree::ParsingOptions {
        allow_dtd: false,
        nodes_limit: MAX_XML_NODES,
        entity_resolver: None,
    };
    roxmltree::Document::parse_with_options(text, options)
        .map_err(|e| corrupt(format, &format!("{part}: {e}")))
}

/// Blanks a document type declaration without an internal subset
/// (`<!DOCTYPE ncx PUBLIC …>`, as EPUB's NCX and XHTML files carry): it
/// defines no entity, and the XML parser refuses every DTD. One with an
/// internal subset, where entities are defined, is refused here.
fn blank_doctype(mut text: String) -> Result<String, &'static str> {
    let Some(start) = text.find("<!DOCTYPE") else {
        return Ok(text);
    };
    let len = text[start..]
        .find('>')
        .ok_or("an unclosed document type declaration")?
        + 1;
    if text[start..start + len].contains('[') {
        return Err("a document type declaration with entity definitions");
    }
    text.replace_range(start..start + len, &" ".repeat(len));
    Ok(text)
}

/// Entering or leaving a node, in document order.
#[derive(Debug, Clone, Copy)]
pub enum Edge<'a, 'i> {
    Open(roxmltree::Node<'a, 'i>),
    Close(roxmltree::Node<'a, 'i>),
}

/// Walks `root`'s subtree as open and close edges, by sibling and parent
/// links: no recursion and no stack, however deep the nesting.
pub fn edges<'a, 'i>(root: roxmltree::Node<'a, 'i>) -> impl Iterator<Item = Edge<'a, 'i>> {
    let mut next = Some(Edge::Open(root));
    std::iter::from_fn(move || {
        let current = next.take()?;
        next = match current {
            Edge::Open(n) => Some(n.first_child().map_or(Edge::Close(n), Edge::Open)),
            Edge::Close(n) if n == root => None,
            Edge::Close(n) => match n.next_sibling() {
                Some(s) => Some(Edge::Open(s)),
                None => n.parent().map(Edge::Close),
            },
        };
        Some(current)
    })
}

pub fn corrupt(format: &str, detail: &str) -> BrokenReason {
    BrokenReason::CorruptDocument {
        format: format.into(),
        detail: detail.chars().take(160).collect(),
    }
}

/// Whether `haystack` holds `needle` in UTF-16LE (compound-file directory
/// entry names).
fn utf16_contains(haystack: &[u8], needle: &str) -> bool {
    let wide: Vec<u8> = needle.encode_utf16().flat_map(u16::to_le_bytes).collect();
    haystack.windows(wide.len()).any(|w| w == wide)
}

/// Resolves `href` against the folder of `base` inside an archive
/// (`OEBPS/content.opf` + `text/ch1.xhtml` → `OEBPS/text/ch1.xhtml`),
/// dropping any `#fragment` and percent-escapes.
pub fn resolve(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or("");
    let href = percent_decode(href);
    let mut parts: Vec<&str> = if href.starts_with('/') {
        Vec::new()
    } else {
        base.rsplit_once('/')
            .map(|(dir, _)| dir.split('/').collect())
            .unwrap_or_default()
    };
    for seg in href.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hrefs_resolve_against_their_part() {
        assert_eq!(
            resolve("OEBPS/content.opf", "text/ch1.xhtml#x"),
            "OEBPS/text/ch1.xhtml"
        );
        assert_eq!(resolve("OEBPS/nav.xhtml", "../ch%202.xhtml"), "ch 2.xhtml");
        assert_eq!(resolve("content.opf", "ch1.xhtml"), "ch1.xhtml");
    }

    #[test]
    fn doctypes_are_blanked_and_entity_definitions_refused() {
        let ncx = blank_doctype(
            "<?xml version=\"1.0\"?><!DOCTYPE ncx PUBLIC \"-//NISO//DTD ncx\" \"x.dtd\"><ncx/>"
                .into(),
        )
        .unwrap();
        assert!(xml(&ncx, "EPUB", "toc.ncx").is_ok());
        let bomb =
            "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;\">]><a>&lol2;</a>";
        assert!(blank_doctype(bomb.into()).is_err());
        assert!(xml(bomb, "DOCX", "word/document.xml").is_err());
    }

    #[test]
    fn garbage_and_compound_files_are_named_not_opened() {
        assert!(matches!(
            Archive::open(b"PK\x03\x04 truncated", "DOCX").err(),
            Some(BrokenReason::CorruptDocument { .. })
        ));
        let mut encrypted = COMPOUND_FILE.to_vec();
        encrypted.extend("EncryptedPackage".encode_utf16().flat_map(u16::to_le_bytes));
        assert!(matches!(
            Archive::open(&encrypted, "DOCX").err(),
            Some(BrokenReason::PasswordProtected { .. })
        ));
        assert_eq!(
            Archive::open(COMPOUND_FILE, "DOCX").err(),
            Some(BrokenReason::LegacyOffice)
        );
    }
}
