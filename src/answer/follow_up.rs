//! A question that follows up on the turn before it ("and how do I make it
//! permanent?"): what the lanes search for, which documents it reads, and
//! what the answerer is told of the conversation. The chat is one
//! conversation per library; the turn before is the last one kept, and a
//! question follows up on it only when it leans on it ([`following`]).

use super::{Answer, Outcome};
use crate::mention;

/// Characters of the earlier answer the answerer is shown: its first
/// sentences, enough to resolve "it" and "the second one" without taking
/// the passages' room in a small model's context.
pub const EARLIER_ANSWER_CHARS: usize = 400;

/// The turn a question follows: the message as sent and what was answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Earlier {
    /// The message as the user sent it, mentions included.
    pub message: String,
    /// Its question, mentions taken out.
    pub question: String,
    /// What was answered, as shown: the statements, in order.
    pub answer: String,
}

impl Earlier {
    /// The turn `answer` closed; none when nothing was answered (an error,
    /// no context: there is nothing to follow up on).
    pub fn of(message: &str, answer: &Answer) -> Option<Earlier> {
        let Outcome::Answered { statements, .. } = &answer.outcome else {
            return None;
        };
        let text: Vec<&str> = statements.iter().map(|s| s.text.trim()).collect();
        Some(Earlier {
            message: message.to_string(),
            question: answer.question.clone(),
            answer: text.join(" "),
        })
    }
}

/// Words by which a question refers back to the turn before it ("can it
/// keep a backup?", "how do I undo that?", "the same for directories",
/// "side by side instead"). Chosen before the conversations were measured
/// (tools/follow-ups/README.md); English only, like the lanes' stemmer.
const REFERS_BACK: &[&str] = &[
    "it", "its", "itself", "they", "them", "their", "this", "that", "these", "those", "one",
    "ones", "he", "she", "him", "her", "instead", "also", "too", "else", "again", "same",
    "another", "second", "latter", "former", "previous",
];
/// First words by which a question goes on from the turn before it.
const GOES_ON: &[&str] = &["and", "but", "or", "so", "then", "also"];

/// The turn `question` follows up on: `earlier`, when the question leans
/// on it (it refers back, or goes on from it: "and only the last line?",
/// "what about…"); none for a question that stands on its own, which is
/// searched and answered by its own words, so that a question the library
/// cannot answer is still refused after one it could.
pub fn following<'a>(question: &str, earlier: Option<&'a Earlier>) -> Option<&'a Earlier> {
    let words: Vec<String> = question
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase().trim_end_matches("'s").to_string())
        .collect();
    let goes_on = words.first().is_some_and(|w| GOES_ON.contains(&w.as_str()))
        || matches!(words.get(..2), Some([a, b]) if (a == "what" || a == "how") && b == "about");
    let refers_back = words.iter().any(|w| REFERS_BACK.contains(&w.as_str()));
    earlier.filter(|_| goes_on || refers_back)
}

/// The message a follow-up is asked as: its own `@doc:` and `@kb:` tokens
/// when it has any, else the earlier message's, so that "and the second
/// one?" reads the documents the conversation is about.
pub fn with_mentions(message: &str, earlier: Option<&Earlier>) -> String {
    let Some(earlier) = earlier else {
        return message.to_string();
    };
    if !mention::parse(message).is_empty() || !mention::parse_kbs(message).is_empty() {
        return message.to_string();
    }
    let tokens: Vec<String> = mention::parse_kbs(&earlier.message)
        .into_iter()
        .map(|m| m.token)
        .chain(
            mention::parse(&earlier.message)
                .into_iter()
                .map(|m| m.token),
        )
        .collect();
    if tokens.is_empty() {
        message.to_string()
    } else {
        format!("{} {message}", tokens.join(" "))
    }
}

/// What the lanes search for: the earlier question, then this one. A
/// follow-up's own words ("make it permanent") rarely name its subject; the
/// earlier question does. Measured on two-turn conversations
/// (tools/follow-ups/README.md).
pub fn search_text(question: &str, earlier: Option<&Earlier>) -> String {
    match earlier {
        Some(e) if !e.question.is_empty() && !question.is_empty() => {
            format!("{} {question}", e.question)
        }
        _ => question.to_string(),
    }
}

/// The note that says a question was read as a follow-up.
pub fn note(earlier: &Earlier) -> String {
    format!("read as a follow-up to “{}”", earlier.question)
}

/// The conversation, as the answerer's prompt begins: the earlier question
/// and the start of its answer.
pub fn prompt_lines(earlier: &Earlier) -> String {
    let mut answer: String = earlier.answer.chars().take(EARLIER_ANSWER_CHARS).collect();
    if answer.len() < earlier.answer.len() {
        answer.push('…');
    }
    format!(
        "Earlier in this conversation the user asked: {}\nThe answer began: {}\n\n",
        earlier.question, answer
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn earlier(message: &str) -> Earlier {
        Earlier {
            message: message.into(),
            question: mention::strip(message),
            answer: "Aliases are set with alias.".into(),
        }
    }

    #[test]
    fn a_follow_up_without_mentions_reads_the_documents_the_earlier_turn_named() {
        let e = earlier("@kb:work @doc:aliases how do I define an alias?");
        assert_eq!(
            with_mentions("and remove one?", Some(&e)),
            "@kb:work @doc:aliases and remove one?"
        );
        assert_eq!(
            with_mentions("and @doc:history?", Some(&e)),
            "and @doc:history?"
        );
        assert_eq!(with_mentions("and remove one?", None), "and remove one?");
        assert_eq!(
            with_mentions(
                "and remove one?",
                Some(&earlier("how do I define an alias?"))
            ),
            "and remove one?"
        );
    }

    #[test]
    fn a_question_follows_up_only_when_it_leans_on_the_turn_before() {
        let e = earlier("how do I define an alias?");
        for leans in [
            "Can I pass arguments into it?",
            "And only the very last line?",
            "What about only files changed yesterday?",
            "Oops, how do I undo that?",
            "Could a sed script do the same job?",
            "Can I put them side by side instead?",
            "Does it obey the site's rules?",
        ] {
            assert_eq!(following(leans, Some(&e)), Some(&e), "{leans}");
        }
        for alone in [
            "How do I make grep ignore case?",
            "sourdough starter aboard Martian spacecraft",
            "who is responsible for the murders in Frankenstein",
            "Android's permissions",
        ] {
            assert_eq!(following(alone, Some(&e)), None, "{alone}");
        }
        assert_eq!(following("and it?", None), None);
    }

    #[test]
    fn the_lanes_search_the_earlier_question_with_this_one() {
        let e = earlier("how do I define an alias?");
        assert_eq!(
            search_text("and remove one?", Some(&e)),
            "how do I define an alias? and remove one?"
        );
        assert_eq!(search_text("and remove one?", None), "and remove one?");
        assert_eq!(search_text("", Some(&e)), "");
    }

    #[test]
    fn the_prompt_shows_the_start_of_a_long_earlier_answer() {
        let mut e = earlier("what is an alias?");
        e.answer = "word ".repeat(200);
        let lines = prompt_lines(&e);
        assert!(lines.contains("asked: what is an alias?"), "{lines}");
        assert!(lines.contains('…'));
        assert!(lines.chars().count() < EARLIER_ANSWER_CHARS + 120);
    }
}
