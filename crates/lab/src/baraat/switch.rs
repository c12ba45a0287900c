//! The software switch of the Fig. 7 lab: the bottleneck port, Alg. 1 on
//! request headers, and the lab's loss injection.

use std::collections::VecDeque;
use std::io;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use netsched_core::baraat::{FlowDataPlane, FlowPlane, SpcRequest};
use netsched_proto::{BaraatData, BaraatMessage, SpcAnswer};

use super::lab::{client_addr, server_addr};
use super::task_end::{Fin, TaskEnds};
use super::{baraat, rate, send, Fig7Opts, SwitchResidual, SERVERS};

/// The software switch: the port `spc` (built by the flow registry for the
/// run's policy) relays control datagrams at once, queues data for
/// the client and sends it at `link_bps`; Alg. 1 on request headers;
/// footnote 5's virtual capacity once per interval. Returns (drops, bytes
/// sent to the client).
pub(super) fn switch_loop(
    sock: &UdpSocket,
    mut spc: FlowPlane,
    o: &Fig7Opts,
    stop: &AtomicBool,
    fins: &AtomicU32,
) -> io::Result<(u64, u64, SwitchResidual)> {
    let faults = o.faults;
    let (mut requests_seen, mut feedback_acks_seen, mut injected) = (0u32, 0u32, 0u64);
    let (mut fins_seen, mut fin_acks_seen, mut dones_seen) = (0u32, 0u32, 0u32);
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
                    let fb = spc.on_request(SpcRequest {
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
