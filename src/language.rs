//! Which language a text is in, and the word rules Carrel judges words by
//! in each. Detection is whatlang's; a language has a word rule when
//! Snowball (rust-stemmers) stems it, and its function words are Carrel's
//! own for English ([`crate::words`]) and NLTK's (the `stop-words` crate)
//! for the rest. The lexical checks (the heading veto, the topic lane's
//! hold-back, a card's key terms) judge only within one language:
//! [`lexical_rule`] is the one place that says whether they can.

use std::collections::HashSet;

use rust_stemmers::{Algorithm, Stemmer};
use whatlang::{Detector, Lang};

/// A detected language. Shown and stored by its ISO 639-1 code where it
/// has a word rule ("en", "ru"), by whatlang's ISO 639-3 code otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Language(Lang);

/// The languages with a word rule: whatlang's language, its ISO 639-1 code
/// (the key of NLTK's list in `stop-words`) and its Snowball stemmer.
const RULES: &[(Lang, &str, Algorithm)] = &[
    (Lang::Eng, "en", Algorithm::English),
    (Lang::Rus, "ru", Algorithm::Russian),
    (Lang::Deu, "de", Algorithm::German),
    (Lang::Fra, "fr", Algorithm::French),
    (Lang::Spa, "es", Algorithm::Spanish),
    (Lang::Ita, "it", Algorithm::Italian),
    (Lang::Por, "pt", Algorithm::Portuguese),
    (Lang::Nld, "nl", Algorithm::Dutch),
    (Lang::Swe, "sv", Algorithm::Swedish),
    (Lang::Dan, "da", Algorithm::Danish),
    (Lang::Nob, "no", Algorithm::Norwegian),
    (Lang::Fin, "fi", Algorithm::Finnish),
    (Lang::Hun, "hu", Algorithm::Hungarian),
    (Lang::Ron, "ro", Algorithm::Romanian),
    (Lang::Tur, "tr", Algorithm::Turkish),
    (Lang::Ell, "el", Algorithm::Greek),
    (Lang::Ara, "ar", Algorithm::Arabic),
    (Lang::Tam, "ta", Algorithm::Tamil),
];

/// What is stored for a text whose language could not be told (ISO 639-2's
/// "undetermined"), so that it is not looked at again.
pub const UNDETERMINED: &str = "und";

impl Language {
    pub const ENGLISH: Language = Language(Lang::Eng);
    pub const RUSSIAN: Language = Language(Lang::Rus);

    /// Its code: ISO 639-1 where it has a word rule, else ISO 639-3.
    pub fn code(self) -> &'static str {
        match RULES.iter().find(|(l, ..)| *l == self.0) {
            Some((_, code, _)) => code,
            None => self.0.code(),
        }
    }

    /// The language of a stored code; none for [`UNDETERMINED`] or a code
    /// this build does not know.
    pub fn from_code(code: &str) -> Option<Language> {
        RULES
            .iter()
            .find(|(_, c, _)| *c == code)
            .map(|(l, ..)| Language(*l))
            .or_else(|| Lang::from_code(code).map(Language))
    }

    /// Its English name: "Russian".
    pub fn name(self) -> &'static str {
        self.0.eng_name()
    }

    /// Its word rule, if Carrel can judge its words.
    pub fn rule(self) -> Option<WordRule> {
        RULES
            .iter()
            .find(|(l, ..)| *l == self.0)
            .map(|&(lang, code, algorithm)| WordRule {
                language: Language(lang),
                code,
                algorithm,
            })
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

/// A document's or passage's language, when its text tells it reliably
/// (whatlang's own threshold). Headings alone, code and tables often do
/// not: those are none, and judged in the query's language.
pub fn detect(text: &str) -> Option<Language> {
    whatlang::detect(text)
        .filter(|info| info.is_reliable())
        .map(|info| Language(info.lang()))
}

/// A query's language. A query is short, so where whatlang is not sure
/// among all its languages it chooses among the library's own languages
/// and English (the script alone tells "bees in winter" from "пчёлы
/// зимой" there); none when neither tells.
pub fn detect_query(text: &str, library: &[Language]) -> Option<Language> {
    if let Some(sure) = detect(text) {
        return Some(sure);
    }
    let mut allowed: Vec<Lang> = library.iter().map(|l| l.0).collect();
    if !allowed.contains(&Lang::Eng) {
        allowed.push(Lang::Eng);
    }
    Detector::with_allowlist(allowed)
        .detect_lang(text)
        .map(Language)
}

/// How the words of one language are judged: their Snowball stems, less
/// its function words.
#[derive(Debug, Clone, Copy)]
pub struct WordRule {
    language: Language,
    code: &'static str,
    algorithm: Algorithm,
}

impl WordRule {
    /// English's: the rule for a text whose language is not told.
    pub const ENGLISH: WordRule = WordRule {
        language: Language::ENGLISH,
        code: "en",
        algorithm: Algorithm::English,
    };

    pub fn language(self) -> Language {
        self.language
    }

    /// Whether `word` (lowercase) is a function word of this language.
    pub fn is_function_word(self, word: &str) -> bool {
        if self.language == Language::ENGLISH {
            return crate::words::is_function_word(word);
        }
        stop_words::lookup(self.code).is_some_and(|list| list.contains(&word))
    }

    /// Stemmed content terms of a text, in order, repeats kept. Russian's
    /// "ё" is read as "е", as Snowball's Russian stemmer expects (it leaves
    /// "пчёлы" whole but stems "пчелы" to "пчел") and as most text spells it.
    pub fn stem_sequence(self, text: &str) -> Vec<String> {
        let stemmer = Stemmer::create(self.algorithm);
        let russian = self.language == Language::RUSSIAN;
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| match w.to_lowercase() {
                w if russian => w.replace('ё', "е"),
                w => w,
            })
            .filter(|w| !self.is_function_word(w))
            .map(|w| stemmer.stem(&w).into_owned())
            .collect()
    }

    /// Stemmed content terms of a text.
    pub fn stems(self, text: &str) -> HashSet<String> {
        self.stem_sequence(text).into_iter().collect()
    }
}

/// Why the lexical checks could not judge a passage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unjudged {
    /// The query is in one language and the passage in another: no stem
    /// of one is a stem of the other, so a veto would refuse every
    /// translation.
    CrossLingual { query: Language, passage: Language },
    /// Carrel has no word rule for the passage's language.
    NoWordRule(Language),
}

impl Unjudged {
    /// The sentence the debug pane and the CLI show: "cross-lingual, en → ru".
    pub fn says(self) -> String {
        match self {
            Unjudged::CrossLingual { query, passage } => {
                format!("cross-lingual, {query} → {passage}")
            }
            Unjudged::NoWordRule(l) => format!("no word rule for {} ({l})", l.name()),
        }
    }
}

/// The word rule the lexical checks judge a query and a passage by: the
/// passage's language's, when the query is in it too (or either is not
/// known: a query or passage whose language is not told is taken to be in
/// the other's, and one where neither is told, English, as before any
/// language was detected).
pub fn lexical_rule(
    query: Option<Language>,
    passage: Option<Language>,
) -> Result<WordRule, Unjudged> {
    match (query, passage) {
        (Some(q), Some(p)) if q != p => Err(Unjudged::CrossLingual {
            query: q,
            passage: p,
        }),
        _ => {
            let language = passage.or(query).unwrap_or(Language::ENGLISH);
            language.rule().ok_or(Unjudged::NoWordRule(language))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_and_short_queries_are_told_apart() {
        let ru = "Пчёлы зимуют в улье плотным клубом и греются, поедая мёд; \
                  пасечник не открывает улей до весеннего облёта.";
        assert_eq!(detect(ru), Some(Language::RUSSIAN));
        let en = "Bees spend the winter in a tight cluster inside the hive, \
                  warming themselves by eating the honey they stored.";
        assert_eq!(detect(en), Some(Language::ENGLISH));
        // Short queries, told among the library's languages and English.
        let library = [Language::RUSSIAN];
        assert_eq!(
            detect_query("bees in winter", &library),
            Some(Language::ENGLISH)
        );
        assert_eq!(
            detect_query("пчёлы зимой", &library),
            Some(Language::RUSSIAN)
        );
        assert_eq!(detect_query("1234 5678", &library), None);
    }

    #[test]
    fn codes_round_trip_and_name_the_language() {
        for code in ["en", "ru", "de", "jpn", "ukr"] {
            assert_eq!(Language::from_code(code).unwrap().code(), code);
        }
        assert_eq!(Language::from_code(UNDETERMINED), None);
        assert_eq!(Language::RUSSIAN.name(), "Russian");
    }

    #[test]
    fn words_are_judged_within_one_language_only() {
        let (en, ru) = (Some(Language::ENGLISH), Some(Language::RUSSIAN));
        assert_eq!(
            lexical_rule(en, ru).unwrap_err().says(),
            "cross-lingual, en → ru"
        );
        assert_eq!(lexical_rule(ru, ru).unwrap().language(), Language::RUSSIAN);
        assert_eq!(
            lexical_rule(None, ru).unwrap().language(),
            Language::RUSSIAN
        );
        assert_eq!(
            lexical_rule(en, None).unwrap().language(),
            Language::ENGLISH
        );
        assert_eq!(
            lexical_rule(None, None).unwrap().language(),
            Language::ENGLISH
        );
        let jpn = Language::from_code("jpn");
        assert_eq!(
            lexical_rule(jpn, jpn).unwrap_err().says(),
            "no word rule for Japanese (jpn)"
        );
        // Russian stems meet across inflections, less function words.
        let rule = Language::RUSSIAN.rule().unwrap();
        assert_eq!(rule.stem_sequence("как зимуют пчёлы"), ["зим", "пчел"]);
        assert_eq!(rule.stem_sequence("Зимовка пчел"), ["зимовк", "пчел"]);
        assert!(rule.stems("и в на").is_empty());
        // English keeps Carrel's own list.
        let rule = Language::ENGLISH.rule().unwrap();
        assert_eq!(rule.stem_sequence("using the starters"), ["starter"]);
    }
}
