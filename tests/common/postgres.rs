#![allow(dead_code)] // each test crate that includes this uses its own part
//! A real PostgreSQL server with pgvector for the tests: PyPI `pgserver`
//! (pinned; `make test` installs it and names its folder in CARREL_PGVECTOR,
//! tools/setup-pgvector.sh), started on a loopback port from a temporary
//! folder, as `nobody` when the tests run as root. Included by the tests
//! that need it (`#[path]`), so the others do not build it.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A PostgreSQL server on a loopback port, from a temporary folder;
/// stopped when dropped.
pub struct Postgres {
    child: Child,
    pub url: String,
    /// The server's binaries (a replica runs from its primary's).
    bin: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        // SIGQUIT: PostgreSQL's immediate shutdown, which ends its backends
        // too (a SIGKILL would leave them running).
        unsafe { libc::kill(self.child.id() as i32, libc::SIGQUIT) };
        let _ = self.child.wait();
    }
}

/// The user PostgreSQL runs as when the tests run as root (it refuses root).
fn unprivileged() -> Option<(u32, u32)> {
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let pw = unsafe { libc::getpwnam(c"nobody".as_ptr()) };
    assert!(!pw.is_null(), "no user nobody to run PostgreSQL as");
    Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) })
}

/// Gives `folder` and all in it to the server's user.
fn give_to((uid, gid): (u32, u32), folder: &Path) {
    let status = Command::new("chown")
        .arg("-R")
        .arg(format!("{uid}:{gid}"))
        .arg(folder)
        .status()
        .unwrap();
    assert!(status.success(), "chown {}", folder.display());
}

/// `program`, run as the server's user.
fn server_command(program: PathBuf, user: Option<(u32, u32)>) -> Command {
    let mut cmd = Command::new(program);
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    cmd
}

pub fn start_postgres() -> Postgres {
    let site = PathBuf::from(std::env::var("CARREL_PGVECTOR").expect(
        "CARREL_PGVECTOR must name the folder holding PyPI pgserver: `make test` sets it (tools/setup-pgvector.sh)",
    ));
    let dir = tempfile::tempdir().unwrap();
    let user = unprivileged();
    // As root, the server's files are copied where its user can read them.
    let install = if let Some((uid, gid)) = user {
        let status = Command::new("cp")
            .arg("-a")
            .arg(site.join("pgserver"))
            .arg(site.join("pgserver.libs"))
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "copy pgserver");
        std::fs::create_dir(dir.path().join("sock")).unwrap();
        give_to((uid, gid), dir.path());
        dir.path().to_path_buf()
    } else {
        std::fs::create_dir(dir.path().join("sock")).unwrap();
        site
    };
    let bin = install.join("pgserver/pginstall/bin");
    let data = dir.path().join("data");
    let out = server_command(bin.join("initdb"), user)
        .args([
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--locale=C",
            "-D",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "initdb: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serve(bin, user, dir, &data)
}

/// A streaming read replica of `primary` (a hot standby, as
/// `pg_basebackup -R` makes one), run from the primary's binaries: the
/// primary must outlive it.
pub fn start_replica(primary: &Postgres) -> Postgres {
    let dir = tempfile::tempdir().unwrap();
    let user = unprivileged();
    std::fs::create_dir(dir.path().join("sock")).unwrap();
    if let Some(user) = user {
        give_to(user, dir.path());
    }
    let data = dir.path().join("data");
    let out = server_command(primary.bin.join("pg_basebackup"), user)
        .args(["-d", &primary.url, "-R", "-X", "stream", "-D"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pg_basebackup: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serve(primary.bin.clone(), user, dir, &data)
}

impl Postgres {
    /// Makes `user` a login role (a superuser, as pgvector's extension asks)
    /// that must give `password` over TCP; every other user stays trusted.
    pub fn require_password(&self, user: &str, password: &str) {
        let mut c = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        c.batch_execute(&format!(
            "CREATE ROLE {user} LOGIN SUPERUSER PASSWORD '{password}'"
        ))
        .unwrap();
        let hba = self._dir.path().join("data").join("pg_hba.conf");
        let rules = std::fs::read_to_string(&hba).unwrap();
        let rule = format!("host all {user} 127.0.0.1/32 scram-sha-256\n");
        std::fs::write(&hba, rule + &rules).unwrap();
        c.batch_execute("SELECT pg_reload_conf()").unwrap();
        // Wait until the server asks for it: the event, with a deadline.
        let without = self.url.replacen("postgres@", &format!("{user}@"), 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        while postgres::Client::connect(&without, postgres::NoTls).is_ok() {
            assert!(
                Instant::now() < deadline,
                "the server never asked {user} for a password"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until this replica has replayed everything `primary` had
    /// written when called: the event, with a deadline.
    pub fn wait_caught_up(&self, primary: &Postgres) {
        let mut p = postgres::Client::connect(&primary.url, postgres::NoTls).unwrap();
        let lsn: String = p
            .query_one("SELECT pg_current_wal_lsn()::text", &[])
            .unwrap()
            .get(0);
        let mut r = postgres::Client::connect(&self.url, postgres::NoTls).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let replayed: bool = r
                .query_one(
                    "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                    &[&lsn],
                )
                .unwrap()
                .get(0);
            if replayed {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the replica never replayed {lsn}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Starts the server of `data` on a free loopback port and waits until it
/// takes a connection.
fn serve(bin: PathBuf, user: Option<(u32, u32)>, dir: tempfile::TempDir, data: &Path) -> Postgres {
    let port = crate::common::free_port();
    let child = server_command(bin.join("postgres"), user)
        .arg("-D")
        .arg(data)
        .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
        .args(["-c", "fsync=off", "-k"])
        .arg(dir.path().join("sock"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pg = Postgres {
        child,
        url: format!("postgresql://postgres@127.0.0.1:{port}/postgres"),
        bin,
        _dir: dir,
    };
    // Wait until it takes a connection: the event, not a time.
    let deadline = Instant::now() + Duration::from_secs(60);
    while postgres::Client::connect(&pg.url, postgres::NoTls).is_err() {
        assert!(
            Instant::now() < deadline,
            "postgres never took a connection"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    pg
}
