//! The controller's admin API (HTTP/JSON, bearer token) on the daemons'
//! shared hyper server ([`crate::http`]: concurrent connections, header and
//! connection deadlines, bounded heads).
//!
//! What this module adds on top:
//!
//! * **Body deadline and limit.** The body must arrive within
//!   [`BODY_DEADLINE`] and is capped at [`MAX_BODY`] (413), whatever
//!   `Content-Length` claims.
//! * **Token first.** The bearer token is checked on the head; a request
//!   without it is answered 401 before one byte of its body is read.
//! * **Durable changes.** A change is saved (file and directory fsynced)
//!   before it is answered; if the save fails the change is rolled back and
//!   answered 500, so what the API acknowledged is what a restarted
//!   controller reloads.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::json;

use super::topology::{RackEntry, WorkerEntry};
use super::{topology_json, Rejected, Slots, State};
use crate::metrics::Registry;

/// Time for a body to arrive once the head was accepted.
pub const BODY_DEADLINE: Duration = Duration::from_secs(2);
/// Largest request body (the API's bodies are a few hundred bytes).
pub const MAX_BODY: usize = 64 * 1024;

/// Constant-time comparison, so response timing does not reveal how much of
/// a guessed token was right.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut d = 0u8;
    for (x, y) in a.iter().zip(b) {
        d |= x ^ y;
    }
    std::hint::black_box(d) == 0
}

/// What a request handler needs.
struct Ctx {
    /// `Bearer <token>`.
    expected: String,
    state: Arc<Mutex<State>>,
    reg: Arc<Registry>,
    slots: Arc<Slots>,
}

/// A request once its head passed the checks and its body was read.
pub(super) struct AdminRequest {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// Serves the admin API on `listener` until `stop`; blocks the calling
/// thread.
pub(super) fn admin_loop(
    listener: std::net::TcpListener,
    token: String,
    state: Arc<Mutex<State>>,
    reg: Arc<Registry>,
    slots: Arc<Slots>,
    stop: Arc<AtomicBool>,
) {
    let ctx = Arc::new(Ctx {
        expected: format!("Bearer {token}"),
        state,
        reg,
        slots,
    });
    // Two threads: the API is rare traffic; concurrency comes from tasks.
    let served = crate::http::serve_blocking(listener, "admin-http", 2, stop, move |req| {
        handle(req, ctx.clone())
    });
    if let Err(e) = served {
        tracing::error!(target: "controller", error = %e, "admin API not started");
    }
}

fn reply(code: u16, body: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(CONTENT_TYPE, "application/json".parse().expect("valid"));
    if code == 401 {
        r.headers_mut()
            .insert(WWW_AUTHENTICATE, "Bearer".parse().expect("valid"));
    }
    r
}

async fn handle(req: Request<Incoming>, ctx: Arc<Ctx>) -> Response<Full<Bytes>> {
    let started = Instant::now();
    let (code, body) = answer(req, &ctx).await;
    ctx.reg.observe(ctx.slots.admin_time, started.elapsed());
    if let Some((_, slot)) = ctx.slots.admin.iter().find(|(c, _)| *c == code) {
        ctx.reg.inc(*slot);
    }
    if let Some(why) = Rejected::of_status(code) {
        ctx.slots.reject(&ctx.reg, why);
    }
    reply(code, &body)
}

async fn answer(req: Request<Incoming>, ctx: &Ctx) -> (u16, serde_json::Value) {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    if method == Method::GET && path == "/healthz" {
        return (200, json!({"ok": true}));
    }
    // The token, before anything of the body is read.
    let authorized = req
        .headers()
        .get(AUTHORIZATION)
        .is_some_and(|a| ct_eq(a.as_bytes(), ctx.expected.as_bytes()));
    if !authorized {
        return (401, json!({"error": "missing or wrong bearer token"}));
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return (413, json!({"error": format!("body over {MAX_BODY} bytes")}));
    }
    let body = match tokio::time::timeout(
        BODY_DEADLINE,
        Limited::new(req.into_body(), MAX_BODY).collect(),
    )
    .await
    {
        Err(_) => return (408, json!({"error": "body not received in time"})),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return (413, json!({"error": format!("body over {MAX_BODY} bytes")}))
        }
        Ok(Err(e)) => return (400, json!({"error": format!("body: {e}")})),
        Ok(Ok(b)) => b.to_bytes().to_vec(),
    };
    let req = AdminRequest {
        method: method.to_string(),
        path,
        body,
    };
    // The state lock and the fsync block: off the async threads.
    let state = ctx.state.clone();
    tokio::task::spawn_blocking(move || {
        let mut st = state.lock().unwrap();
        apply(&mut st, &req)
    })
    .await
    .unwrap_or_else(|_| (500, json!({"error": "internal error"})))
}

/// Runs a request against the state; a change is saved before it is
/// answered, and undone (500) if it cannot be.
pub(super) fn apply(st: &mut State, req: &AdminRequest) -> (u16, serde_json::Value) {
    if req.method == "GET" {
        return route(st, req);
    }
    let before = (st.topo.clone(), st.daemon_up.clone(), st.heard.clone());
    let r = route(st, req);
    if !matches!(r.0, 200 | 201) {
        // A refused change changes nothing (not even the next free id).
        (st.topo, st.daemon_up, st.heard) = before;
        return r;
    }
    if let Err(e) = st.save() {
        (st.topo, st.daemon_up, st.heard) = before;
        tracing::error!(
            target: "controller",
            method = %req.method,
            path = %req.path,
            error = %e,
            "state not saved; admin change rolled back"
        );
        return (
            500,
            json!({"error": format!("state not saved, change rolled back: {e}")}),
        );
    }
    tracing::info!(
        target: "controller",
        method = %req.method,
        path = %req.path,
        result = %r.1,
        "admin change"
    );
    r
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewWorker {
    pool: u16,
    /// Rack id (cluster-wide, from the topology) or its index in the pool.
    #[serde(default)]
    rack_id: Option<u64>,
    #[serde(default)]
    rack: Option<usize>,
    addr: SocketAddr,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewRack {
    pool: u16,
    leaf: SocketAddr,
    workers: Vec<SocketAddr>,
    #[serde(default)]
    spine: Option<usize>,
}

fn bad(msg: impl Into<String>) -> (u16, serde_json::Value) {
    (400, json!({"error": msg.into()}))
}

fn route(st: &mut State, req: &AdminRequest) -> (u16, serde_json::Value) {
    let path: Vec<&str> = req.path.trim_end_matches('/').split('/').skip(1).collect();
    match (req.method.as_str(), path.as_slice()) {
        ("GET", ["v1", "topology"]) => (200, topology_json(st, Instant::now())),
        ("POST", ["v1", "workers"]) => {
            let w: NewWorker = match serde_json::from_slice(&req.body) {
                Ok(w) => w,
                Err(e) => return bad(format!("body: {e}")),
            };
            let id = st.topo.take_id();
            let Some(p) = st.topo.pool_mut(w.pool) else {
                return (404, json!({"error": format!("no pool {}", w.pool)}));
            };
            let ri = match (w.rack_id, w.rack) {
                (Some(id), _) => p.racks.iter().position(|r| r.id == id),
                (None, Some(i)) => (i < p.racks.len()).then_some(i),
                (None, None) => return bad("rack_id or rack is required"),
            };
            let Some(ri) = ri.filter(|&i| !p.racks[i].removed) else {
                return (404, json!({"error": "no such rack"}));
            };
            let rack = &mut p.racks[ri];
            if rack.workers.iter().any(|x| x.addr == w.addr && !x.removed) {
                return (409, json!({"error": "worker address already in the rack"}));
            }
            rack.workers.push(WorkerEntry {
                id,
                addr: w.addr,
                removed: false,
            });
            let node = rack.workers.len() - 1;
            (
                201,
                json!({"id": id, "pool": w.pool, "rack": ri, "node": node, "leaf": rack.leaf.to_string()}),
            )
        }
        ("DELETE", ["v1", "workers", id]) => {
            let Ok(id) = id.parse::<u64>() else {
                return bad("worker id must be an integer");
            };
            for p in &mut st.topo.pools {
                for (ri, r) in p.racks.iter_mut().enumerate() {
                    if let Some((j, w)) = r
                        .workers
                        .iter_mut()
                        .enumerate()
                        .find(|(_, w)| w.id == id && !w.removed)
                    {
                        w.removed = true;
                        return (200, json!({"id": id, "pool": p.id, "rack": ri, "node": j}));
                    }
                }
            }
            (404, json!({"error": format!("no worker {id}")}))
        }
        ("POST", ["v1", "racks"]) => {
            let n: NewRack = match serde_json::from_slice(&req.body) {
                Ok(n) => n,
                Err(e) => return bad(format!("body: {e}")),
            };
            if n.workers.is_empty() {
                return bad("workers: at least one");
            }
            let ids: Vec<u64> = (0..=n.workers.len()).map(|_| st.topo.take_id()).collect();
            let Some(p) = st.topo.pool_mut(n.pool) else {
                return (404, json!({"error": format!("no pool {}", n.pool)}));
            };
            if n.spine.is_some_and(|s| s >= p.spines.len()) {
                return bad("spine: no such spine");
            }
            if p.racks.iter().any(|r| r.leaf == n.leaf && !r.removed) {
                return (409, json!({"error": "a rack with this leaf exists"}));
            }
            let ri = p.racks.len();
            p.racks.push(RackEntry {
                id: ids[0],
                leaf: n.leaf,
                spine: n.spine.unwrap_or(ri % p.spines.len()),
                removed: false,
                workers: n
                    .workers
                    .iter()
                    .zip(&ids[1..])
                    .map(|(a, id)| WorkerEntry {
                        id: *id,
                        addr: *a,
                        removed: false,
                    })
                    .collect(),
            });
            let leaf = n.leaf;
            st.daemon_up.insert(leaf, true);
            // A new leaf gets the usual grace period before it counts as failed.
            st.heard.insert(leaf, Instant::now());
            (
                201,
                json!({"id": ids[0], "pool": n.pool, "rack": ri, "worker_ids": &ids[1..]}),
            )
        }
        ("DELETE", ["v1", "racks", id]) => {
            let Ok(id) = id.parse::<u64>() else {
                return bad("rack id must be an integer");
            };
            for p in &mut st.topo.pools {
                if let Some((ri, r)) = p
                    .racks
                    .iter_mut()
                    .enumerate()
                    .find(|(_, r)| r.id == id && !r.removed)
                {
                    r.removed = true;
                    return (200, json!({"id": id, "pool": p.id, "rack": ri}));
                }
            }
            (404, json!({"error": format!("no rack {id}")}))
        }
        (_, ["v1", "topology"]) | (_, ["v1", "workers", ..]) | (_, ["v1", "racks", ..]) => {
            (405, json!({"error": "method not allowed"}))
        }
        _ => (404, json!({"error": "no such endpoint"})),
    }
}

impl State {
    /// Saves the topology to the state file, if there is one.
    pub(super) fn save(&self) -> Result<(), crate::error::Error> {
        match &self.state_path {
            Some(p) => self.topo.save(p),
            None => Ok(()),
        }
    }
}
