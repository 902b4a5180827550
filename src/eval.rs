//! `carrel eval DIR`: the lanes against labelled data, with an SQLite FTS5
//! BM25 baseline over the same documents in the same run.
//!
//! DIR is BEIR layout (`corpus.jsonl` with `_id`, `title`, `text`;
//! `queries.jsonl`; `qrels.tsv` with a header), or has a `corpus/` folder of
//! files whose relative paths are the document ids, ingested through the
//! normal extractors. Queries without qrels are noise: a `Ready` hit for one
//! is a leak. `per_query` carries every ranked list, so anyone can recompute
//! the metrics.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::ingest::Source;
use crate::lanes::CosineFloors;
use crate::models::EmbedderKind;
use crate::score::{Cosine, Floor, RerankLogit, Scale};
use crate::sweep::{Judged, Sweep};
use crate::{Library, LibraryConfig, Progress};

/// Ranks scored by every metric.
pub const CUTOFF: usize = 10;

#[derive(Deserialize)]
struct CorpusLine {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct QueryLine {
    #[serde(rename = "_id")]
    id: String,
    text: String,
    /// The query's kind, where the set names one (the calibration set's
    /// `index-term`, `title`, `noise`): the lanes are also scored per kind.
    #[serde(default)]
    kind: Option<String>,
}

/// Both lanes' figures over the relevant queries of one kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindMetrics {
    pub queries: usize,
    pub subject: Metrics,
    pub topic: Metrics,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Metrics {
    pub ndcg_at_10: f64,
    pub recall_at_10: f64,
    pub mrr_at_10: f64,
    /// Share of queries with qrels whose first hit is relevant.
    pub p_at_1: f64,
    /// Noise queries (no qrels) that got a `Ready` hit.
    pub noise_leaks: usize,
    /// Share of queries with qrels on which the system fired: a lane `Ready`
    /// with hits (its weak fallback does not count), a baseline any hit.
    pub fires_on: f64,
    /// Of the queries it fired on, the share whose first hit is relevant:
    /// how far a hit it stands by can be trusted.
    pub right_when_fired: f64,
    #[serde(skip)]
    fired: usize,
}

impl Metrics {
    /// Adds one query's ranking against its relevant documents; `fired`
    /// says whether the system stood by it (see [`Metrics::fires_on`]).
    fn add(&mut self, ranked: &[String], relevant: &HashMap<String, f64>, fired: bool) {
        let (ndcg, recall, mrr, p1) = score(ranked, relevant);
        self.ndcg_at_10 += ndcg;
        self.recall_at_10 += recall;
        self.mrr_at_10 += mrr;
        self.p_at_1 += p1;
        if fired {
            self.fired += 1;
            self.right_when_fired += p1;
        }
    }

    /// Turns the sums into means over `queries` queries with qrels.
    fn average(&mut self, queries: usize) {
        let n = queries.max(1) as f64;
        self.ndcg_at_10 /= n;
        self.recall_at_10 /= n;
        self.mrr_at_10 /= n;
        self.p_at_1 /= n;
        self.fires_on = self.fired as f64 / n;
        self.right_when_fired /= self.fired.max(1) as f64;
    }
}

/// The three floors' populations, one [`Judged`] per query each.
struct Floors {
    subject_cosine: Sweep,
    subject_rerank: Sweep,
    topic: Sweep,
    /// The foreign lane's passage floor: the best logit among the passages
    /// nearest the query, as a foreign collection of them would bring.
    foreign: Sweep,
}

impl Default for Floors {
    fn default() -> Self {
        Floors::of(EmbedderKind::default())
    }
}

impl Floors {
    /// The sweeps of the floors in use for a library of `embedder`.
    fn of(embedder: EmbedderKind) -> Floors {
        use crate::lanes::subject;
        let cosine = CosineFloors::of(embedder);
        Floors {
            subject_cosine: Sweep::new(
                "subject cosine eligibility (card cosine)",
                cosine.subject.value().get(),
            ),
            subject_rerank: Sweep::new(
                "subject rerank floor (cross-encoder logit)",
                subject::RERANK_FLOOR.value().get(),
            ),
            topic: Sweep::new("topic floor (passage cosine)", cosine.topic.value().get()),
            foreign: Sweep::new(
                "foreign passage floor (cross-encoder logit)",
                crate::foreign::PASSAGE_FLOOR.value().get(),
            ),
        }
    }
}

impl Floors {
    /// Adds one query as each floor would judge it: the cosine of its
    /// relevant card (of any card, for noise); the logit of the card the
    /// subject lane would fire on ([`crate::lanes::subject::first_card`]);
    /// the best passage the veto let through.
    fn judge(
        &mut self,
        noise: bool,
        relevant: &HashMap<String, f64>,
        subject: &[CardScores],
        topic: &[PassageScores],
        foreign: &[(String, f32)],
    ) {
        let is_relevant = |d: &String| relevant.get(d).is_some_and(|g| *g > 0.0);
        let best =
            |it: &mut dyn Iterator<Item = (f32, bool)>| it.max_by(|a, b| a.0.total_cmp(&b.0));
        let card = best(
            &mut subject
                .iter()
                .filter(|c| noise || is_relevant(&c.doc))
                .map(|c| (c.cosine.get(), is_relevant(&c.doc))),
        );
        // The logit the lane would fire on: its first card's, when the
        // lane takes that card (`first_card`); none when it does not.
        let scored = CardScores::scored(subject);
        let pairs: Vec<(Cosine, RerankLogit)> = scored.iter().map(|(_, c, l)| (*c, *l)).collect();
        let logit = crate::lanes::subject::first_card(&pairs)
            .map(|i| (scored[i].2.get(), is_relevant(scored[i].0)));
        let passage = best(
            &mut topic
                .iter()
                .filter(|p| p.decision != crate::lanes::Decision::Vetoed)
                .map(|p| (p.cosine.get(), is_relevant(&p.doc))),
        );
        // A foreign passage is admitted on its logit alone: the best one.
        let foreign = best(&mut foreign.iter().map(|(d, l)| (*l, is_relevant(d))));
        for (sweep, judged) in [
            (&mut self.subject_cosine, card),
            (&mut self.subject_rerank, logit),
            (&mut self.topic, passage),
            (&mut self.foreign, foreign),
        ] {
            sweep.points.push(Judged {
                score: judged.map(|j| j.0),
                noise,
                right: judged.is_some_and(|j| j.1),
            });
        }
    }
}

/// Among the cards the cross-encoder scored, which order puts a relevant
/// card first more often: the cross-encoder's or cosine's. Counted over the
/// relevant queries with at least one relevant card among the scored ones,
/// so it judges the model's order, not the floors.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SubjectOrder {
    pub queries: usize,
    pub cross_encoder_first: usize,
    pub cosine_first: usize,
}

impl SubjectOrder {
    fn add(&mut self, relevant: &HashMap<String, f64>, subject: &[CardScores]) {
        let scored = CardScores::scored(subject);
        let is_relevant = |d: &String| relevant.get(d).is_some_and(|g| *g > 0.0);
        if !scored.iter().any(|(d, _, _)| is_relevant(d)) {
            return;
        }
        // Each order on its own scale, never one number across both.
        let cross_encoder = scored.iter().min_by(|a, b| a.2.rank(b.2));
        let cosine = scored.iter().min_by(|a, b| a.1.rank(b.1));
        self.queries += 1;
        self.cross_encoder_first += cross_encoder.is_some_and(|(d, _, _)| is_relevant(d)) as usize;
        self.cosine_first += cosine.is_some_and(|(d, _, _)| is_relevant(d)) as usize;
    }
}

/// Where the topic lane lost relevant documents: every (query, relevant
/// document) pair, by the first rule that kept the document out of the
/// lane's first [`CUTOFF`] hits.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TopicLosses {
    /// Relevant (query, document) pairs.
    pub pairs: usize,
    /// Returned in the first [`CUTOFF`].
    pub found: usize,
    /// None of the document's passages was among the candidates (the
    /// nearest vectors and the best keyword matches).
    pub outside_pool: usize,
    /// Vetoed, though its best passage was at or over the floor: the veto
    /// alone removed it.
    pub vetoed: usize,
    /// Vetoed, and under the floor as well.
    pub vetoed_below_floor: usize,
    /// Not vetoed; its best passage was under the floor that applied: the
    /// tail floor when the lane fired, the lane's floor when it did not.
    pub below_floor: usize,
    /// Over the floor and not vetoed, but held back: the library uses none
    /// of half the query's words ([`crate::lanes::topic::unfamiliar`]).
    pub unfamiliar: usize,
    /// Admitted, but ranked past [`CUTOFF`].
    pub ranked_out: usize,
}

impl TopicLosses {
    /// Adds one query's pairs, judged from the lane's candidates and the
    /// documents it returned.
    fn add(
        &mut self,
        floor: Floor<Cosine>,
        candidates: &[PassageScores],
        returned: &[String],
        relevant: &HashMap<String, f64>,
    ) {
        use crate::lanes::Decision;
        for (doc, _) in relevant.iter().filter(|(_, g)| **g > 0.0) {
            self.pairs += 1;
            if returned.iter().take(CUTOFF).any(|d| d == doc) {
                self.found += 1;
                continue;
            }
            match candidates.iter().find(|p| &p.doc == doc) {
                None => self.outside_pool += 1,
                Some(p) => match p.decision {
                    Decision::Vetoed if floor.admits(p.cosine) => self.vetoed += 1,
                    Decision::Vetoed => self.vetoed_below_floor += 1,
                    Decision::BelowCosineFloor => self.below_floor += 1,
                    Decision::Unfamiliar => self.unfamiliar += 1,
                    _ => self.ranked_out += 1,
                },
            }
        }
    }
}

/// Scores another system's ranking (query id → doc ids, best first) on a
/// BEIR-layout dataset with the metrics `carrel eval` uses, so a peer's
/// figures are computed by the same code as ours (`make bench-peer`).
/// A query missing from `run` counts as found nothing.
pub fn score_run(dir: &Path, run: &HashMap<String, Vec<String>>) -> Result<Metrics> {
    let queries: Vec<QueryLine> = read_jsonl(&dir.join("queries.jsonl"))?;
    let qrels = read_qrels(&dir.join("qrels.tsv"))?;
    let mut m = Metrics::default();
    let mut relevant_queries = 0;
    for q in &queries {
        let ranked = run.get(&q.id).map(Vec::as_slice).unwrap_or(&[]);
        match qrels.get(&q.id) {
            Some(rel) => {
                relevant_queries += 1;
                m.add(ranked, rel, !ranked.is_empty());
            }
            None => m.noise_leaks += !ranked.is_empty() as usize,
        }
    }
    m.average(relevant_queries);
    Ok(m)
}

#[derive(Debug, Clone, Serialize)]
pub struct LaneRanking {
    pub state: String,
    pub docs: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct QueryResult {
    pub subject: LaneRanking,
    pub topic: LaneRanking,
    pub bm25: Vec<String>,
    pub noise: bool,
    /// Every card the subject lane looked at, in its cosine order, with the
    /// cross-encoder's logit where it scored the card: what any floor or
    /// margin on either scale can be recomputed from.
    pub subject_candidates: Vec<CardScores>,
    /// Every document the topic lane looked at, in its candidate order: its
    /// best passage's cosine and the lane's decision on it.
    pub topic_candidates: Vec<PassageScores>,
}

/// One document the topic lane looked at for a query: its corpus id, its
/// best passage's cosine, and the lane's decision.
#[derive(Debug, Clone, Serialize)]
pub struct PassageScores {
    pub doc: String,
    pub cosine: Cosine,
    pub keyword_rank: Option<u32>,
    pub decision: crate::lanes::Decision,
}

/// One card the subject lane looked at for a query, on both its scales: its
/// document's corpus id, its cosine, and the cross-encoder's logit if the
/// card was scored.
#[derive(Debug, Clone, Serialize)]
pub struct CardScores {
    pub doc: String,
    pub cosine: Cosine,
    pub rerank: Option<RerankLogit>,
}

impl CardScores {
    /// The cards the cross-encoder scored, in their order, on both scales.
    fn scored(cards: &[CardScores]) -> Vec<(&String, Cosine, RerankLogit)> {
        cards
            .iter()
            .filter_map(|c| c.rerank.map(|l| (&c.doc, c.cosine, l)))
            .collect()
    }
}

/// Query latency in milliseconds over every query of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// The first query on a freshly opened library: model load included.
    pub cold_first_query_ms: f64,
    pub embed_p50_ms: f64,
    pub embed_p95_ms: f64,
    pub subject_p50_ms: f64,
    pub subject_p95_ms: f64,
    pub topic_p50_ms: f64,
    pub topic_p95_ms: f64,
    /// FTS5 BM25 over the same documents, same queries.
    pub bm25_p50_ms: f64,
    pub bm25_p95_ms: f64,
}

fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * p).round() as usize]
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    pub dataset: String,
    /// The embedder the set's library was made with, whose floors judged it.
    pub embedder: String,
    pub documents: usize,
    /// Documents that could not be indexed (listed broken, never retrievable).
    pub broken_documents: usize,
    pub queries: usize,
    pub relevant_queries: usize,
    pub noise_queries: usize,
    pub subject: Metrics,
    /// The baseline the cross-encoder must beat: the subject lane's eligible
    /// cards (cosine at or over its floor) ordered by cosine alone.
    pub subject_cosine: Metrics,
    pub topic: Metrics,
    /// The baseline the topic lane's rules must not lose to: each
    /// candidate document's best passage by cosine, no veto, no floor.
    pub topic_dense: Metrics,
    /// Where the topic lane lost relevant documents.
    pub topic_losses: TopicLosses,
    /// The cross-encoder's order against cosine's on the cards it scored.
    pub subject_order: SubjectOrder,
    /// Each floor's population on this set: the subject lane's cosine
    /// eligibility, its rerank floor, and the topic floor.
    pub floors: Vec<Sweep>,
    pub bm25: Metrics,
    /// Subject-lane states over all queries (ready / weak / unavailable / failed).
    pub subject_states: BTreeMap<String, usize>,
    pub topic_states: BTreeMap<String, usize>,
    /// Both lanes per kind of relevant query, where the set names kinds.
    pub by_kind: BTreeMap<String, KindMetrics>,
    pub latency: Latency,
    pub per_query: BTreeMap<String, QueryResult>,
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| Error::Eval(format!("{}:{}: {e}", path.display(), i + 1)))
        })
        .collect()
}

/// query id → (doc id → graded relevance > 0).
fn read_qrels(path: &Path) -> Result<HashMap<String, HashMap<String, f64>>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut out: HashMap<String, HashMap<String, f64>> = HashMap::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 3 {
            if line.trim().is_empty() {
                continue;
            }
            return Err(Error::Eval(format!(
                "{}:{}: expected query-id, corpus-id, score",
                path.display(),
                i + 1
            )));
        }
        let score: f64 = cols[2]
            .trim()
            .parse()
            .map_err(|e| Error::Eval(format!("{}:{}: {e}", path.display(), i + 1)))?;
        if score > 0.0 {
            out.entry(cols[0].to_string())
                .or_default()
                .insert(cols[1].to_string(), score);
        }
    }
    Ok(out)
}

/// Scores one ranked list: (nDCG@10, Recall@10, MRR@10).
/// nDCG@10, Recall@10, MRR@10 and P@1 of one ranking.
pub fn score(ranked: &[String], relevant: &HashMap<String, f64>) -> (f64, f64, f64, f64) {
    let top = &ranked[..ranked.len().min(CUTOFF)];
    let dcg: f64 = top
        .iter()
        .enumerate()
        .map(|(i, d)| {
            relevant
                .get(d)
                .map(|g| (2f64.powf(*g) - 1.0) / ((i + 2) as f64).log2())
                .unwrap_or(0.0)
        })
        .sum();
    let mut ideal: Vec<f64> = relevant.values().copied().collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(CUTOFF)
        .enumerate()
        .map(|(i, g)| (2f64.powf(*g) - 1.0) / ((i + 2) as f64).log2())
        .sum();
    let found = top.iter().filter(|d| relevant.contains_key(*d)).count();
    let mrr = top
        .iter()
        .position(|d| relevant.contains_key(d))
        .map(|p| 1.0 / (p + 1) as f64)
        .unwrap_or(0.0);
    (
        if idcg > 0.0 { dcg / idcg } else { 0.0 },
        found as f64 / relevant.len().max(1) as f64,
        mrr,
        if mrr == 1.0 { 1.0 } else { 0.0 },
    )
}

/// BM25 over the same documents, in an in-memory SQLite FTS5 table.
struct Bm25 {
    conn: rusqlite::Connection,
}

impl Bm25 {
    fn new(docs: &[(String, String, String)]) -> Result<Bm25> {
        let conn = rusqlite::Connection::open_in_memory()?;
        conn.execute_batch("CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, title, body, tokenize = 'porter unicode61')")?;
        {
            let mut insert =
                conn.prepare("INSERT INTO docs (id, title, body) VALUES (?1, ?2, ?3)")?;
            for (id, title, body) in docs {
                insert.execute([id, title, body])?;
            }
        }
        Ok(Bm25 { conn })
    }

    fn search(&self, query: &str) -> Result<Vec<String>> {
        let Some(expression) = crate::store::keywords::match_expression(query) else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT id FROM docs WHERE docs MATCH ?1 ORDER BY bm25(docs) LIMIT ?2",
        )?;
        let rows = stmt.query_map(rusqlite::params![expression, CUTOFF as i64], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
    }
}

/// Runs the evaluation in a temporary library under `work`.
pub fn run(
    dir: &Path,
    config: LibraryConfig,
    progress: &mut dyn FnMut(&Progress),
) -> Result<EvalReport> {
    let work = &config.dir;
    let corpus = load_corpus(dir, work)?;
    let queries: Vec<QueryLine> = read_jsonl(&dir.join("queries.jsonl"))?;
    let qrels = read_qrels(&dir.join("qrels.tsv"))?;

    let (broken, doc_ids, bm25) = index(&config, &corpus, progress)?;
    // Reopen, so the first query pays what a user's first query pays.
    let mut lib = Library::open(config)?;
    let embedder = lib.embedder();
    let mut tally = Tally {
        embedder,
        sweeps: Floors::of(embedder),
        ..Tally::default()
    };
    let total = queries.len();
    for (n, q) in queries.iter().enumerate() {
        progress(&Progress {
            done: n,
            total,
            current: format!("query {}", q.id),
            ..Progress::default()
        });
        let ranked = tally.rank(&mut lib, n, q, &doc_ids, &bm25)?;
        tally.score(q, ranked, &qrels);
    }
    Ok(tally.report(dir, corpus.sources.len(), broken, total))
}

/// The documents of a dataset, written out or found where the library can
/// ingest them.
struct Corpus {
    /// Source path → corpus id.
    ids: HashMap<String, String>,
    sources: Vec<Source>,
    /// (id, title, body) for BM25.
    bm25_docs: Vec<(String, String, String)>,
}

/// Loads DIR's documents: `corpus.jsonl` written out as Markdown files under
/// `work/corpus`, else the files of DIR's `corpus/` folder, extracted.
fn load_corpus(dir: &Path, work: &Path) -> Result<Corpus> {
    let corpus_dir = work.join("corpus");
    std::fs::create_dir_all(&corpus_dir).map_err(|e| Error::io(&corpus_dir, e))?;
    // source path → corpus id; and (id, title, body) for BM25.
    let mut ids: HashMap<String, String> = HashMap::new();
    let mut sources: Vec<Source> = Vec::new();
    let mut bm25_docs: Vec<(String, String, String)> = Vec::new();
    let jsonl = dir.join("corpus.jsonl");
    if jsonl.exists() {
        for (i, d) in read_jsonl::<CorpusLine>(&jsonl)?.into_iter().enumerate() {
            let path = corpus_dir.join(format!("{i:06}.md"));
            let body = if d.title.is_empty() {
                d.text.clone()
            } else {
                format!("# {}\n\n{}", d.title.trim(), d.text)
            };
            std::fs::write(&path, body).map_err(|e| Error::io(&path, e))?;
            ids.insert(path.display().to_string(), d.id.clone());
            bm25_docs.push((d.id, d.title, d.text));
            sources.push(Source::File(path));
        }
    } else {
        let root = std::path::absolute(dir.join("corpus")).map_err(|e| Error::io(dir, e))?;
        if !root.is_dir() {
            return Err(Error::Eval(format!(
                "{} has neither corpus.jsonl nor a corpus/ folder",
                dir.display()
            )));
        }
        let found = crate::ingest::expand(&[root.display().to_string()]);
        for s in found.sources {
            let Source::File(path) = &s else { continue };
            let id = path
                .strip_prefix(&root)
                .unwrap_or(path)
                .display()
                .to_string();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            let extracted =
                crate::extract::extract(&name, &text, crate::extract::Kind::detect(path, &text))
                    .map_err(|r| Error::Eval(format!("{}: {r}", path.display())))?;
            bm25_docs.push((id.clone(), extracted.title.clone(), extracted.body()));
            ids.insert(path.display().to_string(), id);
            sources.push(s);
        }
    }
    Ok(Corpus {
        ids,
        sources,
        bm25_docs,
    })
}

/// Ingests the corpus into a library at `config` (a kept library only
/// re-scans) and builds the BM25 index: how many documents are broken,
/// library doc id → corpus id, and the index. The library is closed again
/// on return.
fn index(
    config: &LibraryConfig,
    corpus: &Corpus,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(usize, HashMap<i64, String>, Bm25)> {
    let Corpus {
        ids,
        sources,
        bm25_docs,
    } = corpus;
    let mut lib = Library::open(config.clone())?;
    // Broken documents (the BEIR sets have a few empty ones) stay counted:
    // they cannot be retrieved, and the report says how many there were.
    lib.add_sources(sources, Vec::new(), progress)?;
    let (docs, foreign): (Vec<_>, Vec<_>) = lib
        .list()?
        .into_iter()
        .partition(|d| ids.contains_key(&d.source));
    // A document from elsewhere (another set, or this one by another path)
    // can hold a candidate's first location; its corpus id is unknown, so
    // every figure would read as found nothing. Refuse instead.
    if let Some(first) = foreign.first() {
        return Err(Error::Eval(format!(
            "the evaluation library at {} holds {} documents that are not in this set (first: {}), \
             so its figures would be wrong: give --keep-library a folder of its own for each set and path",
            config.dir.display(),
            foreign.len(),
            first.source
        )));
    }
    let broken = docs.iter().filter(|d| d.state == "broken").count();
    // Library doc id → corpus id (every location of a shared content).
    let doc_ids: HashMap<i64, String> = docs
        .into_iter()
        .map(|d| (d.id, ids[&d.source].clone()))
        .collect();
    let bm25 = Bm25::new(bm25_docs)?;
    drop(lib);
    Ok((broken, doc_ids, bm25))
}

/// One query's rankings, as corpus ids, best first.
struct Ranked {
    r: crate::lanes::MatchResponse,
    subject_docs: Vec<String>,
    topic_docs: Vec<String>,
    /// The subject lane's eligible cards by cosine alone.
    cosine_docs: Vec<String>,
    /// The topic lane's candidates by their best passage's cosine alone.
    dense_docs: Vec<String>,
    /// The topic lane's candidates, in its order.
    topic_candidates: Vec<PassageScores>,
    /// The subject lane's candidates: corpus id, cosine, logit if reranked.
    subject_candidates: Vec<CardScores>,
    /// The nearest passages' documents and logits, as the foreign lane
    /// would score them.
    foreign_passages: Vec<(String, f32)>,
    bm25_docs: Vec<String>,
}

/// What the queries so far add up to: timings, metric sums, lane states and
/// every ranking.
#[derive(Default)]
struct Tally {
    embed_ms: Vec<f64>,
    subject_ms: Vec<f64>,
    topic_ms: Vec<f64>,
    bm25_ms: Vec<f64>,
    cold_first_query_ms: f64,
    per_query: BTreeMap<String, QueryResult>,
    subject: Metrics,
    cosine: Metrics,
    topic: Metrics,
    dense: Metrics,
    losses: TopicLosses,
    order: SubjectOrder,
    sweeps: Floors,
    base: Metrics,
    subject_states: BTreeMap<String, usize>,
    topic_states: BTreeMap<String, usize>,
    relevant_queries: usize,
    by_kind: BTreeMap<String, KindMetrics>,
    /// The embedder of the library asked, whose floors are in use.
    embedder: EmbedderKind,
}

/// The dataset's ids of the documents at these locations, in order.
fn docs_of<'a>(
    locations: impl Iterator<Item = &'a Vec<crate::lanes::Location>>,
    doc_ids: &HashMap<i64, String>,
) -> Vec<String> {
    locations
        .flatten()
        .filter_map(|l| doc_ids.get(&l.doc).cloned())
        .collect()
}

/// The subject lane's baseline: the cards over its cosine floor, in cosine
/// order.
fn cosine_order(
    candidates: &[crate::lanes::Candidate],
    embedder: EmbedderKind,
    doc_ids: &HashMap<i64, String>,
) -> Vec<String> {
    let floor = CosineFloors::of(embedder).subject;
    let mut eligible: Vec<&crate::lanes::Candidate> = candidates
        .iter()
        .filter(|c| floor.admits(c.cosine))
        .collect();
    eligible.sort_by(|a, b| a.cosine.rank(b.cosine));
    eligible
        .iter()
        .filter_map(|c| doc_ids.get(&c.doc).cloned())
        .collect()
}

/// Every topic candidate's scores and decision, for the floor sweeps.
fn passage_scores(
    candidates: &[crate::lanes::Candidate],
    doc_ids: &HashMap<i64, String>,
) -> Vec<PassageScores> {
    candidates
        .iter()
        .filter_map(|c| {
            Some(PassageScores {
                doc: doc_ids.get(&c.doc)?.clone(),
                cosine: c.cosine,
                keyword_rank: c.keyword_rank,
                decision: c.decision,
            })
        })
        .collect()
}

/// Every subject candidate's cosine and logit, for the floor sweeps.
fn card_scores(
    candidates: &[crate::lanes::Candidate],
    doc_ids: &HashMap<i64, String>,
) -> Vec<CardScores> {
    candidates
        .iter()
        .filter_map(|c| {
            Some(CardScores {
                doc: doc_ids.get(&c.doc)?.clone(),
                cosine: c.cosine,
                rerank: c.rerank,
            })
        })
        .collect()
}

/// The topic lane's baseline: its candidates' best passages by cosine only.
fn dense_order(candidates: &[PassageScores]) -> Vec<String> {
    let mut dense: Vec<&PassageScores> = candidates.iter().collect();
    dense.sort_by(|a, b| a.cosine.rank(b.cosine));
    dense
        .into_iter()
        .map(|p| p.doc.clone())
        .take(CUTOFF)
        .collect()
}

impl Ranked {
    /// What is kept of one query for the per-query report.
    fn into_result(self, noise: bool) -> QueryResult {
        QueryResult {
            subject: LaneRanking {
                state: self.r.subject.state().into(),
                docs: self.subject_docs,
            },
            topic: LaneRanking {
                state: self.r.topic.state().into(),
                docs: self.topic_docs,
            },
            bm25: self.bm25_docs,
            noise,
            subject_candidates: self.subject_candidates,
            topic_candidates: self.topic_candidates,
        }
    }
}

impl Tally {
    /// Runs the lanes and BM25 on the `n`th query, timing all but the first
    /// (its time is the cold start's).
    fn rank(
        &mut self,
        lib: &mut Library,
        n: usize,
        q: &QueryLine,
        doc_ids: &HashMap<i64, String>,
        bm25: &Bm25,
    ) -> Result<Ranked> {
        let started = std::time::Instant::now();
        let r = lib.match_query(&q.text, CUTOFF)?;
        if n == 0 {
            self.cold_first_query_ms = started.elapsed().as_secs_f64() * 1000.0;
        } else {
            self.embed_ms.push(r.explain.embed_ms);
            self.subject_ms.push(r.explain.subject_ms);
            self.topic_ms.push(r.explain.topic_ms);
        }
        let subject_docs = docs_of(r.subject.hits().iter().map(|h| &h.locations), doc_ids);
        let topic_docs = docs_of(r.topic.hits().iter().map(|h| &h.locations), doc_ids);
        let cosine_docs = cosine_order(&r.explain.subject, self.embedder, doc_ids);
        let topic_candidates = passage_scores(&r.explain.topic, doc_ids);
        let subject_candidates = card_scores(&r.explain.subject, doc_ids);
        let dense_docs = dense_order(&topic_candidates);
        let foreign_passages = lib
            .passage_logits(&q.text, crate::foreign::POINTS_ASKED)?
            .into_iter()
            .filter_map(|(d, l)| Some((doc_ids.get(&d)?.clone(), l)))
            .collect();
        let started = std::time::Instant::now();
        let bm25_docs = bm25.search(&q.text)?;
        if n > 0 {
            self.bm25_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        }
        Ok(Ranked {
            r,
            subject_docs,
            topic_docs,
            cosine_docs,
            dense_docs,
            topic_candidates,
            subject_candidates,
            foreign_passages,
            bm25_docs,
        })
    }

    /// Scores one query's rankings against its qrels (a query without any
    /// is noise: any `Ready` hit is a leak) and keeps them.
    fn score(
        &mut self,
        q: &QueryLine,
        ranked: Ranked,
        qrels: &HashMap<String, HashMap<String, f64>>,
    ) {
        let r = &ranked.r;
        *self
            .subject_states
            .entry(r.subject.state().to_string())
            .or_insert(0) += 1;
        *self
            .topic_states
            .entry(r.topic.state().to_string())
            .or_insert(0) += 1;
        let noise = !qrels.contains_key(&q.id);
        let no_qrels = HashMap::new();
        let rel = qrels.get(&q.id).unwrap_or(&no_qrels);
        self.sweeps.judge(
            noise,
            rel,
            &ranked.subject_candidates,
            &ranked.topic_candidates,
            &ranked.foreign_passages,
        );
        if noise {
            self.add_noise(&ranked);
        } else {
            self.add_relevant(q, &ranked, rel);
        }
        self.per_query
            .insert(q.id.clone(), ranked.into_result(noise));
    }

    /// A noise query: each list that admitted anything leaked.
    fn add_noise(&mut self, k: &Ranked) {
        self.subject.noise_leaks += k.r.subject.has_ready_hits() as usize;
        self.cosine.noise_leaks += !k.cosine_docs.is_empty() as usize;
        self.topic.noise_leaks += k.r.topic.has_ready_hits() as usize;
        self.dense.noise_leaks += !k.dense_docs.is_empty() as usize;
        self.base.noise_leaks += !k.bm25_docs.is_empty() as usize;
    }

    /// A query with qrels: every list's metrics, the topic lane's losses,
    /// the subject lane's order, and its kind's metrics.
    fn add_relevant(&mut self, q: &QueryLine, k: &Ranked, rel: &HashMap<String, f64>) {
        let (subject_fired, topic_fired) =
            (k.r.subject.has_ready_hits(), k.r.topic.has_ready_hits());
        self.relevant_queries += 1;
        self.subject.add(&k.subject_docs, rel, subject_fired);
        self.cosine
            .add(&k.cosine_docs, rel, !k.cosine_docs.is_empty());
        self.topic.add(&k.topic_docs, rel, topic_fired);
        self.dense.add(&k.dense_docs, rel, !k.dense_docs.is_empty());
        self.losses.add(
            CosineFloors::of(self.embedder).topic,
            &k.topic_candidates,
            &k.topic_docs,
            rel,
        );
        self.order.add(rel, &k.subject_candidates);
        self.base.add(&k.bm25_docs, rel, !k.bm25_docs.is_empty());
        if let Some(kind) = &q.kind {
            let by = self.by_kind.entry(kind.clone()).or_default();
            by.queries += 1;
            by.subject.add(&k.subject_docs, rel, subject_fired);
            by.topic.add(&k.topic_docs, rel, topic_fired);
        }
    }

    /// The report: metric sums turned into means, latency percentiles.
    fn report(
        self,
        dir: &Path,
        documents: usize,
        broken_documents: usize,
        total: usize,
    ) -> EvalReport {
        let Tally {
            embed_ms,
            subject_ms,
            topic_ms,
            bm25_ms,
            cold_first_query_ms,
            per_query,
            mut subject,
            mut cosine,
            mut topic,
            mut dense,
            losses,
            order,
            sweeps,
            mut base,
            subject_states,
            topic_states,
            relevant_queries,
            mut by_kind,
            embedder,
        } = self;
        for m in [&mut subject, &mut cosine, &mut topic, &mut dense, &mut base] {
            m.average(relevant_queries);
        }
        for k in by_kind.values_mut() {
            k.subject.average(k.queries);
            k.topic.average(k.queries);
        }
        EvalReport {
            embedder: embedder.to_string(),
            dataset: dir.display().to_string(),
            documents,
            broken_documents,
            queries: total,
            relevant_queries,
            noise_queries: total - relevant_queries,
            subject,
            subject_cosine: cosine,
            topic,
            topic_dense: dense,
            topic_losses: losses,
            subject_order: order,
            floors: vec![
                sweeps.subject_cosine,
                sweeps.subject_rerank,
                sweeps.topic,
                sweeps.foreign,
            ],
            bm25: base,
            subject_states,
            topic_states,
            by_kind,
            latency: Latency {
                cold_first_query_ms,
                embed_p50_ms: percentile(&embed_ms, 0.5),
                embed_p95_ms: percentile(&embed_ms, 0.95),
                subject_p50_ms: percentile(&subject_ms, 0.5),
                subject_p95_ms: percentile(&subject_ms, 0.95),
                topic_p50_ms: percentile(&topic_ms, 0.5),
                topic_p95_ms: percentile(&topic_ms, 0.95),
                bm25_p50_ms: percentile(&bm25_ms, 0.5),
                bm25_p95_ms: percentile(&bm25_ms, 0.95),
            },
            per_query,
        }
    }
}

/// The library of a labelled set's documents (its `corpus/`) at `dir`,
/// filled once, when empty; with the corpus folder, which the set's
/// document ids are relative to. The measuring commands share one
/// (`make answers`, `make follow-ups`, `make bench-writer`).
pub fn set_library(set: &Path, dir: &Path, models: Option<PathBuf>) -> Result<(Library, PathBuf)> {
    let models = crate::models::ModelConfig::new(match models {
        Some(dir) => dir,
        None => crate::models::ModelConfig::default_dir()?,
    });
    let corpus = std::path::absolute(set.join("corpus")).map_err(|e| Error::io(set, e))?;
    let mut lib = Library::open(LibraryConfig::new(dir.to_path_buf(), models))?;
    if lib.list()?.is_empty() {
        eprintln!("adding {} (once)", corpus.display());
        let report = lib.add(&[corpus.display().to_string()], &mut |_| {})?;
        eprintln!("added {}, {} failed", report.added, report.failed.len());
    }
    Ok((lib, corpus))
}

/// A fresh temporary folder for an evaluation library.
pub fn scratch_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "carrel-eval-{}-{}",
        std::process::id(),
        crate::store::now()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_run_is_scored_like_a_lane_and_noise_answers_count_as_leaks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("queries.jsonl"),
            "{\"_id\": \"1\", \"text\": \"a\"}\n{\"_id\": \"2\", \"text\": \"b\"}\n{\"_id\": \"3\", \"text\": \"noise\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("qrels.tsv"),
            "query-id\tcorpus-id\tscore\n1\td1\t1\n2\td2\t1\n",
        )
        .unwrap();
        let run: HashMap<String, Vec<String>> = [
            ("1".to_string(), vec!["d1".to_string()]),
            ("3".to_string(), vec!["d9".to_string()]),
        ]
        .into();
        let m = score_run(dir.path(), &run).unwrap();
        // Query 1 perfect, query 2 missing from the run (found nothing).
        assert!((m.ndcg_at_10 - 0.5).abs() < 1e-9, "{m:?}");
        assert_eq!((m.p_at_1, m.noise_leaks), (0.5, 1));
        // It fired on one of two, and was right that time.
        assert_eq!((m.fires_on, m.right_when_fired), (0.5, 1.0));
    }

    #[test]
    fn each_lost_document_is_put_down_to_the_first_rule_that_lost_it() {
        use crate::lanes::Decision::*;
        use crate::score::Cosine;
        let c = |d: &str, decision, cos| PassageScores {
            doc: d.to_string(),
            cosine: Cosine::new(cos),
            keyword_rank: None,
            decision,
        };
        let candidates = [
            c("found", Admitted, 0.8),
            c("veto", Vetoed, 0.7),
            c("veto-floor", Vetoed, 0.2),
            c("floor", BelowCosineFloor, 0.3),
            c("late", Admitted, 0.6),
            c("unfamiliar", Unfamiliar, 0.6),
        ];
        let relevant: HashMap<String, f64> = [
            "found",
            "veto",
            "veto-floor",
            "floor",
            "late",
            "pool",
            "unfamiliar",
        ]
        .iter()
        .map(|d| (d.to_string(), 1.0))
        .chain([("judged-irrelevant".to_string(), 0.0)])
        .collect();
        let mut returned = vec!["found".to_string()];
        returned.extend((0..CUTOFF).map(|i| format!("other{i}")));
        returned.push("late".into());
        let mut t = TopicLosses::default();
        t.add(
            crate::lanes::topic::TOPIC_FLOOR,
            &candidates,
            &returned,
            &relevant,
        );
        assert_eq!(
            (
                t.pairs,
                t.found,
                t.outside_pool,
                t.vetoed,
                t.vetoed_below_floor,
                t.below_floor,
                t.unfamiliar,
                t.ranked_out
            ),
            (7, 1, 1, 1, 1, 1, 1, 1),
            "{t:?}"
        );
    }

    #[test]
    fn subject_order_counts_only_scored_cards_and_only_queries_with_a_relevant_one() {
        let rel: HashMap<String, f64> = [("a".to_string(), 1.0)].into();
        let card = |d: &str, cosine: f32, logit: Option<f32>| CardScores {
            doc: d.to_string(),
            cosine: Cosine::new(cosine),
            rerank: logit.map(RerankLogit::new),
        };
        let mut o = SubjectOrder::default();
        // The cross-encoder puts "a" first, cosine puts "x" first.
        o.add(
            &rel,
            &[card("x", 0.9, Some(0.1)), card("a", 0.5, Some(2.0))],
        );
        // Cosine's best card was never scored: among the scored, both agree.
        o.add(
            &rel,
            &[
                card("y", 0.95, None),
                card("a", 0.6, Some(1.0)),
                card("x", 0.4, Some(0.0)),
            ],
        );
        // The relevant card was not scored: the query does not count.
        o.add(&rel, &[card("a", 0.2, None), card("x", 0.5, Some(3.0))]);
        assert_eq!(
            (o.queries, o.cross_encoder_first, o.cosine_first),
            (2, 2, 1),
            "{o:?}"
        );
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        let rel: HashMap<String, f64> = [("a".to_string(), 1.0), ("b".to_string(), 1.0)].into();
        let ranked = vec![
            "x".to_string(),
            "a".to_string(),
            "y".to_string(),
            "b".to_string(),
        ];
        let (ndcg, recall, mrr, p1) = score(&ranked, &rel);
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg - dcg / idcg).abs() < 1e-9);
        assert_eq!((recall, mrr, p1), (1.0, 0.5, 0.0));
        assert_eq!(score(&[], &rel), (0.0, 0.0, 0.0, 0.0));
        assert_eq!(score(&ranked[1..], &rel).3, 1.0);
    }
}
