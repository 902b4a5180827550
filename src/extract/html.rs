//! HTML via scraper: the content root ([`content_root`]), its h1–h6 structure
//! and its text. Scripts, styles, navigation, page-level header/footer chrome
//! ([`is_chrome`]) and permalink marks are dropped; a header inside content
//! keeps its text and headings.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node, Selector};

use super::{Extracted, SectionBuilder};

/// Elements whose content is never document text.
const SKIP: &[&str] = &[
    "script", "style", "nav", "noscript", "template", "svg", "form", "button", "iframe", "object",
    "head", "select",
];

/// Paragraph text a `header` or `footer` at page level must hold to count as
/// content rather than chrome. A site banner (logo, site name, tagline) or a
/// copyright line stays under it; the UDHR pages' preamble, 1.5 KB of
/// paragraphs in a body-level `<header>`, is well over it.
const CHROME_MAX_PARAGRAPH_CHARS: usize = 200;

/// Elements that end a paragraph-like block.
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "aside",
    "blockquote",
    "pre",
    "table",
    "dl",
    "dt",
    "dd",
    "ul",
    "ol",
    "figure",
    "figcaption",
    "address",
    "details",
    "summary",
    "header",
    "footer",
    "hr",
    "body",
];

pub fn extract(src: &str) -> Extracted {
    let doc = Html::parse_document(src);
    let root = content_root(&doc);
    let mut b = SectionBuilder::default();
    let mut first_h1 = String::new();
    walk(root, &mut b, &mut first_h1);
    let title = if first_h1.is_empty() {
        Selector::parse("title")
            .ok()
            .and_then(|s| doc.select(&s).next())
            .map(|t| t.text().collect::<String>())
            .unwrap_or_default()
    } else {
        first_h1
    };
    Extracted {
        title,
        sections: b.finish(),
        ..Default::default()
    }
}

fn select<'a>(doc: &'a Html, selector: &str) -> Vec<ElementRef<'a>> {
    Selector::parse(selector)
        .map(|s| doc.select(&s).collect())
        .unwrap_or_default()
}

/// The element that holds the page's text: `main` or `[role=main]`; else
/// the nearest common ancestor of every `article` (a blog index, a CMS page
/// or the UDHR's thirty articles are one document, never only the first);
/// else `body`.
fn content_root(doc: &Html) -> NodeRef<'_, Node> {
    if let Some(main) = ["main", "[role=main]"]
        .iter()
        .find_map(|sel| select(doc, sel).into_iter().next())
    {
        return *main;
    }
    let articles = select(doc, "article");
    if let Some((first, rest)) = articles.split_first() {
        // The first article's chain from itself up to the root; each other
        // article cuts it down to the part that is also its ancestor.
        let mut chain: Vec<NodeRef<'_, Node>> =
            std::iter::once(**first).chain(first.ancestors()).collect();
        for other in rest {
            let theirs: std::collections::HashSet<_> = std::iter::once(other.id())
                .chain(other.ancestors().map(|a| a.id()))
                .collect();
            let keep = chain.iter().position(|n| theirs.contains(&n.id()));
            chain.drain(..keep.unwrap_or(chain.len()));
        }
        if let Some(common) = chain.first() {
            return *common;
        }
    }
    select(doc, "body")
        .into_iter()
        .next()
        .map(|b| *b)
        .unwrap_or_else(|| *doc.root_element())
}

/// Whether a `header` or `footer` is page chrome: one marked `banner` or
/// `contentinfo`, or one at page level (a child of `body`) holding little
/// paragraph text. A header inside an article or `main` is content.
fn is_chrome(el: ElementRef<'_>) -> bool {
    if !matches!(el.value().name(), "header" | "footer") {
        return false;
    }
    if el
        .value()
        .attr("role")
        .is_some_and(|r| r == "banner" || r == "contentinfo")
    {
        return true;
    }
    let at_page_level = el
        .parent()
        .and_then(ElementRef::wrap)
        .is_some_and(|p| p.value().name() == "body");
    at_page_level && paragraph_chars(el) < CHROME_MAX_PARAGRAPH_CHARS
}

/// Characters of text inside an element's `p` descendants.
fn paragraph_chars(el: ElementRef<'_>) -> usize {
    el.descendants()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "p")
        .map(|p| p.text().map(|t| t.trim().chars().count()).sum::<usize>())
        .sum()
}

fn skipped(el: &scraper::node::Element) -> bool {
    SKIP.contains(&el.name())
        || el
            .attr("role")
            .is_some_and(|r| r == "navigation" || r == "banner" || r == "contentinfo")
        || el.has_class("headerlink", scraper::CaseSensitivity::AsciiCaseInsensitive)
        || el.attr("hidden").is_some()
        || el.attr("aria-hidden").is_some_and(|v| v == "true")
}

/// One step of the walk. The walk keeps its own stack instead of recursing:
/// a file nested 20,000 elements deep overflowed the thread's stack.
enum Step<'a> {
    Visit(NodeRef<'a, Node>, bool),
    LineBreak,
    BlockBreak,
}

fn walk(node: NodeRef<'_, Node>, b: &mut SectionBuilder, first_h1: &mut String) {
    let mut stack = Vec::new();
    push_children(&mut stack, node, false);
    while let Some(step) = stack.pop() {
        let (child, pre) = match step {
            Step::LineBreak => {
                b.line_break();
                continue;
            }
            Step::BlockBreak => {
                b.block_break();
                continue;
            }
            Step::Visit(child, pre) => (child, pre),
        };
        match child.value() {
            Node::Text(t) => push_text(b, t, pre),
            Node::Element(el) => {
                if skipped(el) || ElementRef::wrap(child).is_some_and(is_chrome) {
                    continue;
                }
                let name = el.name();
                if let Some(level) = heading_level(name) {
                    let text = heading_text(child);
                    if level == 1 && first_h1.is_empty() {
                        *first_h1 = text.clone();
                    }
                    b.heading(level, text);
                } else if name == "li" {
                    b.line_break();
                    b.push("- ");
                    stack.push(Step::LineBreak);
                    push_children(&mut stack, child, pre);
                } else if name == "br" {
                    b.line_break();
                } else if name == "tr" {
                    // A table row is one line.
                    b.line_break();
                    stack.push(Step::LineBreak);
                    push_children(&mut stack, child, pre);
                } else if BLOCK.contains(&name) {
                    b.block_break();
                    stack.push(Step::BlockBreak);
                    push_children(&mut stack, child, pre || name == "pre");
                } else {
                    if matches!(name, "td" | "th") {
                        // Cells of a row as `a | b`, as every format's tables.
                        let first = !child.prev_siblings().any(|sib| {
                            ElementRef::wrap(sib)
                                .is_some_and(|e| matches!(e.value().name(), "td" | "th"))
                        });
                        if first {
                            b.space();
                        } else {
                            b.cell_separator();
                        }
                    }
                    push_children(&mut stack, child, pre);
                }
            }
            _ => {}
        }
    }
}

/// Queues a node's children, last first, so that they pop in document order.
fn push_children<'a>(stack: &mut Vec<Step<'a>>, node: NodeRef<'a, Node>, pre: bool) {
    let at = stack.len();
    stack.extend(node.children().map(|c| Step::Visit(c, pre)));
    stack[at..].reverse();
}

fn push_text(b: &mut SectionBuilder, t: &str, pre: bool) {
    if pre {
        b.push(t);
        return;
    }
    let collapsed: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
    if t.starts_with(char::is_whitespace) {
        b.space();
    }
    if collapsed.is_empty() {
        return;
    }
    b.push(&collapsed);
    if t.ends_with(char::is_whitespace) {
        b.space();
    }
}

fn heading_level(name: &str) -> Option<u8> {
    match name {
        "h1" => Some(1),
        "h2" => Some(2),
        "h3" => Some(3),
        "h4" => Some(4),
        "h5" => Some(5),
        "h6" => Some(6),
        _ => None,
    }
}

/// A heading's text without its permalink marks.
fn heading_text(node: NodeRef<'_, Node>) -> String {
    let mut out = String::new();
    for d in node.descendants() {
        if let Node::Text(t) = d.value() {
            let hidden = d
                .ancestors()
                .take_while(|a| a.id() != node.id())
                .any(|a| ElementRef::wrap(a).is_some_and(|e| skipped(e.value())));
            if !hidden {
                out.push_str(t);
            }
        }
    }
    out.replace('¶', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_main_text_and_headings_and_drops_chrome() {
        let html = r##"<!doctype html><html><head><title>os — Python docs</title><style>p{}</style></head>
        <body><nav>Home | Index</nav><div role="main">
        <h1>os — Miscellaneous interfaces<a class="headerlink" href="#">¶</a></h1>
        <p>This module provides a portable way.</p><script>alert(1)</script>
        <h2>Files</h2><ul><li>open</li><li>close</li></ul></div><footer>© PSF</footer></body></html>"##;
        let doc = extract(html);
        assert_eq!(doc.title.trim(), "os — Miscellaneous interfaces");
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        assert!(all.contains("portable way"));
        for junk in ["alert", "Home | Index", "PSF", "¶", "p{}"] {
            assert!(!all.contains(junk), "{junk} leaked into {all:?}");
        }
        let files = doc
            .sections
            .iter()
            .find(|s| s.heading_path.last().is_some_and(|h| h == "Files"))
            .unwrap();
        assert!(files.text.contains("- open"));
        assert_eq!(files.heading_path.len(), 2);
    }

    #[test]
    fn html_nested_twenty_thousand_deep_does_not_overflow_the_stack() {
        let depth = 20_000;
        let html = format!(
            "<html><body>{}<p>deep words</p>{}</body></html>",
            "<div>".repeat(depth),
            "</div>".repeat(depth)
        );
        // A 256 KiB stack, far smaller than any thread Carrel runs on: the
        // recursive walk needed megabytes.
        let doc = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || extract(&html))
            .unwrap()
            .join()
            .unwrap();
        assert!(doc.sections.iter().any(|s| s.text.contains("deep words")));
    }

    #[test]
    fn every_article_is_kept_and_only_page_chrome_is_dropped() {
        let html = r##"<html><head><title>Pond notes</title></head><body>
        <header><a href="/">Pond notes</a><p>A blog about ponds</p></header>
        <div class="posts">
          <article><header><h2>Frogs in March</h2><p class="lede">Spawn arrives early.</p></header>
            <p>Common frogs lay spawn in shallow water.</p><footer>Posted in wildlife</footer></article>
          <article><h2>Duckweed</h2><p>Duckweed doubles in two days.</p></article>
        </div>
        <aside>Unrelated sidebar outside the posts.</aside>
        <footer role="contentinfo"><p>© Pond notes</p></footer></body></html>"##;
        let doc = extract(html);
        let all: String = doc.sections.iter().map(|s| s.text.clone()).collect();
        for kept in [
            "Spawn arrives early",
            "shallow water",
            "Posted in wildlife",
            "doubles",
        ] {
            assert!(all.contains(kept), "{kept} lost from {all:?}");
        }
        for chrome in ["A blog about ponds", "© Pond notes", "sidebar"] {
            assert!(!all.contains(chrome), "{chrome} leaked into {all:?}");
        }
        let headings: Vec<&str> = doc
            .sections
            .iter()
            .filter_map(|s| s.heading_path.last().map(String::as_str))
            .collect();
        assert_eq!(headings, ["Frogs in March", "Duckweed"]);
    }

    #[test]
    fn a_page_level_header_of_real_paragraphs_is_content() {
        let preamble = "Whereas recognition of the inherent dignity of all members of the \
            human family is the foundation of freedom, justice and peace in the world, and \
            whereas disregard for human rights has resulted in barbarous acts.";
        let html = format!(
            "<html><body><h1>Declaration</h1><header><h2>Preamble</h2><p>{preamble}</p></header>\
             <article><h2>Article 1</h2><p>All are born free.</p></article>\
             <article><h2>Article 2</h2><p>Everyone is entitled.</p></article></body></html>"
        );
        let doc = extract(&html);
        let preamble_section = doc
            .sections
            .iter()
            .find(|s| s.heading_path.last().is_some_and(|h| h == "Preamble"))
            .expect("the preamble is kept");
        assert!(preamble_section.text.contains("inherent dignity"));
        assert_eq!(doc.title, "Declaration");
    }

    #[test]
    fn falls_back_to_title_element() {
        let doc = extract(
            "<html><head><title>Just a page</title></head><body><p>Hello there.</p></body></html>",
        );
        assert_eq!(doc.title, "Just a page");
    }
}
