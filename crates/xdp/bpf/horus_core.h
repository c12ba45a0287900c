// SPDX-License-Identifier: Apache-2.0
//
// What the Horus leaf and spine programs share (NSDI'24 §3.3, Alg. 1-2): the
// idleNodes arrays and their retrieve, the lazy power-of-2 arrays and their
// passes, the xoshiro256++ stream of crates/core/src/rng.rs, and saturating
// arithmetic. Each is the sans-IO code of crates/core/src/idle.rs and
// crates/core/src/pow2.rs, which both roles also share.
//
// The includer defines IDLE_CAPACITY (cells of the idle list) and
// POW2_NODES (nodes of the power-of-2 lists: a leaf's workers, a spine's
// racks) first, and includes maps.h.

#ifndef NETSCHED_HORUS_CORE_H
#define NETSCHED_HORUS_CORE_H

#define NO_SLOT 0xffffffffu
#define FIXED_ONE 65536u

#define WIRE_HORUS 0x11
#define TYPE_TASK_FIRST 1
#define TYPE_TASK_CONT 2
#define TYPE_REPLY 3
#define TYPE_IDLE_ADD 4
#define TYPE_IDLE_REMOVE 5
#define TYPE_LOAD_UPDATE 6
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
#define MAX_DATAGRAM 1472

struct load_cell {
	__u32 load;
	__u16 epoch;
	__u16 pad;
};

struct rng_state {
	__u64 s[4];
};


// Where an application's tasks came from (the socket daemon's reply
// routes, crates/node/src/switch/reply_routes.rs): the daemon sends the
// replies XDP passes up there. Keyed by the application id as it is on the
// wire (task_id's upper half, big endian). `mac` is the Ethernet source the
// task came from (the client, or the router before it): a leaf that sends a
// reply on itself (bpf/horus_leaf.bpf.c) addresses the frame there.
struct reply_route {
	__be32 ip;
	__be16 port;
	__u8 mac[6];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct reply_route);
} reply_routes SEC(".maps");

// idleNodes (stages 0-2), crates/core/src/idle.rs.
ARRAY(idle_lock, __u8, 1);
ARRAY(idle_p, __u32, 1);
ARRAY(idle_list, __u32, IDLE_CAPACITY);
ARRAY(idle_index, __u32, IDLE_CAPACITY);
// Lazy power-of-2 (stages 4-9), crates/core/src/pow2.rs.
ARRAY(pow2_slot_of, __u32, POW2_NODES);
ARRAY(pow2_count, __u32, 1);
ARRAY(pow2_factor_pre, __u32, POW2_NODES);
ARRAY(pow2_node1, __u32, POW2_NODES);
ARRAY(pow2_load1, struct load_cell, POW2_NODES);
ARRAY(pow2_node2, __u32, POW2_NODES);
ARRAY(pow2_load2, struct load_cell, POW2_NODES);
ARRAY(pow2_factor, __u32, POW2_NODES);
ARRAY(pow2_drift1, __u32, POW2_NODES);
ARRAY(pow2_drift2, __u32, POW2_NODES);

// A frame as the leaf and the spine take it: H_OTHER, not a Horus datagram
// (passed up uncounted); H_MALFORMED, a Horus datagram crates/proto's
// decoder refuses (its payload length field must end the datagram
// exactly), which may change no state; H_OK, `f` parsed with the payload's
// length in `*len`.
enum horus_frame { H_OK, H_OTHER, H_MALFORMED };

static __always_inline enum horus_frame parse_horus_frame(void *data, void *data_end,
							  struct udp_frame *f, __u32 *len)
{
	if (parse_udp_frame(data, data_end, f))
		return H_OTHER;
	__u8 *horus = f->body;
	if ((void *)(horus + HORUS_HEADER_LEN) > data_end || horus[0] != WIRE_HORUS)
		return H_OTHER;
	if (udp_payload_len(f, data_end, HORUS_HEADER_LEN, len) || *len > MAX_DATAGRAM)
		return H_MALFORMED;
	return H_OK;
}

// The flags of a task's first packet as crates/proto decodes it (its
// payload length field ends the datagram exactly, no unknown flag), or -1.
static __always_inline int task_first_flags(const __u8 *horus, void *data_end, __u32 len)
{
	if (len < TASK_FIXED || (void *)(horus + TASK_FIXED) > data_end ||
	    (((__u32)horus[TASK_FIXED - 2] << 8) | horus[TASK_FIXED - 1]) != len - TASK_FIXED)
		return -1;
	__u8 flags = horus[TASK_FLAGS_OFFSET];
	return (flags & ~FLAGS_KNOWN) ? -1 : flags;
}

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
	if (n == 0 || n > POW2_NODES)
		return P_EMPTY;
	__u32 i1 = rng_below(rng, n), i2 = i1;
	if (n != 1) {
		// (i1 + 1 + r) mod n with i1 < n and r < n - 1: below 2n, so one
		// subtraction is the modulo (a division costs more on the path).
		i2 = i1 + 1 + rng_below(rng, n - 1);
		if (i2 >= n)
			i2 -= n;
	}
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

static __always_inline int mac_differs(const __u8 *a, const __u8 *b)
{
	int differs = 0;
#pragma unroll
	for (int i = 0; i < ETH_ALEN; i++)
		differs |= a[i] ^ b[i];
	return differs;
}

// A forwarded task's application (task_id's upper half, at byte 12 of the
// datagram) now replies through this scheduler: remember where it came from
// (`mac`: the frame's Ethernet source, read before the rewrite).
static __always_inline void learn_reply_route(const __u8 *horus, const __u8 *mac, __be32 ip,
					      __be16 port)
{
	__u32 app;
	__builtin_memcpy(&app, horus + 12, sizeof(app));
	struct reply_route from = { .ip = ip, .port = port };
	__builtin_memcpy(from.mac, mac, ETH_ALEN);
	struct reply_route *known = bpf_map_lookup_elem(&reply_routes, &app);
	// Written only when it changed: a hash update costs more than a lookup.
	if (!known || known->ip != from.ip || known->port != from.port ||
	    mac_differs(known->mac, from.mac))
		bpf_map_update_elem(&reply_routes, &app, &from, BPF_ANY);
}

#endif
