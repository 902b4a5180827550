//! The embedders a library can be made with, and what each needs: its
//! folder under the models dir, the pinned hashes of its files, and the
//! words it expects before a text. A library records its embedder
//! ([`crate::Library::embedder`]); every vector it stores carries the
//! embedder's fingerprint, so a switch makes the old vectors stale and they
//! are embedded again by the fingerprint rule.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::ModelsFrom;

/// An embedder Carrel ships. Both give 384-dimensional unit vectors.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    Serialize,
    Deserialize,
    specta::Type,
    clap::ValueEnum,
)]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 (int8 ONNX, Apache-2.0): English; the default.
    #[default]
    #[serde(rename = "all-MiniLM-L6-v2")]
    #[value(name = "all-MiniLM-L6-v2")]
    MiniLm,
    /// intfloat/multilingual-e5-small (4-bit ONNX converted by
    /// `tools/fetch-e5.sh`, MIT): about 100 languages in one space, so an
    /// English question finds a Russian passage. Half MiniLM's speed.
    #[serde(rename = "multilingual-e5-small")]
    #[value(name = "multilingual-e5-small")]
    E5Small,
}

/// Which side of a search a text is on. e5 was trained with a word before
/// each, and without them an English article found its Russian twin first
/// 29 times in 30 instead of 30 (DESIGN.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A question, or a match panel's words.
    Query,
    /// What is searched: a passage, a card.
    Passage,
}

impl EmbedderKind {
    pub const ALL: [EmbedderKind; 2] = [EmbedderKind::MiniLm, EmbedderKind::E5Small];

    /// Its name, which is also its folder under the models dir.
    pub fn name(self) -> &'static str {
        match self {
            EmbedderKind::MiniLm => "all-MiniLM-L6-v2",
            EmbedderKind::E5Small => "multilingual-e5-small",
        }
    }

    /// The embedder named `name`, if Carrel ships it.
    pub fn parse(name: &str) -> Option<EmbedderKind> {
        EmbedderKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The sha256 of its `model.onnx` and of its `tokenizer.json`.
    pub fn pins(self) -> (&'static str, &'static str) {
        match self {
            EmbedderKind::MiniLm => (
                "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
            ),
            // tools/e5/SHA256SUMS: the conversion is byte-reproducible.
            EmbedderKind::E5Small => (
                "e38a2aec5f7f4943783b97631ee4e2d58c83604529cbd6e3f1d440f706c3323f",
                "48193f04da51a1345fa3661fa28e7f51833d85955280f018114048874e14de62",
            ),
        }
    }

    /// The words this embedder expects before a text on `side`.
    pub fn prefix(self, side: Side) -> &'static str {
        match (self, side) {
            (EmbedderKind::MiniLm, _) => "",
            (EmbedderKind::E5Small, Side::Query) => "query: ",
            (EmbedderKind::E5Small, Side::Passage) => "passage: ",
        }
    }

    /// `text` as this embedder reads it on `side`.
    pub fn text(self, side: Side, text: &str) -> Cow<'_, str> {
        match self.prefix(side) {
            "" => Cow::Borrowed(text),
            p => Cow::Owned(format!("{p}{text}")),
        }
    }

    /// What to do when its files are missing, for a sentence. Where the
    /// models come from decides it: the package ships every embedder, and
    /// its user has no `make`.
    pub fn install_hint(self, from: ModelsFrom) -> &'static str {
        match (from, self) {
            (ModelsFrom::Installed, _) => {
                "reinstall Carrel's package (sudo apt install --reinstall carrel)"
            }
            (_, EmbedderKind::MiniLm) => "run `make models` (tools/fetch-models.sh)",
            (_, EmbedderKind::E5Small) => "run `make models` (tools/fetch-e5.sh)",
        }
    }
}

impl std::fmt::Display for EmbedderKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_only_e5_takes_prefixes() {
        for k in EmbedderKind::ALL {
            assert_eq!(EmbedderKind::parse(k.name()), Some(k));
        }
        assert_eq!(EmbedderKind::parse("bge-m3"), None);
        assert_eq!(EmbedderKind::MiniLm.text(Side::Query, "bread"), "bread");
        assert_eq!(
            EmbedderKind::E5Small.text(Side::Query, "bread"),
            "query: bread"
        );
        assert_eq!(
            EmbedderKind::E5Small.text(Side::Passage, "хлеб"),
            "passage: хлеб"
        );
    }
}
