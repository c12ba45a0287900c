//! Independent jobs over a thread pool, taken one at a time in a given
//! order by whichever thread is free (longest first: the classic list
//! schedule whose tail is at most one job).
//!
//! Rayon's `par_iter` splits its list into runs that one thread works
//! through alone: at 10 tasks per worker, the datacenter simulation ran its
//! last fifth on one core while the other idled. Here the next job is one
//! shared counter away.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `job(i)` for every `i` of `order`, each thread taking the next one
/// when it is free; returns each index with its result, in no set order.
pub fn run_in_order<T: Send>(
    pool: &rayon::ThreadPool,
    order: &[usize],
    job: impl Fn(usize) -> T + Sync,
) -> Vec<(usize, T)> {
    let next = AtomicUsize::new(0);
    pool.broadcast(|_| {
        let mut mine = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            mine.push((i, job(i)));
        }
        mine
    })
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Condvar, Mutex};
    use std::time::Duration;

    fn pool(threads: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
    }

    #[test]
    fn every_job_runs_once() {
        let order: Vec<usize> = (0..100).rev().collect();
        let mut done = run_in_order(&pool(2), &order, |i| i * 2);
        done.sort();
        assert_eq!(done, (0..100).map(|i| (i, i * 2)).collect::<Vec<_>>());
    }

    #[test]
    fn one_thread_takes_the_jobs_in_the_given_order() {
        let order = [3, 1, 4, 0, 2];
        let seen = Mutex::new(Vec::new());
        run_in_order(&pool(1), &order, |i| seen.lock().unwrap().push(i));
        assert_eq!(*seen.lock().unwrap(), order);
    }

    /// The first job does not finish until every other one has: a free
    /// thread must take all of them while the first thread is held (a
    /// split list left some behind the first job, on its thread).
    #[test]
    fn a_long_job_leaves_no_other_job_behind_it() {
        let jobs = 64;
        let others_done = (Mutex::new(0usize), Condvar::new());
        let order: Vec<usize> = (0..jobs).collect();
        let results = run_in_order(&pool(2), &order, |i| {
            let (count, changed) = &others_done;
            if i == 0 {
                // Bounded, so a failure fails instead of hanging.
                let (count, _) = changed
                    .wait_timeout_while(count.lock().unwrap(), Duration::from_secs(20), |c| {
                        *c < jobs - 1
                    })
                    .unwrap();
                *count
            } else {
                *count.lock().unwrap() += 1;
                changed.notify_all();
                0
            }
        });
        let first = results.iter().find(|(i, _)| *i == 0).unwrap().1;
        assert_eq!(first, jobs - 1, "jobs left waiting behind the long one");
    }
}
