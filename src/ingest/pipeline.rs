//! The pipeline itself: each source read, extracted, hashed and deduplicated,
//! chunked and carded, its texts embedded in cross-document batches, then
//! written in its own transaction as it settles, in order.

use super::*;

/// Texts handed to the embedder and not yet written, at most: the reader
/// runs this far ahead of the writer, then waits. Bounds memory, and what a
/// cancel throws away (about 1,000 forward passes is 30 s on one core).
pub(super) const IN_FLIGHT_TEXTS: usize = 1024;

/// A source's name (its file name, or a URL's last segment) and what is
/// known of it before it is read: its key, and the kind its extension says.
pub(super) fn first_meta(source: &Source, key: &str) -> (String, Meta) {
    let name = match source {
        Source::File(p) => p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| key.to_string()),
        Source::Url(u) => u
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(u)
            .to_string(),
    };
    let meta = Meta {
        source: key.to_string(),
        kind: match source {
            Source::File(p) => Kind::from_extension(p),
            Source::Url(_) => None,
        },
        title: name.clone(),
        bytes: 0,
        mtime_ns: None,
        validators: Validators::default(),
    };
    (name, meta)
}

/// A source settled as broken: what [`Pipeline::read`] returns for it.
pub(super) fn broken(
    meta: Meta,
    reason: BrokenReason,
) -> Result<std::result::Result<Raw, Prepared>> {
    Ok(Err(Prepared::Broken(meta, reason)))
}

/// What one file turned into before anything is written.
pub(super) enum Prepared {
    Unchanged { id: i64 },
    Broken(Meta, BrokenReason),
    Indexed(Meta, Body),
}

/// A source's bytes, read but not yet extracted.
pub(super) struct Raw {
    meta: Meta,
    name: String,
    data: Vec<u8>,
    /// The kind the source declared (a URL's Content-Type), if any.
    kind: Option<Kind>,
}

pub(super) struct Meta {
    source: String,
    kind: Option<Kind>,
    title: String,
    bytes: u64,
    mtime_ns: Option<i64>,
    validators: Validators,
}

pub(super) enum Body {
    /// The content is already stored (or is earlier in this batch).
    Known {
        hash: String,
        chunks: usize,
    },
    New(Box<NewContent>),
}

pub(super) struct NewContent {
    pub(super) hash: String,
    pub(super) extracted: Extracted,
    pub(super) chunks: Vec<NewChunk>,
    pub(super) truncated_at_chunk: Option<usize>,
    pub(super) card: Card,
}

impl NewContent {
    pub(super) fn build(hash: String, extracted: Extracted, limits: &Limits) -> NewContent {
        let (spans, truncated_at_chunk) = plan_capped(&extracted, Mode::Document, limits);
        let chunks = spans
            .iter()
            .map(|s| {
                let section = &extracted.sections[s.section];
                NewChunk {
                    heading_path: section.heading_path.clone(),
                    section: s.section,
                    start: s.start,
                    end: s.end,
                    page: section.page,
                    text: s.text(&extracted).to_string(),
                }
            })
            .collect();
        let card = card::build(&extracted);
        NewContent {
            hash,
            extracted,
            chunks,
            truncated_at_chunk,
            card,
        }
    }

    /// Chunk texts then the card text: what gets embedded.
    pub(super) fn texts(&self) -> Vec<String> {
        let mut t: Vec<String> = self
            .chunks
            .iter()
            .map(|c| chunk_embed_text(&c.heading_path, &c.text))
            .collect();
        t.push(self.card.text());
        t
    }
}

/// A source read and planned, waiting for its vectors to be written.
pub(super) struct InFlight {
    prepared: Prepared,
    ticket: Option<Ticket>,
    texts: usize,
}

impl InFlight {
    fn ready(&self) -> bool {
        self.ticket.as_ref().is_none_or(Ticket::is_ready)
    }
}

/// Runs the pipeline over files already expanded from the user's inputs.
///
/// One thread reads and extracts sources, in order, and hands each new
/// content's texts to the embedder, which works on them in the background
/// ([`crate::models::EmbedPool`]). Documents are written in source order,
/// each in its own transaction, by this one writer, as their vectors come
/// back; the reader runs at most [`IN_FLIGHT_TEXTS`] ahead.
pub struct Pipeline<'a> {
    pub store: &'a mut Store,
    pub embedder: &'a mut dyn Embedder,
    pub fingerprints: &'a Fingerprints,
    pub limits: Limits,
    /// The watch whose sync this is (`None`: added by hand); it owns the
    /// rows this run creates, and no row that was already there.
    pub watch: Option<i64>,
    /// Where URL hosts are looked up.
    pub resolver: Arc<dyn HostResolver>,
    /// Checked between sources.
    pub cancel: Cancel,
}

impl Pipeline<'_> {
    pub fn run(
        &mut self,
        sources: &[Source],
        report: &mut AddReport,
        progress: &mut dyn FnMut(&Progress),
    ) -> Result<()> {
        let mut meter = Meter::start(sources.len(), report.failed.len());
        let mut queue: VecDeque<InFlight> = VecDeque::new();
        let mut pending_hashes: HashMap<String, usize> = HashMap::new();
        let mut in_flight = 0;
        for source in sources {
            if self.cancel.is_cancelled() {
                break;
            }
            let key = source.key();
            meter.p.current = key.clone();
            progress(meter.now());
            let prepared = self.prepare(source, &mut pending_hashes, &mut |page, pages| {
                meter.p.current = format!("{key} (OCR, page {page} of {pages})");
                progress(meter.now());
            })?;
            let (ticket, texts) = match &prepared {
                Prepared::Indexed(_, Body::New(c)) => {
                    let texts = c.texts();
                    let n = texts.len();
                    (Some(self.embedder.submit(texts)), n)
                }
                _ => (None, 0),
            };
            in_flight += texts;
            queue.push_back(InFlight {
                prepared,
                ticket,
                texts,
            });
            // Write what is ready, in order; wait while too much is out.
            while let Some(next) = queue.pop_front() {
                if self.cancel.is_cancelled() || (in_flight <= IN_FLIGHT_TEXTS && !next.ready()) {
                    queue.push_front(next);
                    break;
                }
                in_flight -= next.texts;
                if !self.settle(next, report, &mut pending_hashes, &mut meter)? {
                    break;
                }
                progress(meter.now());
            }
        }
        // The rest, unless cancelled: then nothing more is written (a cancel
        // stops after the document being written), and the tickets dropped
        // here take their texts out of the workers' queue.
        while let Some(next) = queue.pop_front() {
            if self.cancel.is_cancelled()
                || !self.settle(next, report, &mut pending_hashes, &mut meter)?
            {
                break;
            }
            progress(meter.now());
        }
        if self.cancel.is_cancelled() {
            report.cancelled = Some(meter.p.total - meter.p.done);
        }
        meter.p.current.clear();
        progress(meter.now());
        Ok(())
    }

    /// Reads and plans one source; `on_ocr_page(n, of)` as a scanned PDF's
    /// pages are read by OCR.
    fn prepare(
        &self,
        source: &Source,
        pending: &mut HashMap<String, usize>,
        on_ocr_page: &mut dyn FnMut(usize, usize),
    ) -> Result<Prepared> {
        let raw = match self.read(source)? {
            Ok(raw) => raw,
            Err(done) => return Ok(done),
        };
        let kind = raw
            .kind
            .unwrap_or_else(|| Kind::detect(std::path::Path::new(&raw.name), &raw.data));
        let extracted = match extract::isolated(
            &raw.name,
            &raw.data,
            kind,
            &self.limits.isolation,
            on_ocr_page,
        )? {
            Ok(x) => x,
            Err(reason) => {
                let meta = Meta {
                    kind: Some(kind),
                    ..raw.meta
                };
                return Ok(Prepared::Broken(meta, reason));
            }
        };
        let hash = content_hash(&extracted);
        let meta = Meta {
            kind: Some(kind),
            title: extracted.title.clone(),
            ..raw.meta
        };
        if let Some(id) = self.store.content_by_hash(&hash)? {
            // Either another document has this body, or this file was touched
            // without changing: no work beyond pointing the row at it.
            let chunks = self.store.chunk_count(id)?;
            return Ok(Prepared::Indexed(meta, Body::Known { hash, chunks }));
        }
        if let Some(&chunks) = pending.get(&hash) {
            return Ok(Prepared::Indexed(meta, Body::Known { hash, chunks }));
        }
        let content = NewContent::build(hash.clone(), extracted, &self.limits);
        pending.insert(hash, content.chunks.len());
        Ok(Prepared::Indexed(meta, Body::New(Box::new(content))))
    }

    /// Reads a source's bytes, or settles it without reading (unchanged by
    /// size and mtime) or as broken (too large, vanished, unreachable).
    fn read(&self, source: &Source) -> Result<std::result::Result<Raw, Prepared>> {
        let key = source.key();
        let (name, meta) = first_meta(source, &key);
        match source {
            Source::Url(url) => self.read_url(url, key, name, meta),
            Source::File(path) => self.read_file(path, key, name, meta),
        }
    }

    /// Fetches a URL (conditionally, when what is stored for it is indexed),
    /// or settles it as unchanged or broken.
    fn read_url(
        &self,
        url: &str,
        key: String,
        name: String,
        mut meta: Meta,
    ) -> Result<std::result::Result<Raw, Prepared>> {
        let policy = FetchPolicy {
            allow_private: self.limits.allow_private_urls,
            max_bytes: self.limits.max_file_bytes,
            timeout: FETCH_TIMEOUT,
            resolver: self.resolver.clone(),
        };
        // Ask "changed since?" only when what we hold is indexed.
        let stamp = self.store.stamp(&key)?.filter(|s| s.content_id.is_some());
        let known = stamp
            .as_ref()
            .map(|s| s.validators.clone())
            .unwrap_or_default();
        match fetch::fetch(url, &policy, &known) {
            Ok(fetch::Fetch::NotModified) => match stamp {
                Some(s) => Ok(Err(Prepared::Unchanged { id: s.id })),
                None => broken(
                    meta,
                    BrokenReason::Unreachable(
                        "the server answered 304 Not Modified to an unconditional request".into(),
                    ),
                ),
            },
            Ok(fetch::Fetch::Fetched(f)) => {
                meta.bytes = f.bytes.len() as u64;
                meta.validators = f.validators;
                Ok(Ok(Raw {
                    meta,
                    name,
                    data: f.bytes,
                    kind: f.kind,
                }))
            }
            Err(reason) => broken(meta, reason),
        }
    }

    /// Reads a file, or settles it as unchanged (by size and mtime) or
    /// broken (vanished, not a file, too large, unreadable).
    fn read_file(
        &self,
        path: &std::path::Path,
        key: String,
        name: String,
        mut meta: Meta,
    ) -> Result<std::result::Result<Raw, Prepared>> {
        let fs_meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => return broken(meta, read_failure(e)),
        };
        if let Some(what) = not_a_file(&fs_meta) {
            return broken(meta, BrokenReason::NotAFile(what.into()));
        }
        meta.bytes = fs_meta.len();
        meta.mtime_ns = fs_meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64);
        if let Some(s) = self.store.stamp(&key)?
            && s.content_id.is_some()
            && s.bytes == meta.bytes
            && s.mtime_ns == meta.mtime_ns
        {
            return Ok(Err(Prepared::Unchanged { id: s.id }));
        }
        if meta.bytes > self.limits.max_file_bytes {
            let reason = BrokenReason::TooLarge {
                bytes: meta.bytes,
                cap: self.limits.max_file_bytes,
            };
            return broken(meta, reason);
        }
        fail::fail_point!("ingest::before_read");
        match std::fs::read(path) {
            Ok(data) => Ok(Ok(Raw {
                meta,
                name,
                data,
                kind: None,
            })),
            Err(e) => broken(meta, read_failure(e)),
        }
    }

    /// Writes one source as it settled, in its own transaction, waiting for
    /// its vectors if it has new content. False when a cancel came while it
    /// waited: nothing of it is written.
    fn settle(
        &mut self,
        next: InFlight,
        report: &mut AddReport,
        pending: &mut HashMap<String, usize>,
        meter: &mut Meter,
    ) -> Result<bool> {
        let mut chunks_written = 0;
        match next.prepared {
            Prepared::Unchanged { id } => {
                self.store.touch(id)?;
                report.unchanged += 1;
            }
            Prepared::Broken(meta, reason) => {
                self.write(&meta, Holding::Broken(&reason))?;
                report.failed.push(Failure {
                    source: meta.source,
                    reason: reason.to_string(),
                });
            }
            Prepared::Indexed(meta, Body::Known { hash, chunks }) => {
                self.settle_known(meta, &hash, chunks, report)?;
            }
            Prepared::Indexed(meta, Body::New(content)) => {
                match self.settle_new(meta, &content, next.ticket, report)? {
                    Some(written) => chunks_written = written,
                    None => return Ok(false),
                }
                pending.remove(&content.hash);
            }
        }
        meter.settled(chunks_written, report.failed.len());
        Ok(true)
    }

    /// A source whose content is stored already: its row points at it.
    fn settle_known(
        &mut self,
        meta: Meta,
        hash: &str,
        chunks: usize,
        report: &mut AddReport,
    ) -> Result<()> {
        let content_id = self
            .store
            .content_by_hash(hash)?
            .ok_or_else(|| crate::Error::Corrupt(format!("content {hash} vanished mid-batch")))?;
        let (id, unchanged) = self.write(&meta, Holding::Stored { content_id })?;
        if unchanged {
            report.unchanged += 1;
        } else {
            report.added += 1;
            report.documents.push(AddedDocument {
                id,
                title: meta.title,
                chunks,
                warnings: Vec::new(),
            });
        }
        Ok(())
    }

    /// A source with new content, written once its vectors come: the
    /// chunks written, or none when a cancel came while it waited (nothing
    /// of it is written).
    fn settle_new(
        &mut self,
        meta: Meta,
        content: &NewContent,
        ticket: Option<Ticket>,
        report: &mut AddReport,
    ) -> Result<Option<usize>> {
        let cancel = &self.cancel;
        let mut vectors = match ticket {
            Some(t) => match t.wait_unless(&|| cancel.is_cancelled()) {
                Some(v) => v?,
                None => return Ok(None),
            },
            None => Vec::new(),
        };
        let n = content.chunks.len();
        let card_vec = (vectors.len() == n + 1).then(|| vectors.pop()).flatten();
        let holding = Holding::New(ContentToWrite {
            hash: &content.hash,
            extracted: &content.extracted,
            truncated_at_chunk: content.truncated_at_chunk,
            chunks: &content.chunks,
            chunk_vectors: &vectors,
            card: &content.card,
            card_vector: card_vec.as_deref(),
        });
        let (id, unchanged) = self.write(&meta, holding)?;
        if unchanged {
            // Another writer (the watcher, a second `carrel add`) stored
            // this very file since it was read.
            report.unchanged += 1;
            return Ok(Some(0));
        }
        report.added += 1;
        report.documents.push(AddedDocument {
            id,
            title: meta.title,
            chunks: n,
            warnings: content.extracted.warnings.clone(),
        });
        Ok(Some(n))
    }

    /// Writes one document's row with what it holds (the store makes it one
    /// transaction); the row's id and whether it already held that content.
    fn write(&mut self, meta: &Meta, holding: Holding<'_>) -> Result<(i64, bool)> {
        let doc = NewDocument {
            source: &meta.source,
            kind: meta.kind.map(Kind::as_str),
            title: &meta.title,
            bytes: meta.bytes,
            mtime_ns: meta.mtime_ns,
            validators: &meta.validators,
            watch: self.watch,
        };
        let written = self
            .store
            .write_document(&doc, holding, self.fingerprints)?;
        Ok((written.id, written.unchanged))
    }
}

pub(super) fn read_failure(e: std::io::Error) -> BrokenReason {
    match e.kind() {
        std::io::ErrorKind::NotFound => BrokenReason::Vanished,
        _ => BrokenReason::Unreadable(e.to_string()),
    }
}
