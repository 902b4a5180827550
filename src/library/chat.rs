//! Grounded answers over this library, and the chat kept in it. The
//! answering is [`crate::answer`]'s; the library is its [`Corpus`].

use super::Library;
use crate::answer::history::{self, ChatTurn, HISTORY_TURNS};
use crate::answer::{self, Answer, Corpus};
use crate::error::Result;
use crate::lanes::MatchResponse;
use crate::models::ModelConfig;
use crate::store::{DocumentRow, Store};

impl Library {
    /// A grounded answer to `message`; see [`answer`].
    pub fn ask(&mut self, message: &str, answerer: &answer::Answerer) -> Result<answer::Answer> {
        answer::ask(self, message, answerer)
    }

    /// Keeps one turn: the answer, or the error asking raised.
    pub fn keep_turn(
        &mut self,
        message: &str,
        reply: std::result::Result<&Answer, &str>,
    ) -> Result<i64> {
        match reply {
            Ok(answer) => self
                .store
                .add_turn(message, Some(&history::to_json(answer)), None),
            Err(error) => self.store.add_turn(message, None, Some(error)),
        }
    }

    /// The newest [`HISTORY_TURNS`] turns, oldest first.
    pub fn chat_history(&self) -> Result<Vec<ChatTurn>> {
        Ok(self
            .store
            .turns(HISTORY_TURNS)?
            .into_iter()
            .map(ChatTurn::from_stored)
            .collect())
    }

    /// Forgets the chat; returns how many turns went.
    pub fn clear_chat(&mut self) -> Result<usize> {
        self.store.clear_turns()
    }
}

/// What an answer reads; each is the facade's own method of that name.
impl Corpus for Library {
    fn list(&self) -> Result<Vec<DocumentRow>> {
        Library::list(self)
    }

    fn document(&self, id: i64) -> Result<DocumentRow> {
        Library::document(self, id)
    }

    fn store(&self) -> &Store {
        &self.store
    }

    fn models(&self) -> &ModelConfig {
        &self.config.models
    }

    fn embed_query(&mut self, query: &str) -> Result<Vec<f32>> {
        Library::embed_query(self, query)
    }

    fn match_query(&mut self, query: &str, top_k: usize) -> Result<MatchResponse> {
        Library::match_query(self, query, top_k)
    }
}
