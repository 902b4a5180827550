//! Records the commit this build comes from (`carrel --version`, the app's
//! Settings → About): `git rev-parse` when built from a clone, else
//! `$CARREL_COMMIT`, else "unknown".

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=CARREL_COMMIT");
    // A new commit moves HEAD or the branch it names.
    for path in [".git/HEAD", ".git/refs/heads", ".git/packed-refs"] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let from_git = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    let commit = from_git
        .or_else(|| std::env::var("CARREL_COMMIT").ok())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=CARREL_COMMIT={commit}");
}
