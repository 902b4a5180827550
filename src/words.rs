//! English function words: the one list of words that never name a
//! subject. The heading veto drops them from a query ([`crate::lanes::terms`])
//! and the card drops them from its key terms ([`crate::card`], which adds
//! words that are common in documents on top). Also how a count reads with
//! its noun ([`count`]). A leaf.

/// Function words (articles, pronouns, prepositions, auxiliaries, question
/// words), lowercase.
pub const FUNCTION_WORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "of", "in", "on", "at", "to", "for", "with", "by", "from",
    "about", "is", "are", "was", "were", "be", "been", "how", "what", "which", "who", "whom",
    "why", "when", "where", "do", "does", "did", "i", "you", "we", "my", "your", "our", "it",
    "its", "this", "that", "these", "those", "as", "into", "can", "should", "would", "could",
    "will", "there", "their", "any", "some", "all", "not", "no", "me", "us", "than", "then", "so",
    "if", "vs", "versus", "using", "use", "get", "make", "much", "many",
];

/// Whether `word` (lowercase) is a function word.
pub fn is_function_word(word: &str) -> bool {
    FUNCTION_WORDS.contains(&word)
}

/// A count with its noun, for the sentences Carrel prints: "1 passage",
/// "3 passages".
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", if n == 1 { "" } else { "s" })
}
