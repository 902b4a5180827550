//! `carrel match` (`match` is a keyword, hence the file's name): ask both
//! lanes what a query is ABOUT (subject) and what DISCUSSES it (topic).

use std::process::ExitCode;

use super::{Cli, Output, with_kbs};
use crate::foreign::ask::Elsewhere;
use crate::lanes::merge::{LaneGroup, RouteState, RouteStep};
use crate::lanes::{Candidate, Detail, Explain, LaneState, MatchView};
use crate::library::shared::SharedMatch;
use crate::library::{Across, AskedLanes, AskedLibrary};
use crate::score::Cosine;
use crate::{Error, Library};

/// The arguments of `carrel match`.
#[derive(clap::Args)]
pub struct Args {
    query: String,
    #[arg(long, default_value_t = 10)]
    top_k: usize,
    /// Show every candidate with its scores, scorer and decision
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    output: Output,
}

/// Prints both lanes; fails when neither lane could look. A question whose
/// `@kb:` tokens (or several --kb) name libraries is explained library by
/// library ([`across`]).
pub fn exec(cli: &Cli, args: &Args) -> Result<ExitCode, Error> {
    let (config, query) = with_kbs(cli, &args.query)?;
    // What is printed for people always reads the explanation: the topic
    // lane says which passages its lexical checks could not judge.
    let detail = if args.explain || !args.output.json {
        Detail::Explain
    } else {
        Detail::Hits
    };
    if let Some(across) = crate::library::explain_across(&config, &query, args.top_k, detail)? {
        return Ok(print_across(&across, args));
    }
    let mut library = Library::open_existing(config)?;
    let view = library.match_query(&query, args.top_k)?.view(detail);
    // The foreign sources' own list, never sorted with the lanes.
    let elsewhere = library.ask_elsewhere(&query)?;
    if args.output.json {
        #[derive(serde::Serialize)]
        struct WithElsewhere<'a> {
            #[serde(flatten)]
            lanes: &'a MatchView,
            elsewhere: &'a Elsewhere,
        }
        super::print_json(&WithElsewhere {
            lanes: &view,
            elsewhere: &elsewhere,
        });
    } else {
        print_match(&view, args.explain);
        print_elsewhere(&elsewhere);
    }
    Ok(exit_code(looked(&view)))
}

/// Whether either lane could look: a lane that is unavailable or failed
/// did not.
fn looked(view: &MatchView) -> bool {
    let looked = |state: LaneState| matches!(state, LaneState::Ready | LaneState::Weak);
    looked(view.subject.state) || looked(view.topic.state)
}

fn exit_code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Each library an `@kb:` question named: its route, then its own lanes, or
/// what its hub returned. Fails when no library could look.
fn print_across(across: &Across, args: &Args) -> ExitCode {
    if args.output.json(across) {
        return exit_code(across.libraries.iter().any(answered));
    }
    for (i, asked) in across.libraries.iter().enumerate() {
        if i > 0 {
            println!();
        }
        println!("{}", route_line(&asked.route));
        match &asked.lanes {
            Some(AskedLanes::Here { view }) => print_match(view, args.explain),
            Some(AskedLanes::Hub { url, returned }) => print_returned(url, returned),
            None => {}
        }
    }
    exit_code(across.libraries.iter().any(answered))
}

/// Whether a library named answered with a lane that could look.
fn answered(asked: &AskedLibrary) -> bool {
    match &asked.lanes {
        Some(AskedLanes::Here { view }) => looked(view),
        Some(AskedLanes::Hub { .. }) => true,
        None => false,
    }
}

/// "LIBRARY admirers (Ada Moreau): answered in 84 ms", or why it was not.
fn route_line(step: &RouteStep) -> String {
    let owner = step.owner.as_deref().unwrap_or("owner not set");
    let state = match &step.state {
        RouteState::Answered => "answered".to_string(),
        RouteState::Unavailable { reason } => format!("unavailable: {reason}"),
        RouteState::Failed { reason } => format!("failed: {reason}"),
    };
    format!(
        "LIBRARY {} ({owner}): {state}, {:.0} ms",
        step.name(),
        step.ms
    )
}

/// What another machine's hub returned for its library, each lane's
/// groups under their scorers.
fn print_returned(url: &str, m: &SharedMatch) {
    println!("  its hub at {url} returned:");
    for (lane, groups) in [
        ("SUBJECT", summarise(&m.subject.groups, |h| &h.title)),
        ("TOPIC", summarise(&m.topic.groups, |h| &h.title)),
    ] {
        if groups.is_empty() {
            println!("  {lane}: nothing");
        }
        for g in groups {
            println!("  {lane}: {g}");
        }
    }
    for held in &m.topic_held_back {
        println!("  held back in {}: {}", held.kb, held.why);
    }
}

/// Each group as "hit by SCORER: A, B", its hits best first.
fn summarise<H>(groups: &[LaneGroup<H>], title: impl Fn(&H) -> &String) -> Vec<String> {
    groups
        .iter()
        .map(|g| {
            let titles: Vec<&str> = g.hits.iter().map(|h| title(&h.hit).as_str()).collect();
            format!(
                "{} by {}: {}",
                g.standing.as_str(),
                g.scorer,
                titles.join(", ")
            )
        })
        .collect()
}

fn print_match(view: &MatchView, explain: bool) {
    print_subject(view);
    println!();
    print_topic(view);
    if let (true, Some(e)) = (explain, &view.explain) {
        print_explain(e);
    }
}

fn print_subject(r: &MatchView) {
    println!(
        "SUBJECT: is a document what \"{}\" is ABOUT?  [{}]",
        r.query,
        r.subject.state.as_str()
    );
    if let Some(reason) = &r.subject.reason {
        println!("  {reason}");
    }
    for h in &r.subject.hits {
        let rerank = h
            .rerank
            .map(|l| format!("  rerank {:.2}", l.get()))
            .unwrap_or_default();
        println!(
            "  {:>5}  cosine {:.3}{rerank}  {}  [{}]",
            h.doc,
            h.cosine.get(),
            h.title,
            h.scorer
        );
        if !h.why.is_empty() {
            println!("         {}", h.why);
        }
    }
    if r.subject.reason.is_none() && r.subject.hits.is_empty() {
        println!("  no document is about this");
    }
    print_below_floor(r.subject.below_floor.iter().map(|h| (&h.title, h.cosine)));
}

fn print_topic(r: &MatchView) {
    println!(
        "TOPIC: which documents DISCUSS it?  [{}]  ({} vetoed by headings)",
        r.topic.state.as_str(),
        r.topic_vetoed
    );
    if let Some(reason) = &r.topic.reason {
        println!("  {reason}");
    }
    if let Some(why) = &r.topic_held_back {
        println!("  held back: {why}");
    }
    if let Some(e) = &r.explain {
        print_unjudged(&e.topic);
    }
    for h in &r.topic.hits {
        let page = h.page.map(|p| format!(" p.{p}")).unwrap_or_default();
        let mut place = h.heading_path.clone();
        if place.first() != Some(&h.title) {
            place.insert(0, h.title.clone());
        }
        println!(
            "  {:>5}  cosine {:.3}  {}{page}",
            h.doc,
            h.cosine.get(),
            place.join(" > ")
        );
        let passage: String = h.passage.chars().take(160).collect();
        println!("         {}", passage.replace('\n', " "));
    }
    if r.topic.reason.is_none() && r.topic.hits.is_empty() && r.topic_held_back.is_none() {
        println!("  no passage discusses this");
    }
    print_below_floor(r.topic.below_floor.iter().map(|h| (&h.title, h.cosine)));
}

/// The topic candidates the lexical checks could not judge, counted by
/// reason: "veto and hold-back skipped on 3 passages: cross-lingual, en → ru".
fn print_unjudged(candidates: &[Candidate]) {
    let mut reasons: Vec<(&str, usize)> = Vec::new();
    for why in candidates.iter().filter_map(|c| c.unjudged.as_deref()) {
        match reasons.iter_mut().find(|(r, _)| *r == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    for (why, n) in reasons {
        println!(
            "  veto and hold-back skipped on {}: {why}",
            crate::words::count(n, "passage")
        );
    }
}

/// A lane's `below_floor` tail on one line, title and cosine each, labelled
/// so that it is never read as a hit; nothing when the tail is empty.
fn print_below_floor<'a>(tail: impl ExactSizeIterator<Item = (&'a String, Cosine)>) {
    if tail.len() == 0 {
        return;
    }
    let n = tail.len();
    let items: Vec<String> = tail
        .map(|(title, cosine)| format!("{title} ({:.3})", cosine.get()))
        .collect();
    println!("  below the floor ({n}): {}", items.join(", "));
}

/// `--explain`: the timings, and every candidate with its decision.
fn print_explain(e: &Explain) {
    println!();
    println!(
        "EXPLAIN  embed {:.1} ms, subject {:.1} ms, topic {:.1} ms; cross-encoder {}",
        e.embed_ms,
        e.subject_ms,
        e.topic_ms,
        if e.reranker_skipped_by_gate {
            "skipped: no card reached the cosine floor"
        } else {
            "needed for eligible cards"
        }
    );
    println!(
        "  topic search: {}; with the best keyword matches, each scored by the same cosine, \
         in an order that fuses the two ranks",
        e.topic_search.describe()
    );
    println!(
        "  query language: {}",
        e.query_language
            .as_deref()
            .unwrap_or("not told (each passage judged in its own language)")
    );
    // Each lane's second number: the subject lane's is the cross-encoder's
    // logit; the topic lane's is its keyword rank (it has no logit).
    let rerank = |c: &Candidate| match c.rerank {
        Some(l) => format!("rerank {:>6.2}", l.get()),
        None => format!("rerank {:>6}", "-"),
    };
    let keyword = |c: &Candidate| match c.keyword_rank {
        Some(k) => format!("keyword #{k:<4}"),
        None => format!("keyword {:>5}", "-"),
    };
    type Column<'a> = &'a dyn Fn(&Candidate) -> String;
    let lanes: [(&str, &Vec<Candidate>, Column); 2] = [
        ("subject", &e.subject, &rerank),
        ("topic", &e.topic, &keyword),
    ];
    for (lane, cands, second) in lanes {
        for c in cands.iter() {
            let second = second(c);
            let path = c
                .heading_path
                .as_ref()
                .map(|p| p.join(" > "))
                .unwrap_or_default();
            let unjudged = c
                .unjudged
                .as_ref()
                .map(|why| format!("  [veto and hold-back skipped: {why}]"))
                .unwrap_or_default();
            println!(
                "  {lane:<8} {:>5} cosine {:.3} {second}  {:<22} {} {path}{unjudged}",
                c.doc,
                c.cosine.get(),
                c.decision.as_str(),
                c.title
            );
        }
    }
}

/// The foreign sources' hits, under their own heading, and what each source
/// did; nothing when the library has no foreign source.
fn print_elsewhere(e: &Elsewhere) {
    if e.sources.is_empty() {
        return;
    }
    println!();
    println!(
        "ELSEWHERE  foreign sources; admitted at cross-encoder logit >= {:.2} on (query, passage)",
        crate::foreign::PASSAGE_FLOOR.value().get()
    );
    if e.hits.is_empty() {
        println!("  (no foreign point reached the floor)");
    }
    for h in &e.hits {
        let scope = h
            .scope
            .as_ref()
            .map_or("unscoped".into(), |s| format!("{}={}", s.key, s.value));
        let mut text: String = h.text.chars().take(120).collect();
        if text.len() < h.text.len() {
            text.push('…');
        }
        println!(
            "  {:>6.2}  {} ({scope}) point {}: {}  [{} {:.3}, {}]",
            h.rerank.get(),
            h.source,
            h.point,
            text.replace('\n', " "),
            h.metric.as_str(),
            h.own_score.get(),
            h.scorer
        );
    }
    for s in &e.sources {
        println!("  source {}: {}", s.source, s.status);
    }
}
