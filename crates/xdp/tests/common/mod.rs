//! Frames, loading and state comparison shared by the XDP tests: Ethernet +
//! IPv4 + UDP around a netsched datagram, the root /
//! NETSCHED_REQUIRE_BPF=1 rule of every BPF test, and the register
//! comparison of the differential tests.

#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddrV4};

pub const SWITCH_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xfe];
pub const SWITCH: SocketAddrV4 = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 254), 7000);

/// Whether BPF tests may run here: root loads BPF; otherwise skip, or
/// fail under NETSCHED_REQUIRE_BPF=1 (scripts/test.sh, CI).
pub fn bpf_allowed(test: &str) -> bool {
    let required = bpf_required();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        assert!(!required, "{test}: NETSCHED_REQUIRE_BPF=1 but not root");
        eprintln!("{test}: skipped, loading BPF programs needs root");
        return false;
    }
    true
}

pub fn bpf_required() -> bool {
    std::env::var("NETSCHED_REQUIRE_BPF").is_ok_and(|v| v == "1")
}

/// A program `load`ed for `test` if BPF tests may run here
/// ([`bpf_allowed`]); without the BPF object (no clang) the test is
/// skipped, unless under NETSCHED_REQUIRE_BPF=1. `what` names the program
/// in a panic.
pub fn load_program<T>(
    test: &str,
    what: &str,
    load: impl FnOnce() -> Result<T, netsched_xdp::XdpError>,
) -> Option<T> {
    if !bpf_allowed(test) {
        return None;
    }
    match load() {
        Ok(program) => Some(program),
        Err(netsched_xdp::XdpError::ObjectMissing) if !bpf_required() => {
            eprintln!("{test}: skipped, the BPF object was not built (no clang)");
            None
        }
        Err(e) => panic!("{test}: loading the XDP {what}: {e}"),
    }
}

/// The XDP program holds the sans-IO switch model's state after packet
/// `step`: every register array (`dumps`, against what `read` finds in the
/// maps) and the random stream (`rng`, against the program's `xdp_rng`).
pub fn assert_same_registers(
    dumps: Vec<netsched_core::switch::RegisterDump>,
    rng: [u64; 4],
    mut read: impl FnMut(&'static str, usize) -> Result<Vec<u64>, netsched_xdp::XdpError>,
    xdp_rng: [u64; 4],
    step: usize,
) {
    for dump in dumps {
        let cells = read(dump.name, dump.cells.len()).expect("read map");
        assert_eq!(cells, dump.cells, "`{}` after packet {step}", dump.name);
    }
    assert_eq!(xdp_rng, rng, "random stream after packet {step}");
}

/// The MAC a test gives the host at `addr`.
pub fn mac_of(addr: SocketAddrV4) -> [u8; 6] {
    let [_, _, c, d] = addr.ip().octets();
    [0x02, 0, 0, 1, c, d]
}

pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The frame `from` sends to the switch carrying `payload`.
pub fn frame(from: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    frame_to(from, SWITCH, payload)
}

pub fn frame_to(from: SocketAddrV4, to: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    frame_from_mac(mac_of(from), from, to, payload)
}

/// The frame `from` (at MAC `src_mac`) sends to `to` (at [`SWITCH_MAC`]).
pub fn frame_from_mac(
    src_mac: [u8; 6],
    from: SocketAddrV4,
    to: SocketAddrV4,
    payload: &[u8],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload.len());
    f.extend_from_slice(&SWITCH_MAC);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&from.ip().octets());
    ip[16..20].copy_from_slice(&to.ip().octets());
    let check = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&check.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&from.port().to_be_bytes());
    f.extend_from_slice(&to.port().to_be_bytes());
    f.extend_from_slice(&(8 + payload.len() as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// A frame a program sent: its addresses and the UDP payload, after
/// checking that the headers are consistent (IPv4 checksum, lengths).
#[derive(Debug)]
pub struct Sent<'a> {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub from: SocketAddrV4,
    pub to: SocketAddrV4,
    pub payload: &'a [u8],
}

pub fn sent(frame: &[u8]) -> Result<Sent<'_>, String> {
    if frame.len() < 42 {
        return Err(format!("{} bytes, shorter than the headers", frame.len()));
    }
    if frame[12..14] != [0x08, 0x00] || frame[14] != 0x45 || frame[23] != 17 {
        return Err("not IPv4/UDP without options".into());
    }
    if ipv4_checksum(&frame[14..34]) != 0 {
        return Err("bad IPv4 checksum".into());
    }
    let tot = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
    let udp = usize::from(u16::from_be_bytes([frame[38], frame[39]]));
    if tot != 20 + udp || 14 + tot > frame.len() || udp < 8 {
        return Err(format!(
            "lengths: IPv4 {tot}, UDP {udp}, frame {}",
            frame.len()
        ));
    }
    let addr = |at: usize, port_at: usize| {
        SocketAddrV4::new(
            Ipv4Addr::new(frame[at], frame[at + 1], frame[at + 2], frame[at + 3]),
            u16::from_be_bytes([frame[port_at], frame[port_at + 1]]),
        )
    };
    Ok(Sent {
        dst_mac: frame[0..6].try_into().expect("6 bytes"),
        src_mac: frame[6..12].try_into().expect("6 bytes"),
        from: addr(26, 34),
        to: addr(30, 36),
        payload: &frame[42..42 + udp - 8],
    })
}

/// Task `id`'s one packet from a client of pool 1 (its header's `seq` the
/// id's low bits).
pub fn horus_task(id: u64, service_ns: u64, payload: &[u8]) -> Vec<u8> {
    use netsched_proto::{HorusBody, HorusHeader, HorusMessage, HorusTask, Message};
    Message::Horus(HorusMessage {
        header: HorusHeader {
            pool_id: 1,
            seq: id as u16,
            ..HorusHeader::default()
        },
        body: HorusBody::TaskFirst(HorusTask {
            task_id: id,
            is_last: true,
            service_time_ns: service_ns,
            payload,
            ..HorusTask::default()
        }),
    })
    .to_vec()
    .expect("encode")
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is empty; CPU_SET stays within it for
    // cpu < CPU_SETSIZE; sched_setaffinity(0) affects the calling thread.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(
        rc,
        0,
        "sched_setaffinity({cpu}): {}",
        std::io::Error::last_os_error()
    );
}

/// Runs `streams[t]` on thread `t`, pinned to CPU `t` (modulo the CPUs),
/// every thread released at once; `run(item)` on each item, in order. No
/// thread runs more than `window` items ahead of the slowest, so the
/// threads' items interleave whatever the machine's scheduler does (the
/// concurrent differential tests). Each thread's results.
pub fn run_in_step<T: Sync, R: Send>(
    streams: &[Vec<T>],
    window: usize,
    run: impl Fn(&T) -> R + Sync,
) -> Vec<Vec<R>> {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let barrier = std::sync::Barrier::new(streams.len());
    let done: Vec<AtomicUsize> = streams.iter().map(|_| AtomicUsize::new(0)).collect();
    std::thread::scope(|s| {
        let handles: Vec<_> = (streams.iter().enumerate())
            .map(|(t, stream)| {
                let (run, barrier, done) = (&run, &barrier, &done);
                s.spawn(move || {
                    pin(t % cpus);
                    barrier.wait();
                    (stream.iter().enumerate())
                        .map(|(i, item)| {
                            let slowest = || done.iter().map(|d| d.load(SeqCst)).min();
                            while slowest().is_some_and(|m| i > m + window) {
                                std::thread::yield_now();
                            }
                            let result = run(item);
                            done[t].fetch_add(1, SeqCst);
                            result
                        })
                        .collect()
                })
            })
            .collect();
        (handles.into_iter())
            .map(|h| h.join().expect("thread"))
            .collect()
    })
}
