//! Why the runtime itself (not a data plane) dropped a datagram: the
//! `by="runtime"` half of `netsched_drops_total`.

/// Why the runtime (not a data plane) dropped a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum RuntimeDrop {
    /// `DecodeError::Truncated`.
    Truncated,
    /// `DecodeError::UnknownType`.
    UnknownType,
    /// `DecodeError::Inconsistent` (also a bad version or family nibble).
    Inconsistent,
    /// `DecodeError::TrailingBytes`.
    TrailingBytes,
    /// A datagram of a family this daemon does not serve: pull scheduling
    /// (`netsched switch` with a pull config runs `crate::pull::switch`).
    UnsupportedFamily,
    /// No instance of this daemon serves the header's pool.
    UnknownPool,
    /// A notice, reply or heartbeat whose source address is not the one
    /// registered for the node it names, or a task from an address that is
    /// neither a configured client nor an upstream spine of a closed
    /// instance (spoofed or misconfigured).
    UnregisteredSource,
    /// A datagram whose source fits more than one instance, with nothing on
    /// the wire to tell them apart (RackSched family, or two open entry
    /// instances of one pool).
    AmbiguousSource,
    /// A task of a new application at an instance whose reply-route table
    /// is full (`max_routes`) of routes still in use.
    RouteTableFull,
    /// A task of a new application from an unprivileged source that already
    /// holds `max_routes_per_source` routes.
    RouteSourceLimit,
    /// A task of an application whose reply route belongs to another
    /// client host that used it within `route_idle_ms`: the sender may not
    /// take that application's replies.
    RouteOwned,
    /// A message this role never receives (a heartbeat at a spine, …).
    WrongRole,
    /// A reply for an application whose tasks never passed here.
    NoRoute,
    /// A dispatch not caused by a task packet (queueing baselines are not
    /// hosted); counted rather than invented.
    NoPacket,
    /// Encoding failed (cannot happen for decoded input; counted anyway).
    Encode,
    /// The kernel refused the send (buffer full, unreachable).
    Send,
    /// `datapath = "xdp"`: a task the XDP program passed up instead of
    /// scheduling it (IP options, a fragment, the program detached;
    /// switch/xdp.rs), refused.
    XdpPassedTask,
    /// A state message (notice, keep-alive) without a seal where sealing is
    /// on (`notice_mac`, crate::notice_auth).
    Unsealed,
    /// A state message whose seal does not verify (wrong key, altered).
    BadSeal,
    /// A sealed state message whose sequence number is not above the last
    /// one accepted from its sender.
    Replayed,
}

impl RuntimeDrop {
    pub const ALL: [RuntimeDrop; 20] = [
        RuntimeDrop::Truncated,
        RuntimeDrop::UnknownType,
        RuntimeDrop::Inconsistent,
        RuntimeDrop::TrailingBytes,
        RuntimeDrop::UnsupportedFamily,
        RuntimeDrop::UnknownPool,
        RuntimeDrop::UnregisteredSource,
        RuntimeDrop::AmbiguousSource,
        RuntimeDrop::RouteTableFull,
        RuntimeDrop::RouteSourceLimit,
        RuntimeDrop::RouteOwned,
        RuntimeDrop::WrongRole,
        RuntimeDrop::NoRoute,
        RuntimeDrop::NoPacket,
        RuntimeDrop::Encode,
        RuntimeDrop::Send,
        RuntimeDrop::XdpPassedTask,
        RuntimeDrop::Unsealed,
        RuntimeDrop::BadSeal,
        RuntimeDrop::Replayed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RuntimeDrop::Truncated => "truncated",
            RuntimeDrop::UnknownType => "unknown_type",
            RuntimeDrop::Inconsistent => "inconsistent",
            RuntimeDrop::TrailingBytes => "trailing_bytes",
            RuntimeDrop::UnsupportedFamily => "unsupported_family",
            RuntimeDrop::UnknownPool => "unknown_pool",
            RuntimeDrop::UnregisteredSource => "unregistered_source",
            RuntimeDrop::AmbiguousSource => "ambiguous_source",
            RuntimeDrop::RouteTableFull => "route_table_full",
            RuntimeDrop::RouteSourceLimit => "route_source_limit",
            RuntimeDrop::RouteOwned => "route_owned",
            RuntimeDrop::WrongRole => "wrong_role",
            RuntimeDrop::NoRoute => "no_route",
            RuntimeDrop::NoPacket => "no_packet",
            RuntimeDrop::Encode => "encode",
            RuntimeDrop::Send => "send",
            RuntimeDrop::XdpPassedTask => "xdp_passed_task",
            RuntimeDrop::Unsealed => "unsealed",
            RuntimeDrop::BadSeal => "bad_seal",
            RuntimeDrop::Replayed => "replayed",
        }
    }
}
