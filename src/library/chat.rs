//! Grounded answers over this library (or the libraries a question's
//! `@kb:` tokens name), and the chat kept in it. The
//! answering is [`crate::answer`]'s; the library is its [`Corpus`].

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::remote::Remote;
use super::shelf::{Shelf, shelf_path};
use super::{Library, LibraryConfig};
use crate::answer::follow_up;
use crate::answer::history::{self, ChatTurn, HISTORY_TURNS};
use crate::answer::{self, Answer, Answerer, Corpus, Earlier, Progress};
use crate::error::{Error, Result};
use crate::lanes::MatchResponse;
use crate::models::ModelConfig;
use crate::store::{DocumentRow, Store};

impl Library {
    /// A grounded answer to `message`; see [`answer`]. It reads this
    /// library, or the libraries on the shelf its `@kb:` tokens name.
    pub fn ask(&mut self, message: &str, answerer: &answer::Answerer) -> Result<answer::Answer> {
        self.ask_streaming(message, answerer, &AtomicBool::new(false), &mut |_| {})
    }

    /// [`Library::ask`], handing on the context, the text and each
    /// statement as they come; `stop` ends a model's writing.
    pub fn ask_streaming(
        &mut self,
        message: &str,
        answerer: &answer::Answerer,
        stop: &AtomicBool,
        on: &mut dyn FnMut(Progress),
    ) -> Result<answer::Answer> {
        match scoped(&self.config, message)? {
            None => answer::ask(&mut [self], Vec::new(), message, answerer, stop, on),
            Some(mut scope) => answer::ask(
                &mut readers(&mut scope.here),
                scope.there,
                message,
                answerer,
                stop,
                on,
            ),
        }
    }

    /// Whether `line` occurs verbatim in this library, and where.
    pub fn verify_line(&self, line: &str) -> Result<answer::verify::LineCheck> {
        answer::verify::verify_line(self, line)
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

    /// The last turn kept, as a question asked next follows up on it; none
    /// when the chat is empty or its last turn answered nothing.
    pub fn earlier_turn(&self) -> Result<Option<Earlier>> {
        let last = self
            .store
            .turns(1)?
            .into_iter()
            .next()
            .map(ChatTurn::from_stored);
        Ok(match last {
            Some(ChatTurn {
                message,
                reply: history::Reply::Answer { answer },
                ..
            }) => Earlier::of(&message, &answer),
            _ => None,
        })
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
/// the turn; a question that leans on the turn kept before it follows up
/// on it ([`follow_up::following`]). The
/// library is held to build the context and to check the
/// answer, never while an LLM writes it (up to two minutes), so the list,
/// the documents and the match panel stay live meanwhile. The turn is kept
/// either way, an error being part of the conversation: an answer that
/// cannot be kept is an error (it would be lost on restart), while a failed
/// question whose keeping also failed reports why asking failed.
pub fn ask_shared(
    lib: &Mutex<Library>,
    message: &str,
    answerer: &Answerer,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Progress),
) -> Result<Answer> {
    let lock = || crate::fault::lock(lib);
    // One statement each, so that each lock is let go before the next.
    // The libraries a question names are opened, and those on other hubs
    // searched, with this library let go: no one waits on them.
    let home = lock().config.clone();
    let earlier = lock().earlier_turn();
    let asked = earlier.and_then(|earlier| {
        let earlier = follow_up::following(&crate::mention::strip(message), earlier.as_ref());
        let asked_as = follow_up::with_mentions(message, earlier);
        ask_held(lib, &home, &asked_as, earlier, answerer, stop, on)
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

/// [`ask_shared`]'s asking, the library held only while it is read.
fn ask_held(
    lib: &Mutex<Library>,
    home: &LibraryConfig,
    message: &str,
    earlier: Option<&Earlier>,
    answerer: &Answerer,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Progress),
) -> Result<Answer> {
    let lock = || crate::fault::lock(lib);
    let budget = answerer.context_chars();
    match scoped(home, message)? {
        None => {
            let prepared =
                answer::prepare(&mut [&mut *lock()], Vec::new(), message, earlier, budget)?;
            let drafted = answer::draft(&prepared, answerer, stop, on);
            answer::finish(&[&*lock()], prepared, answerer, drafted)
        }
        Some(mut scope) => {
            // Libraries opened for this question alone: no one waits on them.
            let prepared = answer::prepare(
                &mut readers(&mut scope.here),
                scope.there,
                message,
                earlier,
                budget,
            )?;
            let drafted = answer::draft(&prepared, answerer, stop, on);
            let libs: Vec<&dyn Corpus> = scope.here.iter().map(|l| l as &dyn Corpus).collect();
            answer::finish(&libs, prepared, answerer, drafted)
        }
    }
}

/// A grounded answer from the library `home` configures, or from the
/// libraries `message`'s `@kb:` tokens name, which need no library at
/// `home` (the CLI's library in use may not exist yet).
pub fn ask_from(
    home: LibraryConfig,
    message: &str,
    answerer: &Answerer,
    stop: &AtomicBool,
    on: &mut dyn FnMut(Progress),
) -> Result<Answer> {
    match scoped(&home, message)? {
        None => Library::open_existing(home)?.ask_streaming(message, answerer, stop, on),
        Some(mut scope) => answer::ask(
            &mut readers(&mut scope.here),
            scope.there,
            message,
            answerer,
            stop,
            on,
        ),
    }
}

/// The libraries a question's `@kb:` tokens name: those on this machine,
/// opened, and those on other hubs, already asked for the question.
struct Scope {
    here: Vec<Library>,
    there: Vec<answer::Foreign>,
}

/// The libraries on the shelf that `message`'s `@kb:` tokens name: those
/// here opened with `home`'s models and limits (`home` being the library in
/// use), those on other hubs searched there for the question. None when it
/// names none; an unknown name is an error that lists the known ones.
fn scoped(home: &LibraryConfig, message: &str) -> Result<Option<Scope>> {
    if crate::mention::parse_kbs(message).is_empty() {
        return Ok(None);
    }
    let survey = Shelf::load(&shelf_path()?)?.survey(&home.dir);
    let question = crate::mention::strip(message);
    let mut scope = Scope {
        here: Vec::new(),
        there: Vec::new(),
    };
    for entry in survey.scoped(message)? {
        match (entry.remote(), entry.dir()) {
            (Some(remote), _) => scope.there.push(ask_there(&remote, &question)),
            (None, Some(dir)) => scope.here.push(Library::open_existing(LibraryConfig {
                dir: dir.to_path_buf(),
                ..home.clone()
            })?),
            (None, None) => {
                return Err(Error::Unavailable(format!(
                    "the library at {} has no name on the shelf",
                    entry.place
                )));
            }
        }
    }
    Ok(Some(scope))
}

/// A library on another hub, searched there for `question`: its topic
/// lane's passages, or why there are none.
fn ask_there(remote: &Remote, question: &str) -> answer::Foreign {
    let started = std::time::Instant::now();
    let found = remote.search(question, answer::LANE_HITS);
    let passages = found
        .map(|m| answer::passages_from(&m.topic))
        .map_err(|e| e.to_string());
    answer::Foreign {
        kb: remote.kb.clone(),
        owner: passages
            .as_ref()
            .ok()
            .and_then(|p| p.first())
            .and_then(|p| p.owner.clone()),
        passages,
        ms: crate::lanes::merge::route_ms(started),
        holder: Box::new(remote.clone()),
    }
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
