//! The built-in answerer against the real model (Qwen2.5-Coder-0.5B-Instruct,
//! GGUF, installed by `make models`): its answer streams in pieces, Stop
//! stops it and keeps what was written, each sentence is cited by Carrel on
//! the real text, and a question the library holds nothing on is refused
//! without asking the model.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use carrel::answer::{self, Answerer, Check, Outcome, Progress};
use carrel::models::writer::{self, Ended};
use common::*;

fn local() -> Answerer {
    Answerer::Local {
        model: writer::writer_path(&models_dir()),
    }
}

fn library() -> (tempfile::TempDir, carrel::Library) {
    let dir = tempfile::tempdir().unwrap();
    let mut lib = open(dir.path());
    lib.add(&[s(fixtures().join("docs"))], &mut |_| {}).unwrap();
    (dir, lib)
}

/// What a reader saw, in order.
#[derive(Debug)]
enum Seen {
    Quote,
    Context(usize),
    Text(String),
    Statement(answer::Statement),
}

/// The text a reader saw.
fn shown(seen: &[Seen]) -> String {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn ask(
    lib: &mut carrel::Library,
    message: &str,
    stop_after: Option<usize>,
) -> (answer::Answer, Vec<Seen>) {
    let stop = AtomicBool::new(false);
    let mut seen = Vec::new();
    let a = lib
        .ask_streaming(message, &local(), &stop, &mut |p| {
            seen.push(match p {
                Progress::Quote(_) => Seen::Quote,
                Progress::Context(c) => Seen::Context(c.len()),
                Progress::Text(t) => Seen::Text(t.to_string()),
                Progress::Statement(s) => Seen::Statement(s.clone()),
            });
            let pieces = seen.iter().filter(|s| matches!(s, Seen::Text(_))).count();
            if stop_after.is_some_and(|n| pieces >= n) {
                stop.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
    (a, seen)
}

#[test]
fn the_answer_streams_in_pieces_and_every_sentence_is_cited_by_carrel_or_not_found() {
    let (_d, mut lib) = library();
    let (a, seen) = ask(
        &mut lib,
        "How often should I feed a sourdough starter?",
        None,
    );
    // The passages first, before a word is written.
    assert!(matches!(seen[0], Seen::Context(n) if n > 0), "{seen:?}");
    let pieces = seen.iter().filter(|s| matches!(s, Seen::Text(_))).count();
    assert!(pieces > 5, "the answer came in {pieces} pieces: {seen:?}");
    let writing = a.writing.as_ref().expect("a model wrote it");
    assert_eq!(writing.ended, Ended::Finished, "{a:?}");
    let (statements, check) = match &a.outcome {
        Outcome::Answered { statements, check } => (statements, check),
        other => panic!("{other:?}"),
    };
    // Each statement was shown with its mark as it ended, and the check at
    // the end agrees with what was shown.
    let streamed: Vec<&answer::Statement> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Statement(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(streamed.len(), statements.len());
    for (shown, checked) in streamed.iter().zip(statements) {
        assert_eq!((&shown.text, &shown.check), (&checked.text, &checked.check));
    }
    // The marks are computed on the real text: a cited passage holds the
    // sentence's words; a sentence no passage supports cites nothing.
    for s in statements {
        match &s.check {
            Check::Verified | Check::Supported { .. } => {
                let p = a.context.iter().find(|p| p.n == s.citations[0]).unwrap();
                let pct = answer::marks::pair_overlap_pct(&s.text, &p.text);
                assert!(pct >= Some(answer::SUPPORT_MIN_PCT), "{s:?} in {p:?}");
            }
            Check::Unsupported { .. } | Check::NoClaim => assert!(s.citations.is_empty(), "{s:?}"),
            other => panic!("a written sentence is never {other:?}"),
        }
    }
    assert!(check.verified + check.supported > 0, "{statements:#?}");
    // The text a reader saw has no `[n]` of the model's in it.
    let shown = shown(&seen);
    assert!(!shown.contains("[1]") && !shown.contains("[2]"), "{shown}");
}

#[test]
fn stop_before_the_first_word_is_said_as_such_not_as_an_empty_answer() {
    let (_d, mut lib) = library();
    let (a, seen) = ask(
        &mut lib,
        "How often should I feed a sourdough starter?",
        Some(0),
    );
    assert!(matches!(seen[0], Seen::Context(n) if n > 0), "{seen:?}");
    assert_eq!(
        a.writing.as_ref().map(|w| (w.ended, w.tokens)),
        Some((Ended::Stopped, 0))
    );
    match &a.outcome {
        Outcome::Failed { reason } => assert!(reason.contains("stopped before"), "{reason}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn stop_ends_the_writing_at_once_and_keeps_what_was_written() {
    let (_d, mut lib) = library();
    let (a, seen) = ask(
        &mut lib,
        "What does a healthy sourdough starter look like, and how do I keep it?",
        Some(3),
    );
    let writing = a.writing.as_ref().expect("a model wrote it");
    assert_eq!(writing.ended, Ended::Stopped);
    // Stopped at the next token: three pieces were shown, at most one more
    // token was written after the stop (a token may show as no text).
    assert!(writing.tokens <= 6, "{writing:?}");
    let shown = shown(&seen);
    match &a.outcome {
        Outcome::Answered { statements, .. } => {
            assert_eq!(statements.len(), 1, "{statements:?}");
            assert_eq!(statements[0].text, shown.trim());
        }
        other => panic!("what was written is kept: {other:?}"),
    }
}

#[test]
fn a_question_the_library_holds_nothing_on_is_refused_without_asking_the_model() {
    let (_d, mut lib) = library();
    // A model file that does not exist: were the model asked, the answer
    // would fail to load it.
    let absent = Answerer::Local {
        model: std::path::PathBuf::from("/nonexistent/model.gguf"),
    };
    let mut seen = 0;
    let a = lib
        .ask_streaming(
            "quantum chromodynamics on a lattice",
            &absent,
            &AtomicBool::new(false),
            &mut |_| seen += 1,
        )
        .unwrap();
    match &a.outcome {
        Outcome::NoContext { reason } => assert!(reason.contains("neither lane"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(seen, 0, "nothing was handed on");
    assert!(a.writing.is_none());
}

#[test]
fn a_missing_or_wrong_model_file_is_a_sentence_that_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("model.gguf");
    let err = writer::Writer::load(&missing).err().unwrap();
    assert!(
        err.contains("not installed") && err.contains("make models"),
        "{err}"
    );
    std::fs::write(&missing, b"GGUF but short").unwrap();
    let err = writer::Writer::load(&missing).err().unwrap();
    assert!(
        err.contains("14 bytes") && err.contains("make models"),
        "{err}"
    );
    // And the answer says so, never an empty answer.
    let (_d, mut lib) = library();
    let a = lib
        .ask(
            "How often should I feed a sourdough starter?",
            &Answerer::Local { model: missing },
        )
        .unwrap();
    assert!(
        matches!(&a.outcome, Outcome::Failed { reason } if reason.contains("14 bytes")),
        "{:?}",
        a.outcome
    );
}

#[test]
fn instructions_read_once_and_restored_give_the_answer_read_in_full() {
    use carrel::models::writer::{Message, Role, Writer};
    let w = Writer::load(&writer::writer_path(&models_dir())).unwrap();
    // Instructions no other test gives, so the first answer must read them.
    let messages = [
        Message::new(
            Role::System,
            "You answer in one short sentence, using only the passage you are given. (restore test)",
        ),
        Message::new(
            Role::User,
            "Passages:\n[1] (Bread)\nA sourdough starter is fed flour and water once a day.\n\nQuestion: How often is a starter fed?\n",
        ),
    ];
    let never = AtomicBool::new(false);
    let first = w.write(&messages, &never, &mut |_| {}).unwrap();
    let second = w.write(&messages, &never, &mut |_| {}).unwrap();
    assert_eq!(first.restored_tokens, 0, "{first:?}");
    assert!(
        second.restored_tokens > 10 && second.restored_tokens < second.prompt_tokens,
        "{second:?}"
    );
    assert_eq!(first.text, second.text);
    assert!(!first.text.trim().is_empty(), "{first:?}");
}
