//! A server of the Fig. 7 lab: one flow per request, paced at its AR by
//! an Alg. 2 sender.

use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use netsched_core::baraat::{SpcFeedback, SpcSender};
use netsched_proto::{BaraatData, BaraatMessage, SpcHeader, MAX_DATAGRAM};

use super::lab::sw_addr;
use super::until_acked::UntilAcked;
use super::{
    baraat, len_of, packets_of, pattern, rate, send, Fig7Opts, DATA_HDR, PAYLOAD, REQUEST_TIMEOUT_S,
};

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
pub(super) fn server_loop(
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
