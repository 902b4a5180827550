//! Light markup that is text with headings: reStructuredText (a title line
//! underlined, or over- and underlined, by one punctuation character; levels
//! in the order the styles first appear), Org (`* `, `** `, …; `#+TITLE:`)
//! and AsciiDoc (`= Title`, `== Section`, …). Everything else stays as
//! written: these are read as text that keeps its outline, not rendered.

use super::{Extracted, Reader, SectionBuilder};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    Rst,
    Org,
    Asciidoc,
}

pub fn extract(src: &str, markup: Markup) -> Extracted {
    let lines: Vec<&str> = src.lines().collect();
    let mut b = SectionBuilder::default();
    let mut title = String::new();
    let mut first_heading = None;
    let mut rst_styles: Vec<(char, bool)> = Vec::new();
    let mut rst_title_style = None;
    if markup == Markup::Rst
        && let Some((style, text)) = rst_title(&lines)
    {
        rst_title_style = Some(style);
        title = text;
    }
    // Inside the indented body of an RST comment, raw block or link target.
    let mut rst_skipping = false;
    // Inside a block (Org `#+BEGIN_…`, AsciiDoc `----`/`....`): the line
    // that ends it, and whether its lines are text (a source block) or not
    // (raw HTML for export, a comment).
    let mut literal: Option<(String, bool)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_end();
        if let Some((end, keep)) = &literal {
            if trimmed.eq_ignore_ascii_case(end) {
                literal = None;
            } else if *keep {
                b.push(line);
                b.line_break();
            }
            i += 1;
            continue;
        }
        if markup == Markup::Rst && rst_skips(line, &mut rst_skipping) {
            i += 1;
            continue;
        }
        let heading = match markup {
            Markup::Org => org(trimmed, &mut title, &mut literal),
            Markup::Asciidoc => asciidoc(trimmed, &mut literal),
            Markup::Rst => match rst(&lines, i, &mut rst_styles) {
                Some((_, _, used, style)) if Some(style) == rst_title_style => {
                    // The title: not a section, and not a level.
                    rst_styles.retain(|s| *s != style);
                    i += used;
                    continue;
                }
                Some((level, text, used, _)) => {
                    i += used - 1;
                    Some((level, text))
                }
                None => None,
            },
        };
        match heading {
            // AsciiDoc's `= Title`: the document's title, not a section.
            Some((0, text)) if title.is_empty() => title = text,
            Some((0, _)) => {}
            Some((level, text)) => {
                first_heading.get_or_insert_with(|| text.clone());
                b.heading(level, text);
            }
            None => text_line(&mut b, trimmed, markup),
        }
        i += 1;
    }
    if title.is_empty() {
        title = first_heading.unwrap_or_default();
    }
    Extracted {
        title,
        sections: b.finish(),
        reader: Reader::Native,
        ..Default::default()
    }
}

/// A line that is not a heading: a paragraph's end when blank, nothing when
/// it sets options, else text.
fn text_line(b: &mut SectionBuilder, trimmed: &str, markup: Markup) {
    if trimmed.is_empty() {
        b.block_break();
    } else if !is_directive(trimmed, markup) {
        b.push(trimmed);
        b.line_break();
    }
}

/// reStructuredText's document title and its style: a first section title
/// whose style is used by no other (docutils promotes it the same way).
fn rst_title(lines: &[&str]) -> Option<((char, bool), String)> {
    let mut seen = Vec::new();
    let mut styles = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        match rst(lines, i, &mut styles) {
            Some((_, text, used, style)) => {
                seen.push((style, text));
                i += used;
            }
            None => i += 1,
        }
    }
    let (style, text) = seen.first()?;
    (seen.iter().filter(|(s, _)| s == style).count() == 1).then(|| (*style, text.clone()))
}

/// Whether an RST line is markup rather than text: a directive's own line,
/// or a line of the indented body of a `raw` directive, a comment or a link
/// target. `skipping` says whether the lines before it were such a body.
fn rst_skips(line: &str, skipping: &mut bool) -> bool {
    let trimmed = line.trim_end();
    if *skipping && (trimmed.is_empty() || line.starts_with([' ', '\t'])) {
        return true;
    }
    *skipping = false;
    let Some(rest) = trimmed.strip_prefix(".. ") else {
        return false;
    };
    *skipping = rest.starts_with("raw::") || rest.starts_with('_') || !rest.contains("::");
    true
}

/// Lines that set options rather than say anything: Org `#+KEY:` and
/// drawers, AsciiDoc attribute entries and comments.
fn is_directive(line: &str, markup: Markup) -> bool {
    match markup {
        Markup::Org => {
            line.starts_with("#+")
                || (line.starts_with(':') && line.ends_with(':') && !line.contains(' '))
        }
        Markup::Asciidoc => {
            line.starts_with("//")
                || (line.starts_with(':') && line[1..].contains(':') && !line.contains("::"))
        }
        Markup::Rst => false,
    }
}

fn org(
    line: &str,
    title: &mut String,
    literal: &mut Option<(String, bool)>,
) -> Option<(u8, String)> {
    let upper = line.to_ascii_uppercase();
    if let Some(rest) = upper.strip_prefix("#+TITLE:") {
        *title = line[line.len() - rest.len()..].trim().to_string();
        return None;
    }
    if let Some(kind) = upper.strip_prefix("#+BEGIN_") {
        let kind = kind.split_whitespace().next().unwrap_or("");
        let keep = !matches!(kind, "HTML" | "EXPORT" | "COMMENT" | "LATEX");
        *literal = Some((format!("#+END_{kind}"), keep));
        return None;
    }
    let stars = line.chars().take_while(|c| *c == '*').count();
    let text = line[stars..].strip_prefix(' ')?.trim();
    (stars > 0 && !text.is_empty()).then(|| (stars.min(9) as u8, text.to_string()))
}

fn asciidoc(line: &str, literal: &mut Option<(String, bool)>) -> Option<(u8, String)> {
    if line.len() >= 4 && (line.chars().all(|c| c == '-') || line.chars().all(|c| c == '.')) {
        *literal = Some((line.to_string(), true));
        return None;
    }
    if line == "++++" || line == "////" {
        // A passthrough (raw HTML) or comment block.
        *literal = Some((line.to_string(), false));
        return None;
    }
    let marks = line.chars().take_while(|c| *c == '=').count();
    let text = line[marks..].strip_prefix(' ')?.trim();
    if marks == 0 || text.is_empty() {
        return None;
    }
    // `= Title` is level 0: the document's title.
    Some(((marks - 1).min(9) as u8, text.to_string()))
}

/// A reStructuredText section title at line `i`: its level, its text, how
/// many lines it took (2 underlined, 3 over- and underlined) and its style.
fn rst(
    lines: &[&str],
    i: usize,
    styles: &mut Vec<(char, bool)>,
) -> Option<(u8, String, usize, (char, bool))> {
    let adornment = |l: &str| -> Option<char> {
        let l = l.trim_end();
        let c = l.chars().next()?;
        (l.chars().count() >= 2 && c.is_ascii_punctuation() && l.chars().all(|x| x == c))
            .then_some(c)
    };
    let (text, c, over, used) = match adornment(lines[i]) {
        // Overline, title, underline of the same character.
        Some(c) => {
            let text = lines.get(i + 1)?.trim();
            let under = adornment(lines.get(i + 2)?)?;
            if under != c || text.is_empty() || adornment(text).is_some() {
                return None;
            }
            (text, c, true, 3)
        }
        None => {
            let text = lines[i].trim();
            let c = adornment(lines.get(i + 1)?)?;
            let long_enough = lines[i + 1].trim_end().chars().count() >= text.chars().count();
            if text.is_empty() || !long_enough || lines[i].starts_with(' ') {
                return None;
            }
            (text, c, false, 2)
        }
    };
    let level = match styles.iter().position(|s| *s == (c, over)) {
        Some(p) => p + 1,
        None => {
            styles.push((c, over));
            styles.len()
        }
    };
    Some((level.min(9) as u8, text.to_string(), used, (c, over)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(doc: &Extracted) -> Vec<String> {
        doc.sections
            .iter()
            .map(|s| s.heading_path.join(" > "))
            .collect()
    }

    #[test]
    fn rst_levels_follow_the_order_styles_appear_in_after_the_title() {
        let doc = extract(
            "=====\nGuide\n=====\n\nIntro text.\n\nInstall\n-------\n\nRun it.\n\nFlags\n~~~~~\n\nSome flags.\n\nUse\n---\n\nUse it.\n",
            Markup::Rst,
        );
        // A first title in a style used once is the document's title.
        assert_eq!(doc.title, "Guide");
        assert_eq!(paths(&doc), ["", "Install", "Install > Flags", "Use"]);
    }

    #[test]
    fn org_headings_nest_and_source_blocks_are_text() {
        let doc = extract(
            "#+TITLE: Notes\n* Garden\nBeds.\n** Tomatoes\n#+BEGIN_SRC sh\n* not a heading\n#+END_SRC\n* Kitchen\nBread.\n",
            Markup::Org,
        );
        assert_eq!(doc.title, "Notes");
        assert_eq!(paths(&doc), ["Garden", "Garden > Tomatoes", "Kitchen"]);
        assert!(doc.sections[1].text.contains("* not a heading"));
    }

    #[test]
    fn asciidoc_title_and_sections() {
        let doc = extract(
            "= User Guide\n:toc:\n\n== Setup\nInstall.\n\n=== Linux\nApt.\n\n----\n== not a heading\n----\n\n== Use\nGo.\n",
            Markup::Asciidoc,
        );
        assert_eq!(doc.title, "User Guide");
        assert_eq!(paths(&doc), ["Setup", "Setup > Linux", "Use"]);
        assert!(!doc.body().contains(":toc:"));
    }
}
