//! Grounded answers over this library (or the libraries a question's
//! `@kb:` tokens name), and the chat kept in it. The
//! answering is [`crate::answer`]'s; the library is its [`Corpus`].

use std::sync::Mutex;

use super::shelf::{Shelf, shelf_path};
use super::{Library, LibraryConfig};
use crate::answer::history::{self, ChatTurn, HISTORY_TURNS};
use crate::answer::{self, Answer, Answerer, Corpus};
use crate::error::Result;
use crate::lanes::MatchResponse;
use crate::models::ModelConfig;
use crate::store::{DocumentRow, Store};

impl Library {
    /// A grounded answer to `message`; see [`answer`]. It reads this
    /// library, or the libraries on the shelf its `@kb:` tokens name.
    pub fn ask(&mut self, message: &str, answerer: &answer::Answerer) -> Result<answer::Answer> {
        let mut scoped = scoped(&self.config, message)?;
        if scoped.is_empty() {
            return answer::ask(&mut [self], message, answerer);
        }
        answer::ask(&mut readers(&mut scoped), message, answerer)
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
    let scoped = scoped(&lock().config, message);
    let asked = scoped.and_then(|mut scoped| {
        if scoped.is_empty() {
            let prepared = answer::prepare(&mut [&mut *lock()], message)?;
            let drafted = answer::draft(&prepared, answerer);
            answer::finish(&[&*lock()], prepared, answerer, drafted)
        } else {
            // Libraries opened for this question alone: no one waits on them.
            let prepared = answer::prepare(&mut readers(&mut scoped), message)?;
            let drafted = answer::draft(&prepared, answerer);
            let libs: Vec<&dyn Corpus> = scoped.iter().map(|l| l as &dyn Corpus).collect();
            answer::finish(&libs, prepared, answerer, drafted)
        }
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

/// A grounded answer from the library `home` configures, or from the
/// libraries `message`'s `@kb:` tokens name, which need no library at
/// `home` (the CLI's library in use may not exist yet).
pub fn ask_from(home: LibraryConfig, message: &str, answerer: &Answerer) -> Result<Answer> {
    let mut scoped = scoped(&home, message)?;
    if scoped.is_empty() {
        return Library::open_existing(home)?.ask(message, answerer);
    }
    answer::ask(&mut readers(&mut scoped), message, answerer)
}

/// The libraries on the shelf that `message`'s `@kb:` tokens name, opened
/// with `home`'s models and limits (`home` being the library in use); none
/// when it names none. An unknown name is an error that lists the known.
fn scoped(home: &LibraryConfig, message: &str) -> Result<Vec<Library>> {
    if crate::mention::parse_kbs(message).is_empty() {
        return Ok(Vec::new());
    }
    let survey = Shelf::load(&shelf_path()?)?.survey(&home.dir);
    survey
        .scoped(message)?
        .into_iter()
        .map(|dir| {
            Library::open_existing(LibraryConfig {
                dir,
                ..home.clone()
            })
        })
        .collect()
}

/// Each library as what an answer reads.
fn readers(libs: &mut [Library]) -> Vec<&mut dyn Corpus> {
    libs.iter_mut().map(|l| l as &mut dyn Corpus).collect()
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
