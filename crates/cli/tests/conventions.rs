//! Command-line conventions, end to end on the binary: Ctrl-C during a
//! sweep keeps the finished runs (exit 130), progress is plain lines when
//! stderr is a pipe, `--load -0.5` is a negative load rather than a flag,
//! and `completions SHELL` prints a script.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::{bin, netsched};

/// 2 policies × 10 loads, each run long enough (600 k tasks) that a sweep
/// cannot finish in the moment between a run's `done` line and SIGINT.
fn sweep() -> String {
    common::small_fat_tree(
        "seed = 1\n[sweep]\npolicies = [\"horus\", \"rs-h\"]\n\
         loads = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]\n",
        20_000,
    )
}

/// SIGINT after the first run finished: the run in progress is abandoned,
/// every finished run is in runs.csv, and the exit code is 130.
#[test]
fn sigint_writes_the_finished_runs_and_exits_130() {
    let dir = common::temp_dir("sigint");
    let cfg = common::write_config(&dir, "sweep.toml", sweep());
    let out = dir.join("out");
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Command::new(bin())
        .args(["sim", "-c", &cfg, "--threads", "1", "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for l in BufReader::new(stderr).lines() {
            let l = l.unwrap();
            let _ = tx.send(l.clone());
            lines.push(l);
        }
        lines
    });
    // Wait (generously: a busy machine) for the first finished run.
    loop {
        let l = rx
            .recv_timeout(Duration::from_secs(600))
            .expect("a run finishes");
        if l.contains(": done") {
            break;
        }
    }
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let status = child.wait().unwrap();
    let lines = reader.join().unwrap();
    let all = lines.join("\n");
    assert_eq!(status.code(), Some(130), "{all}");
    let done = lines.iter().filter(|l| l.contains(": done")).count();
    assert!((1..20).contains(&done), "{all}");
    assert!(
        all.contains(&format!(
            "interrupted: wrote the {done} finished run(s) of 20"
        )),
        "{all}"
    );
    let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + done, "{runs}");
    // The runs kept are the first ones of the sweep, in order.
    for (i, row) in runs.lines().skip(1).enumerate() {
        let load = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95][i % 10];
        let policy = if i < 10 { "horus" } else { "rs-h" };
        assert!(
            row.starts_with(&format!("{policy},{load},")),
            "row {i}: {row}"
        );
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["runs"].as_array().unwrap().len(), done);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Piped, progress is plain lines: each run's start and end, `run k/N`.
#[test]
fn piped_progress_is_plain_lines_naming_run_k_of_n() {
    let dir = common::temp_dir("progress");
    let cfg = common::write_config(
        &dir,
        "small.toml",
        sweep().replace("tasks_per_worker = 20000", "tasks_per_worker = 20"),
    );
    let (code, _, err) = netsched(&[
        "sim",
        "-c",
        &cfg,
        "--load",
        "0.5,0.9",
        "--policy",
        "horus",
        "--out",
        &dir.join("out").to_string_lossy(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("run 1/2 horus load 0.5: started"), "{err}");
    assert!(err.contains("run 2/2 horus load 0.9: done"), "{err}");
    // No terminal control sequences in a log.
    assert!(!err.contains('\x1b'), "{err:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_negative_load_is_a_value_not_a_flag() {
    let dir = common::temp_dir("negload");
    let cfg = common::write_config(&dir, "s.toml", sweep());
    for args in [
        vec!["sim", "-q", "-c", cfg.as_str(), "--load", "-0.5"],
        vec!["pull", "-q", "--load", "-0.5"],
        vec!["sim", "-q", "-c", cfg.as_str(), "--load", "0.5,-0.5"],
    ] {
        let (code, _, err) = netsched(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("negative"), "{args:?}: {err}");
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, mark) in [
        ("bash", "_netsched()"),
        ("zsh", "#compdef netsched"),
        ("fish", "complete -c netsched"),
    ] {
        let (code, out, err) = netsched(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(mark), "{shell}: {out}");
        // Subcommands and their options are in it.
        assert!(out.contains("flowsim") && out.contains("check"), "{shell}");
    }
}

/// The top-level help names the four systems the commands implement.
#[test]
fn help_names_the_four_systems() {
    let (code, out, _) = netsched(&["--help"]);
    assert_eq!(code, 0);
    for s in ["Horus", "RackSched", "Draconis", "Baraat"] {
        assert!(out.contains(s), "{s} missing from --help:\n{out}");
    }
}
