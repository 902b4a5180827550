//! The app's chat, kept in the library it asks about so a restart loses
//! nothing. A turn is the message as sent and what came back: the answer
//! exactly as the app showed it, or the error. A turn written by a build
//! whose answer shape differs is shown as such, never dropped silently.

use serde::Serialize;

use super::Answer;
use crate::store::StoredTurn;

/// Turns the Chat page loads: enough to scroll back a session.
pub const HISTORY_TURNS: usize = 200;

#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct ChatTurn {
    pub id: i64,
    pub asked_at: i64,
    pub message: String,
    pub reply: Reply,
}

#[derive(Debug, Clone, Serialize, specta::Type)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    Answer {
        answer: Box<Answer>,
    },
    /// Asking failed (the library or a model); the sentence says why.
    Error {
        message: String,
    },
    /// Kept by a build whose answer shape this one cannot read.
    Unreadable {
        reason: String,
    },
}

impl ChatTurn {
    /// A kept turn as the Chat page shows it; an answer this build cannot
    /// read is [`Reply::Unreadable`], never dropped.
    pub fn from_stored(t: StoredTurn) -> ChatTurn {
        let reply = match (t.answer, t.error) {
            (Some(json), _) => match serde_json::from_str(&json) {
                Ok(answer) => Reply::Answer { answer },
                Err(e) => Reply::Unreadable {
                    reason: format!(
                        "this answer was kept by another version of Carrel and cannot be shown ({e}); ask again"
                    ),
                },
            },
            (None, Some(message)) => Reply::Error { message },
            (None, None) => Reply::Unreadable {
                reason: "this turn was kept without its answer".into(),
            },
        };
        ChatTurn {
            id: t.id,
            asked_at: t.asked_at,
            message: t.message,
            reply,
        }
    }
}

/// An answer as the chat keeps it.
pub fn to_json(answer: &Answer) -> String {
    serde_json::to_string(answer).expect("answers serialise")
}
