//! Small socket and clock helpers shared by the daemons.

use std::io;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// Waits until `sock` is readable or `timeout` passed; true if readable.
///
/// The daemons keep their sockets non-blocking and drain them in batches;
/// between batches they park here instead of spinning, so an idle daemon
/// costs no CPU (the machine this runs on has two cores).
pub fn wait_readable(sock: &UdpSocket, timeout: Duration) -> bool {
    let mut fds = libc::pollfd {
        fd: sock.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: timeout.as_secs().min(i32::MAX as u64) as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timespec for the duration of the
    // call; ppoll rather than poll for sub-millisecond timeouts.
    let r = unsafe { libc::ppoll(&mut fds, 1, &ts, std::ptr::null()) };
    r > 0 && fds.revents & libc::POLLIN != 0
}

/// Receives one datagram without blocking; `Ok(None)` if none is queued.
#[inline]
pub fn try_recv(
    sock: &UdpSocket,
    buf: &mut [u8],
) -> io::Result<Option<(usize, std::net::SocketAddr)>> {
    match sock.recv_from(buf) {
        Ok(x) => Ok(Some(x)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        // A previous send to a closed port comes back as ECONNREFUSED on
        // Linux; it says nothing about this datagram.
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(None),
        Err(e) => Err(e),
    }
}

/// Binds a non-blocking UDP socket with enlarged kernel buffers.
pub fn bind(addr: &str) -> io::Result<UdpSocket> {
    let s = UdpSocket::bind(addr)?;
    prepare(&s)?;
    Ok(s)
}

/// Makes a socket non-blocking and asks for 4 MiB buffers, so bursts of an
/// open-loop client are queued by the kernel rather than lost.
pub fn prepare(s: &UdpSocket) -> io::Result<()> {
    s.set_nonblocking(true)?;
    let size: libc::c_int = 4 << 20;
    for opt in [libc::SO_RCVBUF, libc::SO_SNDBUF] {
        // SAFETY: valid fd and a c_int option value of the right size.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &size as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    Ok(())
}

/// Sets `SO_BUSY_POLL` (µs) on `s`: a blocking receive on a socket whose
/// packets came from a NAPI device queue spins in the driver's poll that
/// long before sleeping. Loopback packets carry no NAPI id, so there the
/// option is accepted and inert.
pub fn set_busy_poll(s: &UdpSocket, us: u32) -> io::Result<()> {
    let v = us.min(i32::MAX as u32) as libc::c_int;
    // SAFETY: valid fd and a c_int option value of the right size.
    let r = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `n` UDP sockets bound to `addr` with `SO_REUSEPORT`: the kernel spreads
/// incoming datagrams over them by a hash of the sender's address, one flow
/// always to the same socket; any of them sends with `addr` as its source.
/// A port of 0 is resolved by the first bind and reused by the others.
pub fn bind_reuseport(addr: std::net::SocketAddr, n: usize) -> io::Result<Vec<UdpSocket>> {
    use std::os::fd::FromRawFd;
    let mut addr = addr;
    let mut socks = Vec::with_capacity(n);
    for _ in 0..n {
        let family = match addr {
            std::net::SocketAddr::V4(_) => libc::AF_INET,
            std::net::SocketAddr::V6(_) => libc::AF_INET6,
        };
        // SAFETY: plain socket(2); the fd is owned by the UdpSocket below.
        let fd = unsafe { libc::socket(family, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a fresh fd we own.
        let sock = unsafe { UdpSocket::from_raw_fd(fd) };
        let one: libc::c_int = 1;
        // SAFETY: valid fd and c_int option value.
        let r = unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEPORT,
                &one as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: all-zero is a valid sockaddr_storage; filled below.
        let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let len = from_socket_addr(&addr, &mut ss);
        // SAFETY: ss holds a sockaddr of `len` bytes.
        let r = unsafe { libc::bind(fd, &ss as *const _ as *const libc::sockaddr, len) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        addr = sock.local_addr()?;
        socks.push(sock);
    }
    Ok(socks)
}

/// Lets this thread's sleeps end within ~1 µs of their deadline instead of
/// the default 50 µs timer slack; executors rely on it for accurate
/// synthetic service times.
pub fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Sleeps until `deadline`, then spins for the last `spin` of it: sleeping
/// lets many executors share a small machine, the spin absorbs the wake-up
/// latency of the sleep.
pub fn sleep_until(deadline: Instant, spin: Duration) {
    loop {
        let now = Instant::now();
        if now >= deadline {
            return;
        }
        let left = deadline - now;
        if left > spin {
            std::thread::sleep(left - spin);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// CPU time consumed by the calling thread, in ns.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A monotonic clock in integer ns since the daemon started (the data
/// planes' `now`, DESIGN.md: time is u64 ns everywhere).
#[derive(Clone, Copy, Debug)]
pub struct Clock(Instant);

impl Default for Clock {
    fn default() -> Self {
        Clock(Instant::now())
    }
}

impl Clock {
    pub fn new() -> Self {
        Self::default()
    }
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
    /// [`Clock::now_ns`] as the data planes' time.
    #[inline]
    pub fn now(&self) -> netsched_core::Nanos {
        netsched_core::Nanos::new(self.now_ns())
    }
    pub fn start(&self) -> Instant {
        self.0
    }
}

fn to_socket_addr(ss: &libc::sockaddr_storage) -> Option<std::net::SocketAddr> {
    use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
    match ss.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the kernel wrote a sockaddr_in for AF_INET.
            let a = unsafe { &*(ss as *const _ as *const libc::sockaddr_in) };
            Some(
                SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                )
                .into(),
            )
        }
        libc::AF_INET6 => {
            // SAFETY: the kernel wrote a sockaddr_in6 for AF_INET6.
            let a = unsafe { &*(ss as *const _ as *const libc::sockaddr_in6) };
            Some(
                SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                )
                .into(),
            )
        }
        _ => None,
    }
}

fn from_socket_addr(
    addr: &std::net::SocketAddr,
    ss: &mut libc::sockaddr_storage,
) -> libc::socklen_t {
    match addr {
        std::net::SocketAddr::V4(a) => {
            // SAFETY: sockaddr_storage is large and aligned enough for sockaddr_in.
            let s = unsafe { &mut *(ss as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = a.port().to_be();
            s.sin_addr.s_addr = u32::from(*a.ip()).to_be();
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t
        }
        std::net::SocketAddr::V6(a) => {
            // SAFETY: as above, for sockaddr_in6.
            let s = unsafe { &mut *(ss as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = a.port().to_be();
            s.sin6_addr.s6_addr = a.ip().octets();
            s.sin6_flowinfo = a.flowinfo();
            s.sin6_scope_id = a.scope_id();
            std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t
        }
    }
}

/// Fixed buffers for `recvmmsg` / `sendmmsg`: one system call moves a whole
/// batch of datagrams, which is most of the per-datagram cost of a software
/// scheduler on loopback. Allocated once; no allocation per batch.
pub struct Mmsg {
    slot: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_storage>,
    namelens: Vec<libc::socklen_t>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    lens: Vec<usize>,
    /// Caller's tag per queued datagram (the daemon's tx metric index).
    tags: Vec<u8>,
    n: usize,
}

// SAFETY: the raw pointers inside iovec/mmsghdr only ever point into this
// struct's own vectors and are rebuilt before every system call.
unsafe impl Send for Mmsg {}

impl Default for Mmsg {
    fn default() -> Self {
        Mmsg::new(0, 0)
    }
}

impl Mmsg {
    /// `cap` datagrams of up to `slot` bytes.
    pub fn new(cap: usize, slot: usize) -> Self {
        // SAFETY: all-zero is a valid value of these plain C structs.
        let zero_ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        let zero_hdr: libc::mmsghdr = unsafe { std::mem::zeroed() };
        Mmsg {
            slot,
            bufs: vec![0; cap * slot],
            addrs: vec![zero_ss; cap],
            namelens: vec![0; cap],
            iovs: vec![
                libc::iovec {
                    iov_base: std::ptr::null_mut(),
                    iov_len: 0
                };
                cap
            ],
            hdrs: vec![zero_hdr; cap],
            lens: vec![0; cap],
            tags: vec![0; cap],
            n: 0,
        }
    }

    pub fn capacity(&self) -> usize {
        self.lens.len()
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn is_full(&self) -> bool {
        self.n == self.capacity()
    }

    fn prepare_hdrs(&mut self, count: usize, recv: bool) {
        for i in 0..count {
            self.iovs[i] = libc::iovec {
                iov_base: self.bufs[i * self.slot..].as_mut_ptr() as *mut libc::c_void,
                iov_len: if recv { self.slot } else { self.lens[i] },
            };
            // SAFETY: zeroed msghdr is valid; fields set below.
            let mut h: libc::msghdr = unsafe { std::mem::zeroed() };
            h.msg_name = &mut self.addrs[i] as *mut _ as *mut libc::c_void;
            h.msg_namelen = if recv {
                std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t
            } else {
                self.namelens[i]
            };
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            self.hdrs[i] = libc::mmsghdr {
                msg_hdr: h,
                msg_len: 0,
            };
        }
    }

    /// Receives up to `capacity` datagrams without blocking; returns how
    /// many (0 if none was queued).
    pub fn recv(&mut self, sock: &UdpSocket) -> io::Result<usize> {
        let cap = self.capacity();
        self.prepare_hdrs(cap, true);
        // SAFETY: hdrs[..cap] point into our own buffers, valid for the call.
        let r = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                cap as libc::c_uint,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            self.n = 0;
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::ConnectionRefused => Ok(0),
                io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        self.n = r as usize;
        for i in 0..self.n {
            self.lens[i] = self.hdrs[i].msg_len as usize;
        }
        Ok(self.n)
    }

    /// Datagram `i` of the last receive and its source (None for an address
    /// family other than IPv4/IPv6).
    pub fn get(&self, i: usize) -> (&[u8], Option<std::net::SocketAddr>) {
        let off = i * self.slot;
        (
            &self.bufs[off..off + self.lens[i].min(self.slot)],
            to_socket_addr(&self.addrs[i]),
        )
    }

    /// The buffer of the next datagram to send.
    pub fn next_buf(&mut self) -> &mut [u8] {
        let off = self.n * self.slot;
        &mut self.bufs[off..off + self.slot]
    }

    /// Queues the `len` bytes written into [`next_buf`](Self::next_buf) for `dst`.
    pub fn commit(&mut self, len: usize, dst: std::net::SocketAddr, tag: u8) {
        let i = self.n;
        self.lens[i] = len;
        self.tags[i] = tag;
        self.namelens[i] = from_socket_addr(&dst, &mut self.addrs[i]);
        self.n += 1;
    }

    /// Sends every queued datagram; calls `done(tag, ok)` for each.
    pub fn flush(&mut self, sock: &UdpSocket, mut done: impl FnMut(u8, bool)) {
        let n = self.n;
        if n == 0 {
            return;
        }
        self.prepare_hdrs(n, false);
        let mut sent = 0;
        while sent < n {
            // SAFETY: hdrs[sent..n] point into our own buffers.
            let r = unsafe {
                libc::sendmmsg(
                    sock.as_raw_fd(),
                    self.hdrs[sent..].as_mut_ptr(),
                    (n - sent) as libc::c_uint,
                    libc::MSG_DONTWAIT,
                )
            };
            if r <= 0 {
                // The datagram at `sent` failed (full buffer, unreachable):
                // count it and go on with the rest.
                let e = io::Error::last_os_error();
                if r < 0 && e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                done(self.tags[sent], false);
                sent += 1;
                continue;
            }
            for i in sent..sent + r as usize {
                done(self.tags[i], true);
            }
            sent += r as usize;
        }
        self.n = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sleep_until_is_never_early_and_roughly_on_time() {
        tighten_timer_slack();
        let mut late = Vec::new();
        for _ in 0..50 {
            let deadline = Instant::now() + Duration::from_micros(100);
            sleep_until(deadline, Duration::from_micros(20));
            let now = Instant::now();
            assert!(now >= deadline);
            late.push((now - deadline).as_nanos() as u64);
        }
        late.sort_unstable();
        // Median lateness; generous because the test machine is shared.
        assert!(late[25] < 500_000, "median lateness {} ns", late[25]);
    }

    #[test]
    fn mmsg_round_trip_keeps_addresses_and_bytes() {
        let a = bind("127.0.0.1:0").unwrap();
        let b = bind("127.0.0.1:0").unwrap();
        let mut tx = Mmsg::new(4, 64);
        for i in 0..3u8 {
            tx.next_buf()[..2].copy_from_slice(&[i, 42]);
            tx.commit(2, b.local_addr().unwrap(), i);
        }
        let mut ok = 0;
        tx.flush(&a, |_, sent| ok += usize::from(sent));
        assert_eq!(ok, 3);
        assert!(tx.is_empty());
        let mut rx = Mmsg::new(8, 64);
        let mut got = Vec::new();
        let t = Instant::now();
        while got.len() < 3 && t.elapsed() < Duration::from_secs(2) {
            wait_readable(&b, Duration::from_millis(10));
            let n = rx.recv(&b).unwrap();
            for k in 0..n {
                let (d, src) = rx.get(k);
                assert_eq!(src, Some(a.local_addr().unwrap()));
                got.push(d.to_vec());
            }
        }
        assert_eq!(got, vec![vec![0, 42], vec![1, 42], vec![2, 42]]);
    }

    #[test]
    fn reuseport_sockets_share_one_address_and_serve_every_sender() {
        let socks = bind_reuseport("127.0.0.1:0".parse().unwrap(), 2).unwrap();
        let addr = socks[0].local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        assert_eq!(socks[1].local_addr().unwrap(), addr);
        for s in &socks {
            prepare(s).unwrap();
            set_busy_poll(s, 0).unwrap();
        }
        // Many senders (flows): each datagram lands on exactly one socket.
        let senders: Vec<_> = (0..16).map(|_| bind("127.0.0.1:0").unwrap()).collect();
        for (i, s) in senders.iter().enumerate() {
            s.send_to(&[i as u8], addr).unwrap();
        }
        let mut got = Vec::new();
        let t = Instant::now();
        let mut buf = [0u8; 8];
        while got.len() < senders.len() && t.elapsed() < Duration::from_secs(2) {
            for s in &socks {
                while let Some((n, _)) = try_recv(s, &mut buf).unwrap() {
                    got.push(buf[..n].to_vec());
                }
            }
        }
        got.sort();
        let want: Vec<Vec<u8>> = (0..16u8).map(|i| vec![i]).collect();
        assert_eq!(got, want);
        // A third socket on the address without SO_REUSEPORT is refused.
        assert!(UdpSocket::bind(addr).is_err());
    }
}
