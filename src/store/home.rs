//! Where a library's rows live, as its folder says: a `library.sqlite3`
//! file (the default), or a `postgres.json` naming the PostgreSQL server
//! that holds a team library (its URL, never a password). Every surface
//! opens a library by its folder through [`Store::open_dir`], so the
//! choice of backend is made here, once.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Store;
use crate::error::{Error, Result};
use crate::paths::DATABASE_FILE;

/// The file in a library's folder that names its PostgreSQL server.
pub const POSTGRES_FILE: &str = "postgres.json";

/// What `postgres.json` holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PostgresHome {
    /// A `postgresql://` URL without its password (the password comes from
    /// `PGPASSWORD` or `~/.pgpass`, as for `psql`).
    url: String,
    /// The library's name when the server last answered, so the shelf can
    /// name it while the server does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kb: Option<String>,
    /// When the server last answered this machine (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_ok: Option<i64>,
}

/// What the shelf knows of a team library's server without asking it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerNote {
    /// Host, port and database, for people.
    pub server: String,
    pub kb: Option<String>,
    pub last_ok: Option<i64>,
}

impl Store {
    /// Whether `dir` holds a library, of either kind.
    pub fn held_in(dir: &Path) -> bool {
        dir.join(DATABASE_FILE).is_file() || dir.join(POSTGRES_FILE).is_file()
    }

    /// Opens the library whose folder is `dir`: the PostgreSQL one its
    /// `postgres.json` names, or its SQLite file (made when there is none).
    pub fn open_dir(dir: &Path) -> Result<Store> {
        match postgres_url(dir)? {
            Some(url) => Store::open_postgres(&url, &writer()),
            None => Store::open(&dir.join(DATABASE_FILE)),
        }
    }

    /// Makes `dir` the folder of the PostgreSQL library at `url` and opens
    /// it (creating its tables on first use). The URL is kept without its
    /// password; whether one was left out is returned, so the caller can
    /// say where a password goes.
    pub fn create_postgres(dir: &Path, url: &str) -> Result<(Store, bool)> {
        let (kept, had_password) = without_password(url)?;
        let store = Store::open_postgres(url, &writer())?;
        let home = PostgresHome {
            url: kept,
            kb: None,
            last_ok: None,
        };
        write_home(dir, &home)?;
        Ok((store, had_password))
    }

    /// The folder Carrel keeps for the PostgreSQL library at `url` when a
    /// command names it by its URL (`carrel --database-url`) rather than by
    /// a folder or the shelf: `servers/HOST-PORT-DATABASE` in the data
    /// folder, whose `postgres.json` names the URL without its password. A
    /// password in `url` is kept by this process only, for this server.
    pub fn dir_for_url(url: &str) -> Result<PathBuf> {
        let (kept, _) = without_password(url)?;
        super::pg::remember_password(url);
        let server = super::pg::server_of(&kept);
        let name: String = server
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '.' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let dir = crate::paths::default_data_dir()?.join("servers").join(name);
        if postgres_url(&dir)?.as_deref() != Some(kept.as_str()) {
            let home = PostgresHome {
                url: kept,
                kb: None,
                last_ok: None,
            };
            write_home(&dir, &home)?;
        }
        Ok(dir)
    }

    /// The server a library's folder names, for people (host, port,
    /// database); none for a SQLite library.
    pub fn server_of_dir(dir: &Path) -> Result<Option<String>> {
        Ok(postgres_url(dir)?.map(|u| super::pg::server_of(&u)))
    }

    /// What the shelf knows of the server a library's folder names, without
    /// asking it; none for a SQLite library.
    pub fn server_note(dir: &Path) -> Result<Option<ServerNote>> {
        Ok(read_home(dir)?.map(|h| ServerNote {
            server: super::pg::server_of(&h.url),
            kb: h.kb,
            last_ok: h.last_ok,
        }))
    }

    /// Notes in a team library's folder that its server answered now, as
    /// the library `kb` (nothing for a SQLite library).
    pub fn note_answered(dir: &Path, kb: &str) -> Result<()> {
        let Some(mut home) = read_home(dir)? else {
            return Ok(());
        };
        home.kb = Some(kb.to_string());
        home.last_ok = Some(super::now());
        write_home(dir, &home)
    }
}

/// The URL a library folder's `postgres.json` holds, if it has one.
fn postgres_url(dir: &Path) -> Result<Option<String>> {
    Ok(read_home(dir)?.map(|h| h.url))
}

/// A library folder's `postgres.json`, if it has one.
fn read_home(dir: &Path) -> Result<Option<PostgresHome>> {
    let path = dir.join(POSTGRES_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let home: PostgresHome = serde_json::from_str(&text).map_err(|e| {
        Error::Corrupt(format!(
            "{}: {e}; it should be {{\"url\": \"postgresql://USER@HOST:PORT/DATABASE\"}}",
            path.display()
        ))
    })?;
    Ok(Some(home))
}

/// Writes a library folder's `postgres.json` whole: every process that
/// opens the library notes the server's answer in it, while others read it.
fn write_home(dir: &Path, home: &PostgresHome) -> Result<()> {
    let json = serde_json::to_string_pretty(home).expect("a URL serialises");
    crate::paths::write_whole(&dir.join(POSTGRES_FILE), (json + "\n").as_bytes())
}

/// `url` without a password (in its user part or as a `password`
/// parameter), and whether it had one. Only `postgres://` and
/// `postgresql://` URLs are taken.
fn without_password(url: &str) -> Result<(String, bool)> {
    let bad = |why: &str| {
        Error::BadPostgresUrl(format!(
            "{why}; write it as postgresql://USER@HOST:PORT/DATABASE"
        ))
    };
    let mut parsed = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(bad(&format!(
            "`{}:` is not a PostgreSQL URL",
            parsed.scheme()
        )));
    }
    let mut had = parsed.password().is_some();
    parsed
        .set_password(None)
        .map_err(|_| bad("it names no host"))?;
    let kept: Vec<(String, String)> = parsed
        .query_pairs()
        .filter(|(k, _)| {
            let secret = k == "password";
            had |= secret;
            !secret
        })
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if kept.is_empty() {
        parsed.set_query(None);
    } else {
        parsed.query_pairs_mut().clear().extend_pairs(kept);
    }
    Ok((parsed.to_string(), had))
}

/// Who this process writes as, recorded on every row it writes to a team
/// library: `CARREL_WRITER`, else the user and the machine (`ana@laptop`).
pub fn writer() -> String {
    if let Ok(w) = std::env::var("CARREL_WRITER")
        && !w.trim().is_empty()
    {
        return w.trim().to_string();
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "someone".into());
    format!("{user}@{}", machine())
}

/// This machine's name, as a team library's watches record it:
/// `CARREL_MACHINE`, else the host name.
pub fn machine() -> String {
    if let Ok(m) = std::env::var("CARREL_MACHINE")
        && !m.trim().is_empty()
    {
        return m.trim().to_string();
    }
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "this machine".into())
}

/// Where `psql` reads passwords from: `PGPASSFILE`, else `~/.pgpass`.
pub(crate) fn pgpass_file() -> Option<PathBuf> {
    std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_never_kept() {
        assert_eq!(
            without_password("postgresql://ana:s3cret@db.example:5433/team").unwrap(),
            ("postgresql://ana@db.example:5433/team".to_string(), true)
        );
        assert_eq!(
            without_password("postgres://ana@db/team?password=s3cret&sslmode=disable").unwrap(),
            ("postgres://ana@db/team?sslmode=disable".to_string(), true)
        );
        assert_eq!(
            without_password("postgresql://ana@db/team").unwrap(),
            ("postgresql://ana@db/team".to_string(), false)
        );
        let err = without_password("mysql://ana@db/team")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a PostgreSQL URL"), "{err}");
        let err = without_password("host=db user=ana")
            .unwrap_err()
            .to_string();
        assert!(err.contains("postgresql://USER@HOST"), "{err}");
    }
}
