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
// One CPU runs the passes at a time: either the program is serialised on one
// CPU (steer.h), or it runs on every CPU and each packet's passes hold the
// pass lock (pass_lock.h, docs/xdp.md "Every CPU"). Inside the passes maps
// are updated without atomics, as a switch's stage updates one cell per
// packet; what runs outside them uses atomics (count_atomic, the sealer).
//
// Multi-packet tasks follow the connection table of §A.4 (conn.h): the
// first packet is scheduled and recorded, continuations go where it went.
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
#include "seal.h"
#include "steer.h"

#define MAX_WORKERS 64
// Twice the workers: a report crossing a task lists a busy worker (leaf.rs).
#define IDLE_CAPACITY (2 * MAX_WORKERS)
// A packet needs at most one pass per idle entry (each stale one is popped
// and retried), a power-of-2 resubmission and the retry it may turn into.
#define MAX_PASSES (IDLE_CAPACITY + 4)
#define POW2_NODES MAX_WORKERS
#define REPLY_STATUS_OFFSET 20
#define REPLY_STATUS_MAX 1

#include "horus_core.h"
#include "conn.h"
#include "pass_lock.h"

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
	C_SEAL_FAILED,
	C_REPLIES_FORWARDED,
	C_COUNTERS,
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
	// Nonzero (with leaf_ip): a reply goes on to its client from here
	// (`reply_out`); zero: it is passed up to the daemon.
	__u32 forward_replies;
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

// leaf.listed (stage 3), between idleNodes and power-of-2.
ARRAY(leaf_listed, __u32, MAX_WORKERS);
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

// Sealed tasks (crates/proto/src/seal.rs, "Sealed tasks"): the notice key
// and the program's task sequence counter, odd and growing by 2 (the
// daemon's own sealer counts the even ones). The loader installs both
// (XdpLeaf::set_task_key); `key.on` 0 forwards tasks unsealed.
struct task_sealer {
	struct notice_key key;
	__u64 seq;
};
ARRAY(task_sealer, struct task_sealer, 1);

// The notices for the daemon to send, in the order the passes queued them:
// a ring buffer, which user space reads from shared memory (a queue map
// costs it a system call per notice, which at a notice every few tasks was
// most of the daemon's CPU). 4,096 notices (a record is an 8-byte header
// and the 8-byte notice).
#define NOTICE_RING_BYTES (4096 * 16)
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, NOTICE_RING_BYTES);
} notices SEC(".maps");

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline void notify(__u32 kind, __u32 value)
{
	struct notice n = { .kind = kind, .value = value };
	// A full ring (the loader fell behind) loses the notice, as a lost
	// datagram would; the spine's view recovers with the next one (§A.3).
	// No wake-up: the daemon drains the ring between its batches, on its
	// own clock, so a wake-up per notice would only cost the sender. The
	// ring reserves under its own lock, and notify runs inside the passes,
	// so on every CPU the notices stay in the passes' (ticket) order.
	if (bpf_ringbuf_output(&notices, &n, sizeof(n), BPF_RB_NO_WAKEUP))
		count(C_NOTICES_LOST, 1);
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

// The clock of a packet's passes, read once they hold the pass lock, so it
// never goes back in the order the passes ran.
static __always_inline __u64 leaf_now(const struct leaf_config *cfg)
{
	return cfg->fixed_now ? cfg->fixed_now : bpf_ktime_get_ns();
}

// How long since `last` (0 if the clock is behind it).
static __always_inline __u64 idle_since(__u64 now, __u64 last)
{
	return now > last ? now - last : 0;
}

// on_reply: Alg. 2 UPDATE, the outstanding count, the rack average (§A.2),
// and a relist pass when an older reply arrives last.
static __always_inline int on_reply(__u32 node, __u32 qlen, const struct leaf_config *cfg)
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
	__u32 *o = u32_cell(&leaf_outstand, node);
	if (!o)
		return XDP_DROP;
	__u32 answered;
	// The clock is read only where the loss resync can apply (an idle
	// reply from a worker owed more than one task): the other replies do
	// not use it, and a read costs tens of ns (pvclock in a VM). Still
	// inside the passes, so it never goes back in their order (leaf_now).
	if (qlen == 0 && *o > 1 && idle_since(leaf_now(cfg), last) >= cfg->loss_resync_ns)
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
	// The reply goes on to its client: `reply_out`.
	return XDP_PASS;
}

// A reply the leaf took goes on to its client by the route `forward`
// recorded for its application (`reply_routes`), from the leaf's address, as
// the socket daemon sends it (crates/node/src/switch/xdp.rs): XDP_TX. Passed
// up to the daemon instead when forwarding is off, when the datagram did not
// come from the worker's registered address (the daemon drops it as an
// unregistered source, as the socket daemon does) or when no route is known
// (the daemon counts the missing route).
static __always_inline int reply_out(struct udp_frame *f, __u8 *horus, void *data_end, __u32 node,
				     const struct leaf_config *cfg)
{
	if (!cfg->forward_replies || !cfg->leaf_ip)
		return XDP_PASS;
	struct worker_addr *from = bpf_map_lookup_elem(&worker_addr, &node);
	if (!from || from->ip != f->ip->saddr || from->port != f->udp->source)
		return XDP_PASS;
	if ((void *)(horus + 16) > data_end)
		return XDP_PASS;
	__u32 app;
	__builtin_memcpy(&app, horus + 12, sizeof(app));
	struct reply_route *to = bpf_map_lookup_elem(&reply_routes, &app);
	if (!to)
		return XDP_PASS;
	__builtin_memcpy(f->eth->h_source, cfg->leaf_mac, ETH_ALEN);
	__builtin_memcpy(f->eth->h_dest, to->mac, ETH_ALEN);
	f->ip->saddr = cfg->leaf_ip;
	f->ip->daddr = to->ip;
	f->udp->source = cfg->leaf_port;
	f->udp->dest = to->port;
	f->udp->check = 0;
	ipv4_set_checksum(f->ip);
	count_atomic(C_REPLIES_FORWARDED, 1);
	return XDP_TX;
}

// Send the task on to `node`: destination MAC, IP and UDP port from the
// loader's table, dst_id in the netsched header, a fresh IPv4 checksum and
// no UDP checksum (optional over IPv4).
static __always_inline int forward(struct ethhdr *eth, struct iphdr *ip, struct udphdr *udp,
				   __u8 *horus, void *data_end, __u32 node,
				   const struct leaf_config *cfg)
{
	struct worker_addr *to = bpf_map_lookup_elem(&worker_addr, &node);
	if (!to || (void *)(horus + 16) > data_end)
		return XDP_DROP;
	if (cfg->leaf_ip)
		learn_reply_route(horus, eth->h_source, ip->saddr, udp->source);
	__builtin_memcpy(eth->h_source, cfg->leaf_mac, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, to->mac, ETH_ALEN);
	if (cfg->leaf_ip) {
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

// Seals the task just forwarded (`len` bytes of datagram at offset
// TASK_OFFSET): grows the frame by SEAL_LEN right after the datagram (any
// Ethernet padding is cut), appends the next sequence number and
// SipHash-2-4 of the task and that number, and fixes the IPv4 and UDP
// lengths and the IPv4 checksum. A frame that cannot grow is dropped and
// counted rather than sent unsealed (its worker would drop it).
#define TASK_OFFSET (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))
static __always_inline int seal_forwarded(struct xdp_md *ctx, __u32 len)
{
	__u32 zero = 0;
	struct task_sealer *s = bpf_map_lookup_elem(&task_sealer, &zero);
	if (!s || !s->key.on)
		return XDP_TX;
	if (len > MAX_DATAGRAM)
		return XDP_DROP;
	// The frame's length (a helper: the verifier allows no arithmetic on
	// data_end).
	long grow = (long)(TASK_OFFSET + len + SEAL_LEN) - (long)bpf_xdp_get_buff_len(ctx);
	if (bpf_xdp_adjust_tail(ctx, (int)grow))
		goto failed;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct iphdr *ip = data + sizeof(struct ethhdr);
	struct udphdr *udp = (void *)(ip + 1);
	__u8 *horus = (void *)(udp + 1);
	if ((void *)(horus + 1) > data_end)
		goto failed;
	__u8 *trailer = horus + len;
	if ((void *)(trailer + SEAL_LEN) > data_end)
		goto failed;
	// Outside the passes: CPUs seal at once, each takes its own number.
	__u64 seq = __sync_fetch_and_add(&s->seq, 2) + 2;
#pragma unroll
	for (int i = 0; i < 8; i++)
		trailer[i] = (__u8)(seq >> (56 - 8 * i));
	__u64 tag;
	if (siphash24_pkt(&s->key, horus, data_end, len + 8, &tag))
		goto failed;
	if ((void *)(trailer + SEAL_LEN) > data_end)
		goto failed;
#pragma unroll
	for (int i = 0; i < 8; i++)
		trailer[8 + i] = (__u8)(tag >> (56 - 8 * i));
	ip->tot_len = bpf_htons(sizeof(struct iphdr) + sizeof(struct udphdr) + len + SEAL_LEN);
	udp->len = bpf_htons(sizeof(struct udphdr) + len + SEAL_LEN);
	ipv4_set_checksum(ip);
	return XDP_TX;
failed:
	count_atomic(C_SEAL_FAILED, 1);
	return XDP_DROP;
}

// A task packet on to `node`, sealed (forward, seal_forwarded).
static __always_inline int send_task(struct xdp_md *ctx, struct udp_frame *f, __u8 *horus,
				     void *data_end, __u32 node, __u32 len,
				     const struct leaf_config *cfg)
{
	int verdict = forward(f->eth, f->ip, f->udp, horus, data_end, node, cfg);
	if (verdict == XDP_TX)
		verdict = seal_forwarded(ctx, len);
	return verdict;
}

// A packet's key in `pass_order`: its task id's low word (bytes 16-19 of
// the datagram, inside the fixed part of a task and of a reply).
static __always_inline __u32 task_key(const __u8 *horus)
{
	__u32 key;
	__builtin_memcpy(&key, horus + 16, sizeof(key));
	return bpf_ntohl(key);
}

// The leaf on one packet.
static __always_inline int leaf_run(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udp_frame frame;
	__u32 len;
	enum horus_frame parsed = parse_horus_frame(data, data_end, &frame, &len);
	if (parsed == H_OTHER)
		return XDP_PASS;
	if (parsed == H_MALFORMED)
		goto pass;
	__u8 *horus = frame.body;

	__u32 zero = 0;
	const struct leaf_config *cfg = bpf_map_lookup_elem(&leaf_config, &zero);
	struct rng_state *rng = bpf_map_lookup_elem(&leaf_rng, &zero);
	if (!cfg || !rng)
		return XDP_PASS;
	__u8 type = horus[1];
	struct pass_lock *held;

	if (type == TYPE_REPLY) {
		if (len < REPLY_FIXED || (void *)(horus + REPLY_FIXED) > data_end ||
		    horus[REPLY_STATUS_OFFSET] > REPLY_STATUS_MAX ||
		    (((__u32)horus[REPLY_FIXED - 2] << 8) | horus[REPLY_FIXED - 1]) !=
			    len - REPLY_FIXED)
			goto pass;
		__u32 node = ((__u32)horus[4] << 8) | horus[5];
		__u32 qlen = ((__u32)horus[8] << 8) | horus[9];
		// Given up under contention: passed up unapplied (pass_lock.h).
		if (pass_begin(&held, task_key(horus)))
			return XDP_PASS;
		int verdict = on_reply(node, qlen, cfg);
		pass_end(held);
		if (verdict == XDP_PASS)
			verdict = reply_out(&frame, horus, data_end, node, cfg);
		return verdict;
	}
	int flags = conn_task_flags(type, horus, data_end, len);
	if (flags < 0 || (void *)(horus + TASK_FIXED) > data_end)
		goto pass;
	__u64 key = conn_task_key(horus);
	if (type == TYPE_TASK_CONT) {
		// §A.4: a continuation goes to its first packet's worker (conn.h),
		// with no scheduling pass; none known: dropped, counted. The table
		// is leaf state like the registers: read under the pass lock.
		if (pass_begin(&held, task_key(horus)))
			return XDP_DROP;
		long node = conn_follow(key, flags & FLAG_LAST, leaf_now(cfg));
		pass_end(held);
		if (node < 0)
			return XDP_DROP;
		return send_task(ctx, &frame, horus, data_end, (__u32)node, len, cfg);
	}

	// Given up under contention: dropped, counted (pass_lock.h).
	if (pass_begin(&held, task_key(horus)))
		return XDP_DROP;
	struct task_run run = {
		.now = leaf_now(cfg),
		.rng = rng,
		.cfg = cfg,
		.idle_selected = !!(flags & FLAG_IDLE_SELECTED),
		.first_pass = 1,
	};
	bpf_loop(MAX_PASSES, task_pass, &run, 0);
	// §A.4: the first packet of a multi-packet task records its worker and
	// the spine it came from (read before `forward` rewrites the source),
	// under the same lock as the decision, so a continuation that takes
	// the lock after it finds the entry.
	if (run.done && run.verdict == XDP_TX && !(flags & FLAG_LAST))
		conn_insert(key, run.now, run.chosen,
			    conn_upstream_of(frame.ip->saddr, frame.udp->source));
	pass_end(held);
	if (!run.done) {
		// Unreachable with at most MAX_WORKERS workers (MAX_PASSES above).
		count_atomic(C_DROP_NO_NODES, 1);
		return XDP_DROP;
	}
	if (run.verdict != XDP_TX)
		return run.verdict;
	return send_task(ctx, &frame, horus, data_end, run.chosen, len, cfg);
pass:
	count_atomic(C_PASSED, 1);
	return XDP_PASS;
}

// Serialising the leaf (docs/xdp.md, "Resubmission and concurrency"):
// `horus_steer` hands every packet to `leaf_cpu`'s one entry, whose program
// is `horus_leaf_cpu` (steer.h), where a task leaves by a redirect to the
// interface it came in on.
DEFINE_STEERED_PROGRAMS(leaf_run, horus_leaf, leaf_cpu, horus_steer, horus_leaf_cpu)
// The leaf on every CPU (pass_lock.h): the program the interface runs
// itself, whose frames leave by the same redirect (steer.h says why).
DEFINE_REDIRECTING(leaf_run, horus_leaf_all, "xdp")
