//! Packet-level check of SPC over real UDP in network namespaces: Baraat
//! §5.1's batched-request experiment (Fig. 7). One client asks three
//! servers for `bytes_per_server` each, for `tasks` tasks at once; the
//! client's downlink is the bottleneck.
//!
//! veth has no bandwidth limit, so the bottleneck is a software switch: a
//! thread in its own namespace relays every datagram between the client and
//! the servers and paces the client-bound queue with a token bucket at
//! `link_bps`. It runs the SPC port data plane of crates/core
//! ([`SpcPort`], Alg. 1) on the header of every request-carrying data
//! packet and writes AR/NR into it; the client echoes them in its ACK
//! (§4.4: the receiver returns the switches' feedback to the sender). Each
//! server runs one [`SpcSender`] (Alg. 2) per flow and paces its sending at
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
//! per thread), so the whole experiment is one process.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use netsched_core::baraat::{SpcFeedback, SpcPort, SpcRequest, SpcSender};
use netsched_proto::{
    decode_baraat, BaraatData, BaraatMessage, Rate, SpcAnswer, SpcEcho, SpcHeader,
    MAX_BARAAT_PAYLOAD, MAX_DATAGRAM,
};

mod feedback;
mod lab;
mod task_end;
mod until_acked;
use feedback::{FeedbackEcho, FEEDBACK_REPEAT_S};
use lab::{bind_port, client_addr, enter, server_addr, sw_addr};
pub use lab::{Lab, LabError};
pub use task_end::{Fin, TaskEnds};
use until_acked::UntilAcked;

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
    pub fn name(self) -> &'static str {
        match self {
            Fig7Mode::Fair => "fair",
            Fig7Mode::FifoLm => "fifo-lm",
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

fn run_fig7(lab: &Lab, mode: Fig7Mode, o: &Fig7Opts) -> Result<Fig7Run, String> {
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
        thread::spawn(move || -> Result<(u64, u64, SwitchResidual), String> {
            let r = enter(&sw_ns).map_err(|e| format!("setns {sw_ns}: {e}"));
            let sock = r.and_then(|_| bind_port(PORT_SW).map_err(|e| format!("switch: {e}")));
            ready.wait();
            switch_loop(&sock?, &o, &stop, &fins).map_err(|e| format!("switch: {e}"))
        })
    };
    for i in 0..SERVERS {
        let stop = stop.clone();
        let o = o.clone();
        let ns = lab.ns(&format!("s{i}"));
        let ready = ready.clone();
        handles.push(thread::spawn(move || -> Result<(u64, u64), String> {
            let r = enter(&ns).map_err(|e| format!("setns {ns}: {e}"));
            let sock =
                r.and_then(|_| bind_port(PORT_SERVER).map_err(|e| format!("server {i}: {e}")));
            ready.wait();
            server_loop(&sock?, i, &o, &stop).map_err(|e| format!("server {i}: {e}"))
        }));
    }
    let client = {
        let o = o.clone();
        let ready = ready.clone();
        thread::spawn(move || -> Result<ClientResult, String> {
            let r = enter(&c_ns).map_err(|e| format!("setns {c_ns}: {e}"));
            let sock = r.and_then(|_| bind_port(PORT_CLIENT).map_err(|e| format!("client: {e}")));
            ready.wait();
            sock.and_then(|s| client_loop(&s, mode, &o).map_err(|e| format!("client: {e}")))
        })
    };
    let client = client.join().map_err(|_| "client panicked".to_string());
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
    for h in handles {
        retx += h
            .join()
            .map_err(|_| "server thread panicked".to_string())??
            .0;
    }
    let (drops, sent, residual) = switch
        .join()
        .map_err(|_| "switch thread panicked".to_string())??;
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

/// The software switch: relays control datagrams at once, queues data for
/// the client and sends it at `link_bps`; Alg. 1 on request headers;
/// footnote 5's virtual capacity once per interval. Returns (drops, bytes
/// sent to the client).
fn switch_loop(
    sock: &UdpSocket,
    o: &Fig7Opts,
    stop: &AtomicBool,
    fins: &AtomicU32,
) -> io::Result<(u64, u64, SwitchResidual)> {
    let faults = o.faults;
    let (mut requests_seen, mut feedback_acks_seen, mut injected) = (0u32, 0u32, 0u64);
    let (mut fins_seen, mut fin_acks_seen, mut dones_seen) = (0u32, 0u32, 0u32);
    let mut spc = SpcPort::new(o.link_bps, o.rtt_ns, o.heavy_threshold);
    let mut queue: VecDeque<Vec<u8>> = VecDeque::new();
    let mut queued_bytes = 0usize;
    // Drop-tail buffer, as a shallow-buffered ToR port.
    const BUFFER: usize = 1 << 20;
    let mut drops = 0u64;
    let mut active = 0u32;
    let mut task_ends = TaskEnds::default();
    let mut sent = 0u64;
    let start = Instant::now();
    let mut next_tx = 0f64; // seconds since start
    let mut interval_start = 0f64;
    let mut interval_bytes = 0usize;
    let interval = o.rtt_ns as f64 / 1e9;
    let mut buf = vec![0u8; 65536];
    let client = client_addr();
    while !stop.load(Ordering::Relaxed) {
        let mut busy = false;
        loop {
            let (n, from) = match sock.recv_from(&mut buf) {
                Ok(x) => x,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            busy = true;
            let pkt = &buf[..n];
            let Some(msg) = baraat(pkt) else { continue };
            match msg {
                BaraatMessage::Data(d) => {
                    interval_bytes += n;
                    if queued_bytes + n > BUFFER {
                        drops += 1;
                        continue;
                    }
                    let Some(r) = d.request else {
                        queued_bytes += n;
                        queue.push_back(pkt.to_vec());
                        continue;
                    };
                    requests_seen += 1;
                    if nth(faults.drop_every_nth_request, requests_seen) {
                        injected += 1;
                        continue;
                    }
                    if r.new_flow {
                        active += 1;
                    }
                    let fb = spc.on_packet(SpcRequest {
                        task_id: d.task_id,
                        demand: r.demand.bps(),
                        prev_demand: r.prev_demand.bps(),
                        prev_alloc: r.prev_alloc.bps(),
                        new_flow: r.new_flow,
                    });
                    // The switch writes its answer into the header (§4.4).
                    let answered = BaraatData {
                        answer: Some(SpcAnswer {
                            ar: rate(fb.ar),
                            nr: rate(fb.nr),
                        }),
                        ..d
                    };
                    let Ok(out) = BaraatMessage::Data(answered).to_vec() else {
                        continue;
                    };
                    queued_bytes += out.len();
                    queue.push_back(out);
                }
                BaraatMessage::Fin {
                    task_id,
                    flow,
                    demand,
                    alloc,
                    ..
                } => {
                    fins_seen += 1;
                    if nth(faults.drop_every_nth_fin, fins_seen) {
                        injected += 1;
                        continue;
                    }
                    // The flow's last demand and allocation come back (FIN),
                    // once per flow however often the sender repeats it.
                    if let Fin::First { retire } = task_ends.on_fin(task_id, flow) {
                        fins.fetch_add(1, Ordering::Relaxed);
                        active = active.saturating_sub(1);
                        spc.on_flow_end(task_id, demand.bps(), alloc.bps());
                        if retire {
                            spc.on_task_retired(task_id);
                        }
                    }
                    // On to the receiver, which acknowledges it.
                    sock.send_to(pkt, client)?;
                }
                // The client saw the task's last byte; its servers' FINs
                // (which return the flows' allocations) may still be on the
                // way: forget the task's counters after the last one.
                // Repeated by the client until acknowledged; a repeat changes
                // nothing.
                BaraatMessage::Done { task_id, flows } => {
                    dones_seen += 1;
                    if nth(faults.drop_every_nth_done, dones_seen) {
                        injected += 1;
                        continue;
                    }
                    if task_ends.on_done(task_id, flows) {
                        spc.on_task_retired(task_id);
                    }
                    send(sock, BaraatMessage::DoneAck { task_id }, client)?;
                }
                BaraatMessage::Request { server, .. }
                | BaraatMessage::Ack { server, .. }
                | BaraatMessage::FinAck { server, .. } => {
                    if let BaraatMessage::Ack { echo: Some(_), .. } = msg {
                        feedback_acks_seen += 1;
                        if nth(faults.drop_every_nth_feedback_ack, feedback_acks_seen) {
                            injected += 1;
                            continue;
                        }
                    }
                    if let BaraatMessage::FinAck { .. } = msg {
                        fin_acks_seen += 1;
                        if nth(faults.drop_every_nth_fin_ack, fin_acks_seen) {
                            injected += 1;
                            continue;
                        }
                    }
                    let s = server as usize;
                    if s < SERVERS {
                        sock.send_to(pkt, server_addr(s))?;
                    }
                }
                BaraatMessage::DoneAck { .. } => {}
            }
            let _ = from;
        }
        let now = start.elapsed().as_secs_f64();
        // Token bucket without burst: one packet per serialization time.
        while let Some(p) = queue.front() {
            if now < next_tx {
                break;
            }
            // Up to 0.5 ms of credit: the loop wakes late under load, and a
            // lost credit is lost link capacity.
            next_tx = next_tx.max(now - 5e-4) + p.len() as f64 * 8.0 / o.link_bps;
            sock.send_to(p, client)?;
            sent += p.len() as u64;
            queued_bytes -= p.len();
            queue.pop_front();
            busy = true;
        }
        // RCP updates its rate only while it carries flows: an idle port
        // must not inflate the virtual capacity before the next burst.
        if active == 0 {
            interval_start = now;
            interval_bytes = 0;
        } else if now - interval_start >= interval {
            let input = interval_bytes as f64 * 8.0 / (now - interval_start);
            spc.on_interval(input, queued_bytes as f64);
            interval_start = now;
            interval_bytes = 0;
        }
        if !busy {
            thread::sleep(Duration::from_micros(20));
        }
    }
    if std::env::var_os("FIG7_DEBUG").is_some() {
        eprintln!(
            "switch: A {:.0} vc {:.0} active {active} tasks {:?}",
            spc.allocated(),
            spc.virtual_capacity(),
            spc.classifier()
                .tasks()
                .map(|t| (t.task_id, t.flows, t.demand as u64))
                .collect::<Vec<_>>()
        );
    }
    let tasks = spc.classifier();
    let residual = SwitchResidual {
        allocated_bps: spc.allocated(),
        tasks: tasks.len(),
        flows: tasks.tasks().map(|t| t.flows).sum(),
        demand_bps: tasks.tasks().map(|t| t.demand).sum(),
        fins: fins.load(Ordering::Relaxed),
        injected_drops: injected,
    };
    Ok((drops, sent, residual))
}

/// The `count`-th packet of a kind is the `every`-th (0: never).
fn nth(every: u32, count: u32) -> bool {
    every != 0 && count.is_multiple_of(every)
}

#[derive(Clone, Copy, Debug)]
struct PendingRequest {
    sent_at: f64,
    req: u32,
    demand: f64,
}

struct SFlow {
    task_id: u64,
    flow: u32,
    bytes: u64,
    npk: u32,
    next: u32,
    acked: u32,
    sender: SpcSender,
    /// Bits/s (AR of the last feedback).
    rate: f64,
    next_send: f64,
    /// Demand and AR the switch holds for us (Alg. 1 line 1): changed only
    /// by feedback, which proves the switch ran Alg. 1 on the request. A
    /// request lost before the switch leaves them as they were, and the
    /// next request returns what the switch really holds.
    held_demand: f64,
    held_alloc: f64,
    last_nr: Option<f64>,
    /// Number of the next request.
    next_req: u32,
    /// The request in flight, if any.
    req_out: Option<PendingRequest>,
    last_req: f64,
    /// Until feedback confirms the switch counted this flow, every request
    /// says it is new: a lost first request must not leave F_k short and
    /// make the FIN remove another flow of the task.
    new_flow: bool,
    last_progress: f64,
    /// Once the last byte is acknowledged and the last request answered.
    fin: Option<UntilAcked>,
}

/// One server: answers each request with one flow, paced at its AR; one
/// Alg. 2 sender per flow. Returns (retransmitted packets, 0).
fn server_loop(
    sock: &UdpSocket,
    me: usize,
    o: &Fig7Opts,
    stop: &AtomicBool,
) -> io::Result<(u64, u64)> {
    let sw = sw_addr(Some(me));
    let start = Instant::now();
    let interval = o.rtt_ns as f64 / 1e9;
    let mut flows: Vec<SFlow> = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut out = [0u8; MAX_DATAGRAM];
    let mut payload = [0u8; PAYLOAD];
    let mut retx = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut busy = false;
        let now = start.elapsed().as_secs_f64();
        loop {
            let n = match sock.recv_from(&mut buf) {
                Ok((n, _)) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            };
            busy = true;
            let Some(msg) = baraat(&buf[..n]) else {
                continue;
            };
            match msg {
                BaraatMessage::Request {
                    task_id,
                    flow,
                    bytes,
                    ..
                } => {
                    if flows.iter().any(|f| f.flow == flow) {
                        continue;
                    }
                    flows.push(SFlow {
                        task_id,
                        flow,
                        bytes,
                        npk: packets_of(bytes),
                        next: 0,
                        acked: 0,
                        sender: SpcSender::new(o.nic_bps, o.rtt_ns, o.link_bps / 100.0),
                        rate: 0.0,
                        next_send: now,
                        held_demand: 0.0,
                        held_alloc: 0.0,
                        last_nr: None,
                        next_req: 0,
                        req_out: None,
                        last_req: f64::NEG_INFINITY,
                        new_flow: true,
                        last_progress: now,
                        fin: None,
                    });
                }
                BaraatMessage::FinAck { flow, .. } => {
                    if let Some(fin) = flows
                        .iter_mut()
                        .find(|f| f.flow == flow)
                        .and_then(|f| f.fin.as_mut())
                    {
                        fin.on_ack();
                    }
                }
                BaraatMessage::Ack {
                    flow,
                    cumulative: cum,
                    echo,
                    ..
                } => {
                    let Some(f) = flows.iter_mut().find(|f| f.flow == flow) else {
                        continue;
                    };
                    if cum > f.acked {
                        f.acked = cum;
                        f.last_progress = now;
                    }
                    // Feedback counts only for the request in flight: the
                    // client repeats its latest, so older ones come again.
                    let echo = echo.filter(|e| f.req_out.is_some_and(|r| e.req == r.req));
                    if let (Some(pending), Some(e)) = (f.req_out, echo) {
                        let fb = SpcFeedback {
                            ar: e.answer.ar.bps(),
                            nr: e.answer.nr.bps(),
                        };
                        // Under 1 kbit/s is no rate: a packet would be due
                        // in hours, after the flow got a real share.
                        let r = f.sender.on_feedback(&[fb]);
                        f.rate = if r < 1e3 { 0.0 } else { r };
                        if f.rate > 0.0 {
                            let gap = ((DATA_HDR + PAYLOAD) * 8) as f64 / f.rate;
                            f.next_send = f.next_send.min(now + gap);
                        }
                        f.held_demand = pending.demand;
                        f.held_alloc = fb.ar;
                        f.new_flow = false;
                        f.last_nr = Some(fb.nr);
                        f.req_out = None;
                    }
                }
                _ => {}
            }
        }
        for f in flows.iter_mut() {
            // FIN only once the last request's feedback is back: it must
            // return the allocation the switch actually holds. Repeated
            // until the client acknowledges it (a lost FIN would leave
            // that allocation, demand and flow count at the switch).
            if f.fin.is_none() && f.acked >= f.npk && f.req_out.is_none() {
                f.fin = Some(UntilAcked::new(now));
            }
            if let Some(fin) = f.fin.as_mut() {
                if fin.due(now) {
                    let m = BaraatMessage::Fin {
                        server: me as u8,
                        task_id: f.task_id,
                        flow: f.flow,
                        demand: rate(f.held_demand),
                        alloc: rate(f.held_alloc),
                    };
                    send(sock, m, sw)?;
                    busy = true;
                }
                continue;
            }
            // Go-back-N after a silent spell (a drop at the switch); longer
            // than the deepest queue (1 MB at the bottleneck) so that queueing
            // is not mistaken for loss.
            if f.next > f.acked && now - f.last_progress > 0.2 {
                retx += (f.next - f.acked) as u64;
                f.next = f.acked;
                f.last_progress = now;
            }
            // A request lost before the switch: ask again, returning what
            // the switch held before it. Not sooner: the switch may hold an
            // allocation for the request in flight, and Alg. 1 line 1 can
            // only return what the sender knows it was given.
            if f.req_out
                .is_some_and(|r| now - r.sent_at > REQUEST_TIMEOUT_S)
            {
                f.req_out = None;
            }
            let want_req = f.next < f.npk && f.req_out.is_none() && now - f.last_req >= interval;
            let can_data = f.next < f.npk && f.rate > 0.0 && now >= f.next_send;
            if !want_req && !can_data {
                continue;
            }
            let mut request = None;
            if want_req {
                // Alg. 2: demand from the bytes not yet sent and last NR.
                let left = f.bytes.saturating_sub(f.next as u64 * PAYLOAD as u64);
                let demand = f.sender.next_demand(left, f.last_nr);
                request = Some(SpcHeader {
                    req: f.next_req,
                    new_flow: f.new_flow,
                    demand: rate(demand),
                    prev_demand: rate(f.held_demand),
                    prev_alloc: rate(f.held_alloc),
                });
                f.req_out = Some(PendingRequest {
                    sent_at: now,
                    req: f.next_req,
                    demand,
                });
                f.next_req += 1;
                f.last_req = now;
            }
            let len = if can_data { len_of(f.bytes, f.next) } else { 0 };
            for (i, b) in payload[..len].iter_mut().enumerate() {
                *b = pattern(f.flow, f.next, i);
            }
            let d = BaraatData {
                server: me as u8,
                task_id: f.task_id,
                flow: f.flow,
                seq: f.next,
                request,
                answer: None,
                payload: &payload[..len],
            };
            let n = BaraatMessage::Data(d)
                .encode(&mut out)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            sock.send_to(&out[..n], sw)?;
            busy = true;
            if can_data {
                f.next += 1;
                f.next_send = f.next_send.max(now - 1e-3) + (n * 8) as f64 / f.rate;
            }
        }
        flows.retain(|f| !f.fin.is_some_and(|fin| fin.acked()));
        if !busy {
            thread::sleep(Duration::from_micros(20));
        }
    }
    if std::env::var_os("FIG7_DEBUG").is_some() {
        for f in &flows {
            eprintln!(
                "server {me} flow {}: next {} acked {} rate {:.0} held {:.0}/{:.0} nr {:?} req_out {:?} now {now:.3}",
                f.flow, f.next, f.acked, f.rate, f.held_demand, f.held_alloc, f.last_nr, f.req_out,
                now = start.elapsed().as_secs_f64()
            );
        }
    }
    Ok((retx, 0))
}

/// Send `flow`'s cumulative ACK with its latest feedback.
fn send_ack(
    sock: &UdpSocket,
    sw: SocketAddr,
    echo: &mut FeedbackEcho,
    flow: u32,
    cumulative: u32,
    now: f64,
) -> io::Result<()> {
    let echo_of = |(req, ar, nr)| SpcEcho {
        req,
        answer: SpcAnswer {
            ar: rate(ar),
            nr: rate(nr),
        },
    };
    let ack = BaraatMessage::Ack {
        server: (flow as usize % SERVERS) as u8,
        flow,
        cumulative,
        echo: echo.latest().map(echo_of),
    };
    send(sock, ack, sw)?;
    echo.on_ack_sent(now);
    Ok(())
}

/// The client: requests every task at once, receives in order, ACKs every
/// data packet with the flow's latest switch feedback, and records
/// completion times. Feedback is soft state: each flow's latest is repeated
/// every [`FEEDBACK_REPEAT_S`] until the flow's FIN arrives, so a lost ACK
/// delays it rather than losing it; the client acknowledges every FIN, and
/// repeats each task's DONE (FIFO-LM) until the switch acknowledges it.
fn client_loop(sock: &UdpSocket, mode: Fig7Mode, o: &Fig7Opts) -> io::Result<ClientResult> {
    let sw = sw_addr(None);
    let n = o.tasks as usize;
    let nflows = n * SERVERS;
    let npk = packets_of(o.bytes_per_server);
    let mut expected = vec![0u32; nflows];
    let mut got = vec![0u64; n];
    let mut done: Vec<Option<u64>> = vec![None; n];
    let mut done_out: Vec<Option<UntilAcked>> = vec![None; n];
    let start = Instant::now();
    // Batched request (Fig. 7): all tasks at once, in task order.
    for t in 0..n {
        let task_id = match mode {
            Fig7Mode::Fair => 0,
            Fig7Mode::FifoLm => t as u64 + 1,
        };
        for s in 0..SERVERS {
            let m = BaraatMessage::Request {
                server: s as u8,
                task_id,
                flow: (t * SERVERS + s) as u32,
                bytes: o.bytes_per_server,
            };
            send(sock, m, sw)?;
        }
    }
    let mut buf = vec![0u8; 65536];
    let mut feedback = vec![FeedbackEcho::default(); nflows];
    let mut repeats_after_task_end = 0u64;
    let mut left = n;
    let mut all_done_at = None;
    loop {
        let now = start.elapsed().as_secs_f64();
        let dones_acked = done_out.iter().flatten().all(UntilAcked::acked);
        match all_done_at {
            Some(t) if now - t > 5.0 * FEEDBACK_REPEAT_S && dones_acked => break,
            None if left == 0 => all_done_at = Some(now),
            _ => {}
        }
        for (t, out) in done_out.iter_mut().enumerate() {
            if out.as_mut().is_some_and(|o| o.due(now)) {
                let m = BaraatMessage::Done {
                    task_id: t as u64 + 1,
                    flows: SERVERS as u32,
                };
                send(sock, m, sw)?;
            }
        }
        if start.elapsed() > o.timeout {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "{left} of {n} tasks unfinished after {:?} (packets received per flow {:?} of {npk})",
                    o.timeout, expected
                ),
            ));
        }
        let len = match sock.recv_from(&mut buf) {
            Ok((len, _)) => len,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                for (fl, fb) in feedback.iter_mut().enumerate() {
                    if fb.repeat_due(now) {
                        send_ack(sock, sw, fb, fl as u32, expected[fl], now)?;
                        if done[fl / SERVERS].is_some() {
                            repeats_after_task_end += 1;
                        }
                    }
                }
                thread::sleep(Duration::from_micros(20));
                continue;
            }
            Err(e) => return Err(e),
        };
        let d = match baraat(&buf[..len]) {
            Some(BaraatMessage::Data(d)) => d,
            Some(BaraatMessage::DoneAck { task_id }) => {
                let out = (task_id as usize)
                    .checked_sub(1)
                    .and_then(|t| done_out.get_mut(t))
                    .and_then(Option::as_mut);
                if let Some(out) = out {
                    out.on_ack();
                }
                continue;
            }
            Some(BaraatMessage::Fin { server, flow, .. }) => {
                if let Some(fb) = feedback.get_mut(flow as usize) {
                    fb.on_fin();
                    send(sock, BaraatMessage::FinAck { server, flow }, sw)?;
                }
                continue;
            }
            _ => continue,
        };
        let fl = d.flow as usize;
        if fl >= nflows {
            continue;
        }
        let payload = d.payload;
        if !payload.is_empty() && d.seq == expected[fl] {
            let ok = payload
                .iter()
                .enumerate()
                .all(|(i, &b)| b == pattern(d.flow, d.seq, i));
            if ok {
                expected[fl] += 1;
                got[fl / SERVERS] += payload.len() as u64;
            }
        }
        let fb = &mut feedback[fl];
        if let (Some(r), Some(a)) = (d.request, d.answer) {
            fb.on_feedback(r.req, a.ar.bps(), a.nr.bps());
        }
        send_ack(sock, sw, fb, d.flow, expected[fl], now)?;
        let t = fl / SERVERS;
        if done[t].is_none() && (0..SERVERS).all(|s| expected[t * SERVERS + s] >= npk) {
            done[t] = Some(start.elapsed().as_nanos() as u64);
            left -= 1;
            // Sent at the loop's next turn and repeated until acknowledged.
            if mode == Fig7Mode::FifoLm {
                done_out[t] = Some(UntilAcked::new(now));
            }
        }
    }
    Ok(ClientResult {
        completion_ns: done.into_iter().map(|d| d.unwrap_or(0)).collect(),
        bytes: got,
        repeats_after_task_end,
    })
}

/// What the client measured.
struct ClientResult {
    completion_ns: Vec<u64>,
    bytes: Vec<u64>,
    repeats_after_task_end: u64,
}

/// The Fig. 7 table: for each number of concurrent tasks, each mode's
/// average and per-task completion times.
pub fn fig7_table(
    lab: &Lab,
    tasks: std::ops::RangeInclusive<u32>,
    base: &Fig7Opts,
) -> Result<Vec<(u32, Fig7Run, Fig7Run)>, String> {
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
