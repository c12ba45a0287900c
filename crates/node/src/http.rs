//! The daemons' one HTTP server: hyper on a small tokio runtime of its own,
//! serving the controller's admin API and every daemon's `/metrics`
//! (docs/runtime.md).
//!
//! What the hand-written servers it replaces could not do:
//!
//! * **Concurrent connections.** Each connection is its own task, up to
//!   [`MAX_CONNECTIONS`] (fewer if the process may not open that many
//!   descriptors, [`connection_limit`]); a slow or idle client holds one
//!   task, not the server. Slow or silent connections take a slot each for
//!   at most [`HEADER_DEADLINE`] (or [`CONNECTION_DEADLINE`] once their
//!   head is in), so they delay an authenticated request only while more
//!   than [`MAX_CONNECTIONS`] are open at once: hundreds of them
//!   (`a_get_is_answered_beside_300_slow_connections` in
//!   crates/node/tests/admin_api.rs) cost an idle task each.
//! * **Deadlines.** The request head must arrive within [`HEADER_DEADLINE`]
//!   (hyper's `header_read_timeout`) and a connection is dropped after
//!   [`CONNECTION_DEADLINE`].
//! * **Limits.** Heads are capped by hyper's buffer ([`MAX_HEAD`]).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};

/// Connections served at once; more wait in the listen backlog. An idle
/// connection costs a socket and a parked task (a few KiB), so the bound is
/// set by descriptors, not memory: far above what slow clients on one
/// host open, far below a default descriptor limit once raised.
pub const MAX_CONNECTIONS: usize = 1024;
/// Descriptors left for everything else a daemon opens (its UDP sockets,
/// RocksDB's files, the state file).
const RESERVED_FDS: u64 = 256;
/// Time for a request line and headers to arrive.
pub const HEADER_DEADLINE: Duration = Duration::from_secs(2);
/// Time a connection may live in all.
pub const CONNECTION_DEADLINE: Duration = Duration::from_secs(10);
/// hyper's read buffer, which bounds a request head (its minimum is 8 KiB).
pub const MAX_HEAD: usize = 16 * 1024;

/// A complete response.
pub type Reply = Response<Full<Bytes>>;

/// Serves `listener` with `handle` until `stop` is set, on a tokio runtime of
/// `threads` threads named `name`; blocks the calling thread.
pub fn serve_blocking<H, F>(
    listener: std::net::TcpListener,
    name: &str,
    threads: usize,
    stop: Arc<AtomicBool>,
    handle: H,
) -> std::io::Result<()>
where
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        // Blocking work (the admin API's state changes) runs here, a couple
        // at a time: they share one lock anyway.
        .max_blocking_threads(2)
        .thread_name(name)
        .enable_io()
        .enable_time()
        .build()?;
    listener.set_nonblocking(true)?;
    let limit = connection_limit();
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        accept_loop(listener, limit, stop, Arc::new(handle)).await;
        Ok(())
    });
    // Connections still open get no more than their deadlines anyway.
    rt.shutdown_timeout(Duration::from_millis(200));
    result
}

/// Connections this process can serve at once: [`MAX_CONNECTIONS`], after
/// raising the soft descriptor limit toward the hard one (a common default
/// soft limit, 1,024, would otherwise be reached first and turn accepts
/// into EMFILE), less [`RESERVED_FDS`]; at least 16.
pub fn connection_limit() -> usize {
    let want = MAX_CONNECTIONS as u64 + RESERVED_FDS;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 16;
        }
        if lim.rlim_cur < want {
            let raised = libc::rlimit {
                rlim_cur: want.min(lim.rlim_max),
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = raised.rlim_cur;
            }
        }
        lim.rlim_cur
    };
    (soft.saturating_sub(RESERVED_FDS) as usize).clamp(16, MAX_CONNECTIONS)
}

async fn accept_loop<H, F>(
    listener: tokio::net::TcpListener,
    limit: usize,
    stop: Arc<AtomicBool>,
    handle: Arc<H>,
) where
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let permits = Arc::new(tokio::sync::Semaphore::new(limit));
    while !stop.load(Ordering::Relaxed) {
        // Wake up now and then to see `stop`.
        let Ok(permit) =
            tokio::time::timeout(Duration::from_millis(100), permits.clone().acquire_owned()).await
        else {
            continue;
        };
        let permit = permit.expect("the semaphore is never closed");
        let Ok(accepted) =
            tokio::time::timeout(Duration::from_millis(100), listener.accept()).await
        else {
            continue;
        };
        let Ok((stream, _)) = accepted else {
            // EMFILE and the like: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let answer = handle(req);
                async move { Ok::<_, std::convert::Infallible>(answer.await) }
            });
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_DEADLINE)
                .max_buf_size(MAX_HEAD)
                // One request per connection: no idle keep-alive to bound.
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), svc);
            let _ = tokio::time::timeout(CONNECTION_DEADLINE, conn).await;
            drop(permit);
        });
    }
}
