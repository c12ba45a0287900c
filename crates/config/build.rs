//! Records the commit the crate is built from (`NETSCHED_COMMIT` overrides,
//! for builds outside a git checkout), so every output can say which code
//! produced it.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    println!("cargo:rerun-if-env-changed=NETSCHED_COMMIT");
    let commit = std::env::var("NETSCHED_COMMIT")
        .ok()
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the
    // branch's ref (a commit).
    for path in [
        Some("HEAD".to_string()),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", &path]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(p) = git(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "packed-refs",
    ]) {
        println!("cargo:rerun-if-changed={p}");
    }
    println!("cargo:rustc-env=NETSCHED_COMMIT={commit}");
}
