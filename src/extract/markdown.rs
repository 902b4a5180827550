//! Markdown via pulldown-cmark: headings become heading paths, list items stay
//! one per line so the chunker can see them.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

use super::{Extracted, SectionBuilder};

/// Deepest list level that indents its items further. Real documents nest a
/// few levels; past this every item keeps this indent. Indenting by the full
/// depth made nested markers (`> - > - …`, 4 bytes a level) extract to the
/// square of their depth: 39 KB became 96 MB of spaces (found by fuzzing).
const MAX_LIST_INDENT_LEVELS: usize = 8;

pub fn extract(src: &str) -> Extracted {
    let opts = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    let mut b = SectionBuilder::default();
    let mut title = String::new();
    let mut heading: Option<(u8, String)> = None;
    let mut in_metadata = false;
    let mut list_depth = 0usize;
    for event in Parser::new_ext(src, opts) {
        match event {
            Event::Start(Tag::MetadataBlock(_)) => in_metadata = true,
            Event::End(TagEnd::MetadataBlock(_)) => in_metadata = false,
            _ if in_metadata => {}
            Event::Start(Tag::Heading { level, .. }) => {
                heading = Some((level_num(level), String::new()))
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((level, text)) = heading.take() {
                    if level == 1 && title.is_empty() {
                        title = text.clone();
                    }
                    b.heading(level, text);
                }
            }
            Event::Text(t) | Event::Code(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                match heading.as_mut() {
                    Some((_, h)) => h.push_str(&t),
                    None => b.push(&t),
                }
            }
            Event::SoftBreak => match heading.as_mut() {
                Some((_, h)) => h.push(' '),
                None => b.push(" "),
            },
            Event::HardBreak => b.line_break(),
            Event::Start(Tag::List(_)) => {
                if list_depth == 0 {
                    b.block_break();
                }
                list_depth += 1;
            }
            Event::End(TagEnd::List(_)) => {
                list_depth = list_depth.saturating_sub(1);
                if list_depth == 0 {
                    b.block_break();
                }
            }
            Event::Start(Tag::Item) => {
                b.line_break();
                b.push(&"  ".repeat(list_depth.saturating_sub(1).min(MAX_LIST_INDENT_LEVELS)));
                b.push("- ");
            }
            Event::End(TagEnd::Item) => b.line_break(),
            Event::End(TagEnd::Paragraph) => {
                if list_depth > 0 {
                    b.line_break()
                } else {
                    b.block_break()
                }
            }
            Event::Start(Tag::CodeBlock(_)) | Event::End(TagEnd::CodeBlock) => b.block_break(),
            Event::End(TagEnd::TableRow) | Event::End(TagEnd::TableHead) => b.line_break(),
            Event::End(TagEnd::TableCell) => b.push(" | "),
            Event::End(TagEnd::BlockQuote(_)) => b.block_break(),
            _ => {}
        }
    }
    Extracted {
        title,
        sections: b.finish(),
        ..Default::default()
    }
}

fn level_num(l: HeadingLevel) -> u8 {
    match l {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        HeadingLevel::H4 => 4,
        HeadingLevel::H5 => 5,
        HeadingLevel::H6 => 6,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_nest_into_paths_and_front_matter_is_skipped() {
        let doc = extract(
            "---\nlayout: x\n---\n# Guide\n\nIntro text.\n\n## Install\n\nRun it.\n\n### Linux\n\n- apt\n- dnf\n\n## Use\n\nType.\n",
        );
        assert_eq!(doc.title, "Guide");
        let paths: Vec<_> = doc
            .sections
            .iter()
            .map(|s| s.heading_path.join(" > "))
            .collect();
        assert_eq!(
            paths,
            [
                "Guide",
                "Guide > Install",
                "Guide > Install > Linux",
                "Guide > Use"
            ]
        );
        assert!(
            doc.sections[2].text.contains("- apt\n- dnf"),
            "{:?}",
            doc.sections[2].text
        );
        assert!(!doc.sections.iter().any(|s| s.text.contains("layout")));
    }

    #[test]
    fn nested_list_items_keep_their_indent_up_to_a_cap() {
        let doc = extract("- a\n  - b\n    - c\n");
        assert_eq!(doc.sections[0].text.trim_end(), "- a\n  - b\n    - c");
        // 10,000 levels of quote-and-list, 40 KB: the text stays linear in it.
        let src = "> - ".repeat(10_000);
        let chars: usize = extract(&src).sections.iter().map(|s| s.text.len()).sum();
        assert!(chars < 16 * src.len(), "{} bytes became {chars}", src.len());
    }
}
