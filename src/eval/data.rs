//! The labelled set as read: a BEIR layout or a `corpus/` folder, its
//! queries and qrels, the library built from it, and the FTS5 BM25
//! baseline over the same documents.

use super::*;

#[derive(Deserialize)]
pub(super) struct CorpusLine {
    #[serde(rename = "_id")]
    pub(super) id: String,
    #[serde(default)]
    pub(super) title: String,
    pub(super) text: String,
}

#[derive(Deserialize)]
pub(super) struct QueryLine {
    #[serde(rename = "_id")]
    pub(super) id: String,
    pub(super) text: String,
    /// The query's kind, where the set names one (the calibration set's
    /// `index-term`, `title`, `noise`): the lanes are also scored per kind.
    #[serde(default)]
    pub(super) kind: Option<String>,
}

pub(super) fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>> {
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
pub(super) fn read_qrels(path: &Path) -> Result<HashMap<String, HashMap<String, f64>>> {
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

/// BM25 over the same documents, in an in-memory SQLite FTS5 table.
pub(super) struct Bm25 {
    pub(super) conn: rusqlite::Connection,
}

impl Bm25 {
    pub(super) fn new(docs: &[(String, String, String)]) -> Result<Bm25> {
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

    pub(super) fn search(&self, query: &str) -> Result<Vec<String>> {
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

/// The documents of a dataset, written out or found where the library can
/// ingest them.
pub(super) struct Corpus {
    /// Source path → corpus id.
    pub(super) ids: HashMap<String, String>,
    pub(super) sources: Vec<Source>,
    /// (id, title, body) for BM25.
    pub(super) bm25_docs: Vec<(String, String, String)>,
}

/// Loads DIR's documents: `corpus.jsonl` written out as Markdown files under
/// `work/corpus`, else the files of DIR's `corpus/` folder, extracted.
pub(super) fn load_corpus(dir: &Path, work: &Path) -> Result<Corpus> {
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
pub(super) fn index(
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
