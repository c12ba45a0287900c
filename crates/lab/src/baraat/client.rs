//! The client of the Fig. 7 lab: the batched request, in-order receipt and
//! the feedback echo.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::thread;
use std::time::{Duration, Instant};

use netsched_proto::{BaraatMessage, SpcAnswer, SpcEcho};

use super::feedback::{FeedbackEcho, FEEDBACK_REPEAT_S};
use super::lab::sw_addr;
use super::until_acked::UntilAcked;
use super::{baraat, packets_of, pattern, rate, send, Fig7Mode, Fig7Opts, SERVERS};

/// The client: requests every task at once, receives in order, ACKs every
/// data packet with the flow's latest switch feedback, and records
/// completion times. Feedback is soft state: each flow's latest is repeated
/// every [`FEEDBACK_REPEAT_S`] until the flow's FIN arrives, so a lost ACK
/// delays it rather than losing it; the client acknowledges every FIN, and
/// repeats each task's DONE (FIFO-LM) until the switch acknowledges it.
pub(super) fn client_loop(
    sock: &UdpSocket,
    mode: Fig7Mode,
    o: &Fig7Opts,
) -> io::Result<ClientResult> {
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
        let task_id = mode.class_of(t as u32);
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
pub(super) struct ClientResult {
    pub(super) completion_ns: Vec<u64>,
    pub(super) bytes: Vec<u64>,
    pub(super) repeats_after_task_end: u64,
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
