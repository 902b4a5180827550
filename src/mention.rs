//! `@doc:` mentions: the token grammar, its resolution against the
//! library's documents, and the error an unresolved one raises. The one
//! owner of all three; the CLI, the MCP server and the app call these and
//! never parse a mention themselves. A leaf: it knows documents only as
//! [`Mentionable`], so the error type can wrap [`MentionError`] without
//! depending on the store.
//!
//! Grammar: `@doc:` followed by a key of letters, digits, `_`, `-` and `.`
//! (a trailing `.` is punctuation, not key). The key is a document id
//! (`@doc:12`) or a slug of its title or file name (`@doc:sourdough-starter`);
//! an unambiguous slug prefix also resolves (`@doc:sourdough`). A key may
//! name its library first, `@doc:research/sourdough`, when a name is found
//! in several libraries.
//!
//! `@kb:` followed by a library's name (`@kb:research`) scopes a question
//! to that library; several may be named. The name's own grammar is
//! [`crate::kb::Kb`]'s; here a token is only found and taken out.

use serde::Serialize;

/// What a mention resolves against: a document's id, title and source.
pub trait Mentionable {
    fn id(&self) -> i64;
    fn title(&self) -> &str;
    /// The file or URL.
    fn source(&self) -> &str;
}

/// A mention that did not resolve to exactly one document, with what to
/// type instead.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", describe(token, resolution))]
pub struct MentionError {
    pub token: String,
    pub resolution: Resolution,
}

pub const PREFIX: &str = "@doc:";
/// The token that scopes a question to a library.
pub const KB_PREFIX: &str = "@kb:";

/// One mention as typed, with its byte span in the message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Mention {
    pub token: String,
    /// The library named before a `/` (`@doc:research/intro`), if any.
    pub kb: Option<String>,
    /// The document's id or name, without the library.
    pub key: String,
    pub start: usize,
    pub end: usize,
}

/// One `@kb:` token: the library a question is scoped to, as typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct KbMention {
    pub token: String,
    pub kb: String,
    pub start: usize,
    pub end: usize,
}

/// The spans of `prefix` tokens in `message` whose keys are made of
/// `key_char`s, a trailing `.` or `/` being punctuation: (start, end, key).
fn tokens(message: &str, prefix: &str, key_char: fn(char) -> bool) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = message[from..].find(prefix) {
        let start = from + at;
        let key_start = start + prefix.len();
        let rest = &message[key_start..];
        let mut len = rest.find(|c: char| !key_char(c)).unwrap_or(rest.len());
        while len > 0 && rest[..len].ends_with(['.', '/']) {
            len -= 1;
        }
        let end = key_start + len;
        if len > 0 {
            out.push((start, end));
        }
        from = end.max(key_start);
    }
    out
}

/// Every `@doc:` token in `message`, in order.
pub fn parse(message: &str) -> Vec<Mention> {
    let key_char = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    tokens(message, PREFIX, key_char)
        .into_iter()
        .map(|(start, end)| {
            let key = &message[start + PREFIX.len()..end];
            let (kb, key) = match key.split_once('/') {
                Some((kb, doc)) if !kb.is_empty() && !doc.is_empty() => {
                    (Some(kb.to_string()), doc.to_string())
                }
                _ => (None, key.to_string()),
            };
            Mention {
                token: message[start..end].to_string(),
                kb,
                key,
                start,
                end,
            }
        })
        .collect()
}

/// Every `@kb:` token in `message`, in order.
pub fn parse_kbs(message: &str) -> Vec<KbMention> {
    let key_char = |c: char| c.is_alphanumeric() || c == '-';
    tokens(message, KB_PREFIX, key_char)
        .into_iter()
        .map(|(start, end)| KbMention {
            token: message[start..end].to_string(),
            kb: message[start + KB_PREFIX.len()..end].to_string(),
            start,
            end,
        })
        .collect()
}

/// The message with its `@doc:` and `@kb:` tokens taken out, for the
/// retrieval query.
pub fn strip(message: &str) -> String {
    let mut spans: Vec<(usize, usize)> = parse(message)
        .iter()
        .map(|m| (m.start, m.end))
        .chain(parse_kbs(message).iter().map(|m| (m.start, m.end)))
        .collect();
    spans.sort();
    let mut out = String::new();
    let mut from = 0;
    for (start, end) in spans {
        out.push_str(&message[from..start]);
        from = end;
    }
    out.push_str(&message[from..]);
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Lowercase words joined by `-`: "Sourdough Starter: A Guide" → `sourdough-starter-a-guide`.
pub fn slug(s: &str) -> String {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .join("-")
}

/// The token that mentions a document: `@doc:ID`.
pub fn token(doc: i64) -> String {
    format!("{PREFIX}{doc}")
}

/// A document offered for a mention.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Suggestion {
    pub doc: i64,
    pub title: String,
    /// The file or URL, which tells apart documents with one title.
    pub source: String,
    pub token: String,
}

impl Suggestion {
    fn of(d: &impl Mentionable) -> Suggestion {
        Suggestion {
            doc: d.id(),
            title: d.title().to_string(),
            source: d.source().to_string(),
            token: token(d.id()),
        }
    }
}

/// What a mention refers to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Resolution {
    Resolved {
        doc: i64,
        title: String,
    },
    /// Several documents fit; the user must pick one.
    Ambiguous {
        candidates: Vec<Suggestion>,
    },
    /// Nothing fits; these are the closest titles.
    Unknown {
        did_you_mean: Vec<Suggestion>,
    },
}

fn stem_slug(source: &str) -> String {
    let name = source.rsplit(['/', '\\']).next().unwrap_or(source);
    let stem = name.rsplit_once('.').map(|(s, _)| s).unwrap_or(name);
    slug(stem)
}

/// Resolves `key` against the documents. Broken documents can be mentioned
/// (the answer then says they have no text), so nothing is hidden.
pub fn resolve<D: Mentionable>(key: &str, docs: &[D]) -> Resolution {
    let resolved = |d: &D| Resolution::Resolved {
        doc: d.id(),
        title: d.title().to_string(),
    };
    if let Some(d) = key
        .parse::<i64>()
        .ok()
        .and_then(|id| docs.iter().find(|d| d.id() == id))
    {
        return resolved(d);
    }
    let key = slug(key);
    if key.is_empty() {
        return Resolution::Unknown {
            did_you_mean: Vec::new(),
        };
    }
    let slugs = |d: &D| [slug(d.title()), stem_slug(d.source())];
    let exact: Vec<&D> = docs.iter().filter(|d| slugs(d).contains(&key)).collect();
    let matches = if exact.is_empty() {
        docs.iter()
            .filter(|d| slugs(d).iter().any(|s| s.starts_with(&key)))
            .collect()
    } else {
        exact
    };
    match matches.as_slice() {
        [one] => resolved(one),
        [] => {
            let mut scored: Vec<(f64, &D)> = docs
                .iter()
                .map(|d| {
                    let best = slugs(d)
                        .iter()
                        .map(|s| strsim::jaro_winkler(&key, s))
                        .fold(0.0, f64::max);
                    (best, d)
                })
                .filter(|(s, _)| *s >= 0.6)
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.id().cmp(&b.1.id())));
            Resolution::Unknown {
                did_you_mean: scored
                    .into_iter()
                    .take(3)
                    .map(|(_, d)| Suggestion::of(d))
                    .collect(),
            }
        }
        many => Resolution::Ambiguous {
            candidates: many.iter().map(|d| Suggestion::of(*d)).collect(),
        },
    }
}

/// The autocomplete's order for a partly typed mention: documents whose
/// title or file name starts with it, then those with a word starting with
/// it, then those containing it, then close spellings (Jaro–Winkler ≥ 0.8);
/// newest first within a rank. An empty `partial` lists the newest documents.
pub fn suggest<D: Mentionable>(partial: &str, docs: &[D], limit: usize) -> Vec<Suggestion> {
    let key = slug(partial);
    let rank = |d: &D| -> Option<(u8, f64)> {
        if key.is_empty() {
            return Some((0, 0.0));
        }
        let names = [slug(d.title()), stem_slug(d.source())];
        if names.iter().any(|n| n.starts_with(&key)) {
            return Some((0, 0.0));
        }
        if names
            .iter()
            .any(|n| n.split('-').any(|w| w.starts_with(&key)))
        {
            return Some((1, 0.0));
        }
        if names.iter().any(|n| n.contains(&key)) {
            return Some((2, 0.0));
        }
        let close = names
            .iter()
            .flat_map(|n| n.split('-').map(|w| strsim::jaro_winkler(&key, w)))
            .fold(0.0, f64::max);
        (close >= 0.8).then_some((3, -close))
    };
    let mut ranked: Vec<((u8, f64), &D)> = docs
        .iter()
        .filter_map(|d| rank(d).map(|r| (r, d)))
        .collect();
    ranked.sort_by(|(a, da), (b, db)| {
        a.0.cmp(&b.0)
            .then(a.1.total_cmp(&b.1))
            .then(db.id().cmp(&da.id()))
    });
    ranked
        .into_iter()
        .take(limit)
        .map(|(_, d)| Suggestion::of(d))
        .collect()
}

/// A sentence for a mention that did not resolve, with what to type instead.
pub fn describe(token: &str, resolution: &Resolution) -> String {
    let list = |s: &[Suggestion]| {
        s.iter()
            .map(|s| {
                let name = s.source.rsplit(['/', '\\']).next().unwrap_or(&s.source);
                format!("{} ({}, {name})", s.token, s.title)
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match resolution {
        Resolution::Resolved { doc, title } => format!("{token} is doc {doc} ({title})"),
        Resolution::Ambiguous { candidates } => format!(
            "{token} fits {} documents; mention one: {}",
            candidates.len(),
            list(candidates)
        ),
        Resolution::Unknown { did_you_mean } if did_you_mean.is_empty() => {
            format!("{token} matches no document in this library; `carrel list` shows the ids")
        }
        Resolution::Unknown { did_you_mean } => format!(
            "{token} matches no document; did you mean {}?",
            list(did_you_mean)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Doc(i64, &'static str, &'static str);

    impl Mentionable for Doc {
        fn id(&self) -> i64 {
            self.0
        }
        fn title(&self) -> &str {
            self.1
        }
        fn source(&self) -> &str {
            self.2
        }
    }

    fn doc(id: i64, title: &'static str, source: &'static str) -> Doc {
        Doc(id, title, source)
    }

    #[test]
    fn suggestions_rank_title_prefix_then_word_then_spelling() {
        let docs = [
            doc(1, "Pond ecology", "/d/pond.md"),
            doc(2, "Sourdough starter", "/d/bread.md"),
            doc(3, "Starter homes and mortgages", "/d/homes.md"),
            doc(4, "Kitchen notes", "/d/notes.txt"),
        ];
        let ids = |p: &str| {
            suggest(p, &docs, 5)
                .iter()
                .map(|s| s.doc)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids("start"), vec![3, 2], "title prefix before a later word");
        assert_eq!(ids("sourdogh"), vec![2], "a typo still finds it");
        assert_eq!(ids("bread"), vec![2], "the file name counts");
        assert_eq!(ids(""), vec![4, 3, 2, 1], "nothing typed: newest first");
        assert!(ids("zzzz").is_empty());
    }

    #[test]
    fn parses_tokens_with_spans_and_ignores_trailing_punctuation() {
        let m = parse("compare @doc:12 and @doc:sourdough-starter. Also @doc: nothing");
        assert_eq!(
            m.iter().map(|m| m.key.as_str()).collect::<Vec<_>>(),
            ["12", "sourdough-starter"]
        );
        assert_eq!(&"compare @doc:12 and"[m[0].start..m[0].end], "@doc:12");
        assert_eq!(
            strip("compare @doc:12 and @doc:x, please"),
            "compare and , please"
        );
    }

    #[test]
    fn kb_tokens_scope_and_a_doc_key_may_name_its_library() {
        let msg = "@kb:research compare @doc:notes/intro-2 with @doc:7, and @kb:team-notes.";
        let kbs: Vec<String> = parse_kbs(msg).into_iter().map(|k| k.kb).collect();
        assert_eq!(kbs, ["research", "team-notes"]);
        let docs = parse(msg);
        assert_eq!(
            docs.iter()
                .map(|m| (m.kb.as_deref(), m.key.as_str(), m.token.as_str()))
                .collect::<Vec<_>>(),
            [
                (Some("notes"), "intro-2", "@doc:notes/intro-2"),
                (None, "7", "@doc:7")
            ]
        );
        assert_eq!(strip(msg), "compare with , and .");
        // A lone `/` is punctuation, not a library.
        assert_eq!(parse("see @doc:intro/ now")[0].kb, None);
        assert_eq!(parse("see @doc:/intro")[0].key, "/intro");
    }

    #[test]
    fn resolves_ids_slugs_and_prefixes_and_explains_the_rest() {
        let docs = [
            doc(1, "Sourdough Starter", "/d/sourdough-starter.md"),
            doc(2, "Sourdough Starter", "/d/sourdough-copy.md"),
            doc(
                3,
                "Mortgage rates for first-time buyers",
                "/d/mortgage-rates.html",
            ),
        ];
        assert!(matches!(
            resolve("3", &docs),
            Resolution::Resolved { doc: 3, .. }
        ));
        assert!(matches!(
            resolve("mortgage", &docs),
            Resolution::Resolved { doc: 3, .. }
        ));
        assert!(matches!(
            resolve("sourdough-copy", &docs),
            Resolution::Resolved { doc: 2, .. }
        ));
        match resolve("sourdough", &docs) {
            Resolution::Ambiguous { candidates } => assert_eq!(candidates.len(), 2),
            other => panic!("{other:?}"),
        }
        match resolve("mortage-rate", &docs) {
            Resolution::Unknown { did_you_mean } => assert_eq!(did_you_mean[0].doc, 3),
            other => panic!("{other:?}"),
        }
        assert!(matches!(resolve("99", &docs), Resolution::Unknown { .. }));
    }
}
