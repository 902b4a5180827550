//! What goes into an answer: the mentioned documents, or each library's
//! lane passages, numbered, within the budget, the libraries taking turns
//! (their numbers never compared), with the route of every library asked.

use super::*;

/// Characters of passage text handed to the answerer, all documents together.
/// About 3,000 tokens: fits the context of small local models.
pub const CONTEXT_BUDGET_CHARS: usize = 12_000;

/// Lane hits considered when no document is mentioned.
pub const LANE_HITS: usize = 5;

/// A library on another machine, asked by its caller (its hub searched
/// for the question): its passages, or why there are none, and what says
/// whether a passage is still in it.
pub struct Foreign {
    pub kb: Kb,
    pub owner: Option<String>,
    pub passages: std::result::Result<Vec<Passage>, String>,
    pub ms: f64,
    pub holder: Box<dyn Holder>,
}

/// A question with its context, before anyone answers it.
pub struct Prepared {
    pub(super) question: String,
    pub(super) mentions: Vec<Mentioned>,
    pub(super) context: Vec<Passage>,
    pub(super) notes: Vec<String>,
    /// Why there is nothing to answer from, if so.
    pub(super) no_context: Option<String>,
    pub(super) route: Vec<RouteStep>,
    /// What checks the passages of libraries on other machines.
    pub(super) foreign: Vec<(Kb, Box<dyn Holder>)>,
    pub(super) quote: Option<verify::QuotedLine>,
    /// The turn this question follows up on, told to the answerer.
    pub(super) earlier: Option<Earlier>,
}

impl Prepared {
    /// A question with nothing to answer from, and why.
    fn nothing(question: String, notes: Vec<String>, why: &str) -> Prepared {
        Prepared {
            question,
            mentions: Vec::new(),
            context: Vec::new(),
            notes,
            no_context: Some(why.to_string()),
            route: Vec::new(),
            foreign: Vec::new(),
            quote: None,
            earlier: None,
        }
    }

    /// The numbered passages the answerer will read.
    pub fn context(&self) -> &[Passage] {
        &self.context
    }
}

/// Resolves the mentions and builds the numbered context from `libs`: the
/// mentioned documents, each with an equal share of the budget, or each
/// library's lane passages with an equal share, the libraries taking turns
/// (their numbers are never compared). Libraries on other machines
/// (`foreign`, searched by the caller) take their turns too, for a question
/// that mentions no document. A library that fails is in the route with
/// why; the question fails only when every library did. A question that
/// follows up on `earlier` is searched for with it ([`follow_up`]), and its
/// answerer is told of it.
pub fn prepare(
    libs: &mut [&mut dyn Corpus],
    foreign: Vec<Foreign>,
    message: &str,
    earlier: Option<&Earlier>,
    budget: usize,
) -> Result<Prepared> {
    let ids: Vec<Identity> = libs.iter().map(|l| l.identity()).collect::<Result<_>>()?;
    let mentions = mentioned(libs, &ids, message)?;
    let question = mention::strip(message);
    let search = follow_up::search_text(&question, earlier);
    let mut notes: Vec<String> = earlier.map(follow_up::note).into_iter().collect();
    if mentions.is_empty() && question.is_empty() {
        let why = "the message has no question and mentions no document";
        return Ok(Prepared::nothing(question, notes, why));
    }
    // The libraries a mention names, or all of them; each library asked
    // gets an equal share of the budget, those on other machines included
    // (they are asked only when no document is mentioned).
    let asked: Vec<usize> = (0..libs.len())
        .filter(|i| mentions.is_empty() || mentions.iter().any(|(at, _)| at == i))
        .collect();
    let foreign = if mentions.is_empty() {
        foreign
    } else {
        Vec::new()
    };
    let share = budget / (asked.len() + foreign.len()).max(1);
    let mut gathered = Gathered::default();
    for &i in &asked {
        let mine: Vec<&Mentioned> = mentions
            .iter()
            .filter(|(at, _)| *at == i)
            .map(|(_, m)| m)
            .collect();
        let shares = (budget / mentions.len().max(1), share);
        gathered.ask(&mut *libs[i], &ids[i], &search, &mine, shares, &mut notes);
    }
    let holders = gathered.take_hubs(foreign, share);
    let Gathered {
        per_library,
        route,
        reasons,
        failure,
    } = gathered;
    if per_library.is_empty()
        && let Some(e) = failure
    {
        return Err(e);
    }
    let quote = match verify::quoted_line(&question) {
        Some(line) => Some(verify::QuotedLine {
            check: check_line(libs, &line)?,
            line,
        }),
        None => None,
    };
    let mut context = take_turns(per_library);
    for (i, p) in context.iter_mut().enumerate() {
        p.n = i + 1;
    }
    let no_context = context.is_empty().then(|| why_none(&reasons));
    Ok(Prepared {
        question,
        mentions: mentions.into_iter().map(|(_, m)| m).collect(),
        context,
        notes,
        no_context,
        route,
        foreign: holders,
        quote,
        earlier: earlier.cloned(),
    })
}

/// What the libraries asked gave, each in its turn.
#[derive(Default)]
struct Gathered {
    per_library: Vec<Vec<Passage>>,
    route: Vec<RouteStep>,
    /// Why a library that answered gave no passage.
    reasons: Vec<(Kb, String)>,
    /// The first failure, the question's error when no library answered.
    failure: Option<Error>,
}

impl Gathered {
    /// Asks one library here for its passages (`shares`: each mentioned
    /// document's, and this library's), and records its route.
    fn ask(
        &mut self,
        lib: &mut dyn Corpus,
        id: &Identity,
        search: &str,
        mine: &[&Mentioned],
        shares: (usize, usize),
        notes: &mut Vec<String>,
    ) {
        let started = std::time::Instant::now();
        let got = library_context(lib, search, mine, shares.0, shares.1, notes);
        let ms = crate::lanes::merge::route_ms(started);
        let state = match got {
            Ok((mut context, why_none)) => {
                for p in &mut context {
                    p.kb = Some(id.kb.clone());
                    p.owner = id.owner.clone();
                }
                if let Some(why) = why_none {
                    self.reasons.push((id.kb.clone(), why));
                }
                self.per_library.push(context);
                RouteState::Answered
            }
            Err(e) => {
                let reason = e.to_string();
                self.failure.get_or_insert(e);
                RouteState::Failed { reason }
            }
        };
        self.route.push(RouteStep {
            kb: Some(id.kb.clone()),
            owner: id.owner.clone(),
            state,
            ms,
        });
    }

    /// Takes what the libraries on other machines returned, each cut to
    /// `share`; returns what checks their passages.
    fn take_hubs(&mut self, foreign: Vec<Foreign>, share: usize) -> Vec<(Kb, Box<dyn Holder>)> {
        let mut holders = Vec::new();
        for f in foreign {
            let state = match f.passages {
                Ok(mut passages) => {
                    let mut used = 0;
                    passages.retain(|p| {
                        used += p.text.chars().count();
                        used <= share
                    });
                    if passages.is_empty() {
                        self.reasons.push((
                            f.kb.clone(),
                            "its hub found nothing that passed a floor".into(),
                        ));
                    }
                    self.per_library.push(passages);
                    RouteState::Answered
                }
                Err(reason) => RouteState::Unavailable { reason },
            };
            self.route.push(RouteStep {
                kb: Some(f.kb.clone()),
                owner: f.owner,
                state,
                ms: f.ms,
            });
            holders.push((f.kb, f.holder));
        }
        holders
    }
}

/// Why there is no context: the one library's reason, or each library's.
fn why_none(reasons: &[(Kb, String)]) -> String {
    match reasons {
        [(_, only)] => only.clone(),
        many => many
            .iter()
            .map(|(kb, why)| format!("`{kb}`: {why}"))
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// A quoted line against every library here: found wherever it occurs,
/// else the closest passage of the first library that has one.
pub(super) fn check_line(libs: &[&mut dyn Corpus], line: &str) -> Result<verify::LineCheck> {
    let mut found = Vec::new();
    let mut nearest = None;
    for lib in libs {
        match verify::verify_line(&**lib, line)? {
            verify::LineCheck::Found { places } => found.extend(places),
            verify::LineCheck::NotInLibrary { nearest: n } => {
                nearest = nearest.or(n);
            }
        }
    }
    Ok(match found.is_empty() {
        false => verify::LineCheck::Found { places: found },
        true => verify::LineCheck::NotInLibrary { nearest },
    })
}

/// The passages a hub's topic lane admitted, in its order, each with its
/// library and owner: what a library on another machine gives an answer.
pub fn passages_from(
    topic: &crate::lanes::merge::SharedLane<crate::lanes::TopicHit>,
) -> Vec<Passage> {
    topic
        .groups
        .iter()
        .filter(|g| g.standing == crate::lanes::merge::Standing::Hit)
        .flat_map(|g| &g.hits)
        .map(|h| Passage {
            n: 0,
            doc: h.hit.doc,
            title: h.hit.title.clone(),
            source: h
                .hit
                .locations
                .first()
                .map(|l| l.source.clone())
                .unwrap_or_default(),
            chunk: h.hit.chunk,
            heading_path: h.hit.heading_path.clone(),
            page: h.hit.page,
            text: h.hit.passage.clone(),
            found: Found::TopicLane,
            cosine: Some(h.hit.cosine),
            scorer: h.hit.scorer.clone(),
            whole_document: false,
            kb: Some(h.kb.clone()),
            owner: h.owner.clone(),
        })
        .collect()
}

/// One library's context: its mentioned documents (`mentions`, each with
/// `share` characters), or its lanes' passages within `budget`.
pub(super) fn library_context(
    lib: &mut dyn Corpus,
    question: &str,
    mentions: &[&Mentioned],
    share: usize,
    budget: usize,
    notes: &mut Vec<String>,
) -> Result<(Vec<Passage>, Option<String>)> {
    let fp = Fingerprints::of(lib.models())?;
    let scorer = ScorerId {
        kind: ScorerKind::Cosine,
        model: fp.model.clone(),
    };
    let qvec = if question.is_empty() {
        None
    } else {
        Some(lib.embed_query(question)?)
    };
    match &qvec {
        _ if !mentions.is_empty() => {
            mention_context(lib, mentions, &qvec, &fp, &scorer, share, notes)
        }
        Some(v) => lane_context(lib, question, v, &fp, &scorer, budget),
        None => Ok((Vec::new(), Some("the message has no question".into()))),
    }
}

/// The libraries' passages, one from each in turn, each library's in its
/// own order.
pub(super) fn take_turns(per_library: Vec<Vec<Passage>>) -> Vec<Passage> {
    let mut queues: Vec<std::vec::IntoIter<Passage>> =
        per_library.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        for q in &mut queues {
            out.extend(q.next());
        }
        if out.len() == before {
            return out;
        }
    }
}

/// The documents `message` mentions, each once, in order, with the index of
/// the library it was found in; an error for the first mention that does
/// not resolve to exactly one document in the libraries asked.
pub(super) fn mentioned(
    libs: &[&mut dyn Corpus],
    ids: &[Identity],
    message: &str,
) -> Result<Vec<(usize, Mentioned)>> {
    let parsed = mention::parse(message);
    if parsed.is_empty() {
        return Ok(Vec::new());
    }
    let docs: Vec<Vec<DocumentRow>> = libs.iter().map(|l| l.list()).collect::<Result<_>>()?;
    let mut mentions: Vec<(usize, Mentioned)> = Vec::new();
    for m in parsed {
        let (i, found) = resolve_one(m, ids, &docs)?;
        if !mentions
            .iter()
            .any(|(at, x)| *at == i && x.doc == found.doc)
        {
            mentions.push((i, found));
        }
    }
    Ok(mentions)
}

/// The one document a mention names, in the library (its index) that holds
/// it; an error that says why when it names none, or one in several
/// libraries.
fn resolve_one(
    m: Mention,
    ids: &[Identity],
    docs: &[Vec<DocumentRow>],
) -> Result<(usize, Mentioned)> {
    let within: Vec<usize> = (0..ids.len())
        .filter(|&i| m.kb.as_deref().is_none_or(|kb| ids[i].kb.as_str() == kb))
        .collect();
    if within.is_empty() {
        let known: Vec<String> = ids.iter().map(|i| format!("`{}`", i.kb)).collect();
        return Err(match m.kb {
            Some(kb) => Error::UnknownKb {
                kb,
                known: known.join(", "),
            },
            // Only libraries on other machines were asked: their
            // documents cannot be mentioned from here.
            None => Error::MentionNowhere { token: m.token },
        });
    }
    let resolutions: Vec<(usize, Resolution)> = within
        .iter()
        .map(|&i| (i, mention::resolve(&m.key, &docs[i])))
        .collect();
    let found: Vec<(usize, i64, String)> = resolutions
        .iter()
        .filter_map(|(i, r)| match r {
            Resolution::Resolved { doc, title } => Some((*i, *doc, title.clone())),
            _ => None,
        })
        .collect();
    match found.as_slice() {
        [(i, doc, title)] => Ok((
            *i,
            Mentioned {
                token: m.token,
                doc: *doc,
                title: title.clone(),
                kb: Some(ids[*i].kb.clone()),
            },
        )),
        [] => Err(MentionError {
            token: m.token,
            resolution: most_useful(&resolutions).clone(),
        }
        .into()),
        many => {
            let kbs: Vec<String> = many
                .iter()
                .map(|(i, _, _)| format!("{}{}/{}", mention::PREFIX, ids[*i].kb, m.key))
                .collect();
            Err(Error::MentionInSeveralLibraries {
                token: m.token,
                choices: kbs.join(" or "),
            })
        }
    }
}

/// The most useful refusal of a mention no library resolved: a choice
/// within one library, else the closest names, else the first library's.
fn most_useful(resolutions: &[(usize, Resolution)]) -> &Resolution {
    let (_, resolution) = resolutions
        .iter()
        .find(|(_, r)| matches!(r, Resolution::Ambiguous { .. }))
        .or_else(|| {
            resolutions.iter().find(|(_, r)| {
                matches!(r, Resolution::Unknown { did_you_mean } if !did_you_mean.is_empty())
            })
        })
        .unwrap_or(&resolutions[0]);
    resolution
}

/// The context from the mentioned documents, each with an equal share of the
/// budget; a note for each one without text, and why there is no context
/// when none has any.
pub(super) fn mention_context(
    lib: &dyn Corpus,
    mentions: &[&Mentioned],
    qvec: &Option<Vec<f32>>,
    fp: &Fingerprints,
    scorer: &ScorerId,
    share: usize,
    notes: &mut Vec<String>,
) -> Result<(Vec<Passage>, Option<String>)> {
    let mut context: Vec<Passage> = Vec::new();
    let mut no_context = None;
    for m in mentions {
        let doc = lib.document(m.doc)?;
        let content = match (&doc.broken_reason, lib.store().document_content(m.doc)?) {
            (None, Some(c)) => c,
            (reason, _) => {
                notes.push(format!(
                    "{} ({}) has no text to answer from: {}",
                    m.token,
                    doc.title,
                    reason.as_deref().unwrap_or("it is not indexed")
                ));
                continue;
            }
        };
        let chunks: Vec<(ChunkRow, Option<Cosine>)> = match qvec {
            Some(v) => lib.store().chunks_with_cosines(content, v, &fp.chunk)?,
            None => lib
                .store()
                .chunks(content)?
                .into_iter()
                .map(|c| (c, None))
                .collect(),
        };
        let (picked, whole) = within_share(&chunks, share);
        for (c, cosine) in picked {
            context.push(Passage {
                n: 0,
                doc: doc.id,
                title: doc.title.clone(),
                source: doc.source.clone(),
                chunk: c.id,
                heading_path: c.heading_path.clone(),
                page: c.page,
                text: c.text.clone(),
                found: Found::Mention {
                    token: m.token.clone(),
                },
                cosine: *cosine,
                scorer: scorer.clone(),
                whole_document: whole,
                kb: None,
                owner: None,
            });
        }
    }
    if context.is_empty() {
        no_context = Some("none of the mentioned documents has indexed text".to_string());
    }
    Ok((context, no_context))
}

/// A mentioned document's chunks for the context: all of them when they fit
/// `share` (then true), else its best by cosine, as many as `share` holds.
pub(super) fn within_share(
    chunks: &[(ChunkRow, Option<Cosine>)],
    share: usize,
) -> (Vec<&(ChunkRow, Option<Cosine>)>, bool) {
    let total: usize = chunks.iter().map(|(c, _)| c.text.chars().count()).sum();
    let whole = total <= share;
    let mut picked: Vec<&(ChunkRow, Option<Cosine>)> = chunks.iter().collect();
    if !whole {
        // The topic lane's scorer restricted to this document: best
        // passages first, as many as the budget holds.
        let key = |c: &Option<Cosine>| c.unwrap_or(Cosine::new(f32::MIN));
        picked.sort_by(|(a, x), (b, y)| key(x).rank(key(y)).then(a.seq.cmp(&b.seq)));
        let mut used = 0;
        picked.retain(|(c, _)| {
            let n = c.text.chars().count();
            let keep = used + n <= share;
            used += if keep { n } else { 0 };
            keep
        });
    }
    (picked, whole)
}

/// The context from what the lanes admit for `question` (no document was
/// mentioned), and why there is none when neither admits anything.
pub(super) fn lane_context(
    lib: &mut dyn Corpus,
    question: &str,
    v: &[f32],
    fp: &Fingerprints,
    scorer: &ScorerId,
    budget: usize,
) -> Result<(Vec<Passage>, Option<String>)> {
    let mut no_context = None;
    let r = lib.match_query(question, LANE_HITS)?;
    let topic = topic_passages(lib, &r)?;
    let subject = subject_passages(lib, &r, v, fp, scorer)?;
    let context = alternate(subject, topic, budget);
    if context.is_empty() {
        no_context = Some(no_lane_context(&r));
    }
    Ok((context, no_context))
}

/// The topic lane's admitted passages, in its rank.
pub(super) fn topic_passages(lib: &dyn Corpus, r: &MatchResponse) -> Result<Vec<Passage>> {
    let mut topic = Vec::new();
    if r.topic.has_ready_hits() {
        for h in r.topic.hits() {
            let doc = lib.document(h.doc)?;
            topic.push(Passage {
                n: 0,
                doc: h.doc,
                title: h.title.clone(),
                source: doc.source,
                chunk: h.chunk,
                heading_path: h.heading_path.clone(),
                page: h.page,
                text: h.passage.clone(),
                found: Found::TopicLane,
                cosine: Some(h.cosine),
                scorer: h.scorer.clone(),
                whole_document: false,
                kb: None,
                owner: None,
            });
        }
    }
    Ok(topic)
}

/// The subject lane's admitted documents, in its rank, each by its passage
/// closest to the question.
pub(super) fn subject_passages(
    lib: &dyn Corpus,
    r: &MatchResponse,
    v: &[f32],
    fp: &Fingerprints,
    scorer: &ScorerId,
) -> Result<Vec<Passage>> {
    let mut subject = Vec::new();
    if r.subject.has_ready_hits() {
        // In the cross-encoder's order; each document's best passage is
        // picked by chunk cosine within that one document.
        for h in r.subject.hits() {
            let Some(content) = lib.store().document_content(h.doc)? else {
                continue;
            };
            let best = lib
                .store()
                .chunks_with_cosines(content, v, &fp.chunk)?
                .into_iter()
                .filter_map(|(c, cos)| cos.map(|cos| (c, cos)))
                .max_by(|a, b| b.1.rank(a.1));
            let Some((c, cos)) = best else {
                continue;
            };
            let doc = lib.document(h.doc)?;
            subject.push(Passage {
                n: 0,
                doc: h.doc,
                title: h.title.clone(),
                source: doc.source,
                chunk: c.id,
                heading_path: c.heading_path,
                page: c.page,
                text: c.text,
                found: Found::SubjectLane,
                cosine: Some(cos),
                scorer: scorer.clone(),
                whole_document: false,
                kb: None,
                owner: None,
            });
        }
    }
    Ok(subject)
}

/// Why neither lane gave the context anything, with each lane's state, and
/// what the user can do instead.
pub(super) fn no_lane_context(r: &MatchResponse) -> String {
    let state = |s: &str, reason: Option<&str>| match (s, reason) {
        (_, Some(r)) => format!("{s}: {r}"),
        ("ready", None) => "nothing passed its floor".to_string(),
        ("weak", None) => "only sub-floor matches".to_string(),
        _ => s.to_string(),
    };
    // A topic lane that held back had passages over its floor: say why,
    // not that they were under it.
    let topic = match (&r.explain.topic_held_back, r.topic.reason()) {
        (Some(why), None) => format!("held back: {why}"),
        _ => state(r.topic.state(), r.topic.reason()),
    };
    format!(
        "neither lane admitted a document for this question (subject lane: {}; topic lane: {topic}); \
         mention a document with @doc: to answer from it",
        state(r.subject.state(), r.subject.reason()),
    )
}

/// The lanes' passages for the context: the subject lane's first, the topic
/// lane's first, the subject lane's second, and so on, each in its own lane's
/// rank. The two lanes' numbers are never compared (a subject hit's order is
/// the cross-encoder's, not its passage's cosine). A passage already taken by
/// the other lane, or past the character budget, is left out.
pub(super) fn alternate(subject: Vec<Passage>, topic: Vec<Passage>, budget: usize) -> Vec<Passage> {
    let mut out: Vec<Passage> = Vec::new();
    let mut used = 0;
    let (mut s, mut t) = (subject.into_iter(), topic.into_iter());
    loop {
        let (a, b) = (s.next(), t.next());
        if a.is_none() && b.is_none() {
            return out;
        }
        for p in [a, b].into_iter().flatten() {
            let n = p.text.chars().count();
            if used + n <= budget && !out.iter().any(|x| x.chunk == p.chunk) {
                used += n;
                out.push(p);
            }
        }
    }
}
