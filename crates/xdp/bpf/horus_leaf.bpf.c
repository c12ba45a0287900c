// SPDX-License-Identifier: Apache-2.0
//
// The Horus leaf scheduler (NSDI'24 §3.3, §3.4, §A.2, §A.3) at the XDP hook,
// decision for decision the sans-IO HorusLeaf of crates/core/src/horus/leaf.rs
// with the paper's options (HorusOptions::default(): no idle or slot tokens).
//
// State: one BPF array map per register array of the switch model
// (docs/switch-model.md, "Horus leaf"), same names with '.' -> '_', same cell
// widths (a 1-bit cell takes a byte, the 48-bit load/epoch pair a padded
// 8-byte struct). docs/xdp.md has the table.
//
// A resubmission (Alg. 2's second pass, a stale idle entry's retry, a
// reordered reply's relist) is another iteration of a bpf_loop inside the
// same program run: the passes of one packet run back to back on one CPU,
// as the sans-IO drivers run them, so no other packet can come between them.
// The program assumes one CPU runs it at a time (one RX queue, docs/xdp.md):
// maps are updated without atomics, as a switch's stage updates one cell
// per packet.
//
// XDP cannot originate a packet, so notices toward the spine (idleAdd,
// idleRemove, loadUpdate) are pushed in order onto the `notices` queue map;
// the loader pops them and sends the datagrams the socket daemon would send.

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

#define MAX_WORKERS 64
// Twice the workers: a report crossing a task lists a busy worker (leaf.rs).
#define IDLE_CAPACITY (2 * MAX_WORKERS)
#define NO_SLOT 0xffffffffu
#define FIXED_ONE 65536u
// A packet needs at most one pass per idle entry (each stale one is popped
// and retried), a power-of-2 resubmission and the retry it may turn into.
#define MAX_PASSES (IDLE_CAPACITY + 4)

#define WIRE_HORUS 0x11
#define TYPE_TASK_FIRST 1
#define TYPE_REPLY 3
#define FLAG_LAST 0x01
#define FLAG_IDLE_SELECTED 0x02
#define HORUS_HEADER_LEN 12
#define TASK_FLAGS_OFFSET 20
#define FLAGS_KNOWN (FLAG_LAST | FLAG_IDLE_SELECTED)
// Fixed parts before the payload, whose u16 length ends them
// (docs/protocol.md): header, task_id, flags, class, service time; header,
// task_id, status.
#define TASK_FIXED 32
#define REPLY_FIXED 23
#define REPLY_STATUS_OFFSET 20
#define REPLY_STATUS_MAX 1
#define MAX_DATAGRAM 1472

// Notice kinds on the `notices` queue (crates/xdp/src/lib.rs NoticeKind).
#define NOTICE_IDLE_ADD 1
#define NOTICE_IDLE_REMOVE 2
#define NOTICE_LOAD_UPDATE 3

// Counters (crates/xdp/src/lib.rs Counter), indices into `counters`.
enum counter {
	C_DISPATCH_IDLE,
	C_DISPATCH_SAMPLED,
	C_RESUBMISSIONS,
	C_STALE_IDLE_ENTRIES,
	C_RELISTED_AFTER_REORDER,
	C_FORGOTTEN_LOST,
	C_DROP_NO_NODES,
	C_DROP_OVERFLOW,
	C_DROP_UNKNOWN_NODE,
	C_PASSED,
	C_REPLIES,
	C_NOTICES_LOST,
	C_COUNTERS,
};

struct load_cell {
	__u32 load;
	__u16 epoch;
	__u16 pad;
};

struct notice {
	__u32 kind;
	__u32 value;
};

struct worker_addr {
	__u8 mac[6];
	__be16 port;
	__be32 ip;
};

struct leaf_config {
	__u32 threshold;
	// 2w, at most IDLE_CAPACITY.
	__u32 idle_capacity;
	__u32 announce_on_reply;
	__u32 pad0;
	__u64 loss_resync_ns;
	// Nonzero: the clock (differential tests); zero: bpf_ktime_get_ns().
	__u64 fixed_now;
	__u8 leaf_mac[6];
	__u16 pad;
	// Nonzero (netsched switch): a forwarded task leaves from the leaf's own
	// address, as the socket daemon sends it, and its source is kept in
	// `reply_route`. Zero (differential tests): the client's source is kept.
	__be32 leaf_ip;
	__be16 leaf_port;
	__u16 pad2;
};

// Where an application's tasks came from (the socket daemon's reply
// routes, crates/node/src/switch/reply_routes.rs): the daemon sends the
// replies XDP passes up there. Keyed by the application id as it is on the
// wire (task_id's upper half, big endian).
struct reply_route {
	__be32 ip;
	__be16 port;
	__u16 pad;
};

struct rng_state {
	__u64 s[4];
};

// idleNodes (stages 0-2), crates/core/src/idle.rs.
ARRAY(idle_lock, __u8, 1);
ARRAY(idle_p, __u32, 1);
ARRAY(idle_list, __u32, IDLE_CAPACITY);
ARRAY(idle_index, __u32, IDLE_CAPACITY);
ARRAY(leaf_listed, __u32, MAX_WORKERS);
// Lazy power-of-2 (stages 4-9), crates/core/src/pow2.rs.
ARRAY(pow2_slot_of, __u32, MAX_WORKERS);
ARRAY(pow2_count, __u32, 1);
ARRAY(pow2_factor_pre, __u32, MAX_WORKERS);
ARRAY(pow2_node1, __u32, MAX_WORKERS);
ARRAY(pow2_load1, struct load_cell, MAX_WORKERS);
ARRAY(pow2_node2, __u32, MAX_WORKERS);
ARRAY(pow2_load2, struct load_cell, MAX_WORKERS);
ARRAY(pow2_factor, __u32, MAX_WORKERS);
ARRAY(pow2_drift1, __u32, MAX_WORKERS);
ARRAY(pow2_drift2, __u32, MAX_WORKERS);
// The leaf's own arrays (stages 10-13), crates/core/src/horus/leaf.rs.
ARRAY(leaf_outstand, __u32, MAX_WORKERS);
ARRAY(leaf_last_sent, __u64, MAX_WORKERS);
ARRAY(leaf_factor, __u32, 1);
ARRAY(leaf_avg, __u32, 1);
ARRAY(leaf_spine_view, __u32, 1);
// What a switch keeps in tables and its parser rather than registers.
ARRAY(leaf_config, struct leaf_config, 1);
ARRAY(leaf_rng, struct rng_state, 1);
ARRAY(worker_addr, struct worker_addr, MAX_WORKERS);
DEFINE_COUNTERS(counters, C_COUNTERS)

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 4096);
	__type(value, struct notice);
} notices SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct reply_route);
} reply_routes SEC(".maps");

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline __u32 *u32_cell(void *map, __u32 index)
{
	return bpf_map_lookup_elem(map, &index);
}

static __always_inline __u32 sat_add(__u32 a, __u32 b)
{
	__u32 s = a + b;
	return s < a ? 0xffffffffu : s;
}

static __always_inline __u32 sat_sub(__u32 a, __u32 b)
{
	return a > b ? a - b : 0;
}

static __always_inline __u32 sat_mul(__u32 a, __u32 b)
{
	__u64 p = (__u64)a * b;
	return p > 0xffffffffull ? 0xffffffffu : (__u32)p;
}

static __always_inline void notify(__u32 kind, __u32 value)
{
	struct notice n = { .kind = kind, .value = value };
	// A full queue (the loader fell behind) loses the notice, as a lost
	// datagram would; the spine's view recovers with the next one (§A.3).
	if (bpf_map_push_elem(&notices, &n, 0))
		count(C_NOTICES_LOST, 1);
}

// xoshiro256++, crates/core/src/rng.rs (Rng::next_u64).
static __always_inline __u64 rotl(__u64 x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static __always_inline __u64 rng_next(struct rng_state *r)
{
	__u64 result = rotl(r->s[0] + r->s[3], 23) + r->s[0];
	__u64 t = r->s[1] << 17;
	r->s[2] ^= r->s[0];
	r->s[3] ^= r->s[1];
	r->s[1] ^= r->s[2];
	r->s[0] ^= r->s[3];
	r->s[2] ^= t;
	r->s[3] = rotl(r->s[3], 45);
	return result;
}

// Rng::below: Lemire's multiply-shift.
static __always_inline __u32 rng_below(struct rng_state *r, __u32 n)
{
	return (__u32)(((rng_next(r) >> 32) * (__u64)n) >> 32);
}

// ---- idleNodes (Alg. 1), crates/core/src/idle.rs ----

enum retrieved { R_NODE, R_EMPTY, R_LOCKED };

// IdleNodes::add without the member bit (a leaf's list). Returns the slot
// (the count of idle nodes before), or -1 when the list is full.
static __always_inline long idle_add(__u32 node, __u32 capacity)
{
	__u32 *p = u32_cell(&idle_p, 0);
	if (!p)
		return -1;
	__u32 slot = *p;
	if (slot >= capacity)
		return -1;
	*p = slot + 1;
	__u32 *entry = u32_cell(&idle_list, slot);
	__u32 *index = u32_cell(&idle_index, node);
	if (entry)
		*entry = node;
	if (index)
		*index = slot;
	return slot;
}

// IdleNodes::retrieve: pop the top idle node.
static __always_inline enum retrieved idle_retrieve(__u32 *node, __u32 *remaining)
{
	__u32 zero = 0;
	__u8 *lock = bpf_map_lookup_elem(&idle_lock, &zero);
	if (lock && *lock)
		return R_LOCKED;
	__u32 *p = u32_cell(&idle_p, 0);
	if (!p || *p == 0)
		return R_EMPTY;
	*p -= 1;
	__u32 *entry = u32_cell(&idle_list, *p);
	*node = entry ? *entry : 0;
	*remaining = *p;
	return R_NODE;
}

// ---- lazy power-of-2 (Alg. 2), crates/core/src/pow2.rs ----

static __always_inline __u32 slot_of(__u32 node)
{
	__u32 *slot = u32_cell(&pow2_slot_of, node);
	return slot ? *slot : NO_SLOT;
}

// LazyPow2::add_drift: a task sent by the idle path. Returns whether live.
static __always_inline int pow2_add_drift(__u32 node)
{
	__u32 slot = slot_of(node);
	if (slot == NO_SLOT)
		return 0;
	__u32 *inc = u32_cell(&pow2_factor, slot);
	__u32 *d1 = u32_cell(&pow2_drift1, slot);
	__u32 *d2 = u32_cell(&pow2_drift2, slot);
	__u32 add = inc ? *inc : 0;
	if (d1)
		*d1 = sat_add(*d1, add);
	if (d2)
		*d2 = sat_add(*d2, add);
	return 1;
}

// LazyPow2::update: a reply reports `node`'s queue length.
static __always_inline void pow2_update(__u32 node, __u32 load)
{
	__u32 slot = slot_of(node);
	if (slot == NO_SLOT)
		return;
	struct load_cell *c1 = bpf_map_lookup_elem(&pow2_load1, &slot);
	struct load_cell *c2 = bpf_map_lookup_elem(&pow2_load2, &slot);
	if (c1) {
		c1->load = load;
		c1->epoch += 1;
	}
	if (c2) {
		c2->load = load;
		c2->epoch += 1;
	}
	__u32 *d1 = u32_cell(&pow2_drift1, slot);
	__u32 *d2 = u32_cell(&pow2_drift2, slot);
	if (d1)
		*d1 = 0;
	if (d2)
		*d2 = 0;
}

// Pow2Samples: what the first pass carries to the resubmitted one.
struct samples {
	__u32 first, first_load, first_drift;
	__u32 second, second_load, second_drift;
	__u16 first_epoch, second_epoch;
};

enum pow2_first { P_CHOSEN, P_RESUBMIT, P_EMPTY };

// LazyPow2::schedule, the first pass of SCHEDULETASKBUSY.
static __always_inline enum pow2_first pow2_schedule(struct rng_state *rng, __u32 *chosen,
						     struct samples *s)
{
	__u32 *countp = u32_cell(&pow2_count, 0);
	__u32 n = countp ? *countp : 0;
	if (n == 0 || n > MAX_WORKERS)
		return P_EMPTY;
	__u32 i1 = rng_below(rng, n), i2 = i1;
	if (n != 1)
		i2 = (i1 + 1 + rng_below(rng, n - 1)) % n;
	__u32 *n1 = u32_cell(&pow2_node1, i1);
	__u32 *n2 = u32_cell(&pow2_node2, i2);
	struct load_cell *c1 = bpf_map_lookup_elem(&pow2_load1, &i1);
	struct load_cell *c2 = bpf_map_lookup_elem(&pow2_load2, &i2);
	if (!n1 || !n2 || !c1 || !c2)
		return P_EMPTY;
	// CompareSamples: ties go to the first sample.
	int first_lighter = c1->load <= c2->load;
	__u32 sel = first_lighter ? i1 : i2, other = first_lighter ? i2 : i1;
	__u32 n_sel = first_lighter ? *n1 : *n2, n_other = first_lighter ? *n2 : *n1;
	struct load_cell c_sel = first_lighter ? *c1 : *c2;
	struct load_cell c_other = first_lighter ? *c2 : *c1;
	__u32 diff = c_other.load - c_sel.load;
	__u32 *incp = u32_cell(&pow2_factor, sel);
	__u32 inc = incp ? *incp : 0;
	int only_choice = sel == other;
	__u32 *d_sel = u32_cell(&pow2_drift1, sel);
	if (!d_sel)
		return P_EMPTY;
	if (only_choice || *d_sel <= diff) {
		*d_sel = sat_add(*d_sel, inc);
		__u32 *d2 = u32_cell(&pow2_drift2, sel);
		if (d2)
			*d2 = sat_add(*d2, inc);
		*chosen = n_sel;
		return P_CHOSEN;
	}
	__u32 *d_other = u32_cell(&pow2_drift2, other);
	s->first = n_sel;
	s->first_load = c_sel.load;
	s->first_drift = *d_sel;
	s->first_epoch = c_sel.epoch;
	s->second = n_other;
	s->second_load = c_other.load;
	s->second_drift = d_other ? *d_other : 0;
	s->second_epoch = c_other.epoch;
	return P_RESUBMIT;
}

// LazyPow2::resubmit_choice: the lighter of the carried actual loads.
static __always_inline __u32 resubmit_choice(const struct samples *s)
{
	__u32 q1 = sat_add(s->first_load, s->first_drift);
	__u32 q2 = sat_add(s->second_load, s->second_drift);
	return q1 <= q2 ? s->first : s->second;
}

static __always_inline void fold_load(struct load_cell *c, __u16 epoch, __u32 add, int *same)
{
	*same = c->epoch == epoch;
	if (*same)
		c->load = sat_add(c->load, add);
}

// LazyPow2::schedule_resubmitted: fold the chosen node's drift into its load
// unless a report replaced both since the first pass. Returns 0 when the
// node was removed between the passes.
static __always_inline int pow2_schedule_resubmitted(const struct samples *s, __u32 *chosen)
{
	__u32 node = resubmit_choice(s);
	__u32 carried = node == s->first ? s->first_drift : s->second_drift;
	__u16 epoch = node == s->first ? s->first_epoch : s->second_epoch;
	__u32 slot = slot_of(node);
	if (slot == NO_SLOT)
		return 0;
	__u32 *incp = u32_cell(&pow2_factor_pre, slot);
	__u32 inc = incp ? *incp : 0;
	__u32 add = sat_add(carried, inc);
	struct load_cell *c1 = bpf_map_lookup_elem(&pow2_load1, &slot);
	struct load_cell *c2 = bpf_map_lookup_elem(&pow2_load2, &slot);
	int fold = 0, fold2 = 0;
	if (c1)
		fold_load(c1, epoch, add, &fold);
	if (c2)
		fold_load(c2, epoch, add, &fold2);
	__u32 *d1 = u32_cell(&pow2_drift1, slot);
	__u32 *d2 = u32_cell(&pow2_drift2, slot);
	if (d1)
		*d1 = fold ? sat_sub(*d1, carried) : sat_add(*d1, inc);
	if (d2)
		*d2 = fold ? sat_sub(*d2, carried) : sat_add(*d2, inc);
	*chosen = node;
	return 1;
}

// ---- the leaf (crates/core/src/horus/leaf.rs) ----

// maybe_load_update, §3.4 with the spine's drift mirrored (§A.6).
static __always_inline void maybe_load_update(__u32 avg, __u32 spine_drift)
{
	__u32 *view = u32_cell(&leaf_spine_view, 0);
	if (!view)
		return;
	*view = sat_add(*view, spine_drift);
	__u32 gap = avg > *view ? avg - *view : *view - avg;
	if (gap >= FIXED_ONE) {
		*view = avg;
		notify(NOTICE_LOAD_UPDATE, avg);
	}
}

// commit: the worker owes one more reply, the rack average grows by 1/w.
static __always_inline void commit(__u32 node, int counted, __u64 now)
{
	if (!counted) {
		__u32 *o = u32_cell(&leaf_outstand, node);
		if (o)
			*o = sat_add(*o, 1);
	}
	__u64 *sent = bpf_map_lookup_elem(&leaf_last_sent, &node);
	if (sent)
		*sent = now;
	__u32 *factorp = u32_cell(&leaf_factor, 0);
	__u32 *avgp = u32_cell(&leaf_avg, 0);
	__u32 factor = factorp ? *factorp : 0;
	if (!avgp)
		return;
	*avgp = sat_add(*avgp, factor);
	maybe_load_update(*avgp, factor);
}

// list_idle: an idle worker joins the idle list (§3.4).
static __always_inline void list_idle(__u32 node, const struct leaf_config *cfg)
{
	long previous = idle_add(node, cfg->idle_capacity);
	if (previous < 0) {
		// Only stale entries fill a list of 2w (leaf.rs): counted, not silent.
		count(C_DROP_OVERFLOW, 1);
		return;
	}
	__u32 *listed = u32_cell(&leaf_listed, node);
	if (listed)
		*listed = sat_add(*listed, 1);
	if ((__u32)previous == cfg->threshold && cfg->announce_on_reply)
		notify(NOTICE_IDLE_ADD, 0);
}

enum step { S_DISPATCHED, S_RETRY, S_POW2, S_DROP_NO_NODES };

struct task_run {
	__u64 now;
	struct rng_state *rng;
	const struct leaf_config *cfg;
	__u8 idle_selected;
	__u8 first_pass;
	__u8 pending; // S_RETRY or S_POW2 while passes remain
	__u8 done;
	__u32 chosen;
	__s32 verdict; // the XDP action once done
	struct samples samples;
};

// Alg. 1 SCHEDULETASKIDLE, else Alg. 2 SCHEDULETASKBUSY; leaf.rs `schedule`.
static __always_inline enum step schedule(struct task_run *run)
{
	__u32 t = run->cfg->threshold;
	__u32 node = 0, remaining = 0;
	enum retrieved got = idle_retrieve(&node, &remaining);
	// §A.3: on the first pass compare the spine's belief (idleSelected)
	// with the state after this task and re-send what it missed.
	if (got == R_NODE && remaining == t)
		notify(NOTICE_IDLE_REMOVE, 0);
	else if (got == R_NODE && run->first_pass && remaining > t && !run->idle_selected)
		notify(NOTICE_IDLE_ADD, 0);
	else if (got == R_NODE && run->first_pass && remaining < t && run->idle_selected)
		notify(NOTICE_IDLE_REMOVE, 0);
	else if (got == R_EMPTY && run->first_pass && run->idle_selected)
		notify(NOTICE_IDLE_REMOVE, 0);

	if (got == R_NODE) {
		__u32 *listed = u32_cell(&leaf_listed, node);
		if (listed)
			*listed = sat_sub(*listed, 1);
		int live = pow2_add_drift(node);
		__u32 *o = u32_cell(&leaf_outstand, node);
		int claimed = live && o && *o == 0;
		if (claimed) {
			*o = 1;
			commit(node, 1, run->now);
			count(C_DISPATCH_IDLE, 1);
			run->chosen = node;
			return S_DISPATCHED;
		}
		count(C_STALE_IDLE_ENTRIES, 1);
		return S_RETRY;
	}
	__u32 chosen = 0;
	switch (pow2_schedule(run->rng, &chosen, &run->samples)) {
	case P_CHOSEN:
		commit(chosen, 0, run->now);
		count(C_DISPATCH_SAMPLED, 1);
		run->chosen = chosen;
		return S_DISPATCHED;
	case P_RESUBMIT:
		return S_POW2;
	default:
		return S_DROP_NO_NODES;
	}
}

// The resubmitted power-of-2 pass (leaf.rs, Input::Resubmit(Pow2)).
static __always_inline enum step pow2_pass(struct task_run *run)
{
	// A worker listed idle between the passes is taken from the list.
	__u32 choice = resubmit_choice(&run->samples);
	__u32 *listed = u32_cell(&leaf_listed, choice);
	if (listed && *listed > 0)
		return S_RETRY;
	__u32 chosen = 0;
	if (!pow2_schedule_resubmitted(&run->samples, &chosen))
		return S_DROP_NO_NODES;
	commit(chosen, 0, run->now);
	count(C_DISPATCH_SAMPLED, 1);
	run->chosen = chosen;
	return S_DISPATCHED;
}

static long task_pass(__u32 index, void *ctx)
{
	struct task_run *run = ctx;
	enum step step;
	if (index == 0)
		step = schedule(run);
	else if (run->pending == S_POW2)
		step = pow2_pass(run);
	else
		step = schedule(run);
	run->first_pass = 0;
	switch (step) {
	case S_DISPATCHED:
		run->done = 1;
		run->verdict = XDP_TX;
		return 1;
	case S_DROP_NO_NODES:
		count(C_DROP_NO_NODES, 1);
		run->done = 1;
		run->verdict = XDP_DROP;
		return 1;
	default:
		count(C_RESUBMISSIONS, 1);
		run->pending = step;
		return 0;
	}
}

// on_reply: Alg. 2 UPDATE, the outstanding count, the rack average (§A.2),
// and a relist pass when an older reply arrives last.
static __always_inline int on_reply(__u32 node, __u32 qlen, __u64 now,
				    const struct leaf_config *cfg)
{
	if (node >= MAX_WORKERS || slot_of(node) == NO_SLOT) {
		count(C_DROP_UNKNOWN_NODE, 1);
		return XDP_DROP;
	}
	count(C_REPLIES, 1);
	__u32 listed = 1;
	if (qlen == 0) {
		list_idle(node, cfg);
	} else {
		__u32 *l = u32_cell(&leaf_listed, node);
		listed = l ? *l : 0;
	}
	pow2_update(node, qlen);
	__u64 *sent = bpf_map_lookup_elem(&leaf_last_sent, &node);
	__u64 last = sent ? *sent : 0;
	__u64 idle_for = now > last ? now - last : 0;
	__u32 *o = u32_cell(&leaf_outstand, node);
	if (!o)
		return XDP_DROP;
	__u32 answered;
	if (qlen == 0 && *o > 1 && idle_for >= cfg->loss_resync_ns)
		answered = *o;
	else
		answered = *o < 1 ? *o : 1;
	*o -= answered;
	__u32 left = *o;
	if (answered > 1)
		count(C_FORGOTTEN_LOST, answered - 1);
	__u32 *factorp = u32_cell(&leaf_factor, 0);
	__u32 *avgp = u32_cell(&leaf_avg, 0);
	if (avgp) {
		*avgp = sat_sub(*avgp, sat_mul(factorp ? *factorp : 0, answered));
		maybe_load_update(*avgp, 0);
	}
	if (answered > 0 && left == 0 && listed == 0) {
		// Resubmit::Relist: the second pass lists the worker again.
		count(C_RELISTED_AFTER_REORDER, 1);
		count(C_RESUBMISSIONS, 1);
		if (slot_of(node) != NO_SLOT)
			list_idle(node, cfg);
	}
	// The reply goes on to its client from user space, by the route
	// `forward` recorded for its application (`reply_routes`, docs/xdp.md).
	return XDP_PASS;
}

// Send the task on to `node`: destination MAC, IP and UDP port from the
// loader's table, dst_id in the netsched header, a fresh IPv4 checksum and
// no UDP checksum (optional over IPv4).
static __always_inline int forward(struct ethhdr *eth, struct iphdr *ip, struct udphdr *udp,
				   __u8 *horus, void *data_end, __u32 node,
				   const struct leaf_config *cfg)
{
	struct worker_addr *to = bpf_map_lookup_elem(&worker_addr, &node);
	if (!to)
		return XDP_DROP;
	__builtin_memcpy(eth->h_source, cfg->leaf_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, to->mac, ETH_ALEN);
	if ((void *)(horus + 16) > data_end)
		return XDP_DROP;
	if (cfg->leaf_ip) {
		__u32 app;
		__builtin_memcpy(&app, horus + 12, sizeof(app));
		struct reply_route from = { .ip = ip->saddr, .port = udp->source };
		struct reply_route *known = bpf_map_lookup_elem(&reply_routes, &app);
		// Written only when it changed: a hash update costs more than a lookup.
		if (!known || known->ip != from.ip || known->port != from.port)
			bpf_map_update_elem(&reply_routes, &app, &from, BPF_ANY);
		ip->saddr = cfg->leaf_ip;
		udp->source = cfg->leaf_port;
	}
	ip->daddr = to->ip;
	udp->dest = to->port;
	udp->check = 0;
	horus[6] = (__u8)(node >> 8);
	horus[7] = (__u8)node;
	ipv4_set_checksum(ip);
	return XDP_TX;
}

// The leaf on one packet. `on_leaf_cpu`: run from the cpumap entry on the
// one CPU the steering program sends every packet to, where XDP_TX does not
// exist: the task leaves by a redirect to the interface it came in on.
static __always_inline int leaf_run(struct xdp_md *ctx, int on_leaf_cpu)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	// Not a frame for the leaf: passed up uncounted.
	struct udp_frame frame;
	if (parse_udp_frame(data, data_end, &frame))
		return XDP_PASS;
	__u8 *horus = frame.body;
	if ((void *)(horus + HORUS_HEADER_LEN) > data_end || horus[0] != WIRE_HORUS)
		return XDP_PASS;
	// Only a datagram the decoder (crates/proto) accepts may change state or
	// be sent on: the payload length field must end the datagram exactly.
	__u32 len;
	if (udp_payload_len(&frame, data_end, HORUS_HEADER_LEN, &len) || len > MAX_DATAGRAM)
		goto pass;

	__u32 zero = 0;
	const struct leaf_config *cfg = bpf_map_lookup_elem(&leaf_config, &zero);
	struct rng_state *rng = bpf_map_lookup_elem(&leaf_rng, &zero);
	if (!cfg || !rng)
		return XDP_PASS;
	__u64 now = cfg->fixed_now ? cfg->fixed_now : bpf_ktime_get_ns();
	__u8 type = horus[1];

	if (type == TYPE_REPLY) {
		if (len < REPLY_FIXED || (void *)(horus + REPLY_FIXED) > data_end ||
		    horus[REPLY_STATUS_OFFSET] > REPLY_STATUS_MAX ||
		    (((__u32)horus[REPLY_FIXED - 2] << 8) | horus[REPLY_FIXED - 1]) !=
			    len - REPLY_FIXED)
			goto pass;
		__u32 node = ((__u32)horus[4] << 8) | horus[5];
		__u32 qlen = ((__u32)horus[8] << 8) | horus[9];
		return on_reply(node, qlen, now, cfg);
	}
	if (type != TYPE_TASK_FIRST)
		goto pass;
	if (len < TASK_FIXED || (void *)(horus + TASK_FIXED) > data_end ||
	    (((__u32)horus[TASK_FIXED - 2] << 8) | horus[TASK_FIXED - 1]) != len - TASK_FIXED)
		goto pass;
	__u8 flags = horus[TASK_FLAGS_OFFSET];
	if (flags & ~FLAGS_KNOWN)
		goto pass;
	// A multi-packet task needs the connection table (§A.4), which stays in
	// user space: its first packet and continuations are passed up.
	if (!(flags & FLAG_LAST))
		goto pass;

	struct task_run run = {
		.now = now,
		.rng = rng,
		.cfg = cfg,
		.idle_selected = !!(flags & FLAG_IDLE_SELECTED),
		.first_pass = 1,
	};
	bpf_loop(MAX_PASSES, task_pass, &run, 0);
	if (!run.done) {
		// Unreachable with at most MAX_WORKERS workers (MAX_PASSES above).
		count(C_DROP_NO_NODES, 1);
		return XDP_DROP;
	}
	if (run.verdict != XDP_TX)
		return run.verdict;
	int verdict = forward(frame.eth, frame.ip, frame.udp, horus, data_end, run.chosen, cfg);
	if (on_leaf_cpu && verdict == XDP_TX)
		return bpf_redirect(ctx->ingress_ifindex, 0);
	return verdict;
pass:
	count(C_PASSED, 1);
	return XDP_PASS;
}

SEC("xdp")
int horus_leaf(struct xdp_md *ctx)
{
	return leaf_run(ctx, 0);
}

// Serialising the leaf (docs/xdp.md, "Resubmission and concurrency"):
// `horus_steer` hands every packet to `leaf_cpu`'s one entry, whose program
// is `horus_leaf_cpu` (steer.h).
DEFINE_STEERING(leaf_cpu, horus_steer)

SEC("xdp/cpumap")
int horus_leaf_cpu(struct xdp_md *ctx)
{
	count_run(64);
	return leaf_run(ctx, 1);
}
