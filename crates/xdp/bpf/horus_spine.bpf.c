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
// * Everything else (replies, multi-packet tasks, other traffic) is passed
//   up to the daemon.
//
// State: the arrays of horus_core.h sized for MAX_RACKS, plus idle.member
// (the spine's dedup bit, crates/core/src/idle.rs). docs/xdp.md has the
// table. One CPU runs it at a time, as the leaf (steer.h).

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
};

ARRAY(idle_member, __u8, MAX_RACKS);
ARRAY(spine_config, struct spine_config, 1);
ARRAY(spine_rng, struct rng_state, 1);
ARRAY(rack_addr, struct rack_addr, MAX_RACKS);
DEFINE_COUNTERS(counters, C_COUNTERS)

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

// Alg. 1 REMOVE: the first pass takes the lock, clears the member bit,
// shrinks the list and reads what moves; the resubmitted pass (right after,
// on this CPU) moves the last rack into the hole and releases the lock.
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
	*lock = 1;
	count(C_RESUBMISSIONS, 1);
	__u8 *member = bpf_map_lookup_elem(&idle_member, &rack);
	int was = member && *member;
	if (member)
		*member = 0;
	if (!was) {
		count(C_STALE_IDLE_UPDATE, 1);
		*lock = 0;
		return;
	}
	__u32 *p = u32_cell(&idle_p, 0);
	if (!p) {
		*lock = 0;
		return;
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
		return; // RemovedTop: gone with the decrement of p.
	__u32 *hole = u32_cell(&idle_list, removed_index);
	__u32 *moved = u32_cell(&idle_index, last_node);
	if (hole)
		*hole = last_node;
	if (moved)
		*moved = removed_index;
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
	__builtin_memcpy(f->eth->h_source, cfg->spine_mac, ETH_ALEN);
	__builtin_memcpy(f->eth->h_dest, to->mac, ETH_ALEN);
	if (cfg->spine_ip) {
		learn_reply_route(horus, f->ip->saddr, f->udp->source);
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

static __always_inline int spine_run(struct xdp_md *ctx, int on_spine_cpu)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udp_frame frame;
	if (parse_udp_frame(data, data_end, &frame))
		return XDP_PASS;
	__u8 *horus = frame.body;
	if ((void *)(horus + HORUS_HEADER_LEN) > data_end || horus[0] != WIRE_HORUS)
		return XDP_PASS;
	__u32 len;
	if (udp_payload_len(&frame, data_end, HORUS_HEADER_LEN, &len) || len > MAX_DATAGRAM)
		goto pass;
	__u32 zero = 0;
	const struct spine_config *cfg = bpf_map_lookup_elem(&spine_config, &zero);
	struct rng_state *rng = bpf_map_lookup_elem(&spine_rng, &zero);
	if (!cfg || !rng)
		return XDP_PASS;
	__u8 type = horus[1];
	__u32 src = ((__u32)horus[4] << 8) | horus[5];

	// Notices from leaves: header only, or header and the 16.16 load.
	if (type == TYPE_IDLE_ADD || type == TYPE_IDLE_REMOVE) {
		if (len != NOTICE_LEN)
			goto pass;
		if (!known(src)) {
			count(C_DROP_UNKNOWN_NODE, 1);
			return XDP_DROP;
		}
		if (!from_leaf(src, &frame)) {
			count(C_DROP_UNREGISTERED, 1);
			return XDP_DROP;
		}
		if (type == TYPE_IDLE_ADD) {
			count(C_IDLE_ADDS, 1);
			on_idle_add(src, cfg);
		} else {
			count(C_IDLE_REMOVES, 1);
			on_idle_remove(src);
		}
		return XDP_DROP;
	}
	if (type == TYPE_LOAD_UPDATE) {
		if (len != LOAD_UPDATE_LEN || (void *)(horus + LOAD_UPDATE_LEN) > data_end)
			goto pass;
		if (!known(src)) {
			count(C_DROP_UNKNOWN_NODE, 1);
			return XDP_DROP;
		}
		if (!from_leaf(src, &frame)) {
			count(C_DROP_UNREGISTERED, 1);
			return XDP_DROP;
		}
		__u32 load = ((__u32)horus[12] << 24) | ((__u32)horus[13] << 16) |
			     ((__u32)horus[14] << 8) | horus[15];
		count(C_LOAD_UPDATES, 1);
		pow2_update(src, load);
		return XDP_DROP;
	}
	if (type != TYPE_TASK_FIRST)
		goto pass;
	if (len < TASK_FIXED || (void *)(horus + TASK_FIXED) > data_end ||
	    (((__u32)horus[TASK_FIXED - 2] << 8) | horus[TASK_FIXED - 1]) != len - TASK_FIXED)
		goto pass;
	__u8 flags = horus[TASK_FLAGS_OFFSET];
	if ((flags & ~FLAGS_KNOWN) || !(flags & FLAG_LAST))
		goto pass;
	int idle = 0;
	long rack = schedule(rng, &idle);
	if (rack < 0)
		return XDP_DROP;
	int verdict = forward(&frame, horus, data_end, (__u32)rack, idle, cfg);
	if (on_spine_cpu && verdict == XDP_TX)
		return bpf_redirect(ctx->ingress_ifindex, 0);
	return verdict;
pass:
	count(C_PASSED, 1);
	return XDP_PASS;
}

SEC("xdp")
int horus_spine(struct xdp_md *ctx)
{
	return spine_run(ctx, 0);
}

DEFINE_STEERING(spine_cpu, spine_steer)

SEC("xdp/cpumap")
int horus_spine_cpu(struct xdp_md *ctx)
{
	count_run(64);
	return spine_run(ctx, 1);
}
