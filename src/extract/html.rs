//! HTML via scraper: the main content (`main`, `article`, `[role=main]`, else
//! `body`), its h1–h6 structure and its text. Scripts, styles, navigation,
//! header/footer chrome and permalink marks are dropped.

use ego_tree::NodeRef;
use scraper::{ElementRef, Html, Node, Selector};

use super::{Extracted, SectionBuilder};

/// Elements whose content is never document text.
const SKIP: &[&str] = &[
    "script", "style", "nav", "header", "footer", "noscript", "template", "svg", "form", "button",
    "iframe", "object", "head", "select",
];

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
    "tr",
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
    "hr",
    "body",
];

pub fn extract(src: &str) -> Extracted {
    let doc = Html::parse_document(src);
    let root = ["main", "[role=main]", "article", "body"]
        .iter()
        .find_map(|sel| {
            Selector::parse(sel)
                .ok()
                .and_then(|s| doc.select(&s).next())
        })
        .unwrap_or_else(|| doc.root_element());
    let mut b = SectionBuilder::default();
    let mut first_h1 = String::new();
    walk(*root, &mut b, &mut first_h1);
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
    }
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
                if skipped(el) {
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
                } else if BLOCK.contains(&name) {
                    b.block_break();
                    stack.push(Step::BlockBreak);
                    push_children(&mut stack, child, pre || name == "pre");
                } else {
                    if matches!(name, "td" | "th") {
                        b.push(" ");
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
    if collapsed.is_empty() {
        if t.chars().next().is_some_and(char::is_whitespace) {
            b.push(" ");
        }
        return;
    }
    if t.starts_with(char::is_whitespace) {
        b.push(" ");
    }
    b.push(&collapsed);
    if t.ends_with(char::is_whitespace) {
        b.push(" ");
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
    fn falls_back_to_title_element() {
        let doc = extract(
            "<html><head><title>Just a page</title></head><body><p>Hello there.</p></body></html>",
        );
        assert_eq!(doc.title, "Just a page");
    }
}
