//! A written answer cut into statements as it streams: the one splitter for
//! text that arrives token by token (the built-in model) and for text that
//! arrives whole (a server's reply). A statement ends at a line break, or
//! where whitespace follows a sentence's closing mark (`.`, `!`, `?`,
//! closing quotes and `[n]` markers after it allowed).
//!
//! The model's own `[n]` markers are taken out of the text a reader sees
//! and kept as the statement's hint.

use super::Draft;

/// What the splitter hands on for one piece of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cut {
    /// Text to show, markers taken out.
    Text(String),
    /// A statement ended (its text is all shown by now).
    Ended(Draft),
}

#[derive(Debug, Default)]
pub struct Sentences {
    /// The statement being written, as written (markers in).
    current: String,
    /// A statement that has ended, kept until the next one starts: `[n]`
    /// markers written after its closing mark are its hints.
    ended: Option<Draft>,
    /// What was written since `ended` ended (whitespace, markers).
    between: String,
    /// Text held back because it may be the start of a `[n]` marker.
    held: String,
    /// Whitespace not shown yet: it goes out before the next visible
    /// character, so that a statement's mark (handed on when the next
    /// statement starts) sits where the sentence ends, and it goes with a
    /// `[n]` marker that follows it.
    gap: String,
}

impl Sentences {
    pub fn new() -> Sentences {
        Sentences::default()
    }

    /// Takes the next piece of the answer.
    pub fn push(&mut self, piece: &str) -> Vec<Cut> {
        let mut out = Vec::new();
        let mut shown = String::new();
        for c in piece.chars() {
            if self.ended.is_none() {
                if c.is_whitespace() && self.held.is_empty() && self.at_end(c) {
                    self.ended = self.end();
                }
                if self.ended.is_none() {
                    self.current.push(c);
                    self.show(c, &mut shown);
                    continue;
                }
            }
            let before = shown.len();
            self.between.push(c);
            self.show(c, &mut shown);
            let new = shown[before..].to_string();
            if new.trim().is_empty() {
                continue;
            }
            // The next statement has started: the one before is complete.
            shown.truncate(before);
            flush(&mut shown, &mut out);
            let mut done = self.ended.take().expect("an ended statement");
            let markers = &self.between[..self.between.len() - new.len()];
            done.hint.extend(super::take_markers(markers).1);
            out.push(Cut::Ended(done));
            self.between.clear();
            self.current = new.clone();
            shown.push_str(&new);
        }
        flush(&mut shown, &mut out);
        out
    }

    /// The answer is complete: what was held back, and the last statement.
    pub fn finish(mut self) -> Vec<Cut> {
        let mut out = Vec::new();
        if !self.held.is_empty() {
            out.push(Cut::Text(self.gap.clone() + &self.held));
        }
        if let Some(mut done) = self.ended.take() {
            done.hint.extend(super::take_markers(&self.between).1);
            out.push(Cut::Ended(done));
        }
        out.extend(self.end().map(Cut::Ended));
        out
    }

    /// Whether whitespace `c` ends the statement being written.
    fn at_end(&self, c: char) -> bool {
        let (bare, _) = super::take_markers(&self.current);
        let bare = bare.trim_end_matches(['"', '\'', '”', '’', ')', '*']);
        !bare.trim().is_empty() && (c == '\n' || bare.ends_with(['.', '!', '?', '…']))
    }

    fn end(&mut self) -> Option<Draft> {
        let (text, hint) = super::take_markers(&std::mem::take(&mut self.current));
        let text = text.trim().to_string();
        (!text
            .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace())
            .is_empty())
        .then(|| Draft {
            text,
            citations: Vec::new(),
            hint,
        })
    }

    /// Shows `c`, unless it may be part of a `[n]` marker: such text is
    /// held until it is one (then dropped) or is not (then shown).
    fn show(&mut self, c: char, shown: &mut String) {
        if self.held.is_empty() && c != '[' {
            if c.is_whitespace() {
                self.gap.push(c);
            } else {
                shown.push_str(&std::mem::take(&mut self.gap));
                shown.push(c);
            }
            return;
        }
        self.held.push(c);
        let inner = &self.held[1..];
        if c == ']' && inner.len() > 1 {
            // A whole marker: dropped, with the space before it.
            self.gap.clear();
            self.held.clear();
        } else if !inner
            .trim_end_matches(']')
            .chars()
            .all(|c| c.is_ascii_digit() || c == ',' || c == ' ')
            || (c == ']' && inner.len() <= 1)
        {
            shown.push_str(&std::mem::take(&mut self.gap));
            shown.push_str(&std::mem::take(&mut self.held));
        }
    }
}

fn flush(shown: &mut String, out: &mut Vec<Cut>) {
    if !shown.is_empty() {
        out.push(Cut::Text(std::mem::take(shown)));
    }
}

/// A whole answer through the same splitter: its statements.
pub fn statements_of(answer: &str) -> Vec<Draft> {
    let mut s = Sentences::new();
    let mut cuts = s.push(answer);
    cuts.extend(s.finish());
    let mut out: Vec<Draft> = Vec::new();
    for cut in cuts {
        if let Cut::Ended(d) = cut {
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(pieces: &[&str]) -> (String, Vec<Draft>) {
        let mut s = Sentences::new();
        let mut cuts = Vec::new();
        for p in pieces {
            cuts.extend(s.push(p));
        }
        cuts.extend(s.finish());
        let mut shown = String::new();
        let mut ended = Vec::new();
        for c in cuts {
            match c {
                Cut::Text(t) => shown.push_str(&t),
                Cut::Ended(d) => ended.push(d),
            }
        }
        (shown, ended)
    }

    #[test]
    fn statements_end_where_a_sentence_or_line_ends_and_markers_become_hints() {
        let (shown, ended) = stream(&[
            "Feed",
            " the starter",
            " daily [",
            "1",
            "].",
            " Discard half",
            " first.",
            " [2]\nRye",
            " helps [1, 3].\n",
            "Version 3.5 is",
            " out",
        ]);
        assert_eq!(
            shown,
            "Feed the starter daily. Discard half first.\nRye helps.\nVersion 3.5 is out"
        );
        let got: Vec<(&str, Vec<usize>)> = ended
            .iter()
            .map(|d| (d.text.as_str(), d.hint.clone()))
            .collect();
        assert_eq!(
            got,
            vec![
                ("Feed the starter daily.", vec![1]),
                ("Discard half first.", vec![2]),
                ("Rye helps.", vec![1, 3]),
                ("Version 3.5 is out", vec![]),
            ]
        );
    }

    #[test]
    fn the_space_after_a_statement_comes_after_its_end_so_its_mark_can_sit_there() {
        let mut s = Sentences::new();
        let mut cuts = s.push("Once a day.");
        cuts.extend(s.push(" "));
        cuts.extend(s.push("Weigh it."));
        cuts.extend(s.finish());
        let order: Vec<String> = cuts
            .iter()
            .map(|c| match c {
                Cut::Text(t) => format!("text {t:?}"),
                Cut::Ended(d) => format!("ended {:?}", d.text),
            })
            .collect();
        assert_eq!(
            order,
            [
                "text \"Once a day.\"",
                "ended \"Once a day.\"",
                "text \" Weigh it.\"",
                "ended \"Weigh it.\""
            ]
        );
    }

    #[test]
    fn brackets_that_are_not_markers_are_shown() {
        let (shown, ended) = stream(&["see [the", " docs] and [", "]", " x[2a]."]);
        assert_eq!(shown, "see [the docs] and [] x[2a].");
        assert_eq!(ended.len(), 1);
    }

    #[test]
    fn a_whole_answer_splits_as_its_stream_would() {
        let whole = statements_of("One [1]. Two!\nThree?");
        let texts: Vec<&str> = whole.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts, vec!["One.", "Two!", "Three?"]);
    }
}
