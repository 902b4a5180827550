//! Grounded answers over this library, and the chat kept in it. The
//! answering is [`crate::answer`]'s; the library is its [`Corpus`].

use std::sync::Mutex;

use super::Library;
use crate::answer::history::{self, ChatTurn, HISTORY_TURNS};
use crate::answer::{self, Answer, Answerer, Corpus};
use crate::error::Result;
use crate::lanes::MatchResponse;
use crate::models::ModelConfig;
use crate::store::{DocumentRow, Store};

impl Library {
    /// A grounded answer to `message`; see [`answer`].
    pub fn ask(&mut self, message: &str, answerer: &answer::Answerer) -> Result<answer::Answer> {
        answer::ask(&mut [self], message, answerer)
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

/// Asks a library that others share (the app's, behind a lock) and keeps
/// the turn. The library is held to build the context and to check the
/// answer, never while an LLM writes it (up to two minutes), so the list,
/// the documents and the match panel stay live meanwhile. The turn is kept
/// either way, an error being part of the conversation: an answer that
/// cannot be kept is an error (it would be lost on restart), while a failed
/// question whose keeping also failed reports why asking failed.
pub fn ask_shared(lib: &Mutex<Library>, message: &str, answerer: &Answerer) -> Result<Answer> {
    let lock = || crate::fault::lock(lib);
    // One statement each, so that each lock is let go before the next.
    let prepared = answer::prepare(&mut [&mut *lock()], message);
    let asked = prepared.and_then(|p| {
        let drafted = answer::draft(&p, answerer);
        answer::finish(&[&*lock()], p, answerer, drafted)
    });
    let mut l = lock();
    match &asked {
        Ok(answer) => {
            l.keep_turn(message, Ok(answer))?;
        }
        Err(e) => {
            if let Err(keep) = l.keep_turn(message, Err(&e.to_string())) {
                tracing::warn!("could not keep the failed turn: {keep}");
            }
        }
    }
    asked
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

    fn identity(&self) -> Result<crate::kb::Identity> {
        self.store.identity()
    }
}
