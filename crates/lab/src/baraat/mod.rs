//! Packet-level check of SPC over real UDP in network namespaces: Baraat
//! §5.1's batched-request experiment (Fig. 7). One client asks three
//! servers for `bytes_per_server` each, for `tasks` tasks at once; the
//! client's downlink is the bottleneck.
//!
//! veth has no bandwidth limit, so the bottleneck is a software switch: a
//! thread in its own namespace relays every datagram between the client and
//! the servers and paces the client-bound queue with a token bucket at
//! `link_bps`. It runs the SPC port data plane of crates/core
//! ([`SpcPort`](netsched_core::baraat::SpcPort), Alg. 1) on the header of every request-carrying data
//! packet and writes AR/NR into it; the client echoes them in its ACK
//! (§4.4: the receiver returns the switches' feedback to the sender). Each
//! server runs one [`SpcSender`](netsched_core::baraat::SpcSender) (Alg. 2) per flow and paces its sending at
//! the returned AR. Every datagram is a `netsched_proto` Baraat message
//! (`BaraatMessage`), decoded with typed errors; one that does not decode
//! is dropped. This module is the driver: sockets, threads, pacing and the
//! lab's loss injection, no scheduling logic of its own.
//!
//! Fair sharing uses the same machinery with every flow in one task (id 0):
//! Alg. 1 then splits the capacity max-min among all flows (ideal RCP).
//! FIFO-LM gives task *i* id *i* + 1 in arrival order.
//!
//! Every thread enters its namespace with `setns` (network namespaces are
//! per thread), so the whole experiment is one process. The modules by job:
//! `lab` (the namespaces, addresses and sockets), `switch` (the bottleneck
//! port), `server` (the senders), `client` (the receiver and its feedback
//! echo), `feedback`, `until_acked` and `task_end` (the soft state of
//! feedback, FINs and DONEs).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use netsched_core::baraat::{FlowParams, FlowPlane, FlowPlaneKind};
use netsched_core::names::FlowPolicy;
use netsched_core::Nanos;
use netsched_proto::{decode_baraat, BaraatMessage, Rate, MAX_BARAAT_PAYLOAD, MAX_DATAGRAM};

mod client;
mod error;
mod feedback;
mod lab;
mod server;
mod switch;
mod task_end;
mod until_acked;
pub use crate::netns::LabError;
use client::{client_loop, ClientResult};
pub use error::{Fig7Error, Role};
pub use lab::Lab;
use lab::{bind_port, enter};
use server::server_loop;
use switch::switch_loop;
pub use task_end::{Fin, TaskEnds};

const SERVERS: usize = 3;
const PORT_SW: u16 = 9000;
const PORT_CLIENT: u16 = 9001;
const PORT_SERVER: u16 = 9002;
/// Payload bytes per data packet.
const PAYLOAD: usize = 1200;

/// A data packet's bytes besides its payload (the SPC header's fixed size).
const DATA_HDR: usize = MAX_DATAGRAM - MAX_BARAAT_PAYLOAD;
/// A request whose feedback has not come back after this long (s) was lost
/// before the switch ran Alg. 1 on it: with feedback repeated every 20 ms,
/// an applied request is heard of long before.
const REQUEST_TIMEOUT_S: f64 = 0.5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fig7Mode {
    /// All flows in one SPC class: max-min fair (RCP-like).
    Fair,
    /// FIFO-LM: one task id per task, in arrival order.
    FifoLm,
}

impl Fig7Mode {
    /// The flow policy the mode runs: the flow registry builds the
    /// switch's port for it.
    pub fn policy(self) -> FlowPolicy {
        match self {
            Fig7Mode::Fair => FlowPolicy::Fair,
            Fig7Mode::FifoLm => FlowPolicy::Baraat,
        }
    }

    /// How the policy's SPC port classes flows: the class id a flow of
    /// the `t`-th task (0-based) carries.
    fn class_of(self, t: u32) -> u64 {
        match self.policy().plane() {
            Some(FlowPlaneKind::Spc(classes)) => classes.class_of(u64::from(t) + 1),
            None => unreachable!("fair and baraat run SPC ports"),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Fig7Opts {
    pub tasks: u32,
    pub bytes_per_server: u64,
    /// Bottleneck (client downlink) rate, bits/s.
    pub link_bps: f64,
    /// Servers' nominal NIC rate, bits/s.
    pub nic_bps: f64,
    /// SPC control interval (the "RTT" of Alg. 1/2 and footnote 5).
    pub rtt_ns: u64,
    /// Heavy threshold (bytes reserved) of the switch's FIFO-LM classifier.
    pub heavy_threshold: f64,
    /// Give up after this long.
    pub timeout: Duration,
    /// Losses injected at the switch, for the loss tests.
    pub faults: Fig7Faults,
}

/// Deterministic losses injected at the software switch: every `n`-th
/// packet of a kind is dropped (0 = none). A request-carrying data packet
/// is dropped before Alg. 1 sees it, as the drop-tail queue drops it; a
/// feedback ACK is dropped on its way from the client to the server; a
/// FIN before the switch applies it; a FIN-ACK on its way to the server
/// (whose FIN the switch has then applied); a DONE before the switch reads
/// it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Fig7Faults {
    pub drop_every_nth_request: u32,
    pub drop_every_nth_feedback_ack: u32,
    pub drop_every_nth_fin: u32,
    pub drop_every_nth_fin_ack: u32,
    pub drop_every_nth_done: u32,
}

/// What the switch's SPC state holds after the run, once every flow's FIN
/// has come back: all zero when no state leaked.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SwitchResidual {
    /// Sum of allocations A (bits/s).
    pub allocated_bps: f64,
    /// Task counters still held (FIFO-LM forgets a task at its end; fair
    /// sharing keeps its one task id 0).
    pub tasks: usize,
    pub flows: u32,
    pub demand_bps: f64,
    /// FINs applied (one per flow; repeats not counted).
    pub fins: u32,
    pub injected_drops: u64,
}

impl Default for Fig7Opts {
    fn default() -> Self {
        Fig7Opts {
            tasks: 1,
            bytes_per_server: 400_000,
            link_bps: 100e6,
            nic_bps: 1e9,
            rtt_ns: 1_000_000,
            heavy_threshold: 1e12,
            timeout: Duration::from_secs(30),
            faults: Fig7Faults::default(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Fig7Run {
    pub mode: Fig7Mode,
    /// Completion time of each task (ns), in task order.
    pub completion_ns: Vec<u64>,
    /// Payload bytes delivered in order, per task.
    pub bytes: Vec<u64>,
    pub switch_drops: u64,
    pub retransmits: u64,
    /// Bytes the switch sent to the client over (last completion × link
    /// rate): how much of the bottleneck the control loop used.
    pub utilisation: f64,
    /// Feedback ACKs the client repeated (no data packet asked for them)
    /// for flows whose task had finished.
    pub feedback_repeats_after_task_end: u64,
    pub residual: SwitchResidual,
}

/// A rate this lab computed, for the wire. Alg. 1 and 2 give finite,
/// non-negative rates below any NIC, so nothing is lost; anything else would
/// be a bug, and is sent as no rate rather than as a hostile value.
fn rate(bps: f64) -> Rate {
    Rate::new(bps).unwrap_or(Rate::ZERO)
}

/// Encodes `m` and sends it.
fn send(sock: &UdpSocket, m: BaraatMessage<'_>, to: SocketAddr) -> io::Result<usize> {
    let mut buf = [0u8; MAX_DATAGRAM];
    let n = m
        .encode(&mut buf)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    sock.send_to(&buf[..n], to)
}

/// The Baraat message in a datagram, or `None` for anything else: bytes
/// that do not decode (a typed `DecodeError`) are dropped.
fn baraat(bytes: &[u8]) -> Option<BaraatMessage<'_>> {
    decode_baraat(bytes).ok()
}

/// Payload byte `i` of packet `seq` of `flow`: checked by the client.
fn pattern(flow: u32, seq: u32, i: usize) -> u8 {
    (flow.wrapping_mul(31) ^ seq.wrapping_mul(7) ^ i as u32) as u8
}

fn packets_of(bytes: u64) -> u32 {
    bytes.div_ceil(PAYLOAD as u64) as u32
}

fn len_of(bytes: u64, seq: u32) -> usize {
    let start = seq as u64 * PAYLOAD as u64;
    (bytes - start).min(PAYLOAD as u64) as usize
}

/// A socket bound to `port` in namespace `ns`, for the thread `role`.
fn socket_in(ns: &str, port: u16, role: Role) -> Result<UdpSocket, Fig7Error> {
    enter(ns).map_err(|source| Fig7Error::Namespace { role, source })?;
    bind_port(port).map_err(io_of(role))
}

fn io_of(role: Role) -> impl Fn(io::Error) -> Fig7Error {
    move |source| Fig7Error::Io { role, source }
}

fn run_fig7(lab: &Lab, mode: Fig7Mode, o: &Fig7Opts) -> Result<Fig7Run, Fig7Error> {
    let params = FlowParams {
        capacity_bps: o.link_bps,
        interval: Nanos::new(o.rtt_ns),
        heavy_threshold_bytes: o.heavy_threshold,
    };
    params.validate()?;
    let policy = mode.policy();
    let kind = policy.plane().ok_or(Fig7Error::NoPlane(policy))?;
    let port = FlowPlane::build(kind, &params);
    let stop = Arc::new(AtomicBool::new(false));
    // Every socket is bound before the client sends its requests.
    let ready = Arc::new(Barrier::new(SERVERS + 2));
    let (sw_ns, c_ns) = (lab.ns("sw"), lab.ns("c"));
    let mut handles = Vec::new();
    let fins = Arc::new(AtomicU32::new(0));
    let switch = {
        let stop = stop.clone();
        let o = o.clone();
        let ready = ready.clone();
        let fins = fins.clone();
        thread::spawn(move || {
            let sock = socket_in(&sw_ns, PORT_SW, Role::Switch);
            ready.wait();
            switch_loop(&sock?, port, &o, &stop, &fins).map_err(io_of(Role::Switch))
        })
    };
    for i in 0..SERVERS {
        let stop = stop.clone();
        let o = o.clone();
        let ns = lab.ns(&format!("s{i}"));
        let ready = ready.clone();
        handles.push(thread::spawn(move || {
            let sock = socket_in(&ns, PORT_SERVER, Role::Server(i));
            ready.wait();
            server_loop(&sock?, i, &o, &stop).map_err(io_of(Role::Server(i)))
        }));
    }
    let client = {
        let o = o.clone();
        let ready = ready.clone();
        thread::spawn(move || {
            let sock = socket_in(&c_ns, PORT_CLIENT, Role::Client);
            ready.wait();
            client_loop(&sock?, mode, &o).map_err(io_of(Role::Client))
        })
    };
    let client = client.join().map_err(|_| Fig7Error::Panicked(Role::Client));
    // The servers' FINs return the flows' last allocations after the
    // client has its bytes: wait for them (bounded), so that the switch's
    // final state says whether anything leaked.
    let flows = o.tasks * SERVERS as u32;
    let waited = Instant::now();
    while matches!(client, Ok(Ok(_)))
        && fins.load(Ordering::Relaxed) < flows
        && waited.elapsed() < Duration::from_secs(3)
    {
        thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::Relaxed);
    let mut retx = 0;
    for (i, h) in handles.into_iter().enumerate() {
        retx += h
            .join()
            .map_err(|_| Fig7Error::Panicked(Role::Server(i)))??
            .0;
    }
    let (drops, sent, residual) = switch
        .join()
        .map_err(|_| Fig7Error::Panicked(Role::Switch))??;
    let ClientResult {
        completion_ns,
        bytes,
        repeats_after_task_end,
    } = client??;
    let last = completion_ns.iter().copied().max().unwrap_or(0).max(1);
    Ok(Fig7Run {
        mode,
        utilisation: sent as f64 * 8.0 / (last as f64 / 1e9 * o.link_bps),
        feedback_repeats_after_task_end: repeats_after_task_end,
        completion_ns,
        bytes,
        switch_drops: drops,
        retransmits: retx,
        residual,
    })
}

/// The Fig. 7 table: for each number of concurrent tasks, each mode's
/// average and per-task completion times.
pub fn fig7_table(
    lab: &Lab,
    tasks: std::ops::RangeInclusive<u32>,
    base: &Fig7Opts,
) -> Result<Vec<(u32, Fig7Run, Fig7Run)>, Fig7Error> {
    let mut rows = Vec::new();
    for n in tasks {
        let o = Fig7Opts {
            tasks: n,
            ..base.clone()
        };
        let fair = lab.fig7(Fig7Mode::Fair, &o)?;
        let fifo = lab.fig7(Fig7Mode::FifoLm, &o)?;
        rows.push((n, fair, fifo));
    }
    Ok(rows)
}

pub fn mean_ms(r: &Fig7Run) -> f64 {
    r.completion_ns.iter().sum::<u64>() as f64 / r.completion_ns.len().max(1) as f64 / 1e6
}
