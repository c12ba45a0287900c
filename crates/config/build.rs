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
    // Rebuild when HEAD moves: HEAD itself (a branch switch), the branch's
    // loose ref (a commit) and packed-refs (where a ref lives after `git
    // pack-refs` or in a fresh clone). Only files that exist are named: cargo
    // treats a missing `rerun-if-changed` path as always changed, which made
    // every build rerun this script and rebuild every crate above config.
    let git_path = |name: &str| {
        git(&["rev-parse", "--path-format=absolute", "--git-path", name])
            .map(std::path::PathBuf::from)
    };
    let mut watched = Vec::new();
    watched.extend(git_path("HEAD").filter(|p| p.exists()));
    watched.extend(git_path("packed-refs").filter(|p| p.exists()));
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git_path(&r)) {
        // A ref held only in packed-refs gets a loose file at the next
        // commit: then watch the folder it will appear in.
        if branch.exists() {
            watched.push(branch);
        } else if let Some(dir) = branch.parent().filter(|d| d.exists()) {
            watched.push(dir.to_path_buf());
        }
    }
    for p in watched {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    println!("cargo:rustc-env=NETSCHED_COMMIT={commit}");
}
