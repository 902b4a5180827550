//! The two lanes on the project's labelled set, with the real embedder. The
//! cross-encoder is exercised for real where it can be (missing, unloadable,
//! failing at run time) and through the `Reranker` seam for the paths a real
//! model cannot be made to take on demand (too slow, no score).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use carrel::lanes::{Candidate, Decision, MatchResponse, subject};
use carrel::models::{ModelConfig, Reranker};
use carrel::{Library, LibraryConfig};
use common::*;

/// Scores cards by a fixed rule, optionally slowly or with no score.
struct Fake {
    sleep: Duration,
    nan: bool,
}

impl Reranker for Fake {
    fn model_id(&self) -> &str {
        "fake@test"
    }
    fn rerank(&mut self, _query: &str, documents: &[&str]) -> carrel::Result<Vec<f32>> {
        std::thread::sleep(self.sleep);
        // Longer cards score higher: an order unrelated to cosine.
        Ok(documents
            .iter()
            .map(|d| {
                if self.nan {
                    f32::NAN
                } else {
                    d.len() as f32 / 50.0
                }
            })
            .collect())
    }
}

fn labelled_library(models: ModelConfig, budget: Duration) -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LibraryConfig::new(dir.path().to_path_buf(), models);
    config.rerank_budget = budget;
    let mut lib = Library::open(config).unwrap();
    let r = lib
        .add(&[s(fixtures().join("labelled/corpus"))], &mut |_| {})
        .unwrap();
    assert_eq!(r.added, 13);
    (dir, lib)
}

fn eligible(r: &MatchResponse, decisions: &[Decision]) -> BTreeSet<i64> {
    r.explain
        .subject
        .iter()
        .filter(|c| decisions.contains(&c.decision))
        .map(|c| c.doc)
        .collect()
}

const QUERY: &str = "how to begin a sourdough starter";

/// The embed counter is process-wide: tests here run one at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A models folder that shares the real runtime and embedder but has the
/// given files as its cross-encoder.
fn models_with_reranker(root: &Path, onnx: &[u8]) -> ModelConfig {
    let real = models_dir();
    for sub in ["onnxruntime", carrel::models::EMBEDDER_NAME] {
        std::os::unix::fs::symlink(real.join(sub), root.join(sub)).unwrap();
    }
    let rr = root.join("reranker");
    std::fs::create_dir_all(&rr).unwrap();
    std::fs::write(rr.join("model.onnx"), onnx).unwrap();
    for f in [
        "tokenizer.json",
        "config.json",
        "special_tokens_map.json",
        "tokenizer_config.json",
    ] {
        std::fs::copy(real.join(carrel::models::EMBEDDER_NAME).join(f), rr.join(f)).unwrap();
    }
    let mut cfg = ModelConfig::new(root.to_path_buf());
    cfg.reranker = Some(rr);
    cfg
}

#[test]
fn every_reranker_failure_suppresses_the_lane_and_says_why_without_changing_eligibility() {
    let _serial = serial();
    // A working cross-encoder (through the seam) defines the eligible set.
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    lib.set_reranker(Box::new(Fake {
        sleep: Duration::ZERO,
        nan: false,
    }));
    let working = lib.match_query(QUERY, 10).unwrap();
    let eligible_ok = eligible(&working, &[Decision::Admitted, Decision::BelowRerankFloor]);
    assert!(!eligible_ok.is_empty());
    assert_eq!(working.subject.state(), "ready");

    let check = |r: &MatchResponse, reason: &str| {
        assert_eq!(r.subject.state(), "unavailable", "{reason}");
        assert!(r.subject.hits().is_empty(), "suppressed, never raw cosine");
        let why = r.subject.reason().unwrap();
        assert!(why.contains(reason), "expected `{reason}` in `{why}`");
        assert_eq!(
            eligible(r, &[Decision::RerankerUnavailable]),
            eligible_ok,
            "eligibility is cosine's alone"
        );
        assert!(r.topic.has_ready_hits(), "the topic lane is unaffected");
    };

    // Missing: the real loader finds no model where it was told to look.
    let nowhere = tempfile::tempdir().unwrap();
    let mut missing = models();
    missing.reranker = Some(nowhere.path().join("no-such-reranker"));
    let (_d, mut lib) = labelled_library(missing, Duration::from_secs(30));
    check(
        &lib.match_query(QUERY, 10).unwrap(),
        "no cross-encoder is installed",
    );

    // Fails to load: garbage where the ONNX file should be.
    let root = tempfile::tempdir().unwrap();
    let (_d, mut lib) = labelled_library(
        models_with_reranker(root.path(), b"not an onnx model"),
        Duration::from_secs(30),
    );
    check(&lib.match_query(QUERY, 10).unwrap(), "failed to load");

    // Fails at run time: a real ONNX model that has no `logits` output.
    let root = tempfile::tempdir().unwrap();
    let embedder = std::fs::read(
        models_dir()
            .join(carrel::models::EMBEDDER_NAME)
            .join("model.onnx"),
    )
    .unwrap();
    let (_d, mut lib) = labelled_library(
        models_with_reranker(root.path(), &embedder),
        Duration::from_secs(30),
    );
    let r = lib.match_query(QUERY, 10).unwrap();
    let why = r.subject.reason().unwrap_or_default().to_string();
    assert!(
        why.contains("failed at run time") || why.contains("failed to load"),
        "{why}"
    );
    check(&r, "cross-encoder");

    // Over its time budget.
    let (_d, mut lib) = labelled_library(models(), Duration::from_millis(1));
    lib.set_reranker(Box::new(Fake {
        sleep: Duration::from_millis(20),
        nan: false,
    }));
    check(&lib.match_query(QUERY, 10).unwrap(), "over its 1 ms budget");

    // No usable score.
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    lib.set_reranker(Box::new(Fake {
        sleep: Duration::ZERO,
        nan: true,
    }));
    check(&lib.match_query(QUERY, 10).unwrap(), "no usable score");
}

/// Scores the cards in the order the lane hands them over (its cosine
/// order): all over any floor, the rest rising, so an order shown can only
/// be the cross-encoder's, and cosine's first card either kept first at
/// `top` (the two scorers agree) or sent last, with `top` on cosine's last
/// card (they disagree). Under [`subject::RERANK_SURE`] a disagreement
/// silences the lane; at it, the cross-encoder's first card is taken alone.
struct Positional {
    agree: bool,
    top: f32,
}

impl Reranker for Positional {
    fn model_id(&self) -> &str {
        "fake@test"
    }
    fn rerank(&mut self, _query: &str, documents: &[&str]) -> carrel::Result<Vec<f32>> {
        let last = documents.len().saturating_sub(1);
        Ok((0..documents.len())
            .map(|i| match (i, self.agree) {
                (0, true) => self.top,
                (0, false) => 0.0,
                (i, false) if i == last => self.top,
                _ => 0.5 + 0.01 * i as f32,
            })
            .collect())
    }
}

/// A logit over the rerank floor and under [`subject::RERANK_SURE`].
const UNSURE: f32 = 2.0;

/// [`HOBBIES`] asked of the labelled library with a cross-encoder that puts
/// cosine's last scored card first, at `top`.
fn disagreeing(top: f32) -> MatchResponse {
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    lib.set_reranker(Box::new(Positional { agree: false, top }));
    lib.match_query(HOBBIES, 10).unwrap()
}

/// The subject cards the cross-encoder scored, in the lane's cosine order.
fn scored(r: &MatchResponse) -> Vec<&Candidate> {
    r.explain
        .subject
        .iter()
        .filter(|c| c.rerank.is_some())
        .collect()
}

/// The query the Positional tests ask: three cards of the labelled set
/// (composting, beekeeping, sourdough) are eligible for it.
const HOBBIES: &str = "a beginner's guide to home hobbies: sourdough, compost, bees and bikes";

#[test]
fn the_cross_encoder_orders_but_cosine_is_the_number_shown() {
    let _serial = serial();
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    lib.set_reranker(Box::new(Positional {
        agree: true,
        top: UNSURE,
    }));
    let r = lib.match_query(HOBBIES, 10).unwrap();
    let hits = r.subject.hits();
    assert!(hits.len() >= 3, "{hits:?}");
    let by_cosine: Vec<i64> = r.explain.subject.iter().map(|c| c.doc).collect();
    assert_eq!(hits[0].doc, by_cosine[0], "both scorers put it first");
    assert_ne!(
        hits.iter().map(|h| h.doc).collect::<Vec<_>>(),
        by_cosine[..hits.len()],
        "after the first, the cross-encoder's order, not cosine's"
    );
    for pair in hits.windows(2) {
        assert!(
            pair[0].rerank >= pair[1].rerank,
            "ordered by the cross-encoder"
        );
    }
    for h in hits {
        let c = r.explain.subject.iter().find(|c| c.doc == h.doc).unwrap();
        assert_eq!(h.cosine, c.cosine, "the shown number is the card cosine");
        assert!(
            !h.calibrated,
            "RERANK_FLOOR was not calibrated on this model"
        );
        assert_eq!(h.scorer.to_string(), "cross-encoder:fake@test");
    }
    // Every decision is in the log with the scorer that made its number.
    let log = lib.log(200).unwrap();
    let n = r.explain.subject.len() + r.explain.topic.len();
    assert_eq!(log.len(), n);
    assert!(
        log.iter()
            .any(|e| e.score.scale() == "rerank_logit" && e.scorer == "cross-encoder:fake@test")
    );
    assert!(
        log.iter()
            .filter(|e| e.lane == "topic")
            .all(|e| e.score.scale() == "cosine" && e.scorer.starts_with("cosine:"))
    );
}

#[test]
fn labelled_set_has_no_subject_noise_leaks() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let report = carrel::eval::run(
        &fixtures().join("labelled"),
        LibraryConfig::new(dir.path().to_path_buf(), models()),
        &mut |_| {},
    )
    .unwrap();
    eprintln!(
        "labelled: subject nDCG {:.3} leaks {}; topic nDCG {:.3} recall {:.3} leaks {}; bm25 nDCG {:.3} leaks {}",
        report.subject.ndcg_at_10,
        report.subject.noise_leaks,
        report.topic.ndcg_at_10,
        report.topic.recall_at_10,
        report.topic.noise_leaks,
        report.bm25.ndcg_at_10,
        report.bm25.noise_leaks
    );
    assert_eq!((report.queries, report.noise_queries), (39, 13));
    assert_eq!(
        report.subject.noise_leaks, 0,
        "the subject lane must not admit noise"
    );
    assert!(
        report.topic.recall_at_10 >= 0.9,
        "topic recall {}",
        report.topic.recall_at_10
    );
    assert_eq!(report.per_query.len(), 39);
    // The shipped cross-encoder ranks: most relevant cards are admitted.
    assert!(
        report.subject.p_at_1 >= 0.6,
        "subject P@1 {}",
        report.subject.p_at_1
    );
    assert_eq!(report.per_query["r01"].bm25[0], "sourdough-starter.md");
    // The topic lane fires only on a passage at its floor; the lower floor
    // that admits the rest of a real answer never lets a noise query in,
    // though noise queries have passages over it that the veto passes.
    assert_eq!(
        report.topic.noise_leaks, 0,
        "the topic lane must not admit noise"
    );
    let tail = carrel::lanes::topic::TOPIC_TAIL_FLOOR;
    let over_tail = report
        .per_query
        .values()
        .filter(|q| q.noise)
        .filter(|q| {
            q.topic_candidates
                .iter()
                .any(|c| c.decision != Decision::Vetoed && tail.admits(c.cosine))
        })
        .count();
    assert!(
        over_tail > 0,
        "no noise query reaches the tail floor: this check proves nothing"
    );
    // Keyword matches join the pool, each with its rank.
    assert!(
        report.per_query["r01"]
            .topic_candidates
            .iter()
            .any(|c| c.keyword_rank.is_some()),
        "the keyword index found nothing for r01"
    );
}

/// The shipped cross-encoder's logits do not depend on the CPU: its weights
/// are uint8 (`tools/reranker/u8.py`), so every CPU computes the same exact
/// integer products. Its int8-weight form scored this card −1.225 on an
/// AVX2 CPU without VNNI (this project's CI machine), where the exact result
/// is −0.847; that drift let a noise query through the floor.
#[test]
fn the_shipped_cross_encoder_scores_alike_on_every_cpu() {
    let _serial = serial();
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    let r = lib
        .match_query("loan-to-value ratio and deposit size", 10)
        .unwrap();
    let card = r
        .explain
        .subject
        .iter()
        .find(|c| c.title.contains("Mortgage"))
        .expect("the mortgage card is a candidate");
    let logit = card.rerank.expect("the cross-encoder scored it").get();
    assert!(
        (logit - -0.847).abs() < 0.02,
        "logit {logit}, not the exact -0.847: is the model's arithmetic CPU-dependent again?"
    );
}

/// Precise over complete: when the cross-encoder's first card is not
/// cosine's, the lane cannot say which document the query is about, so it
/// admits nothing and shows every card it held back as `disputed`.
#[test]
fn the_lane_stays_silent_when_its_scorers_disagree_on_the_first_card() {
    let _serial = serial();
    let r = disagreeing(UNSURE);
    assert!(!r.subject.has_ready_hits(), "{:?}", r.subject.hits());
    let scored = scored(&r);
    assert!(scored.len() >= 2, "{scored:?}");
    assert!(
        scored.iter().all(|c| c.decision == Decision::Disputed),
        "{scored:?}"
    );
    // Held back, not lost: each disputed card is still shown, apart from hits.
    let shown: Vec<i64> = r
        .subject
        .hits()
        .iter()
        .chain(r.subject.below_floor())
        .map(|h| h.doc)
        .collect();
    assert!(scored.iter().all(|c| shown.contains(&c.doc)), "{shown:?}");
}

/// A title the cross-encoder is sure of is taken though cosine put another
/// card first: its first card is the lane's first hit, in its own order.
#[test]
fn the_cross_encoder_alone_fires_when_it_is_sure() {
    let _serial = serial();
    let r = disagreeing(subject::RERANK_SURE.value().get());
    assert!(r.subject.has_ready_hits(), "{:?}", r.explain.subject);
    let scored = scored(&r);
    assert!(scored.len() >= 2, "{scored:?}");
    let hits = r.subject.hits();
    assert_eq!(
        hits[0].doc,
        scored.last().unwrap().doc,
        "the cross-encoder's first"
    );
    assert_ne!(hits[0].doc, scored[0].doc, "not cosine's first");
    assert!(scored.iter().all(|c| c.decision != Decision::Disputed));
}

/// Regression: a kept evaluation library reached through another path to
/// the same set held every document twice; candidates named the old copies,
/// which the run could not map, and every figure read as found nothing.
#[test]
fn an_eval_library_holding_documents_of_another_set_is_refused() {
    let _serial = serial();
    let kept = tempfile::tempdir().unwrap();
    let config = || LibraryConfig::new(kept.path().to_path_buf(), models());
    let first = carrel::eval::run(&fixtures().join("labelled"), config(), &mut |_| {}).unwrap();
    assert_eq!(first.documents, 13);
    let elsewhere = tempfile::tempdir().unwrap();
    let copy = elsewhere.path().join("labelled");
    copy_dir(&fixtures().join("labelled"), &copy);
    let err = carrel::eval::run(&copy, config(), &mut |_| {}).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("13 documents that are not in this set"),
        "{msg}"
    );
    assert!(msg.contains("--keep-library"), "{msg}");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let target = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &target);
        } else {
            std::fs::copy(&p, &target).unwrap();
        }
    }
}

/// Counts the texts it is asked to score.
struct Counting(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Reranker for Counting {
    fn model_id(&self) -> &str {
        "counting@test"
    }
    fn rerank(&mut self, _query: &str, documents: &[&str]) -> carrel::Result<Vec<f32>> {
        self.0
            .fetch_add(documents.len(), std::sync::atomic::Ordering::Relaxed);
        Ok(vec![1.0; documents.len()])
    }
}

#[test]
fn repeated_queries_hit_the_cache_until_the_library_changes() {
    let _serial = serial();
    use std::sync::atomic::Ordering;
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    let scored = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    lib.set_reranker(Box::new(Counting(scored.clone())));
    let first = lib.match_query(QUERY, 10).unwrap();
    let after_first = scored.load(Ordering::Relaxed);
    assert!(after_first > 0);
    let embedded = carrel::models::onnx::TEXTS_EMBEDDED.load(Ordering::Relaxed);
    let second = lib.match_query(QUERY, 10).unwrap();
    assert_eq!(
        scored.load(Ordering::Relaxed),
        after_first,
        "no cross-encoder call for a cached query"
    );
    assert_eq!(
        carrel::models::onnx::TEXTS_EMBEDDED.load(Ordering::Relaxed),
        embedded,
        "no embedding call either"
    );
    let docs = |r: &MatchResponse| {
        r.subject
            .hits()
            .iter()
            .map(|h| (h.doc, h.rerank))
            .collect::<Vec<_>>()
    };
    assert_eq!(docs(&first), docs(&second));

    lib.add(&[s(fixtures().join("docs/notes-latin1.txt"))], &mut |_| {})
        .unwrap();
    lib.match_query(QUERY, 10).unwrap();
    assert!(
        scored.load(Ordering::Relaxed) > after_first,
        "a library change drops the cache"
    );
}

/// Regression: a cross-encoder missing at start left the subject lane
/// "unavailable" for as long as the process ran, even after `make models`.
#[test]
fn a_cross_encoder_installed_later_is_found_when_next_needed() {
    let _serial = serial();
    let later = tempfile::tempdir().unwrap();
    let dir = later.path().join(carrel::models::RERANKER_NAME);
    let mut models = models();
    models.reranker = Some(dir.clone());
    let (_d, mut lib) = labelled_library(models, Duration::from_secs(30));
    let before = lib.match_query(QUERY, 10).unwrap();
    assert_eq!(before.subject.state(), "unavailable");

    std::fs::create_dir_all(&dir).unwrap();
    let shipped = models_dir().join(carrel::models::RERANKER_NAME);
    for e in std::fs::read_dir(&shipped).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            std::fs::copy(&p, dir.join(p.file_name().unwrap())).unwrap();
        }
    }
    let after = lib.match_query(QUERY, 10).unwrap();
    assert_ne!(
        after.subject.state(),
        "unavailable",
        "{:?}",
        after.subject.reason()
    );
}

/// Scores every card below any floor.
struct Refuses;

impl Reranker for Refuses {
    fn model_id(&self) -> &str {
        "refuses@test"
    }
    fn rerank(&mut self, _query: &str, documents: &[&str]) -> carrel::Result<Vec<f32>> {
        Ok(documents.iter().map(|_| -20.0).collect())
    }
}

/// Regression: hits below the rerank floor were appended after those below
/// the cosine floor, so the weak list was out of the cosine order it shows.
#[test]
fn weak_hits_keep_the_cosine_order_the_lane_saw() {
    let _serial = serial();
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    lib.set_reranker(Box::new(Refuses));
    // The topic lane finds nothing for this one (no heading names it), so
    // the subject lane's weak hits are shown.
    let r = lib
        .match_query("wild yeast culture kept in flour and water", 10)
        .unwrap();
    assert_eq!(r.subject.state(), "weak", "{:?}", r.subject.reason());
    let cosines: Vec<f32> = r.subject.hits().iter().map(|h| h.cosine.get()).collect();
    assert!(cosines.len() >= 2, "{cosines:?}");
    assert!(
        cosines.windows(2).all(|w| w[0] >= w[1]),
        "not in cosine order: {cosines:?}"
    );
}

/// The subject lane's cards split across cross-encoder sessions get the
/// scores one session gives them, each its own: pairs are scored alone, so
/// a card's score never depends on which others it was scored with.
#[test]
fn cards_scored_across_sessions_keep_their_own_scores() {
    use carrel::models::{OnnxReranker, RerankPool, Reranker};
    let cards = [
        "Sourdough starter: flour, water and wild yeast, fed daily.",
        "Bicycle chain maintenance",
        "Pond ecology: the plants and animals of still fresh water, from algae to herons, and how the seasons change them.",
        "Mortgage rates explained for first-time buyers, with fixed and variable terms compared.",
        "Chess openings",
        "Keeping bees through winter: cluster, stores and ventilation.",
        "Git branching",
    ];
    let query = "how do I feed a sourdough starter";
    let mut one = OnnxReranker::load(&models()).unwrap();
    let alone = one.rerank(query, &cards).unwrap();
    let mut pool = RerankPool::load(&models(), 3).unwrap();
    let split = pool.rerank(query, &cards).unwrap();
    assert_eq!(alone.len(), cards.len());
    for (i, (a, b)) in alone.iter().zip(&split).enumerate() {
        assert!((a - b).abs() < 1e-4, "card {i}: {a} alone, {b} split");
    }
    let best = split
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .unwrap()
        .0;
    assert_eq!(best, 0, "the sourdough card is the subject: {split:?}");
}

/// A note too short for its card to say anything (no word twice, no
/// sentence of five words) has no headings and one passage: that passage is
/// all the document says of its subject, so the heading veto reads it. The
/// veto once vetoed such a note on the very words it holds, and the topic
/// lane said nothing of it.
#[test]
fn a_short_note_is_found_by_the_words_it_holds() {
    let _serial = serial();
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    let notes = tempfile::tempdir().unwrap();
    let note = notes.path().join("todo.txt");
    std::fs::write(&note, "oat milk, coffee filters\n").unwrap();
    assert_eq!(lib.add(&[s(&note)], &mut |_| {}).unwrap().added, 1);
    let r = lib.match_query("coffee filters", 10).unwrap();
    let first = r.topic.hits().first().map(|h| h.title.as_str());
    assert_eq!(first, Some("todo"), "{:?}", r.topic.reason());
    // The veto still reads headings where a document has them: a noise
    // query of the labelled set stays out.
    let r = lib.match_query("bee sting allergy", 10).unwrap();
    assert!(!r.topic.has_ready_hits(), "{:?}", r.topic.hits());
}

/// A question half of whose words the library never uses is mostly about
/// something it does not hold: the topic lane holds its passages back, into
/// the tail, however near one is, and says so in the debug pane. With the
/// library's own words the same passage is a hit.
#[test]
fn a_query_mostly_in_words_the_library_never_uses_is_held_back() {
    let _serial = serial();
    let (_d, mut lib) = labelled_library(models(), Duration::from_secs(30));
    let bees = |r: &MatchResponse| {
        r.explain
            .topic
            .iter()
            .find(|c| c.title == "Keeping Bees Through Winter")
            .map(|c| (c.decision, c.cosine.get()))
    };
    // "martian" and "beehives" are in no passage (the page says "hive").
    let r = lib
        .match_query("varroa mites in Martian beehives", 10)
        .unwrap();
    let (decision, cosine) = bees(&r).expect("the beekeeping page is a candidate");
    assert_eq!(decision, Decision::Unfamiliar, "cosine {cosine}");
    let why = r.explain.topic_held_back.clone().unwrap_or_default();
    assert!(
        why.contains("“martian” or “beehives”, 2 of the query's 4 words"),
        "{why}"
    );
    assert!(
        cosine > 0.55,
        "near enough to be admitted otherwise: {cosine}"
    );
    assert!(
        !r.topic
            .hits()
            .iter()
            .any(|h| h.title == "Keeping Bees Through Winter")
    );
    let shown = r.topic.hits().iter().chain(r.topic.below_floor());
    assert!(
        shown
            .into_iter()
            .any(|h| h.title == "Keeping Bees Through Winter"),
        "held back, not hidden"
    );
    let r = lib
        .match_query("varroa mites in winter beehives", 10)
        .unwrap();
    assert_eq!(bees(&r).map(|b| b.0), Some(Decision::Admitted));
    assert_eq!(r.explain.topic_held_back, None);
    assert_eq!(
        r.topic.hits().first().map(|h| h.title.as_str()),
        Some("Keeping Bees Through Winter")
    );
}
