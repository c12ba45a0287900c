//! `BPF_PROG_TEST_RUN` through bpf(2): aya has no test-run API, so the
//! command is issued directly on the program's descriptor.

use std::io;
use std::os::fd::RawFd;

const BPF_PROG_TEST_RUN: libc::c_long = 10;

/// The `test` member of `union bpf_attr` (linux/bpf.h), up to `flags`.
#[repr(C)]
#[derive(Default)]
struct TestAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    _pad: u32,
}

/// What an XDP program returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpAction {
    Aborted,
    Drop,
    Pass,
    Tx,
    Redirect,
    Other(u32),
}

impl From<u32> for XdpAction {
    fn from(code: u32) -> Self {
        match code {
            0 => XdpAction::Aborted,
            1 => XdpAction::Drop,
            2 => XdpAction::Pass,
            3 => XdpAction::Tx,
            4 => XdpAction::Redirect,
            other => XdpAction::Other(other),
        }
    }
}

/// One test run: the verdict, the frame as the program left it, and the
/// kernel's mean time per run.
#[derive(Clone, Debug)]
pub struct TestRun {
    pub action: XdpAction,
    pub frame: Vec<u8>,
    pub mean_ns: u32,
}

pub(crate) fn run(prog_fd: RawFd, packet: &[u8], repeat: u32) -> io::Result<TestRun> {
    // The program neither grows nor shrinks the frame.
    let mut out = vec![0u8; packet.len() + 256];
    let mut attr = TestAttr {
        prog_fd: prog_fd as u32,
        data_size_in: packet.len() as u32,
        data_size_out: out.len() as u32,
        data_in: packet.as_ptr() as u64,
        data_out: out.as_mut_ptr() as u64,
        repeat: repeat.max(1),
        ..TestAttr::default()
    };
    // SAFETY: `attr`'s pointers outlive the call, with their sizes as
    // given; the kernel writes at most `data_size_out` bytes to `out`.
    unsafe { prog_test_run(&mut attr)? };
    out.truncate(attr.data_size_out as usize);
    Ok(TestRun {
        action: XdpAction::from(attr.retval),
        frame: out,
        mean_ns: attr.duration,
    })
}

/// `BPF_F_TEST_XDP_LIVE_FRAMES`: the frames the program sends (XDP_TX,
/// redirect) really leave through the ingress interface given in the context.
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;

/// `struct xdp_md` as a test run's context: only the ingress interface set.
#[repr(C)]
#[derive(Default)]
struct XdpMd {
    data: u32,
    data_end: u32,
    data_meta: u32,
    ingress_ifindex: u32,
    rx_queue_index: u32,
    egress_ifindex: u32,
}

/// Runs the program `repeat` times on `packet` in live-frame mode (kernel >=
/// 5.18): each run starts from `packet`, and what it sends goes out of
/// interface `ifindex` (of the calling thread's network namespace).
pub(crate) fn run_live(prog_fd: RawFd, packet: &[u8], repeat: u32, ifindex: u32) -> io::Result<()> {
    let ctx = XdpMd {
        data_end: packet.len() as u32,
        ingress_ifindex: ifindex,
        ..XdpMd::default()
    };
    let mut attr = TestAttr {
        prog_fd: prog_fd as u32,
        data_size_in: packet.len() as u32,
        data_in: packet.as_ptr() as u64,
        repeat: repeat.max(1),
        ctx_size_in: std::mem::size_of::<XdpMd>() as u32,
        ctx_in: &ctx as *const XdpMd as u64,
        flags: BPF_F_TEST_XDP_LIVE_FRAMES,
        ..TestAttr::default()
    };
    // SAFETY: `attr`'s pointers (the packet, the context) outlive the
    // call, with their sizes as given; in live-frame mode the kernel writes
    // no output.
    unsafe { prog_test_run(&mut attr) }
}

/// `bpf(BPF_PROG_TEST_RUN, attr)`.
///
/// # Safety
/// Every pointer in `attr` must be valid for its size until the call
/// returns (the output ones writable).
unsafe fn prog_test_run(attr: &mut TestAttr) -> io::Result<()> {
    // SAFETY: `attr` is a valid `bpf_attr` prefix; the caller vouches for
    // its pointers.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            attr as *mut TestAttr,
            std::mem::size_of::<TestAttr>(),
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
