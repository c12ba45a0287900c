// SPDX-License-Identifier: Apache-2.0
//
// The Horus spine scheduler (NSDI'24 §3.3, §3.4, §A.3, §A.6) at the XDP hook,
// decision for decision the sans-IO HorusSpine of
// crates/core/src/horus/spine.rs with the paper's options
// (HorusOptions::default(): the last-announced idle rack, the idleNodes
// lock, no idle or slot tokens). Its nodes are the racks (leaves) of one
// pool.
//
// * A single-packet task goes to the rack on top of the idle list (peeked,
//   not popped: a spine removes a rack only on that leaf's idleRemove),
//   marked idleSelected (§A.3) and counted as drift at the rack (§A.6);
//   else to the lighter of two sampled racks by lazy power-of-2 over the
//   rack averages the leaves report (Alg. 2), a resubmission running as a
//   second pass right after the first.
// * idleAdd, idleRemove (both passes of Alg. 1's remove, back to back) and
//   loadUpdate from a leaf update the arrays; they end here (XDP_DROP).
// * A multi-packet task's first packet is scheduled the same way and its
//   rack recorded in the connection table (§A.4, conn.h); its
//   continuations follow that rack.
// * Everything else (replies, other traffic) is passed up to the daemon.
// * Sealed state messages (seal.h): with the notice key installed, a notice
//   is taken only sealed, under the key, with a sequence number above the
//   last one taken from its rack; else it is counted and dropped, as the
//   socket daemon does (crates/node/src/switch/mod.rs `unseal`).
// * Soft state: a rack whose leaf sent no notice for soft_state_ns is
//   forgotten (off the idle list, load 0), HorusSpine::control_expire. The
//   loader's tick writes the control plane's clock into `spine_clock`; the
//   first packet after it changed runs the expiry here, under the pass
//   lock on every CPU, so it never races the data path.
//
// State: the arrays of horus_core.h sized for MAX_RACKS, plus idle.member
// (the spine's dedup bit, crates/core/src/idle.rs). docs/xdp.md has the
// table. One CPU runs the passes at a time, as in the leaf: either the
// program is serialised on one CPU (steer.h), or it runs on every CPU and
// each packet's passes (a task's decision with its connection-table entry,
// a continuation's lookup, a notice's replay check and effect) hold the
// pass lock (pass_lock.h, docs/xdp.md "Every CPU"). Parsing, a notice's
// seal check, the frame's rewrite and the reply routes run in parallel;
// the counters they update are atomic (count_atomic).

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "frame.h"
#include "maps.h"
#include "steer.h"

#define MAX_RACKS 64
#define IDLE_CAPACITY MAX_RACKS
#define POW2_NODES MAX_RACKS
#define NOTICE_LEN HORUS_HEADER_LEN
#define LOAD_UPDATE_LEN (HORUS_HEADER_LEN + 4)

#include "horus_core.h"
#include "conn.h"
#include "seal.h"
#include "pass_lock.h"

// Counters (crates/xdp/src/spine.rs SpineCounters), indices into `counters`.
enum counter {
	C_DISPATCH_IDLE,
	C_DISPATCH_SAMPLED,
	C_RESUBMISSIONS,
	C_DROP_NO_NODES,
	C_DROP_UNKNOWN_NODE,
	C_STALE_IDLE_UPDATE,
	C_DROP_LOCK_HELD,
	C_DROP_OVERFLOW,
	C_IDLE_ADDS,
	C_IDLE_REMOVES,
	C_LOAD_UPDATES,
	C_PASSED,
	C_DROP_UNREGISTERED,
	C_DROP_UNSEALED,
	C_DROP_BAD_SEAL,
	C_DROP_REPLAYED,
	C_EXPIRED,
	C_COUNTERS,
};

// Where the spine sends a rack's tasks: its leaf.
struct rack_addr {
	__u8 mac[6];
	__be16 port;
	__be32 ip;
};

struct spine_config {
	__u8 spine_mac[6];
	__u16 pad;
	// Nonzero (netsched switch): a forwarded task leaves from the spine's
	// own address and its source is kept in `reply_routes`, as the leaf's.
	__be32 spine_ip;
	__be16 spine_port;
	__u16 pad2;
	// The racks linked (the idle list's capacity, crates/core spine.rs).
	__u32 idle_capacity;
	__u32 pad3;
	// HorusOptions::soft_state_ns; 0: off.
	__u64 soft_state_ns;
};

ARRAY(idle_member, __u8, MAX_RACKS);
ARRAY(spine_config, struct spine_config, 1);
ARRAY(spine_rng, struct rng_state, 1);
ARRAY(rack_addr, struct rack_addr, MAX_RACKS);
DEFINE_COUNTERS(counters, C_COUNTERS)
// Sealed state messages: the key, and the last sequence number taken per rack.
ARRAY(notice_key, struct notice_key, 1);
ARRAY(notice_seq, __u64, MAX_RACKS);
// Soft state: the control plane's clock (ns), the clock of the last expiry
// pass, and per rack when its last notice was taken and whether it expired
// since (HorusSpine's `heard` and `expired`).
ARRAY(spine_clock, __u64, 1);
ARRAY(expired_at, __u64, 1);
ARRAY(rack_heard, __u64, MAX_RACKS);
ARRAY(rack_expired, __u8, MAX_RACKS);

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// A node the spine knows: live in power-of-2 (HorusSpine::known).
static __always_inline int known(__u32 rack)
{
	return rack < MAX_RACKS && slot_of(rack) != NO_SLOT;
}

// A notice from `rack` must come from its leaf's address, as the socket
// daemon checks (switch/dispatch.rs): anyone else could list or unlist a
// rack. Not the sans-IO spine's check: its caller's.
static __always_inline int from_leaf(__u32 rack, const struct udp_frame *f)
{
	struct rack_addr *a = bpf_map_lookup_elem(&rack_addr, &rack);
	return a && a->ip == f->ip->saddr && a->port == f->udp->source;
}

// IdleNodes::peek_slot with the last slot: read, keep.
static __always_inline int idle_peek(__u32 *rack)
{
	__u32 zero = 0;
	__u8 *lock = bpf_map_lookup_elem(&idle_lock, &zero);
	// Between a remove's passes the vacated slot still holds the removed
	// rack: no idle rack (idle.rs).
	if (!lock || *lock)
		return 0;
	__u32 *p = u32_cell(&idle_p, 0);
	if (!p || *p == 0)
		return 0;
	__u32 *entry = u32_cell(&idle_list, *p - 1);
	if (!entry)
		return 0;
	*rack = *entry;
	return 1;
}

// IdleNodes::add with the member bit: a leaf's idleAdd.
static __always_inline void on_idle_add(__u32 rack, const struct spine_config *cfg)
{
	__u8 *member = bpf_map_lookup_elem(&idle_member, &rack);
	if (!member)
		return;
	if (*member) {
		// A re-sent idleAdd (§A.3) of a rack already listed.
		count(C_STALE_IDLE_UPDATE, 1);
		return;
	}
	*member = 1;
	if (idle_add(rack, cfg->idle_capacity) < 0)
		count(C_DROP_OVERFLOW, 1);
}

// Alg. 1 REMOVE with the lock free: the first pass takes the lock, clears
// the member bit, shrinks the list and reads what moves; the resubmitted
// pass (right after, on this CPU) moves the last rack into the hole and
// releases the lock. Returns whether `rack` was listed.
static __always_inline int idle_remove_now(__u32 rack, __u8 *lock)
{
	*lock = 1;
	__u8 *member = bpf_map_lookup_elem(&idle_member, &rack);
	int was = member && *member;
	if (member)
		*member = 0;
	if (!was) {
		*lock = 0;
		return 0;
	}
	__u32 *p = u32_cell(&idle_p, 0);
	if (!p) {
		*lock = 0;
		return 1;
	}
	*p = sat_sub(*p, 1);
	__u32 top = *p;
	__u32 *last = u32_cell(&idle_list, top);
	__u32 *index = u32_cell(&idle_index, rack);
	__u32 last_node = last ? *last : 0;
	__u32 removed_index = index ? *index : 0;
	// Second pass.
	*lock = 0;
	if (removed_index == top)
		return 1; // RemovedTop: gone with the decrement of p.
	__u32 *hole = u32_cell(&idle_list, removed_index);
	__u32 *moved = u32_cell(&idle_index, last_node);
	if (hole)
		*hole = last_node;
	if (moved)
		*moved = removed_index;
	return 1;
}

// A leaf's idleRemove: both passes of Alg. 1's REMOVE.
static __always_inline void on_idle_remove(__u32 rack)
{
	__u32 zero = 0;
	__u8 *lock = bpf_map_lookup_elem(&idle_lock, &zero);
	if (!lock)
		return;
	if (*lock) {
		count(C_DROP_LOCK_HELD, 1);
		return;
	}
	count(C_RESUBMISSIONS, 1);
	if (!idle_remove_now(rack, lock))
		count(C_STALE_IDLE_UPDATE, 1);
}

// IdleNodes::contains: the control plane's lookup of a listed rack.
static __always_inline int idle_contains(__u32 rack)
{
	__u32 *p = u32_cell(&idle_p, 0);
	__u32 *index = u32_cell(&idle_index, rack);
	if (!p || !index || *index >= *p)
		return 0;
	__u32 *entry = u32_cell(&idle_list, *index);
	return entry && *entry == rack;
}

// HorusSpine::refreshed: a rack's notice was taken.
static __always_inline void refreshed(__u32 rack, const struct spine_config *cfg)
{
	if (!cfg->soft_state_ns)
		return;
	__u32 zero = 0;
	__u64 *now = bpf_map_lookup_elem(&spine_clock, &zero);
	__u64 *heard = bpf_map_lookup_elem(&rack_heard, &rack);
	__u8 *expired = bpf_map_lookup_elem(&rack_expired, &rack);
	if (now && heard)
		*heard = *now;
	if (expired)
		*expired = 0;
}

// Whether the clock moved since the last expiry pass.
static __always_inline int expiry_due(void)
{
	__u32 zero = 0;
	__u64 *nowp = bpf_map_lookup_elem(&spine_clock, &zero);
	__u64 *at = bpf_map_lookup_elem(&expired_at, &zero);
	return nowp && at && *at != *nowp;
}

struct expiry {
	__u64 now;
	__u64 bound;
	__u8 *lock;
};

// One rack of the expiry pass (a bpf_loop iteration: the verifier bounds
// a callback, where the open loop's counter was lost in the lock's code).
static long expire_rack(__u32 r, void *ctx)
{
	struct expiry *e = ctx;
	if (!known(r))
		return 0;
	__u64 *heard = bpf_map_lookup_elem(&rack_heard, &r);
	__u8 *expired = bpf_map_lookup_elem(&rack_expired, &r);
	if (!heard || !expired || *expired || (e->now > *heard ? e->now - *heard : 0) < e->bound)
		return 0;
	*expired = 1;
	count(C_EXPIRED, 1);
	if (idle_contains(r) && !*e->lock)
		idle_remove_now(r, e->lock);
	pow2_update(r, 0);
	return 0;
}

// HorusSpine::control_expire at the clock the loader wrote last, once per
// value of the clock: every rack not heard from for soft_state_ns leaves
// the idle list (both passes back to back, the switch CPU's remove) and its
// load is reported as 0.
static __always_inline void expire_now(const struct spine_config *cfg)
{
	__u32 zero = 0;
	__u64 *nowp = bpf_map_lookup_elem(&spine_clock, &zero);
	__u64 *at = bpf_map_lookup_elem(&expired_at, &zero);
	__u8 *lock = bpf_map_lookup_elem(&idle_lock, &zero);
	if (!nowp || !at || !lock || *at == *nowp)
		return;
	struct expiry e = { .now = *nowp, .bound = cfg->soft_state_ns, .lock = lock };
	*at = e.now;
	bpf_loop(MAX_RACKS, expire_rack, &e, 0);
}

// The expiry when due, under the pass lock (checked again once held: another
// CPU may have run it). It takes no ticket: between two tickets it runs
// before every later packet's passes. A lock not had leaves it to the next
// packet.
static __always_inline void soft_state_expire(const struct spine_config *cfg)
{
	if (!cfg->soft_state_ns || !expiry_due())
		return;
	struct pass_lock *held;
	if (pass_lock_only(&held))
		return;
	expire_now(cfg);
	pass_end(held);
}

// O_SEALED: accepted with a sequence number the replay check must take.
enum opened { O_ACCEPT, O_SEALED, O_PASS, O_DROP };

// A notice of `plain` bytes unsealed (seal.h), in the socket daemon's order:
// unsealed, bad seal, then (in the passes: `replay_ok`) replayed. `plain`
// is a constant at each call site. Outside the passes: every CPU checks
// seals at once.
static __always_inline enum opened open_notice(const __u8 *horus, void *data_end, __u32 len,
					       const __u32 plain, __u64 *seq)
{
	__u32 zero = 0;
	const struct notice_key *key = bpf_map_lookup_elem(&notice_key, &zero);
	int on = key && key->on;
	if (len == plain && !on)
		return O_ACCEPT;
	if (len != plain + SEAL_LEN) {
		if (!on)
			return O_PASS; // malformed: the daemon counts it
		count_atomic(C_DROP_UNSEALED, 1);
		return O_DROP;
	}
	if (!on)
		return O_ACCEPT; // sealing off: the seal is ignored
	if ((void *)(horus + plain + SEAL_LEN) > data_end)
		return O_PASS;
	__u8 m[SEALED_MAX];
	__builtin_memcpy(m, horus, plain + SEAL_LEN);
	if (!seal_ok(key, m, plain, seq)) {
		count_atomic(C_DROP_BAD_SEAL, 1);
		return O_DROP;
	}
	return O_SEALED;
}

// ReplayGuard (crates/node/src/notice_auth.rs), for the racks a spine can
// hold (any other is an unknown node in take_notice): `seq` must be above
// the last one taken from `rack`. Spine state: in the passes.
static __always_inline int replay_ok(__u32 rack, __u64 seq)
{
	__u64 *last = bpf_map_lookup_elem(&notice_seq, &rack);
	if (!last)
		return 1;
	if (seq <= *last) {
		count(C_DROP_REPLAYED, 1);
		return 0;
	}
	*last = seq;
	return 1;
}

// HorusSpine::on_task for a single-packet task: the rack chosen, or -1 when
// none is live. `idle` says whether the idle list chose it.
static __always_inline long schedule(struct rng_state *rng, int *idle)
{
	__u32 rack = 0;
	if (idle_peek(&rack)) {
		pow2_add_drift(rack);
		count(C_DISPATCH_IDLE, 1);
		*idle = 1;
		return rack;
	}
	*idle = 0;
	struct samples s = {};
	switch (pow2_schedule(rng, &rack, &s)) {
	case P_CHOSEN:
		break;
	case P_RESUBMIT:
		count(C_RESUBMISSIONS, 1);
		if (!pow2_schedule_resubmitted(&s, &rack)) {
			count(C_DROP_NO_NODES, 1);
			return -1;
		}
		break;
	default:
		count(C_DROP_NO_NODES, 1);
		return -1;
	}
	count(C_DISPATCH_SAMPLED, 1);
	return rack;
}

// Send the task on to `rack`'s leaf, with idleSelected set exactly when the
// idle list chose the rack (§A.3; spine.rs `dispatch`).
static __always_inline int forward(struct udp_frame *f, __u8 *horus, void *data_end, __u32 rack,
				   int idle, const struct spine_config *cfg)
{
	struct rack_addr *to = bpf_map_lookup_elem(&rack_addr, &rack);
	if (!to || (void *)(horus + TASK_FIXED) > data_end)
		return XDP_DROP;
	if (cfg->spine_ip)
		learn_reply_route(horus, f->eth->h_source, f->ip->saddr, f->udp->source);
	__builtin_memcpy(f->eth->h_source, cfg->spine_mac, ETH_ALEN);
	__builtin_memcpy(f->eth->h_dest, to->mac, ETH_ALEN);
	if (cfg->spine_ip) {
		f->ip->saddr = cfg->spine_ip;
		f->udp->source = cfg->spine_port;
	}
	f->ip->daddr = to->ip;
	f->udp->dest = to->port;
	f->udp->check = 0;
	horus[6] = (__u8)(rack >> 8);
	horus[7] = (__u8)rack;
	__u8 flags = horus[TASK_FLAGS_OFFSET];
	horus[TASK_FLAGS_OFFSET] =
		idle ? (flags | FLAG_IDLE_SELECTED) : (flags & ~FLAG_IDLE_SELECTED);
	ipv4_set_checksum(f->ip);
	return XDP_TX;
}

// A notice from a leaf, once opened: its source, then its effect.
static __always_inline int take_notice(__u8 type, __u32 src, const __u8 *horus, void *data_end,
				       const struct udp_frame *f, const struct spine_config *cfg)
{
	if (!known(src)) {
		count(C_DROP_UNKNOWN_NODE, 1);
		return XDP_DROP;
	}
	if (!from_leaf(src, f)) {
		count(C_DROP_UNREGISTERED, 1);
		return XDP_DROP;
	}
	refreshed(src, cfg);
	if (type == TYPE_IDLE_ADD) {
		count(C_IDLE_ADDS, 1);
		on_idle_add(src, cfg);
	} else if (type == TYPE_IDLE_REMOVE) {
		count(C_IDLE_REMOVES, 1);
		on_idle_remove(src);
	} else if ((void *)(horus + LOAD_UPDATE_LEN) <= data_end) {
		// Always within (open_notice checked the length): for the verifier.
		__u32 load = ((__u32)horus[12] << 24) | ((__u32)horus[13] << 16) |
			     ((__u32)horus[14] << 8) | horus[15];
		count(C_LOAD_UPDATES, 1);
		pow2_update(src, load);
	}
	return XDP_DROP;
}

// A packet's key in `pass_order` (pass_lock.h): its type and its header's
// seq, which the sender chooses (the differential tests number packets so).
static __always_inline __u32 spine_key(const __u8 *horus)
{
	return ((__u32)horus[1] << 16) | ((__u32)horus[10] << 8) | horus[11];
}

static __always_inline int spine_run(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 zero = 0;
	const struct spine_config *cfg = bpf_map_lookup_elem(&spine_config, &zero);
	if (!cfg)
		return XDP_PASS;
	soft_state_expire(cfg);
	struct udp_frame frame;
	__u32 len;
	enum horus_frame parsed = parse_horus_frame(data, data_end, &frame, &len);
	if (parsed == H_OTHER)
		return XDP_PASS;
	if (parsed == H_MALFORMED)
		goto pass;
	__u8 *horus = frame.body;
	struct rng_state *rng = bpf_map_lookup_elem(&spine_rng, &zero);
	if (!rng)
		return XDP_PASS;
	__u8 type = horus[1];
	__u32 src = ((__u32)horus[4] << 8) | horus[5];
	struct pass_lock *held;

	// Notices from leaves: header only, or header and the 16.16 load; each
	// sealed or not (open_notice).
	if (type == TYPE_IDLE_ADD || type == TYPE_IDLE_REMOVE || type == TYPE_LOAD_UPDATE) {
		__u64 seq = 0;
		enum opened opened = type == TYPE_LOAD_UPDATE ?
					     open_notice(horus, data_end, len, LOAD_UPDATE_LEN, &seq) :
					     open_notice(horus, data_end, len, NOTICE_LEN, &seq);
		if (opened == O_PASS)
			goto pass;
		if (opened == O_DROP)
			return XDP_DROP;
		// Given up under contention: lost, as a lost datagram (§A.3's
		// re-sends and the next loadUpdate recover it; pass_lock.h).
		if (pass_begin(&held, spine_key(horus)))
			return XDP_DROP;
		int verdict = XDP_DROP;
		if (opened != O_SEALED || replay_ok(src, seq))
			verdict = take_notice(type, src, horus, data_end, &frame, cfg);
		pass_end(held);
		return verdict;
	}
	int flags = conn_task_flags(type, horus, data_end, len);
	if (flags < 0 || (void *)(horus + TASK_FIXED) > data_end)
		goto pass;
	__u64 key = conn_task_key(horus);
	// Given up under contention: dropped, counted (pass_lock.h).
	if (pass_begin(&held, spine_key(horus)))
		return XDP_DROP;
	// The table's clock is read in the passes (it never goes back in the
	// order they run), and only by a packet that uses the table: a clock
	// read is a good part of a single-packet task's decision.
	if (type == TYPE_TASK_CONT) {
		// §A.4: a continuation goes to its first packet's rack (conn.h),
		// never marked idleSelected; none known: dropped, counted.
		long rack = conn_follow(key, flags & FLAG_LAST, conn_now());
		pass_end(held);
		if (rack < 0)
			return XDP_DROP;
		return forward(&frame, horus, data_end, (__u32)rack, 0, cfg);
	}
	int idle = 0;
	long rack = schedule(rng, &idle);
	// §A.4: a multi-packet task's first packet records its rack, under the
	// same lock as the decision, so a continuation that takes the lock
	// after it finds the entry.
	if (rack >= 0 && !(flags & FLAG_LAST))
		conn_insert(key, conn_now(), (__u32)rack, 0);
	pass_end(held);
	if (rack < 0)
		return XDP_DROP;
	return forward(&frame, horus, data_end, (__u32)rack, idle, cfg);
pass:
	count_atomic(C_PASSED, 1);
	return XDP_PASS;
}

DEFINE_STEERED_PROGRAMS(spine_run, horus_spine, spine_cpu, spine_steer, horus_spine_cpu)
// The spine on every CPU (pass_lock.h): the program the interface runs
// itself, counted in `runs_on` as the cpumap program is, its frames leaving
// by a redirect rather than XDP_TX (steer.h says why).
DEFINE_REDIRECTING(spine_run, horus_spine_all, "xdp")
