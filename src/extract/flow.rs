//! The paragraph and table flow that word-processor formats (DOCX, ODT) share:
//! paragraphs become body text or headings, a table becomes text row by row
//! (`cell | cell`), and a paragraph's footnotes follow it. Headings nest
//! through [`SectionBuilder`], as in HTML and Markdown.

use super::{Section, SectionBuilder};

/// What a finished paragraph is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    Body,
    Heading(u8),
    /// The document's title line: it names the document and is not body text.
    Title,
}

#[derive(Default)]
pub struct Flow {
    b: SectionBuilder,
    /// Text of the open paragraph; nested paragraphs (a text box inside a
    /// paragraph) add to the outer one.
    para: String,
    open: usize,
    /// Footnotes cited in the open paragraph, with their numbers.
    notes: Vec<(usize, String)>,
    noted: usize,
    /// Cells written so far in the open row of each open table.
    cells: Vec<usize>,
    first_heading: Option<String>,
    title: Option<String>,
}

impl Flow {
    pub fn open_paragraph(&mut self) {
        if self.open > 0 {
            self.para.push(' ');
        }
        self.open += 1;
    }

    pub fn text(&mut self, s: &str) {
        if self.open > 0 {
            self.para.push_str(s);
        }
    }

    /// A footnote cited in the open paragraph: a `[n]` mark here, the note's
    /// text after the paragraph.
    pub fn footnote(&mut self, text: String) {
        if self.open == 0 || text.trim().is_empty() {
            return;
        }
        self.noted += 1;
        self.notes.push((self.noted, text));
        self.para.push_str(&format!("[{}]", self.noted));
    }

    pub fn close_paragraph(&mut self, block: Block) {
        self.open = self.open.saturating_sub(1);
        if self.open > 0 {
            return;
        }
        let text = std::mem::take(&mut self.para);
        let line = text.trim();
        if !self.cells.is_empty() {
            // Paragraphs inside a cell run on; the cell and row marks
            // separate them.
            if !line.is_empty() {
                self.b.push(line);
                self.b.push(" ");
            }
        } else {
            match block {
                Block::Heading(level) if !line.is_empty() => {
                    self.first_heading.get_or_insert_with(|| line.to_string());
                    self.b.heading(level, line.to_string());
                }
                Block::Title if !line.is_empty() => {
                    self.title.get_or_insert_with(|| line.to_string());
                }
                _ => {
                    self.b.push(&text);
                    self.b.block_break();
                }
            }
        }
        // Inside a table the notes wait for its end, not to split its rows.
        if self.cells.is_empty() {
            self.write_notes();
        }
    }

    fn write_notes(&mut self) {
        for (n, note) in std::mem::take(&mut self.notes) {
            self.b.block_break();
            self.b.push(&format!("[{n}] {}", note.trim()));
            self.b.block_break();
        }
    }

    pub fn open_table(&mut self) {
        self.b.block_break();
        self.cells.push(0);
    }

    pub fn open_row(&mut self) {
        if let Some(c) = self.cells.last_mut() {
            *c = 0;
        }
        self.b.line_break();
    }

    pub fn open_cell(&mut self) {
        if let Some(c) = self.cells.last_mut() {
            if *c > 0 {
                self.b.push("| ");
            }
            *c += 1;
        }
    }

    pub fn close_row(&mut self) {
        self.b.line_break();
    }

    pub fn close_table(&mut self) {
        self.cells.pop();
        self.b.block_break();
        if self.cells.is_empty() {
            self.write_notes();
        }
    }

    /// The sections, and the title: the document's title line, else its
    /// first heading.
    pub fn finish(self) -> (String, Vec<Section>) {
        let title = self.title.or(self.first_heading).unwrap_or_default();
        (title, self.b.finish())
    }
}
