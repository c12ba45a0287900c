//! The daemons' one HTTP server: hyper on a small tokio runtime of its own,
//! serving the controller's admin API and every daemon's `/metrics`
//! (docs/runtime.md).
//!
//! What the hand-written servers it replaces could not do (issue 16 item 3,
//! issue 20 item 1):
//!
//! * **Concurrent connections.** Each connection is its own task, up to
//!   [`MAX_CONNECTIONS`]; a slow or idle client holds one task, not the
//!   server.
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

/// Connections served at once; more wait in the listen backlog.
pub const MAX_CONNECTIONS: usize = 64;
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
    let result = rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        accept_loop(listener, stop, Arc::new(handle)).await;
        Ok(())
    });
    // Connections still open get no more than their deadlines anyway.
    rt.shutdown_timeout(Duration::from_millis(200));
    result
}

async fn accept_loop<H, F>(listener: tokio::net::TcpListener, stop: Arc<AtomicBool>, handle: Arc<H>)
where
    H: Fn(Request<Incoming>) -> F + Send + Sync + 'static,
    F: Future<Output = Reply> + Send + 'static,
{
    let permits = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
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
