//! The heading veto's notion of "mentions": the query's content words,
//! Snowball-stemmed, against the stemmed words of a passage's heading path and
//! its document's title, in one language ([`crate::language::lexical_rule`]).
//! "Starters" mentions "starter"; "start" does not mention "starter"
//! (different stems), which is the point of the veto.

use std::collections::HashSet;

use crate::language::WordRule;

/// Stemmed content terms of an English text: the rule the answer's
/// support check was calibrated with (`answer`), not the lanes', which
/// judge each passage in its own language.
pub fn stems(text: &str) -> HashSet<String> {
    WordRule::ENGLISH.stems(text)
}

/// Stemmed content terms of an English text, in order, repeats kept.
pub fn stem_sequence(text: &str) -> Vec<String> {
    WordRule::ENGLISH.stem_sequence(text)
}

/// True when any content term of the query appears in the passage's heading
/// path or its document's title. A passage with no headings of its own (plain
/// text, abstracts; a heading path that only repeats the title counts as
/// none) has nothing for the veto to read beyond a title that may be a file
/// name, so what its document's card says of its subject (the key terms and
/// the `what:` line, in `card`) stands in for headings; and where that
/// passage is its document's only one (`whole`: a note, a short abstract),
/// its own words are all the document says of its subject, so they stand in
/// too. (A card says nothing of "hello" in a note that reads "hello there":
/// its key terms need a word twice and its `what:` line five words.)
/// A query with no content terms (only stopwords) mentions nothing. The
/// query's terms and the passage's are stemmed by one `rule`.
pub fn mentions(
    rule: WordRule,
    query: &HashSet<String>,
    heading_path: &[String],
    title: &str,
    card: &[String],
    whole: Option<&str>,
) -> bool {
    if query.is_empty() {
        return false;
    }
    let mut context = rule.stems(title);
    for h in heading_path {
        context.extend(rule.stems(h));
    }
    if heading_path.iter().all(|h| h.trim() == title.trim()) {
        for t in card.iter().map(String::as_str).chain(whole) {
            context.extend(rule.stems(t));
        }
    }
    query.iter().any(|q| context.contains(q))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflections_mention_and_collisions_do_not() {
        let q = stems("how do I feed sourdough starters");
        assert!(mentions(
            WordRule::ENGLISH,
            &q,
            &["Sourdough Starter".into(), "Feeding".into()],
            "",
            &[],
            None
        ));
        let q = stems("starter home mortgage rates");
        assert!(!mentions(
            WordRule::ENGLISH,
            &q,
            &["Getting Started".into()],
            "Lathe basics",
            &[],
            None
        ));
        assert!(mentions(
            WordRule::ENGLISH,
            &q,
            &[],
            "Starter Home Mortgage Rates Explained",
            &[],
            None
        ));
        assert!(!mentions(
            WordRule::ENGLISH,
            &stems("how is the"),
            &["How it is".into()],
            "",
            &[],
            None
        ));
        // Key terms count only where there are no headings to read.
        let terms = ["mortgage".to_string()];
        assert!(mentions(WordRule::ENGLISH, &q, &[], "000123", &terms, None));
        assert!(!mentions(
            WordRule::ENGLISH,
            &q,
            &["Deposits".into()],
            "000123",
            &terms,
            None
        ));
        // So does the card's what line (an abstract's opening sentence).
        let card = [
            "flow".to_string(),
            "An experimental study of mortgage rates for first homes.".to_string(),
        ];
        assert!(mentions(WordRule::ENGLISH, &q, &[], "000123", &card, None));
        assert!(!mentions(
            WordRule::ENGLISH,
            &q,
            &["Deposits".into()],
            "000123",
            &card,
            None
        ));
        // A heading path that only repeats the title is no headings.
        assert!(mentions(
            WordRule::ENGLISH,
            &q,
            &["000123".into()],
            "000123",
            &card,
            None
        ));
        // A note with no card to speak of: its one passage is its subject.
        let q = stems("hello");
        assert!(!mentions(WordRule::ENGLISH, &q, &[], "note", &[], None));
        assert!(mentions(
            WordRule::ENGLISH,
            &q,
            &[],
            "note",
            &[],
            Some("hello there")
        ));
        // Only where there are no headings: under a heading the veto reads
        // the heading, however short the document.
        assert!(!mentions(
            WordRule::ENGLISH,
            &q,
            &["Greetings".into()],
            "note",
            &[],
            Some("hello there")
        ));
    }
}
