//! `netsched sim`'s progress and its record of finished runs.
//!
//! On a terminal, one bar redrawn in place (indicatif): run k of N, its
//! label, tasks done of those expected, the rate and the time left. Piped
//! (CI logs, `2> log`), plain lines instead: one when a run starts, one
//! every few seconds while it goes, one when it ends. Every finished run is
//! kept here, so that Ctrl-C can still write the runs that completed.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use netsched_sim::run::{RunObserver, RunResult};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Show {
    /// Nothing (`--quiet`).
    Nothing,
    /// Plain lines on stderr.
    Lines,
    /// An in-place bar on stderr.
    Bar,
}

impl Show {
    /// A bar if stderr is a terminal, lines otherwise; nothing if quiet.
    pub fn for_stderr(quiet: bool) -> Show {
        match (quiet, std::io::stderr().is_terminal()) {
            (true, _) => Show::Nothing,
            (false, true) => Show::Bar,
            (false, false) => Show::Lines,
        }
    }
}

/// Seconds between two plain progress lines.
const LINE_EVERY: Duration = Duration::from_secs(5);

struct Current {
    label: String,
    expected: u64,
    start: Instant,
    last_line: Instant,
}

pub struct Progress {
    show: Show,
    bar: Option<ProgressBar>,
    done: AtomicU64,
    current: Mutex<Option<Current>>,
    finished: Mutex<Vec<RunResult>>,
}

impl Progress {
    pub fn new(show: Show) -> Progress {
        let bar = (show == Show::Bar).then(|| {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{msg} [{bar:30}] {human_pos}/{human_len} tasks, {per_sec}, eta {eta}",
                )
                .expect("a valid template")
                .progress_chars("=> "),
            );
            b
        });
        Progress {
            show,
            bar,
            done: AtomicU64::new(0),
            current: Mutex::new(None),
            finished: Mutex::new(Vec::new()),
        }
    }

    /// The runs finished so far, taken out.
    pub fn take_finished(&self) -> Vec<RunResult> {
        std::mem::take(&mut *self.finished.lock().expect("not poisoned"))
    }

    /// Removes the bar (before the table or an error is printed).
    pub fn clear(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    fn line(&self, text: String) {
        match &self.bar {
            Some(b) => b.println(text),
            None => eprintln!("{text}"),
        }
    }
}

fn rate(tasks: u64, secs: f64) -> String {
    let r = tasks as f64 / secs.max(1e-9);
    if r >= 1e6 {
        format!("{:.2}M tasks/s", r / 1e6)
    } else {
        format!("{:.0}K tasks/s", r / 1e3)
    }
}

impl RunObserver for Progress {
    fn run_started(&self, index: usize, runs: usize, label: &str, expected_tasks: u64) {
        let label = format!("run {}/{runs} {label}", index + 1);
        self.done.store(0, Ordering::Relaxed);
        match self.show {
            Show::Nothing => {}
            Show::Bar => {
                let b = self.bar.as_ref().expect("a bar");
                b.reset();
                b.set_length(expected_tasks);
                b.set_message(label.clone());
                // Redrawn on a timer too: a run's first tasks may take a while.
                b.enable_steady_tick(Duration::from_millis(200));
            }
            Show::Lines => eprintln!("{label}: started, about {expected_tasks} tasks"),
        }
        *self.current.lock().expect("not poisoned") = Some(Current {
            label,
            expected: expected_tasks,
            start: Instant::now(),
            last_line: Instant::now(),
        });
    }

    fn tasks_done(&self, tasks: u64) {
        let d = self.done.fetch_add(tasks, Ordering::Relaxed) + tasks;
        match self.show {
            Show::Nothing => {}
            Show::Bar => self.bar.as_ref().expect("a bar").set_position(d),
            Show::Lines => {
                // try_lock: a simulating thread never waits for another's line.
                let Ok(mut cur) = self.current.try_lock() else {
                    return;
                };
                let Some(c) = cur.as_mut() else { return };
                if c.last_line.elapsed() < LINE_EVERY {
                    return;
                }
                c.last_line = Instant::now();
                let el = c.start.elapsed().as_secs_f64();
                let left = c.expected.saturating_sub(d) as f64 / (d as f64 / el).max(1e-9);
                eprintln!(
                    "{}: {:.1}% ({d}/{} tasks), {}, eta {:.0} s",
                    c.label,
                    100.0 * (d as f64 / c.expected.max(1) as f64).min(1.0),
                    c.expected,
                    rate(d, el),
                    left
                );
            }
        }
    }

    fn run_finished(&self, result: RunResult) {
        // Held while the line is printed: Ctrl-C's writer sees this run
        // kept exactly when its `done` line is out.
        let mut finished = self.finished.lock().expect("not poisoned");
        if self.show != Show::Nothing {
            if let Some(c) = self.current.lock().expect("not poisoned").as_ref() {
                let el = c.start.elapsed().as_secs_f64();
                self.line(format!(
                    "{}: done, {} tasks in {el:.1} s ({})",
                    c.label,
                    result.tasks,
                    rate(result.tasks, el)
                ));
            }
        }
        finished.push(result);
    }
}
