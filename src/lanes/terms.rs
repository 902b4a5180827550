//! The heading veto's notion of "mentions": the query's content words,
//! Snowball-stemmed, against the stemmed words of a passage's heading path and
//! its document's title. "Starters" mentions "starter"; "start" does not
//! mention "starter" (different stems), which is the point of the veto.

use std::collections::HashSet;

use rust_stemmers::{Algorithm, Stemmer};

/// Stemmed content terms of a text.
pub fn stems(text: &str) -> HashSet<String> {
    let stemmer = Stemmer::create(Algorithm::English);
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !crate::words::is_function_word(w))
        .map(|w| stemmer.stem(&w).into_owned())
        .collect()
}

/// True when any content term of the query appears in the passage's heading
/// path or its document's title. A passage with no headings of its own (plain
/// text, abstracts; a heading path that only repeats the title counts as
/// none) has nothing for the veto to read beyond a title that may be a file
/// name, so what its document's card says of its subject (the key terms and
/// the `what:` line, in `card`) stands in for headings.
/// A query with no content terms (only stopwords) mentions nothing.
pub fn mentions(
    query: &HashSet<String>,
    heading_path: &[String],
    title: &str,
    card: &[String],
) -> bool {
    if query.is_empty() {
        return false;
    }
    let mut context = stems(title);
    for h in heading_path {
        context.extend(stems(h));
    }
    if heading_path.iter().all(|h| h.trim() == title.trim()) {
        for t in card {
            context.extend(stems(t));
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
            &q,
            &["Sourdough Starter".into(), "Feeding".into()],
            "",
            &[]
        ));
        let q = stems("starter home mortgage rates");
        assert!(!mentions(
            &q,
            &["Getting Started".into()],
            "Lathe basics",
            &[]
        ));
        assert!(mentions(
            &q,
            &[],
            "Starter Home Mortgage Rates Explained",
            &[]
        ));
        assert!(!mentions(
            &stems("how is the"),
            &["How it is".into()],
            "",
            &[]
        ));
        // Key terms count only where there are no headings to read.
        let terms = ["mortgage".to_string()];
        assert!(mentions(&q, &[], "000123", &terms));
        assert!(!mentions(&q, &["Deposits".into()], "000123", &terms));
        // So does the card's what line (an abstract's opening sentence).
        let card = [
            "flow".to_string(),
            "An experimental study of mortgage rates for first homes.".to_string(),
        ];
        assert!(mentions(&q, &[], "000123", &card));
        assert!(!mentions(&q, &["Deposits".into()], "000123", &card));
        // A heading path that only repeats the title is no headings.
        assert!(mentions(&q, &["000123".into()], "000123", &card));
    }
}
