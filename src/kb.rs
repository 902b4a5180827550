//! Libraries as owned, addressable things: the [`Kb`] slug that names one,
//! and the [`Identity`] each library file stores about itself. The list of
//! libraries kept on this machine is the shelf (`library::shelf`).
//!
//! One owner per fact: a library's slug, title, owner and description live
//! in its own file (`store::identity`), so a library folder copied to
//! another machine keeps them. The shelf only says where the libraries are.

use serde::{Deserialize, Serialize};

/// The slug of the library a library file had before it had an identity,
/// and of every library until it is named: `carrel kb create` names new ones.
pub const DEFAULT_KB: &str = "default";

/// The longest slug: short enough to type after `@kb:`.
pub const KB_MAX_CHARS: usize = 32;

/// A library's slug: 1–32 characters of lowercase ASCII letters, digits and
/// `-`, starting with a letter, so it can follow `@kb:` in a chat message
/// and name a folder on every platform.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, specta::Type)]
#[serde(transparent)]
pub struct Kb(String);

/// Read back (a kept chat turn) only if it is still a valid name.
impl<'de> Deserialize<'de> for Kb {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Kb, D::Error> {
        Kb::parse(&String::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl Kb {
    /// Checks `slug`; the error is a sentence that says what to type instead.
    pub fn parse(slug: &str) -> std::result::Result<Kb, BadKb> {
        let bad = |why: &str| BadKb {
            slug: slug.to_string(),
            why: why.to_string(),
        };
        if slug.is_empty() {
            return Err(bad("it is empty"));
        }
        if slug.chars().count() > KB_MAX_CHARS {
            return Err(bad(&format!("it is longer than {KB_MAX_CHARS} characters")));
        }
        if !slug.starts_with(|c: char| c.is_ascii_lowercase()) {
            return Err(bad("it must start with a lowercase letter"));
        }
        if let Some(c) = slug
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(bad(&format!(
                "`{c}` is not allowed: use lowercase letters, digits and `-`"
            )));
        }
        Ok(Kb(slug.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Kb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0)
    }
}

/// A slug [`Kb::parse`] refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{slug}` is not a library name: {why} (for example `research` or `team-notes`)")]
pub struct BadKb {
    pub slug: String,
    pub why: String,
}

/// What a library says about itself, stored in its own file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, specta::Type)]
pub struct Identity {
    pub kb: Kb,
    pub title: String,
    /// Who keeps it: a name or an address. `None` until someone says.
    pub owner: Option<String>,
    pub description: String,
}

/// A read token's prefix: it tells a person who finds one what it opens.
const TOKEN_PREFIX: &str = "carrel_";

/// A secret that lets its holder read one library through `carrel serve`,
/// sent as `Authorization: Bearer TOKEN`. It is shown once, when made; the
/// library file keeps only its [`TokenDigest`].
#[derive(Clone, PartialEq, Eq)]
pub struct ReadToken(String);

impl ReadToken {
    /// A new token: 32 bytes from the operating system's CSPRNG.
    pub fn generate() -> std::io::Result<ReadToken> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(ReadToken(format!("{TOKEN_PREFIX}{hex}")))
    }

    /// The token as the client sent it.
    pub fn from_header(value: &str) -> ReadToken {
        ReadToken(value.trim().to_string())
    }

    pub fn secret(&self) -> &str {
        &self.0
    }

    pub fn digest(&self) -> TokenDigest {
        use sha2::{Digest, Sha256};
        let hash = Sha256::digest(self.0.as_bytes());
        TokenDigest(hash.iter().map(|b| format!("{b:02x}")).collect())
    }
}

/// Never printed by `{:?}`: a token in a log is a token given away.
impl std::fmt::Debug for ReadToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ReadToken(…)")
    }
}

/// The SHA-256 of a [`ReadToken`], in hex: what the library file keeps and
/// what a request's token is compared by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenDigest(pub String);

/// A read token as the library lists it: never the secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenInfo {
    pub id: i64,
    /// Whom or what it was made for.
    pub label: String,
    /// Unix seconds.
    pub created: i64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_fresh_and_only_their_digest_is_compared() {
        let (a, b) = (
            ReadToken::generate().unwrap(),
            ReadToken::generate().unwrap(),
        );
        assert_ne!(a, b);
        assert!(a.secret().starts_with("carrel_") && a.secret().len() == 7 + 64);
        assert_eq!(
            ReadToken::from_header(&format!(" {} ", a.secret())).digest(),
            a.digest()
        );
        assert_ne!(a.digest(), b.digest());
        assert_eq!(format!("{a:?}"), "ReadToken(…)");
    }

    #[test]
    fn slugs_that_can_follow_an_at_kb_are_accepted_and_others_say_why() {
        for good in ["default", "research", "team-notes", "a", "r2d2"] {
            assert_eq!(Kb::parse(good).unwrap().as_str(), good);
        }
        for (bad, why) in [
            ("", "empty"),
            ("Research", "lowercase letter"),
            ("2020", "lowercase letter"),
            ("team notes", "` ` is not allowed"),
            ("notes/2020", "`/` is not allowed"),
            ("über", "lowercase letter"),
            (&"x".repeat(33), "longer than 32"),
        ] {
            let err = Kb::parse(bad).unwrap_err().to_string();
            assert!(err.contains(why), "{bad:?}: {err}");
            assert!(err.contains("for example"), "{err}");
        }
    }
}
