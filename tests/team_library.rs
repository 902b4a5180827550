//! The PostgreSQL store against the SQLite one, on a real PostgreSQL server
//! with pgvector (tests/common/postgres.rs): what ingest writes and what the
//! lanes read, one suite over both stores; many writers racing for one body;
//! who wrote each row; a database newer than this build refused.

mod common;
#[path = "common/postgres.rs"]
mod pg_server;

use carrel::card::Card;
use carrel::extract::{Extracted, Section};
use carrel::models::Fingerprints;
use carrel::store::pg::PgStore;
use carrel::store::{
    ContentToWrite, Holding, NewChunk, NewDocument, Store, TopicAsk, Validators, Written,
};

const FP: &str = "fp-chunks";

fn fingerprints() -> Fingerprints {
    Fingerprints {
        model: "test-model".into(),
        chunk: FP.into(),
        card: "fp-cards".into(),
    }
}

/// A pseudo-random unit vector of 384 dimensions, the same for a seed.
fn unit(seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..384)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

/// A document as ingest would hand it to a store: a body of two passages,
/// their vectors and a card.
struct Body {
    hash: String,
    extracted: Extracted,
    chunks: Vec<NewChunk>,
    vectors: Vec<Vec<f32>>,
    card: Card,
    card_vector: Vec<f32>,
}

const TOPICS: &[(&str, &str, &str)] = &[
    (
        "Boilers",
        "Pressure vessels",
        "A boiler heats water under pressure; its safety valve opens before the shell fails.",
    ),
    (
        "Bees",
        "Winter cluster",
        "Honey bees survive the winter in a tight cluster, shivering their flight muscles for heat.",
    ),
    (
        "Rivers",
        "Meanders",
        "A river meanders where its bank erodes on the outside of each bend and silt settles inside.",
    ),
    (
        "Bread",
        "Sourdough starter",
        "A sourdough starter is flour and water kept alive by wild yeast and lactic bacteria.",
    ),
    (
        "Пчёлы",
        "Зимний клуб",
        "Пчёлы переживают зиму в плотном клубе, согревая его дрожью грудных мышц.",
    ),
];

fn body(i: usize) -> Body {
    let (title, heading, text) = TOPICS[i];
    let texts = [
        text.to_string(),
        format!("{heading}: {text} More about {title}."),
    ];
    body_of(i as u64, title, heading, &texts)
}

/// A body of `texts`, one passage each under `title` and `heading`, its
/// vectors drawn from `seed`.
fn body_of(seed: u64, title: &str, heading: &str, texts: &[String]) -> Body {
    let chunks = texts
        .iter()
        .map(|t| NewChunk {
            heading_path: vec![title.to_string(), heading.to_string()],
            section: 0,
            start: 0,
            end: t.len(),
            page: None,
            text: t.clone(),
        })
        .collect();
    Body {
        hash: format!("hash-{seed}"),
        extracted: Extracted {
            title: title.into(),
            sections: vec![Section {
                heading_path: vec![title.into()],
                text: texts.join("\n\n"),
                page: None,
            }],
            ..Extracted::default()
        },
        chunks,
        vectors: (0..texts.len() as u64)
            .map(|k| unit(seed * 2 + 1 + k))
            .collect(),
        card: Card {
            title: title.into(),
            what: format!("about {}", title.to_lowercase()),
            outline: vec![heading.into()],
            key_terms: vec![title.to_lowercase(), heading.to_lowercase()],
        },
        card_vector: unit(100 + seed),
    }
}

fn holding(b: &Body) -> Holding<'_> {
    Holding::New(ContentToWrite {
        hash: &b.hash,
        extracted: &b.extracted,
        truncated_at_chunk: None,
        chunks: &b.chunks,
        chunk_vectors: &b.vectors,
        card: &b.card,
        card_vector: Some(&b.card_vector),
    })
}

fn document<'a>(source: &'a str, title: &'a str, validators: &'a Validators) -> NewDocument<'a> {
    NewDocument {
        source,
        kind: Some("text"),
        title,
        bytes: 100,
        mtime_ns: None,
        validators,
        watch: None,
    }
}

/// (documents, contents, chunks, cards), and the rows that point at
/// nothing or that nothing points at.
fn health(pg: &PgStore) -> ([i64; 4], i64) {
    let [documents, contents, chunks, _, cards, _] = pg.counts().unwrap();
    let orphans = pg.orphans().unwrap().iter().map(|(_, n)| n).sum();
    ([documents, contents, chunks, cards], orphans)
}

/// Both stores answer each read the lanes make alike: the nearest chunks
/// and cards (ids, and distances to 1e-5), each passage with its card and
/// language, the documents that hold a content, the keyword search's best
/// passage; and both write the same outcomes.
#[test]
fn the_lanes_read_the_same_from_both_stores() {
    let pg_server = pg_server::start_postgres();
    let dir = tempfile::tempdir().unwrap();
    let mut lite = Store::open(&dir.path().join("library.sqlite3")).unwrap();
    let pg = PgStore::open(&pg_server.url, "ana").unwrap();
    let fp = fingerprints();
    let v = Validators::default();
    let bodies: Vec<Body> = (0..TOPICS.len()).map(body).collect();
    for (i, b) in bodies.iter().enumerate() {
        let source = format!("/notes/{i}.txt");
        let doc = document(&source, TOPICS[i].0, &v);
        let a = lite.write_document(&doc, holding(b), &fp).unwrap();
        let p = pg.write_document(&doc, holding(b), &fp).unwrap();
        assert_eq!(a.unchanged, p.unchanged, "document {i}");
        assert!(!p.unchanged, "a new document is written, not unchanged");
    }
    // A second source with the first body: one content, two locations.
    let copy = document("/elsewhere/0.txt", "Boilers (copy)", &v);
    let a = lite
        .write_document(&copy, holding(&bodies[0]), &fp)
        .unwrap();
    let p = pg.write_document(&copy, holding(&bodies[0]), &fp).unwrap();
    assert_eq!((a.unchanged, p.unchanged), (false, false));
    // The same source and body again: unchanged on both.
    let again = document("/notes/1.txt", TOPICS[1].0, &v);
    let a = lite
        .write_document(&again, holding(&bodies[1]), &fp)
        .unwrap();
    let p = pg.write_document(&again, holding(&bodies[1]), &fp).unwrap();
    assert_eq!((a.unchanged, p.unchanged), (true, true));

    let query: Vec<f32> = bodies[3].vectors[0]
        .iter()
        .zip(unit(999))
        .map(|(a, b)| a + 0.3 * b)
        .collect();
    let (lite_near, _) = lite.nearest_chunks(&query, 6, FP).unwrap();
    let (pg_near, search) = pg.nearest_chunks(&query, 6, FP).unwrap();
    assert!(search.describe().contains("HNSW"), "{}", search.describe());
    let texts = |s: &[(i64, f32)], read: &dyn Fn(i64) -> String| -> Vec<String> {
        s.iter().map(|(id, _)| read(*id)).collect()
    };
    let lite_text = |id| lite.chunk_text(id).unwrap().unwrap().1;
    let pg_text = |id| pg.passage(id).unwrap().unwrap().text;
    assert_eq!(texts(&lite_near, &lite_text), texts(&pg_near, &pg_text));
    for ((_, a), (_, b)) in lite_near.iter().zip(&pg_near) {
        assert!((a - b).abs() < 1e-5, "distance {a} against {b}");
    }
    let exact = pg.nearest_chunks_exact(&query, 6, FP).unwrap();
    assert_eq!(
        exact.iter().map(|c| c.0).collect::<Vec<_>>(),
        pg_near.iter().map(|c| c.0).collect::<Vec<_>>(),
        "HNSW finds what the exact scan finds"
    );

    let card_query = bodies[2].card_vector.clone();
    let lite_cards = lite.nearest_cards(&card_query, 3, "fp-cards").unwrap();
    let pg_cards = pg.nearest_cards(&card_query, 3, "fp-cards").unwrap();
    let summary =
        |cards: &[carrel::store::NearCard]| -> Vec<(String, String, Option<&'static str>)> {
            cards
                .iter()
                .map(|c| (c.hash.clone(), c.what.clone(), c.language.map(|l| l.code())))
                .collect()
        };
    assert_eq!(summary(&lite_cards), summary(&pg_cards));
    assert!(
        pg_cards[0].cosine.get() > 0.999,
        "a card's own vector is nearest"
    );
    assert!(
        pg.nearest_cards(&card_query, 3, "another model")
            .unwrap()
            .is_empty()
    );

    let (first_lite, first_pg) = (lite_near[0].0, pg_near[0].0);
    let content_lite = lite.chunk_content(first_lite).unwrap().unwrap();
    let content_pg = pg.chunk_content(first_pg).unwrap().unwrap();
    let a = lite.passage(first_lite).unwrap().unwrap();
    let b = pg.passage(first_pg).unwrap().unwrap();
    assert_eq!((a.content, b.content), (content_lite, content_pg));
    assert_eq!(
        (
            &a.heading_path,
            &a.text,
            a.page,
            &a.key_terms,
            &a.what,
            a.only_chunk,
            a.language
        ),
        (
            &b.heading_path,
            &b.text,
            b.page,
            &b.key_terms,
            &b.what,
            b.only_chunk,
            b.language
        )
    );
    // The batched reads the lanes make: one read for many ids, a chunk or
    // content that is gone left out, the same on both stores.
    let gone = 1_000_000;
    macro_rules! batch {
        ($s:expr, $near:expr) => {{
            let (s, near): (_, &[(i64, f32)]) = (&$s, &$near);
            let chunks = [near[0].0, near[1].0, gone];
            let contents = s.chunk_contents(&chunks).unwrap();
            let passages = s.passages(&chunks).unwrap();
            let held: Vec<i64> = chunks
                .iter()
                .filter_map(|c| contents.get(c))
                .copied()
                .collect();
            let locations = s.locations_of(&[held[0], held[1], gone]).unwrap();
            let mut texts: Vec<String> = passages.into_values().map(|p| p.text).collect();
            texts.sort();
            let mut sources: Vec<String> = locations
                .into_values()
                .flatten()
                .map(|l| l.source)
                .collect();
            sources.sort();
            let mut held: Vec<(String, Vec<String>)> = s
                .passages_with_locations(&chunks)
                .unwrap()
                .into_values()
                .map(|(p, l)| (p.text, l.into_iter().map(|l| l.source).collect()))
                .collect();
            held.sort();
            (contents.len(), texts, sources, held)
        }};
    }
    let (lite_batch, pg_batch) = (batch!(lite, lite_near), batch!(pg, pg_near));
    assert_eq!(lite_batch.0, 2);
    assert_eq!(lite_batch.3.len(), 2);
    assert_eq!(lite_batch, pg_batch);
    let where_lite: Vec<String> = lite
        .locations(lite.content_by_hash("hash-0").unwrap().unwrap())
        .unwrap()
        .into_iter()
        .map(|l| l.source)
        .collect();
    let boiler = pg
        .nearest_cards(&bodies[0].card_vector, 1, "fp-cards")
        .unwrap();
    let where_pg: Vec<String> = pg
        .locations(boiler[0].content)
        .unwrap()
        .into_iter()
        .map(|l| l.source)
        .collect();
    assert_eq!(where_lite, vec!["/notes/0.txt", "/elsewhere/0.txt"]);
    assert_eq!(where_lite, where_pg);

    // The Russian passage is Russian in both.
    let bees_ru = pg.nearest_chunks(&bodies[4].vectors[0], 1, FP).unwrap().0[0].0;
    assert_eq!(
        pg.passage(bees_ru)
            .unwrap()
            .unwrap()
            .language
            .map(|l| l.code()),
        Some("ru")
    );
    let bees_lite = lite.nearest_chunks(&bodies[4].vectors[0], 1, FP).unwrap().0[0].0;
    assert_eq!(
        lite.passage(bees_lite)
            .unwrap()
            .unwrap()
            .language
            .map(|l| l.code()),
        Some("ru")
    );

    // The keyword side: a word one document holds finds its passage first,
    // inflected otherwise, in both.
    let k_lite = lite.keyword_chunks("meandering rivers", 5).unwrap();
    let k_pg = pg.keyword_chunks("meandering rivers", 5).unwrap();
    assert!(!k_pg.is_empty(), "the stemmed word matched nothing");
    assert_eq!(
        lite_text(k_lite[0]).contains("meanders"),
        pg_text(k_pg[0]).contains("meanders")
    );
    assert!(pg.keyword_chunks("the of and", 5).unwrap().is_empty());
    // The topic lane's candidates, fetched on two connections at once, are
    // what the reads give one after the other; asked twice, the second
    // connection is kept.
    for _ in 0..2 {
        let ask = TopicAsk {
            vector: &query,
            text: "meandering rivers zebra",
            k: 6,
            fingerprint: FP,
        };
        let together = pg.topic_candidates(&ask).unwrap();
        let near: Vec<(i64, f32)> = together
            .nearest
            .iter()
            .map(|n| (n.chunk, n.distance))
            .collect();
        assert_eq!(near, pg_near);
        assert_eq!(together.search, search);
        let keyword: Vec<i64> = together.keyword.iter().map(|m| m.chunk).collect();
        assert_eq!(keyword, pg.keyword_chunks(ask.text, 6).unwrap());
        assert!(!keyword.is_empty());
        let found = together.nearest.iter().map(|n| (n.chunk, n.content));
        for (chunk, content) in found.chain(together.keyword.iter().map(|m| (m.chunk, m.content))) {
            assert_eq!(Some(content), pg.chunk_content(chunk).unwrap());
        }
        assert_eq!(together.vocabulary.unused, vec!["zebra".to_string()]);
        // Each keyword match comes with the distance SQLite gives the same
        // passage, and the nearest search gives it where both found it.
        let alone = lite.topic_candidates(&ask).unwrap();
        assert_eq!(together.vocabulary.unused, alone.vocabulary.unused);
        let by_text = |c: &carrel::store::TopicCandidates, text: &dyn Fn(i64) -> String| {
            let mut d: Vec<(String, f32)> = c
                .keyword
                .iter()
                .map(|m| {
                    (
                        text(m.chunk),
                        m.distance.expect("every passage has a vector"),
                    )
                })
                .collect();
            d.sort_by(|a, b| a.0.cmp(&b.0));
            d
        };
        let (a, b) = (by_text(&alone, &lite_text), by_text(&together, &pg_text));
        assert_eq!(a.len(), b.len());
        for ((ta, da), (tb, db)) in a.iter().zip(&b) {
            assert_eq!(ta, tb);
            assert!((da - db).abs() < 1e-5, "distance {da} against {db}");
        }
        for m in &together.keyword {
            if let Some(n) = together.nearest.iter().find(|n| n.chunk == m.chunk) {
                assert!((m.distance.unwrap() - n.distance).abs() < 1e-6);
            }
        }
        // A passage with no vector of the asked fingerprint has no distance.
        let other = pg
            .topic_candidates(&TopicAsk {
                fingerprint: "another model",
                ..ask
            })
            .unwrap();
        assert!(other.nearest.is_empty());
        assert_eq!(other.keyword.len(), keyword.len());
        assert!(other.keyword.iter().all(|m| m.distance.is_none()));
    }
}

/// The texts of the passages PostgreSQL's keyword side finds for `query`,
/// best first.
/// What schema 5 added, taken out again to make a library of an older
/// schema.
const UNDO_SCHEMA_5: &str = "DROP TRIGGER chunks_languages_added ON chunks;
    DROP TRIGGER chunks_languages_removed ON chunks;
    DROP FUNCTION carrel_count_languages(); DROP TABLE language_totals;
    DROP INDEX chunks_fingerprint;";

fn keyword_texts(pg: &PgStore, query: &str) -> Vec<String> {
    pg.keyword_chunks(query, 5)
        .unwrap()
        .into_iter()
        .map(|id| pg.passage(id).unwrap().unwrap().text)
        .collect()
}

/// A SQLite library in `dir` and a PostgreSQL one on `server`, each
/// holding the topics' bodies and `extra`, as /notes/N.txt.
fn both_holding(
    server: &pg_server::Postgres,
    dir: &std::path::Path,
    extra: &Body,
) -> (Store, PgStore) {
    let mut lite = Store::open(&dir.join("library.sqlite3")).unwrap();
    let pg = PgStore::open(&server.url, "ana").unwrap();
    let (fp, v) = (fingerprints(), Validators::default());
    let bodies: Vec<Body> = (0..TOPICS.len()).map(body).collect();
    for (i, b) in bodies.iter().chain([extra]).enumerate() {
        let source = format!("/notes/{i}.txt");
        let doc = document(&source, &b.card.title, &v);
        lite.write_document(&doc, holding(b), &fp).unwrap();
        pg.write_document(&doc, holding(b), &fp).unwrap();
    }
    (lite, pg)
}

/// The keyword side ranks as FTS5's `bm25()` does, whose length of a
/// passage is its tokens, stop words and repeats counted, against the
/// library's average: a passage saying "glacier" among many repeated words
/// is longer than one saying it among a few distinct words, though it
/// holds fewer distinct stems (a `tsvector`'s own length). Every write and
/// removal keeps the totals that average is read from.
#[test]
fn the_keyword_side_ranks_passages_as_fts5_does() {
    let glaciers = [
        format!("The glacier{}.", " and the ice".repeat(12)),
        "Glacier calving near a fjord moraine.".to_string(),
        "A glacier, then a second glacier: snow packs into firn, firn into ice, \
         over centuries of winters without a thaw, until the valley fills."
            .to_string(),
    ];
    let pg_server = pg_server::start_postgres();
    let dir = tempfile::tempdir().unwrap();
    let glacier = body_of(50, "Ice", "Glaciers", &glaciers);
    let (lite, pg) = both_holding(&pg_server, dir.path(), &glacier);
    let lite_order: Vec<String> = lite
        .keyword_chunks("glacier", 5)
        .unwrap()
        .into_iter()
        .map(|id| lite.chunk_text(id).unwrap().unwrap().1)
        .collect();
    let pg_order = keyword_texts(&pg, "glacier");
    assert_eq!(lite_order.len(), 3, "{lite_order:?}");
    assert_eq!(
        lite_order[0], glaciers[1],
        "FTS5 puts the short passage first"
    );
    assert_eq!(pg_order, lite_order);
    assert_eq!(health(&pg).1, 0, "the totals count every passage");

    // A library of schema 1 (no tokens, no totals, its generation a
    // sequence) is counted when this build opens it, and ranks as one made
    // new; its generation never goes back.
    let generation = pg.data_version().unwrap();
    drop(pg);
    let mut db = postgres::Client::connect(&pg_server.url, postgres::NoTls).unwrap();
    db.batch_execute(&format!(
        "DROP TRIGGER chunks_added ON chunks; DROP TRIGGER chunks_removed ON chunks;
         DROP FUNCTION carrel_count_chunks(); DROP TABLE chunk_totals;
         ALTER TABLE chunks DROP COLUMN tokens;
         DROP TABLE carrel_changes; CREATE SEQUENCE carrel_generation START {generation};
         SELECT nextval('carrel_generation');
         CREATE OR REPLACE FUNCTION carrel_bump() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN PERFORM nextval('carrel_generation'); RETURN NULL; END $$;
         UPDATE carrel_meta SET value = '1' WHERE key = 'schema_version';
         {UNDO_SCHEMA_5}"
    ))
    .unwrap();
    let pg = PgStore::open(&pg_server.url, "ana").unwrap();
    assert_eq!(health(&pg).1, 0, "the migration counts every passage");
    assert_eq!(
        pg.data_version().unwrap(),
        generation + 1,
        "carried over, then moved once as schema 4 makes the words again"
    );
    let again = keyword_texts(&pg, "glacier");
    assert_eq!(again, lite_order);

    // A body taken out leaves the totals exact.
    let reason = carrel::extract::BrokenReason::Vanished;
    let last = format!("/notes/{}.txt", TOPICS.len());
    let v = Validators::default();
    pg.write_document(
        &document(&last, "Ice", &v),
        Holding::Broken(&reason),
        &fingerprints(),
    )
    .unwrap();
    assert_eq!(health(&pg).1, 0, "the totals lose what was removed");
    assert!(pg.keyword_chunks("glacier", 5).unwrap().is_empty());
}

/// The keyword side reads the words FTS5 reads (PostgreSQL schema 4):
/// Porter's stems, not Snowball's ("skies" and "skiing" are one word to
/// FTS5 and two to PostgreSQL's English configuration, "news" is "new"),
/// every token of a passage counted, a phrase looked for in a passage's
/// text and not across its heading. A library of schema 3, whose words
/// were the English configuration's, reads them so once this build opens
/// it, its totals made again.
#[test]
fn the_keyword_side_reads_the_words_fts5_reads() {
    let mountain = [
        "Clear skies over the ridge all week.",
        "Skiing the north face at dawn, before the lifts open.",
        "The news from the pass: fresh snow on the ridge.",
        "A new lift opens on the south face.",
        "Avalanche forecasts, then more forecasts, for the ridge and the pass.",
    ]
    .map(String::from);
    let pg_server = pg_server::start_postgres();
    let dir = tempfile::tempdir().unwrap();
    let weather = body_of(60, "Mountain", "Weather", &mountain);
    let (lite, pg) = both_holding(&pg_server, dir.path(), &weather);
    let text = |id| lite.chunk_text(id).unwrap().unwrap().1;
    let questions = [
        "skiing",
        "the news",
        "new ski lifts",
        "ridge forecasts",
        "skies",
    ];
    let lite_orders: Vec<Vec<String>> = questions
        .iter()
        .map(|q| {
            lite.keyword_chunks(q, 5)
                .unwrap()
                .into_iter()
                .map(text)
                .collect()
        })
        .collect();
    assert_eq!(
        lite_orders[0].len(),
        2,
        "FTS5 reads skies as skiing: {lite_orders:?}"
    );
    let line = "the ridge";
    let mut lite_phrase: Vec<String> = lite
        .phrase_chunks(line, 5)
        .unwrap()
        .into_iter()
        .map(text)
        .collect();
    lite_phrase.sort();
    assert_eq!(lite_phrase.len(), 3, "{lite_phrase:?}");
    assert!(
        lite.phrase_chunks("Mountain Weather", 5)
            .unwrap()
            .is_empty()
    );
    let asked = "skier skis glaciology";
    let lite_unused = lite.vocabulary(asked).unwrap().unused;
    let reads_as_sqlite = |pg: &PgStore| {
        for (q, order) in questions.iter().zip(&lite_orders) {
            assert_eq!(&keyword_texts(pg, q), order, "{q}");
        }
        let texts = |ids: Vec<i64>| -> Vec<String> {
            let mut texts: Vec<String> = ids
                .into_iter()
                .map(|id| pg.passage(id).unwrap().unwrap().text)
                .collect();
            texts.sort();
            texts
        };
        assert_eq!(texts(pg.phrase_chunks(line, 5).unwrap()), lite_phrase);
        assert!(pg.phrase_chunks("Mountain Weather", 5).unwrap().is_empty());
        assert_eq!(pg.vocabulary(asked).unwrap().unused, lite_unused);
        assert_eq!(health(pg).1, 0, "the totals count every passage");
    };
    reads_as_sqlite(&pg);

    // Once analysed, the planner's statistics know some of the asked words
    // and not others, and each is looked up its own way: the same answers.
    let mut db = postgres::Client::connect(&pg_server.url, postgres::NoTls).unwrap();
    db.batch_execute("ANALYZE chunks").unwrap();
    let known: Vec<String> = db
        .query(
            "SELECT unnest(most_common_elems::text::text[]) FROM pg_stats
             WHERE tablename = 'chunks' AND attname = 'words'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(known.iter().any(|w| w == "ski"), "{known:?}");
    assert!(!known.iter().any(|w| w.starts_with("glaciolog")));
    reads_as_sqlite(&pg);

    // The library as schema 3 made it: its words and lengths PostgreSQL's.
    drop(pg);
    db.batch_execute(
        "ALTER TABLE chunks DROP COLUMN words;
         ALTER TABLE chunks ADD COLUMN words tsvector
            GENERATED ALWAYS AS (to_tsvector('english', heading_path || ' ' || text)) STORED;
         CREATE INDEX chunks_words ON chunks USING gin (words);
         ALTER TABLE chunks DROP COLUMN tokens;
         ALTER TABLE chunks ADD COLUMN tokens integer
            GENERATED ALWAYS AS (regexp_count(heading_path || ' ' || text, '[[:alnum:]]+')) STORED;
         UPDATE carrel_meta SET value = '3' WHERE key = 'schema_version';",
    )
    .unwrap();
    db.batch_execute(UNDO_SCHEMA_5).unwrap();
    let holding_ski = |db: &mut postgres::Client| -> i64 {
        db.query_one(
            "SELECT count(*) FROM chunks WHERE words @@ 'ski'::tsquery",
            &[],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(holding_ski(&mut db), 1, "Snowball reads skies as sky");
    let pg = PgStore::open(&pg_server.url, "ana").unwrap();
    assert_eq!(holding_ski(&mut db), 2);
    reads_as_sqlite(&pg);
}

/// Two writers store one body at once, under two sources and under one:
/// the body is stored once, every document points at it, the writer that
/// lost the race for a source gets "unchanged", and no row is orphaned.
#[test]
fn many_writers_store_one_body_once() {
    let pg_server = pg_server::start_postgres();
    drop(PgStore::open(&pg_server.url, "setup").unwrap());
    let fp = fingerprints();
    let rounds = 8;
    let written: Vec<Vec<Written>> = std::thread::scope(|s| {
        let writers: Vec<_> = ["ana", "ben"]
            .into_iter()
            .map(|who| {
                let (url, fp) = (&pg_server.url, &fp);
                s.spawn(move || {
                    let pg = PgStore::open(url, who).unwrap();
                    let v = Validators::default();
                    let mut out = Vec::new();
                    for round in 0..rounds {
                        let b = body(round % TOPICS.len());
                        let own = format!("/{who}/{round}.txt");
                        let shared = format!("/shared/{round}.txt");
                        for source in [&own, &shared] {
                            let doc = document(source, TOPICS[0].0, &v);
                            out.push(pg.write_document(&doc, holding(&b), fp).unwrap());
                        }
                    }
                    out
                })
            })
            .collect();
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let pg = PgStore::open(&pg_server.url, "reader").unwrap();
    let ([documents, contents, chunks, cards], orphans) = health(&pg);
    assert_eq!(
        documents,
        3 * rounds as i64,
        "each writer's own and one shared per round"
    );
    assert_eq!(contents, TOPICS.len() as i64, "each body once");
    assert_eq!((chunks, cards, orphans), (2 * contents, contents, 0));
    // Each shared source: exactly one of the two writers wrote it first.
    for round in 0..rounds {
        let unchanged = written
            .iter()
            .filter(|w| w[round * 2 + 1].unchanged)
            .count();
        assert_eq!(
            unchanged, 1,
            "round {round}: one writer first, the other unchanged"
        );
    }
    let mut db = postgres::Client::connect(&pg_server.url, postgres::NoTls).unwrap();
    let writers = writers_of(&mut db);
    assert_eq!(writers, vec!["ana", "ben"], "every row says who wrote it");
}

/// A document moved to another body leaves its old body collected with its
/// chunks and card; a broken one holds none.
#[test]
fn a_body_no_document_holds_is_collected() {
    let pg_server = pg_server::start_postgres();
    let pg = PgStore::open(&pg_server.url, "ana").unwrap();
    let other = PgStore::open(&pg_server.url, "ben").unwrap();
    let fp = fingerprints();
    let v = Validators::default();
    let before = pg.data_version().unwrap();
    let doc = document("/notes/a.txt", "A", &v);
    pg.write_document(&doc, holding(&body(0)), &fp).unwrap();
    other.write_document(&doc, holding(&body(1)), &fp).unwrap();
    assert_eq!(health(&pg), ([1, 1, 2, 1], 0));
    assert_ne!(
        pg.data_version().unwrap(),
        before,
        "another writer's change is seen"
    );
    let reason = carrel::extract::BrokenReason::Vanished;
    let w = pg
        .write_document(&doc, Holding::Broken(&reason), &fp)
        .unwrap();
    assert!(!w.unchanged);
    assert_eq!(health(&pg), ([1, 0, 0, 0], 0));
}

/// A reader's generation moves when another writer's change is committed,
/// never before: a reader that cached what it read under a generation
/// whose rows it could not see yet would keep that stale read.
#[test]
fn a_generation_moves_with_the_commit_a_reader_can_see() {
    let pg_server = pg_server::start_postgres();
    let pg = PgStore::open(&pg_server.url, "ana").unwrap();
    let before = pg.data_version().unwrap();
    let mut db = postgres::Client::connect(&pg_server.url, postgres::NoTls).unwrap();
    let mut tx = db.transaction().unwrap();
    tx.execute("UPDATE documents SET title = title WHERE false", &[])
        .unwrap();
    assert_eq!(
        pg.data_version().unwrap(),
        before,
        "a change not yet committed is not a new generation"
    );
    tx.commit().unwrap();
    let after = pg.data_version().unwrap();
    assert!(after > before, "{after} after {before}");
    // Folded when many, the generation still only grows.
    for _ in 0..100 {
        db.execute("UPDATE cards SET text = text WHERE false", &[])
            .unwrap();
    }
    let folded: i64 = db
        .query_one("SELECT count(*) FROM carrel_changes", &[])
        .unwrap()
        .get(0);
    assert!(folded <= 65, "{folded} rows");
    assert_eq!(pg.data_version().unwrap(), after + 100);
}

/// A team library named by its server alone (`carrel --database-url`): no
/// folder to make, no name on the shelf. The password in the URL opens it
/// and is written nowhere; without one, the server's refusal is said with
/// the server's name.
#[test]
fn a_team_library_named_by_its_url_is_added_to_and_read() {
    let server = pg_server::start_postgres();
    server.require_password("ana", "s3cret-pw");
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    for f in labelled_files().iter().take(3) {
        std::fs::copy(f, folder.path().join(f.file_name().unwrap())).unwrap();
    }
    let url = server.url.replacen("postgres@", "ana:s3cret-pw@", 1);
    let home = || {
        let mut c = carrel_home(data.path());
        c.env_remove("PGPASSWORD")
            .env("PGPASSFILE", "/nonexistent")
            .env("CARREL_WRITER", "ana");
        c
    };
    run_ok(
        home()
            .args(["--database-url", &url, "add"])
            .arg(folder.path()),
    );
    let json = run_ok(home().args(["--database-url", &url, "list", "--json"]));
    let docs: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(docs.as_array().unwrap().len(), 3, "{json}");
    let mut db = postgres::Client::connect(&server.url, postgres::NoTls).unwrap();
    assert_eq!(writers_of(&mut db), ["ana"]);
    for entry in walk(data.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("s3cret-pw"), "{}", entry.display());
    }

    // Without the password, or with a wrong one, the command says so and
    // where a password goes.
    for (who, said_then) in [
        ("ana@", "the server asks for a password"),
        (
            "ana:wrong-pw@",
            "password authentication failed for user \"ana\"",
        ),
    ] {
        let url = server.url.replacen("postgres@", who, 1);
        let out = home()
            .args(["--database-url", &url, "list"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(
            said.contains("127.0.0.1") && said.contains(said_then),
            "{said}"
        );
        assert!(said.contains("PGPASSWORD"), "{said}");
        assert!(!said.contains("wrong-pw"), "{said}");
    }
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => files.extend(walk(&path)),
            false => files.push(path),
        }
    }
    files
}

/// A library written by a newer Carrel is refused with a sentence that
/// names the server and what to do, and its rows are left as they are.
#[test]
fn a_database_newer_than_this_build_is_refused() {
    let pg_server = pg_server::start_postgres();
    let pg = PgStore::open(&pg_server.url, "ana").unwrap();
    assert_eq!(
        pg.schema_version().unwrap(),
        carrel::store::pg::PG_SCHEMA_VERSION
    );
    drop(pg);
    let mut db = postgres::Client::connect(&pg_server.url, postgres::NoTls).unwrap();
    db.execute(
        "UPDATE carrel_meta SET value = '99' WHERE key = 'schema_version'",
        &[],
    )
    .unwrap();
    let err = PgStore::open(&pg_server.url, "ana").err().expect("refused");
    let sentence = err.to_string();
    assert!(sentence.contains("schema version 99"), "{sentence}");
    assert!(sentence.contains("upgrade Carrel"), "{sentence}");
    assert!(sentence.contains("127.0.0.1"), "{sentence}");
    let version: String = db
        .query_one(
            "SELECT value FROM carrel_meta WHERE key = 'schema_version'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(version, "99", "nothing rewritten");
}

/// A server that is not there is an error naming it, never an empty
/// library; the password in the URL is never repeated.
#[test]
fn an_unreachable_server_is_named_without_its_password() {
    let port = common::free_port();
    let url = format!("postgresql://carrel:s3cret@127.0.0.1:{port}/team");
    let err = PgStore::open(&url, "ana").err().expect("no server there");
    let sentence = err.to_string();
    assert!(
        sentence.contains(&format!("127.0.0.1:{port}/team")),
        "{sentence}"
    );
    assert!(!sentence.contains("s3cret"), "{sentence}");
}

/// Every other read and write through the seam (`store::Store`), on both
/// stores: the listing and each document, bodies, passages and cards,
/// coverage and re-embedding under another model, identity and tokens,
/// watches and what they own, the log, the chat, foreign sources, the
/// vocabulary and phrase search, and the version readers' caches watch.
#[test]
fn every_read_and_write_agrees_on_both_stores() {
    let pg_server = pg_server::start_postgres();
    let dir = tempfile::tempdir().unwrap();
    let stores = [
        Store::open(&dir.path().join("library.sqlite3")).unwrap(),
        Store::open_postgres(&pg_server.url, "ana").unwrap(),
    ];
    let seen: Vec<String> = stores.into_iter().map(exercise).collect();
    assert_eq!(seen[0], seen[1], "SQLite, then PostgreSQL");
    assert!(seen[0].contains("log by age 2 [30]\n"), "{}", seen[0]);
}

/// Runs every call on `store` and returns what it saw, with ids and times
/// left out (each store numbers and stamps its own rows).
fn exercise(mut store: Store) -> String {
    use carrel::kb::{Identity, Kb, ReadToken};
    use carrel::store::{LogEntry, NewWatch, Reembedded, Retention, WatchKind};
    use std::fmt::Write;
    let mut seen = String::new();
    let fp = fingerprints();
    let v = Validators::default();
    let notes = NewWatch {
        target: "/notes".into(),
        kind: WatchKind::Folder,
        interval_s: 60,
        include: vec!["*.txt".into()],
        exclude: vec![],
        allow_private: false,
    };
    let (watch, added) = store.add_watch(&notes).unwrap();
    assert!(added);
    assert_eq!(store.add_watch(&notes).unwrap(), (watch, false));
    let mut ids = Vec::new();
    for i in 0..3 {
        let source = format!("/notes/{i}.txt");
        let mut doc = document(&source, TOPICS[i].0, &v);
        doc.watch = (i < 2).then_some(watch);
        ids.push(
            store
                .write_document(&doc, holding(&body(i)), &fp)
                .unwrap()
                .id,
        );
    }
    let reason = carrel::extract::BrokenReason::Vanished;
    let broken = document("/notes/gone.pdf", "gone", &v);
    ids.push(
        store
            .write_document(&broken, Holding::Broken(&reason), &fp)
            .unwrap()
            .id,
    );
    let rows = store.list(Some(FP), Some("fp-cards")).unwrap();
    for r in &rows {
        writeln!(
            seen,
            "row {} {:?} {} {} {} {:?} {} {:?} {:?}",
            r.title,
            r.kind,
            r.state,
            r.chunks,
            r.card_state,
            r.language,
            r.bytes,
            r.broken_code,
            r.content_hash
        )
        .unwrap();
    }
    let one = store.document(ids[1], Some(FP), Some("fp-cards")).unwrap();
    writeln!(seen, "document {} {}", one.title, one.state).unwrap();
    assert!(matches!(
        store.document(9999, None, None),
        Err(carrel::Error::UnknownDocument(9999))
    ));
    writeln!(seen, "count {}", store.document_count().unwrap()).unwrap();
    let content = store.document_content(ids[0]).unwrap().unwrap();
    writeln!(seen, "hash {}", store.content_hash(content).unwrap()).unwrap();
    writeln!(
        seen,
        "by hash {}",
        store.content_by_hash("hash-0").unwrap() == Some(content)
    )
    .unwrap();
    writeln!(
        seen,
        "extracted {}",
        store.extracted(content).unwrap().title
    )
    .unwrap();
    writeln!(seen, "chunks {}", store.chunk_count(content).unwrap()).unwrap();
    for c in store.chunks(content).unwrap() {
        writeln!(
            seen,
            "chunk {} {:?} {:?} {}",
            c.seq, c.heading_path, c.page, c.text
        )
        .unwrap();
        let (owner, text) = store.chunk_text(c.id).unwrap().unwrap();
        assert_eq!((owner, text), (content, c.text.clone()));
    }
    let query = body(0).vectors[1].clone();
    for (c, cosine) in store.chunks_with_cosines(content, &query, FP).unwrap() {
        writeln!(seen, "cosine {} {:.4}", c.seq, cosine.unwrap().get()).unwrap();
    }
    assert!(
        store
            .chunks_with_cosines(content, &query, "other")
            .unwrap()
            .iter()
            .all(|(_, c)| c.is_none())
    );
    writeln!(seen, "card {:?}", store.card(content).unwrap()).unwrap();
    for d in store.density().unwrap() {
        writeln!(seen, "density {} {} {}", d.title, d.chunks, d.chars).unwrap();
    }
    let stamp = store.stamp("/notes/1.txt").unwrap().unwrap();
    writeln!(
        seen,
        "stamp {} {:?}",
        stamp.bytes,
        stamp.content_id.is_some()
    )
    .unwrap();
    store.touch(stamp.id).unwrap();
    writeln!(seen, "languages {:?}", store.languages().unwrap()).unwrap();
    let words = store.vocabulary("sourdough zebra bees before").unwrap();
    writeln!(seen, "vocabulary {} {:?}", words.words, words.unused).unwrap();
    let phrase = store.phrase_chunks("safety valve opens", 5).unwrap();
    writeln!(seen, "phrase {}", phrase.len()).unwrap();
    assert!(store.phrase_chunks("-- !!", 5).unwrap().is_empty());

    // Watches own what they added, and let it go when removed.
    writeln!(
        seen,
        "of watch {}",
        store.documents_of_watch(watch).unwrap().len()
    )
    .unwrap();
    writeln!(
        seen,
        "watch of {:?}",
        store.document_watch(ids[0]).unwrap() == Some(watch)
    )
    .unwrap();
    store.record_sync(watch, Some("the disk was full")).unwrap();
    let w = &store.watches().unwrap()[0];
    writeln!(
        seen,
        "watch {} {:?} {:?} {:?}",
        w.target, w.kind, w.include, w.last_error
    )
    .unwrap();
    // A file renamed: its new path was indexed as a fresh row of the same
    // body, which the old row takes over.
    let renamed = document("/notes/renamed.txt", TOPICS[0].0, &v);
    let fresh = store
        .write_document(&renamed, holding(&body(0)), &fp)
        .unwrap();
    assert!(!fresh.unchanged);
    store.move_document(ids[0], fresh.id).unwrap();
    let moved = store.stamp("/notes/renamed.txt").unwrap().unwrap();
    writeln!(
        seen,
        "moved {} {:?}",
        moved.id == ids[0],
        store.stamp("/notes/0.txt").unwrap().map(|s| s.id)
    )
    .unwrap();
    store.remove_watch(watch).unwrap();
    assert!(matches!(
        store.remove_watch(watch),
        Err(carrel::Error::UnknownWatch(_))
    ));
    writeln!(
        seen,
        "owned after {:?}",
        store.document_watch(ids[1]).unwrap()
    )
    .unwrap();

    // Another model: every content is stale until re-embedded.
    let other = Fingerprints {
        model: "other".into(),
        chunk: "other-chunks".into(),
        card: "other-cards".into(),
    };
    let (cards, chunks) = store.coverage(&other.chunk, &other.card).unwrap();
    writeln!(
        seen,
        "coverage {} {} {} {}",
        cards.indexed, cards.stale, chunks.indexed, chunks.stale
    )
    .unwrap();
    let stale = store.stale_contents(&other.chunk, &other.card).unwrap();
    writeln!(seen, "stale {}", stale.len()).unwrap();
    for s in &stale {
        let b = body(
            TOPICS
                .iter()
                .position(|t| t.0 == s.extracted.title)
                .unwrap(),
        );
        store
            .write_reembedded(
                Reembedded {
                    content_id: s.id,
                    chunks: Some((&b.chunks, &b.vectors, None)),
                    card: Some((&b.card, &b.card_vector)),
                },
                &other,
            )
            .unwrap();
    }
    let (cards, chunks) = store.coverage(&other.chunk, &other.card).unwrap();
    writeln!(seen, "coverage after {} {}", cards.stale, chunks.stale).unwrap();
    store.remove_document(ids[1]).unwrap();
    writeln!(seen, "counts {:?}", store.counts().unwrap()).unwrap();
    let orphans: Vec<_> = store
        .orphans()
        .unwrap()
        .into_iter()
        .filter(|o| o.1 > 0)
        .collect();
    assert!(orphans.is_empty(), "{orphans:?}");

    // Identity, tokens, embedder.
    let mut me = store.identity().unwrap();
    writeln!(seen, "identity {} {}", me.kb.as_str(), me.title).unwrap();
    me = Identity {
        kb: Kb::parse("team").unwrap(),
        owner: Some("ana".into()),
        ..me
    };
    store.set_identity(&me).unwrap();
    writeln!(
        seen,
        "identity {} {:?}",
        store.identity().unwrap().kb.as_str(),
        store.identity().unwrap().owner
    )
    .unwrap();
    let token = ReadToken::generate().unwrap();
    let info = store.add_read_token(&token, "ben").unwrap();
    writeln!(seen, "grants {}", store.grants(&token.digest()).unwrap()).unwrap();
    writeln!(
        seen,
        "tokens {:?}",
        store
            .read_tokens()
            .unwrap()
            .iter()
            .map(|t| &t.label)
            .collect::<Vec<_>>()
    )
    .unwrap();
    writeln!(
        seen,
        "revoked {} {}",
        store.revoke_read_token(info.id).unwrap(),
        store.grants(&token.digest()).unwrap()
    )
    .unwrap();
    writeln!(seen, "embedder {}", store.embedder().unwrap().name()).unwrap();
    store
        .set_embedder(carrel::models::EmbedderKind::ALL[1])
        .unwrap();
    writeln!(seen, "embedder {}", store.embedder().unwrap().name()).unwrap();

    // The log, the chat, foreign sources.
    let entry = LogEntry {
        at: 5,
        query: "bees".into(),
        lane: "topic".into(),
        doc: ids[0],
        score: carrel::score::Scored::Cosine(carrel::score::Cosine::new(0.75)),
        scorer: "s".into(),
        calibrated: false,
        admitted: true,
        decision: "admitted".into(),
        unjudged: Some("cross-lingual, en → ru".into()),
    };
    store
        .append_log(&[
            entry.clone(),
            LogEntry {
                at: 6,
                ..entry.clone()
            },
        ])
        .unwrap();
    let pruned = store
        .prune_log(
            Retention {
                max_rows: 1,
                max_age_s: 1_000_000,
            },
            10,
        )
        .unwrap();
    let log = store.read_log(10).unwrap();
    writeln!(
        seen,
        "log {pruned} {} {} {:?} {:?}",
        log.len(),
        log[0].at,
        log[0].score,
        log[0].unjudged
    )
    .unwrap();
    store
        .append_log(&[20, 30].map(|at| LogEntry {
            at,
            ..entry.clone()
        }))
        .unwrap();
    let by_age = store
        .prune_log(
            Retention {
                max_rows: 100,
                max_age_s: 15,
            },
            40,
        )
        .unwrap();
    let ats: Vec<i64> = store.read_log(10).unwrap().iter().map(|e| e.at).collect();
    writeln!(seen, "log by age {by_age} {ats:?}").unwrap();
    store.add_turn("what?", Some("{}"), None).unwrap();
    store.add_turn("why?", None, Some("no model")).unwrap();
    let turns = store.turns(5).unwrap();
    writeln!(
        seen,
        "turns {:?}",
        turns
            .iter()
            .map(|t| (&t.message, &t.error))
            .collect::<Vec<_>>()
    )
    .unwrap();
    writeln!(seen, "cleared {}", store.clear_turns().unwrap()).unwrap();
    store.put_foreign_source_record("crm", "{\"a\":1}").unwrap();
    store.put_foreign_source_record("crm", "{\"a\":2}").unwrap();
    writeln!(
        seen,
        "foreign {:?} {:?}",
        store.foreign_source_records().unwrap(),
        store.foreign_source_record("nope").unwrap()
    )
    .unwrap();
    writeln!(
        seen,
        "forgot {} {}",
        store.remove_foreign_source_record("crm").unwrap(),
        store.remove_foreign_source_record("crm").unwrap()
    )
    .unwrap();
    // A body in another language is counted while a document holds it.
    let ru = "Пчёлы зимуют в улье плотным клубом и греются, поедая мёд; \
              пасечник не открывает улей до весеннего облёта. ";
    let bees = body_of(77, "Пчёлы", "Зимовка", &[ru.repeat(4), ru.repeat(3)]);
    let doc = document("/notes/bees-ru.txt", "Пчёлы", &v);
    let id = store.write_document(&doc, holding(&bees), &fp).unwrap().id;
    let codes = |store: &Store| -> Vec<&'static str> {
        store
            .languages()
            .unwrap()
            .iter()
            .map(|l| l.code())
            .collect()
    };
    let with = codes(&store);
    store.remove_document(id).unwrap();
    let without = codes(&store);
    writeln!(seen, "languages {with:?} then {without:?}").unwrap();
    assert!(
        with.contains(&"ru") && !without.contains(&"ru"),
        "{with:?} {without:?}"
    );
    assert!(store.integrity_check().unwrap().starts_with("ok"));
    assert!(!store.vec_version().unwrap().is_empty());
    seen
}

/// Who wrote the library's documents, each name once.
fn writers_of(db: &mut postgres::Client) -> Vec<String> {
    db.query("SELECT DISTINCT written_by FROM documents ORDER BY 1", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// The labelled set's documents, in name order.
fn labelled_files() -> Vec<std::path::PathBuf> {
    let corpus = common::fixtures().join("labelled").join("corpus");
    let mut files: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    files
}

/// `carrel` as a person runs it, with its own data folder (the shelf).
fn carrel_home(data: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("carrel"));
    c.env("XDG_DATA_HOME", data)
        .env_remove("CARREL_LIBRARY")
        .env("CARREL_MODELS", common::models_dir())
        .env_remove("CARREL_LOG");
    c
}

fn run_ok(c: &mut std::process::Command) -> String {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// What `carrel match --json` says, without what two libraries number or
/// time differently (document and passage ids, milliseconds), numbers to
/// 4 places.
fn comparable(json: &str) -> serde_json::Value {
    fn strip(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .filter(|(k, _)| {
                        !(k == "doc"
                            || k == "id"
                            || k == "chunk"
                            || k.ends_with("ms")
                            || k == "search")
                    })
                    .map(|(k, v)| {
                        let v = strip(v);
                        // Documents sharing a body are listed oldest first,
                        // and two writers at once number them in either order.
                        match (k.as_str(), v) {
                            ("locations", Value::Array(mut a)) => {
                                a.sort_by_key(|l| l.to_string());
                                (k, Value::Array(a))
                            }
                            (_, v) => (k, v),
                        }
                    })
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.into_iter().map(strip).collect()),
            Value::Number(n) if n.is_f64() => {
                serde_json::json!((n.as_f64().unwrap() * 1e4).round() / 1e4)
            }
            v => v,
        }
    }
    strip(serde_json::from_str(json).unwrap())
}

/// A team library made with `carrel kb create --postgres`, added to by two
/// `carrel add` processes at once over overlapping folders (the same file
/// in both; one body under two names), holds every document once, each
/// body once; and `carrel match --json` reads on it what it reads on a
/// SQLite library of the same documents, both lanes and every score.
#[test]
fn two_processes_add_to_a_team_library_and_it_answers_as_sqlite_does() {
    let server = pg_server::start_postgres();
    let data = tempfile::tempdir().unwrap();
    let files = labelled_files();
    let halves = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for (i, f) in files.iter().enumerate() {
        let name = f.file_name().unwrap();
        std::fs::copy(f, halves[i % 2].path().join(name)).unwrap();
    }
    // One body in both folders, under two names.
    std::fs::copy(&files[0], halves[1].path().join("copy-of-first.md")).unwrap();
    let url = format!("{}?application_name=carrel-test", server.url);
    let made = run_ok(carrel_home(data.path()).args(["kb", "create", "team", "--postgres", &url]));
    assert!(made.starts_with("created        team"), "{made}");
    run_ok(carrel_home(data.path()).args(["kb", "create", "solo"]));
    let adders: Vec<_> = halves
        .iter()
        .enumerate()
        .map(|(i, h)| {
            carrel_home(data.path())
                .env("CARREL_WRITER", format!("writer-{i}"))
                .args(["--kb", "team", "add", "--json"])
                .arg(h.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for a in adders {
        let out = a.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for h in &halves {
        run_ok(
            carrel_home(data.path())
                .args(["--kb", "solo", "add"])
                .arg(h.path()),
        );
    }
    let listed = |kb: &str| -> Vec<(String, String)> {
        let json = run_ok(carrel_home(data.path()).args(["--kb", kb, "list", "--json"]));
        let docs: serde_json::Value = serde_json::from_str(&json).unwrap();
        let mut rows: Vec<(String, String)> = docs
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let name = d["source"].as_str().unwrap().rsplit('/').next().unwrap();
                (
                    name.to_string(),
                    d["content_hash"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        rows.sort();
        rows
    };
    let team = listed("team");
    assert_eq!(team.len(), files.len() + 1);
    assert_eq!(team, listed("solo"), "the same documents and bodies");
    let mut db = postgres::Client::connect(&server.url, postgres::NoTls).unwrap();
    let bodies: i64 = db
        .query_one("SELECT count(*) FROM contents", &[])
        .unwrap()
        .get(0);
    assert_eq!(
        bodies as usize,
        files.len(),
        "the shared body is stored once"
    );
    let writers = writers_of(&mut db);
    assert_eq!(writers, ["writer-0", "writer-1"]);
    for q in [
        "how do bees survive the winter",
        "chain lubrication",
        "quantum chromodynamics",
        // "before" is a word PostgreSQL's English stemming drops.
        "how to taper before a marathon",
    ] {
        let on = |kb: &str| {
            comparable(&run_ok(
                carrel_home(data.path()).args(["--kb", kb, "match", "--json", q]),
            ))
        };
        assert_eq!(on("team"), on("solo"), "{q}");
    }
    // A second machine joins the same library by its URL; a database
    // holding it is never made again, and another name is refused.
    let other = tempfile::tempdir().unwrap();
    let joined =
        run_ok(carrel_home(other.path()).args(["kb", "create", "team", "--postgres", &server.url]));
    assert!(
        joined.starts_with(&format!("joined         team at 127.0.0.1:")),
        "{joined}"
    );
    assert!(
        joined.contains(&format!("{} documents", files.len() + 1)),
        "{joined}"
    );
    let out = carrel_home(other.path())
        .args(["kb", "create", "research", "--postgres", &server.url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("holds the library `team`, not `research`"),
        "{err}"
    );
}

/// A watch belongs to the machine that added it. Machine `b`'s watcher
/// syncs only its own watch: a file gone from machine `a`'s folder stays
/// listed, and `a`'s watch is not touched, until `a`'s watcher syncs it;
/// then only `a`'s document goes, never what `b` or a person added.
#[test]
fn each_machine_syncs_only_its_own_watches() {
    use std::io::{BufRead, BufReader};
    let server = pg_server::start_postgres();
    let data = tempfile::tempdir().unwrap();
    let on = |machine: &str| {
        let mut c = carrel_home(data.path());
        c.env("CARREL_MACHINE", machine).args(["--kb", "team"]);
        c
    };
    run_ok(carrel_home(data.path()).args(["kb", "create", "team", "--postgres", &server.url]));
    let files = labelled_files();
    let (a_dir, b_dir, by_hand) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    for (dir, f) in [
        (&a_dir, 0),
        (&a_dir, 1),
        (&b_dir, 2),
        (&b_dir, 4),
        (&by_hand, 3),
    ] {
        std::fs::copy(&files[f], dir.path().join(files[f].file_name().unwrap())).unwrap();
    }
    run_ok(on("a").args(["watch", "add"]).arg(a_dir.path()));
    run_ok(on("b").args(["watch", "add"]).arg(b_dir.path()));
    run_ok(on("b").arg("add").arg(by_hand.path()));
    let listed = run_ok(on("b").args(["watch", "list"]));
    assert!(listed.contains("(on a; its watcher syncs it)"), "{listed}");
    let count = || -> usize {
        let json = run_ok(on("b").args(["list", "--json"]));
        serde_json::from_str::<serde_json::Value>(&json)
            .unwrap()
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(count(), 5);
    // One of a's files goes, and one of b's; b's watcher runs until it has
    // synced its watch.
    std::fs::remove_file(a_dir.path().join(files[0].file_name().unwrap())).unwrap();
    std::fs::remove_file(b_dir.path().join(files[2].file_name().unwrap())).unwrap();
    let watched_by = |machine: &str, dir: &std::path::Path| {
        let mut child = on(machine)
            .args(["watch", "run"])
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let target = std::fs::canonicalize(dir).unwrap().display().to_string();
        let mut synced = Vec::new();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        for line in lines.by_ref() {
            let line = line.unwrap();
            if line.starts_with("synced ") {
                synced.push(line.clone());
                if line.starts_with(&format!("synced {target}:")) {
                    break;
                }
            }
        }
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let rest: Vec<String> = lines.map(Result::unwrap).collect();
        assert_eq!(rest.last().map(String::as_str), Some("stopped"), "{rest:?}");
        assert!(child.wait().unwrap().success());
        synced
    };
    let b_synced = watched_by("b", b_dir.path());
    assert_eq!(
        b_synced.len(),
        1,
        "b synced only its own watch: {b_synced:?}"
    );
    assert!(b_synced[0].contains("1 removed"), "{b_synced:?}");
    assert_eq!(
        count(),
        4,
        "a's file is still listed: a's watcher has not run"
    );
    let a_synced = watched_by("a", a_dir.path());
    assert_eq!(a_synced.len(), 1, "{a_synced:?}");
    assert!(a_synced[0].contains("1 removed"), "{a_synced:?}");
    assert_eq!(count(), 3, "what b's watch and a person added stays");
}

/// `carrel kb copy` moves a library from SQLite to PostgreSQL and back:
/// the same documents with the same bodies, states and times, the same
/// watches and tokens, and `carrel match --json` reads the same on all
/// three, both lanes and every score.
#[test]
fn a_library_moves_to_postgresql_and_back_losslessly() {
    let server = pg_server::start_postgres();
    let data = tempfile::tempdir().unwrap();
    let corpus = common::fixtures().join("labelled").join("corpus");
    let folder = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(&corpus).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, folder.path().join(p.file_name().unwrap())).unwrap();
    }
    let broken = folder.path().join("empty.md");
    std::fs::write(&broken, "").unwrap();
    run_ok(carrel_home(data.path()).args(["kb", "create", "solo", "--owner", "Ana"]));
    run_ok(
        carrel_home(data.path())
            .args(["--kb", "solo", "watch", "add"])
            .arg(folder.path()),
    );
    run_ok(carrel_home(data.path()).args(["kb", "token", "solo", "--label", "ben"]));
    run_ok(carrel_home(data.path()).args(["--kb", "solo", "match", "bees in winter"]));
    let there = run_ok(carrel_home(data.path()).args([
        "kb",
        "copy",
        "solo",
        "team",
        "--postgres",
        &server.url,
        "--json",
    ]));
    let copied: serde_json::Value = serde_json::from_str(&there).unwrap();
    assert_eq!(copied["documents"], 14, "{copied}");
    assert_eq!(
        (copied["watches"].as_i64(), copied["read_tokens"].as_i64()),
        (Some(1), Some(1))
    );
    assert!(copied["log_rows"].as_i64().unwrap() > 0, "{copied}");
    // The copy built the search indexes once at its end; one missing (a
    // copy killed while building) is made again by the next open.
    let mut db = postgres::Client::connect(&server.url, postgres::NoTls).unwrap();
    let mut indexes = || -> i64 {
        db.query_one(
            "SELECT count(*) FROM pg_indexes
             WHERE indexname IN ('chunks_embedding', 'chunks_words', 'cards_embedding')",
            &[],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(indexes(), 3);
    postgres::Client::connect(&server.url, postgres::NoTls)
        .unwrap()
        .batch_execute("DROP INDEX chunks_embedding")
        .unwrap();
    assert_eq!(indexes(), 2);
    run_ok(carrel_home(data.path()).args(["--kb", "team", "list"]));
    assert_eq!(indexes(), 3);
    run_ok(carrel_home(data.path()).args(["kb", "copy", "team", "back"]));
    let seen = |kb: &str| {
        let cmd = |args: &[&str]| run_ok(carrel_home(data.path()).args(["--kb", kb]).args(args));
        let mut documents = comparable(&cmd(&["list", "--json"]));
        for d in documents.as_array_mut().unwrap() {
            d.as_object_mut().unwrap().remove("synced_at");
        }
        // A watch of a library of one machine becomes this machine's on a
        // server many share; the rest of it is as it was.
        let mut watches = comparable(&cmd(&["watch", "list", "--json"]));
        for w in watches.as_array_mut().unwrap() {
            w.as_object_mut().unwrap().remove("machine");
        }
        let tokens = comparable(&run_ok(
            carrel_home(data.path()).args(["kb", "tokens", kb, "--json"]),
        ));
        let matches: Vec<_> = [
            "how do bees survive the winter",
            "chain lubrication",
            "empty",
        ]
        .iter()
        .map(|q| comparable(&cmd(&["match", "--json", q])))
        .collect();
        (documents, watches, tokens, matches)
    };
    let solo = seen("solo");
    assert_eq!(solo, seen("team"), "SQLite, then PostgreSQL");
    assert_eq!(solo, seen("back"), "and back to SQLite");
    let listed = run_ok(carrel_home(data.path()).args(["kb", "list"]));
    assert!(
        listed.contains("team") && listed.contains("Ana"),
        "{listed}"
    );
    // Into a database that holds a library already: refused, nothing left
    // behind to block a second try.
    let out = carrel_home(data.path())
        .args(["kb", "copy", "solo", "again", "--postgres", &server.url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only into an empty one"));
    assert!(!run_ok(carrel_home(data.path()).args(["kb", "list"])).contains("again"));
}

/// A reader's machine pointed at a streaming read replica (a hot standby
/// made by `pg_basebackup`) answers as the primary does, every lane and
/// score; a write there is refused with a sentence that names what to do,
/// and nothing is written on the replica to answer (its log is the
/// primary's).
#[test]
fn a_read_replica_answers_as_its_primary_and_refuses_writes() {
    let primary = pg_server::start_postgres();
    let (writer, reader) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let corpus = common::fixtures().join("labelled").join("corpus");
    run_ok(carrel_home(writer.path()).args(["kb", "create", "team", "--postgres", &primary.url]));
    run_ok(
        carrel_home(writer.path())
            .args(["--kb", "team", "add"])
            .arg(&corpus),
    );
    let replica = pg_server::start_replica(&primary);
    replica.wait_caught_up(&primary);
    let joined = run_ok(carrel_home(reader.path()).args([
        "kb",
        "create",
        "team",
        "--postgres",
        &replica.url,
    ]));
    assert!(joined.contains("joined"), "{joined}");
    for q in [
        "how do bees survive the winter",
        "chain lubrication",
        "sourdough starter",
    ] {
        let asked = |home: &std::path::Path| {
            comparable(&run_ok(
                carrel_home(home).args(["--kb", "team", "match", "--json", q]),
            ))
        };
        assert_eq!(asked(writer.path()), asked(reader.path()), "{q}");
    }
    // `doctor` names the server and pgvector, and finds both sound.
    let doctor = |home: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&run_ok(
            carrel_home(home).args(["--kb", "team", "doctor", "--json"]),
        ))
        .unwrap()
    };
    let (on_primary, on_replica) = (doctor(writer.path()), doctor(reader.path()));
    for d in [&on_primary, &on_replica] {
        assert_eq!(
            (d["integrity"].as_str(), d["pgvector"].as_str()),
            (Some("ok"), Some("0.6.2")),
            "{d}"
        );
        assert!(d["sqlite_vec"].is_null(), "{d}");
    }
    let server = |d: &serde_json::Value| d["server"].as_str().unwrap().to_string();
    assert!(
        server(&on_primary).starts_with("PostgreSQL 16."),
        "{on_primary}"
    );
    assert!(!server(&on_primary).contains("replica"), "{on_primary}");
    assert!(
        server(&on_replica).ends_with(", a read replica"),
        "{on_replica}"
    );
    let out = carrel_home(reader.path())
        .args(["--kb", "team", "add"])
        .arg(corpus.join("composting.md"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("is a read replica") && said.contains("its primary"),
        "{said}"
    );
}

/// The shelf names a team library's server; when the server stops
/// answering, the library is listed unreachable under the name it had,
/// with when it last answered, never as an empty library.
#[test]
fn a_team_library_whose_server_is_down_is_unreachable_on_the_shelf() {
    let server = pg_server::start_postgres();
    let data = tempfile::tempdir().unwrap();
    run_ok(carrel_home(data.path()).args(["kb", "create", "team", "--postgres", &server.url]));
    let listed = run_ok(carrel_home(data.path()).args(["kb", "list"]));
    let row = listed.lines().find(|l| l.starts_with("team ")).unwrap();
    assert!(row.contains("PostgreSQL 127.0.0.1:"), "{listed}");
    drop(server);
    let listed = run_ok(carrel_home(data.path()).args(["kb", "list"]));
    let row = listed.lines().find(|l| l.starts_with("team ")).unwrap();
    assert!(row.contains("UNREACHABLE (it last answered"), "{listed}");
    assert!(
        row.contains("the PostgreSQL library at 127.0.0.1:"),
        "{listed}"
    );
    let out = carrel_home(data.path())
        .args(["--kb", "team", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "an error, not an empty list");
    assert!(String::from_utf8_lossy(&out.stderr).contains("PostgreSQL library at 127.0.0.1:"));
}
