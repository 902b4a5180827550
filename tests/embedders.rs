//! An embedder per library, with the real models: the multilingual one
//! (multilingual-e5-small, converted by `make models`) finds a Russian
//! passage for an English question; a library records its embedder in its
//! file; a switch makes every vector stale and a refresh makes them again.
//!
//! fixtures/multilingual: two documents in Russian (how bees keep warm in
//! winter; the Trans-Siberian railway) and one in English (tuning a guitar),
//! written for these tests.

mod common;

use carrel::models::{Embedder, EmbedderKind, Fingerprints, ModelConfig, OnnxEmbedder};
use carrel::{Library, LibraryConfig};
use common::*;

fn models_with(kind: EmbedderKind) -> ModelConfig {
    ModelConfig {
        embedder: kind,
        ..models()
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn read(name: &str) -> String {
    std::fs::read_to_string(fixtures().join("multilingual").join(name)).unwrap()
}

#[test]
fn an_english_question_finds_the_russian_passage_with_the_multilingual_embedder() {
    let mut e5 = OnnxEmbedder::load(&models_with(EmbedderKind::E5Small)).unwrap();
    let names = ["pchely-zimoj.md", "transsib.md", "guitar-tuning.md"];
    let texts: Vec<String> = names.iter().map(|n| read(n)).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let passages = e5.embed(&refs).unwrap();
    let q = e5
        .embed_query("How do honeybees keep warm through the winter?")
        .unwrap();
    let scores: Vec<f32> = passages.iter().map(|p| cosine(&q, p)).collect();
    let best = (0..names.len())
        .max_by(|&a, &b| scores[a].total_cmp(&scores[b]))
        .unwrap();
    assert_eq!(names[best], "pchely-zimoj.md", "{names:?} {scores:?}");
}

#[test]
fn the_embedder_owns_its_prefixes_and_callers_hand_it_plain_text() {
    let text = "How do bees keep warm?";
    // e5 reads a query and a passage differently ("query: ", "passage: ").
    let mut e5 = OnnxEmbedder::load(&models_with(EmbedderKind::E5Small)).unwrap();
    let as_query = e5.embed_query(text).unwrap();
    let as_passage = e5.embed(&[text]).unwrap().remove(0);
    assert!(cosine(&as_query, &as_passage) < 0.999);
    // MiniLM has no prefixes: the same text is the same vector.
    let mut mini = OnnxEmbedder::load(&models_with(EmbedderKind::MiniLm)).unwrap();
    let as_query = mini.embed_query(text).unwrap();
    let as_passage = mini.embed(&[text]).unwrap().remove(0);
    assert!(cosine(&as_query, &as_passage) > 0.9999);
    // Their fingerprints differ, so their vectors never mix.
    let fp = |k| Fingerprints::of(&models_with(k)).unwrap().model;
    assert!(fp(EmbedderKind::E5Small).starts_with("multilingual-e5-small@"));
    assert!(fp(EmbedderKind::MiniLm).starts_with("all-MiniLM-L6-v2@"));
}

#[test]
fn a_library_keeps_its_embedder_and_a_switch_re_embeds_every_document() {
    let dir = tempfile::tempdir().unwrap();
    let mut lib = open(dir.path());
    assert_eq!(lib.embedder(), EmbedderKind::MiniLm);
    lib.add(&[s(fixtures().join("multilingual"))], &mut |_| {})
        .unwrap();
    let q = "How do honeybees keep warm through the winter?";
    assert_ne!(lib.match_query(q, 5).unwrap().topic.state(), "unavailable");

    assert!(lib.set_embedder(EmbedderKind::E5Small).unwrap());
    assert!(!lib.set_embedder(EmbedderKind::E5Small).unwrap());
    // Every vector was made by MiniLM: both lanes say so until a refresh.
    let r = lib.match_query(q, 5).unwrap();
    for (lane, state, reason) in [
        ("subject", r.subject.state(), r.subject.reason()),
        ("topic", r.topic.state(), r.topic.reason()),
    ] {
        assert_eq!(state, "unavailable", "{lane}");
        assert!(
            reason.is_some_and(|r| r.starts_with("re-embedding 3 of 3 documents")),
            "{lane}: {reason:?}"
        );
    }
    assert_eq!(lib.refresh(&mut |_| {}).unwrap(), 3);
    assert_ne!(lib.match_query(q, 5).unwrap().topic.state(), "unavailable");
    drop(lib);

    // The choice is in the library's file: whatever models a caller opens
    // it with, its vectors are made with e5.
    let lib = Library::open(LibraryConfig::new(dir.path().to_path_buf(), models())).unwrap();
    assert_eq!(lib.embedder(), EmbedderKind::E5Small);
    for d in lib.list().unwrap() {
        assert_eq!(d.state, "indexed", "{d:?}");
    }
}

/// The veto and the hold-back judge words only within one language: an
/// English question over Russian passages is neither vetoed nor held back,
/// and each such candidate says why; a Russian question over the same
/// passages is judged by Russian stems. Each document knows its language.
#[test]
fn the_lexical_checks_judge_within_one_language_and_say_when_they_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let mut lib = open(dir.path());
    lib.set_embedder(EmbedderKind::E5Small).unwrap();
    lib.add(&[s(fixtures().join("multilingual"))], &mut |_| {})
        .unwrap();
    let language = |title: &str| {
        let docs = lib.list().unwrap();
        let d = docs.iter().find(|d| d.title == title).unwrap();
        d.language.clone()
    };
    assert_eq!(language("Как пчёлы зимуют").as_deref(), Some("ru"));
    assert_eq!(language("Tuning a guitar by ear").as_deref(), Some("en"));

    let r = lib
        .match_query("How do honeybees keep warm through the winter?", 5)
        .unwrap();
    assert_eq!(r.explain.query_language.as_deref(), Some("en"));
    let bees = r
        .explain
        .topic
        .iter()
        .find(|c| c.title == "Как пчёлы зимуют")
        .expect("the Russian bees passage is a candidate");
    assert_ne!(bees.decision, carrel::lanes::Decision::Vetoed, "{bees:?}");
    assert_eq!(bees.unjudged.as_deref(), Some("cross-lingual, en → ru"));
    let hits: Vec<&str> = r.topic.hits().iter().map(|h| h.title.as_str()).collect();
    assert_eq!(hits.first(), Some(&"Как пчёлы зимуют"), "{hits:?}");
    // The English document is judged as before: in English.
    for c in r
        .explain
        .topic
        .iter()
        .filter(|c| c.title.starts_with("Tuning"))
    {
        assert_eq!(c.unjudged, None, "{c:?}");
    }

    // In Russian, the veto reads Russian stems: "пчёлы" meets "Как пчёлы
    // зимуют" whatever its ending, and the English guitar page is the
    // cross-lingual one now.
    let r = lib.match_query("зимовка пчёл", 5).unwrap();
    assert_eq!(r.explain.query_language.as_deref(), Some("ru"));
    // The cross-encoder reads English: the subject lane does not rank a
    // Russian question's cards by cosine instead, it says why it cannot.
    assert_eq!(r.subject.state(), "unavailable");
    assert!(
        r.subject.reason().is_some_and(
            |why| why.starts_with("carrel-ce-v2 reads English; this query is Russian (ru)")
        ),
        "{:?}",
        r.subject.reason()
    );
    for c in &r.explain.topic {
        match c.title.as_str() {
            "Как пчёлы зимуют" => {
                assert_eq!(c.unjudged, None, "{c:?}");
                assert_ne!(c.decision, carrel::lanes::Decision::Vetoed, "{c:?}");
            }
            t if t.starts_with("Tuning") => {
                assert_eq!(
                    c.unjudged.as_deref(),
                    Some("cross-lingual, ru → en"),
                    "{c:?}"
                )
            }
            _ => {}
        }
    }
}

/// A question's language is told among the library's own languages, which
/// the library counts once and then again only when the database changed:
/// a Russian document another process adds makes a short Cyrillic question
/// Russian at once, with no reopening.
#[test]
fn the_libraries_languages_follow_another_process_adding_a_document() {
    let dir = tempfile::tempdir().unwrap();
    let mut lib = open(dir.path());
    lib.add(
        &[s(fixtures().join("multilingual").join("guitar-tuning.md"))],
        &mut |_| {},
    )
    .unwrap();
    let asked = |lib: &mut Library| lib.match_query("пчёлы", 5).unwrap().explain.query_language;
    assert_ne!(asked(&mut lib).as_deref(), Some("ru"));

    let mut other = open(dir.path());
    other
        .add(
            &[s(fixtures().join("multilingual").join("pchely-zimoj.md"))],
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(asked(&mut lib).as_deref(), Some("ru"));
}
