//! Records a digest of the uncommitted changes under `crates/` (or `clean`),
//! so the Python result cache (python/netsched/sweep.py `build_id`) can key
//! development builds of a dirty tree apart from the commit they sit on,
//! while a rebuild of a clean commit keeps hitting its entries.
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn git(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .current_dir(root)
        .args(args)
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// `git hash-object` of everything that differs from HEAD under `crates/`:
/// the diff of tracked files and the names and contents of untracked ones.
fn tree_digest(root: &Path) -> Option<String> {
    let mut changes = git(root, &["diff", "HEAD", "--binary", "--", "crates"])?;
    let untracked = git(
        root,
        &["ls-files", "--others", "--exclude-standard", "--", "crates"],
    )?;
    for name in String::from_utf8_lossy(&untracked).lines() {
        changes.extend_from_slice(name.as_bytes());
        changes.extend(std::fs::read(root.join(name)).unwrap_or_default());
    }
    if changes.is_empty() {
        return Some("clean".into());
    }
    let mut child = Command::new("git")
        .current_dir(root)
        .args(["hash-object", "--stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(&changes).ok()?;
    let out = child.wait_with_output().ok()?;
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // Any edit under crates/ (only this leaf crate rebuilds for it).
    println!("cargo:rerun-if-changed={}", root.join("crates").display());
    if let Some(head) = git(
        &root,
        &["rev-parse", "--path-format=absolute", "--git-path", "HEAD"],
    ) {
        println!(
            "cargo:rerun-if-changed={}",
            String::from_utf8_lossy(&head).trim()
        );
    }
    let digest = tree_digest(&root).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=NETSCHED_SOURCE_TREE={digest}");
}
