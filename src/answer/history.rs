//! The app's chat, kept in the library it asks about so a restart loses
//! nothing. A turn is the message as sent and what came back: the answer
//! exactly as the app showed it, or the error. A turn written by a build
//! whose answer shape differs is shown as such, never dropped silently.

use serde::Serialize;

use super::Answer;
use crate::Library;
use crate::error::Result;

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
        answer: Answer,
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

impl Library {
    /// Keeps one turn: the answer, or the error asking raised.
    pub fn keep_turn(
        &mut self,
        message: &str,
        reply: std::result::Result<&Answer, &str>,
    ) -> Result<i64> {
        match reply {
            Ok(answer) => {
                let json = serde_json::to_string(answer).expect("answers serialise");
                self.store().add_turn(message, Some(&json), None)
            }
            Err(error) => self.store().add_turn(message, None, Some(error)),
        }
    }

    /// The newest [`HISTORY_TURNS`] turns, oldest first.
    pub fn chat_history(&self) -> Result<Vec<ChatTurn>> {
        Ok(self
            .store()
            .turns(HISTORY_TURNS)?
            .into_iter()
            .map(|t| {
                let reply = match (t.answer, t.error) {
                    (Some(json), _) => match serde_json::from_str(&json) {
                        Ok(answer) => Reply::Answer { answer },
                        Err(e) => Reply::Unreadable {
                            reason: format!("this answer was kept by another version of Carrel and cannot be shown ({e}); ask again"),
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
            })
            .collect())
    }

    /// Forgets the chat; returns how many turns went.
    pub fn clear_chat(&mut self) -> Result<usize> {
        self.store().clear_turns()
    }
}
