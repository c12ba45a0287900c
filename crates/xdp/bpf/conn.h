// SPDX-License-Identifier: Apache-2.0
//
// Horus's connection table for multi-packet tasks (NSDI'24 §A.4), as the
// Horus leaf and spine programs keep it: the sans-IO AffinityTable of
// crates/core/src/affinity.rs and its task path, follow_continuation and
// `remember` of crates/core/src/baselines/mod.rs, cell for cell.
//
// * A task's first packet without isLastPacket is scheduled as any task;
//   the node it went to is recorded under its task id ("the scheduler adds
//   the entry <hash(poolID, taskID), nodeID>"; one program serves one pool,
//   so the key is the task id, as in the sans-IO planes). A leaf also
//   records the spine the packet came from (§A.4's spineID: the position of
//   the packet's source among the leaf's upstream spines, 0 when none
//   matches, as the socket daemon's `admit_task` computes it).
// * A TaskContinuation follows its entry to the same node; the last one
//   (isLastPacket) removes the entry. A continuation with no entry (a
//   stranger's, or one whose entry expired or was overwritten) is dropped and
//   counted (DropReason::NoAffinity of the sans-IO plane).
// * Soft state: an entry older than the timeout ("in the order of 10s of
//   milliseconds") is free for an insert and missed by a lookup. As in the
//   sans-IO table, the last packet's remove tests the key only, not the age:
//   an expired entry nobody overwrote still takes its last packet home.
//
// Layout: n stages of m slots (the sans-IO `affinity.0` .. `affinity.{n-1}`
// register arrays, docs/switch-model.md, 193-bit cells), concatenated in one
// array map, stage s slot k at cell s*m + k; the slot of a key in stage s is
// stage_hash(key, s) mod m, the sans-IO hash. The first stage whose slot is
// free (unused, expired, or the same key) takes an insert; none free is an
// overflow (counted; the task's continuations then drop).
//
// Like the rest of a program's maps, cells are updated with plain loads and
// stores: one CPU runs the program at a time (steer.h), or, with the leaf on
// every CPU, every access is inside the pass lock (pass_lock.h).
//
// The includer includes maps.h and horus_core.h first.

#ifndef NETSCHED_CONN_H
#define NETSCHED_CONN_H

// The sans-IO table's limit (affinity.rs NAMES).
#define CONN_MAX_STAGES 8
// Cells of all stages together (crates/xdp/src/conn.rs CONN_CELLS).
#define CONN_CELLS 65536
// Upstream spines a leaf tells apart (crates/xdp/src/conn.rs).
#define CONN_MAX_UPSTREAMS 256

// crates/core/src/affinity.rs Entry: key, node, aux (a leaf's spine), the
// insertion time and the used bit. 32 bytes (crates/xdp/src/conn.rs).
struct conn_entry {
	__u64 key;
	__u64 inserted_at;
	__u32 node;
	__u32 aux;
	__u8 used;
	__u8 pad[7];
};

struct conn_config {
	// ConnTableConfig: stages, slots per stage (0: no table installed,
	// every continuation drops), entry lifetime.
	__u32 stages;
	__u32 slots;
	__u64 timeout_ns;
	// Nonzero: the table's clock is `fixed_now` (tests); zero:
	// bpf_ktime_get_ns(). The spine's clock; a leaf passes its own.
	__u32 clock_fixed;
	__u32 pad;
	__u64 fixed_now;
};

struct conn_upstream_key {
	__be32 ip;
	__be16 port;
	__u16 pad;
};

// Counters (crates/xdp/src/conn.rs ConnCounters), indices into `conn_counters`.
enum conn_counter {
	CONN_FOLLOWED,
	CONN_DROP_NO_AFFINITY,
	CONN_OVERFLOWS,
	CONN_COUNTERS,
};

ARRAY(conn_table, struct conn_entry, CONN_CELLS);
ARRAY(conn_config, struct conn_config, 1);
ARRAY(conn_counters, __u64, CONN_COUNTERS);
// A leaf's upstream spines: address -> position in its `upstream` list.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CONN_MAX_UPSTREAMS);
	__type(key, struct conn_upstream_key);
	__type(value, __u32);
} conn_upstream SEC(".maps");

static __always_inline void conn_count(enum conn_counter c)
{
	__u32 key = c;
	__u64 *v = bpf_map_lookup_elem(&conn_counters, &key);
	if (v)
		*v += 1;
}

static __always_inline const struct conn_config *conn_cfg(void)
{
	__u32 zero = 0;
	const struct conn_config *c = bpf_map_lookup_elem(&conn_config, &zero);
	return c && c->slots && c->stages ? c : 0;
}

// The table's clock for a program without one of its own (the spine).
static __always_inline __u64 conn_now(void)
{
	__u32 zero = 0;
	const struct conn_config *c = bpf_map_lookup_elem(&conn_config, &zero);
	return c && c->clock_fixed ? c->fixed_now : bpf_ktime_get_ns();
}

// affinity.rs stage_hash: each stage of a switch has its own hash unit.
static __always_inline __u64 conn_stage_hash(__u64 key, __u32 stage)
{
	__u64 z = key ^ (0x9E3779B97F4A7C15ull * ((__u64)stage + 1));
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static __always_inline struct conn_entry *conn_cell(const struct conn_config *c, __u64 key,
						    __u32 stage)
{
	__u32 cell = stage * c->slots + (__u32)(conn_stage_hash(key, stage) % c->slots);
	return bpf_map_lookup_elem(&conn_table, &cell);
}

static __always_inline __u64 conn_age(__u64 now, __u64 at)
{
	return now > at ? now - at : 0;
}

// AffinityTable::insert: the first stage whose slot is free (unused,
// expired or holding the same key) takes the entry, else an overflow.
static __always_inline void conn_insert(__u64 key, __u64 now, __u32 node, __u32 aux)
{
	const struct conn_config *c = conn_cfg();
	if (!c)
		return;
	for (__u32 i = 0; i < CONN_MAX_STAGES && i < c->stages; i++) {
		struct conn_entry *e = conn_cell(c, key, i);
		if (!e)
			continue;
		if (!e->used || conn_age(now, e->inserted_at) > c->timeout_ns || e->key == key) {
			e->key = key;
			e->node = node;
			e->aux = aux;
			e->inserted_at = now;
			e->used = 1;
			return;
		}
	}
	conn_count(CONN_OVERFLOWS);
}

// AffinityTable::lookup: the live entry of `key`'s node, or -1.
static __always_inline long conn_lookup(const struct conn_config *c, __u64 key, __u64 now)
{
	for (__u32 i = 0; i < CONN_MAX_STAGES && i < c->stages; i++) {
		struct conn_entry *e = conn_cell(c, key, i);
		if (e && e->used && e->key == key && conn_age(now, e->inserted_at) <= c->timeout_ns)
			return e->node;
	}
	return -1;
}

// AffinityTable::remove: clears the used bit of `key`'s entry (live or
// not; the rest of the cell stays) and returns its node, or -1.
static __always_inline long conn_remove(const struct conn_config *c, __u64 key)
{
	for (__u32 i = 0; i < CONN_MAX_STAGES && i < c->stages; i++) {
		struct conn_entry *e = conn_cell(c, key, i);
		if (e && e->used && e->key == key) {
			e->used = 0;
			return e->node;
		}
	}
	return -1;
}

// follow_continuation: a TaskContinuation goes where its first packet went;
// the last one removes the entry. -1 (no entry): dropped, counted.
static __always_inline long conn_follow(__u64 key, int last, __u64 now)
{
	const struct conn_config *c = conn_cfg();
	long node = -1;
	if (c)
		node = last ? conn_remove(c, key) : conn_lookup(c, key, now);
	conn_count(node < 0 ? CONN_DROP_NO_AFFINITY : CONN_FOLLOWED);
	return node;
}

// §A.4's spineID at a leaf: the position of the task's source among the
// leaf's upstream spines, 0 when none matches (switch/dispatch.rs
// `admit_task`).
static __always_inline __u32 conn_upstream_of(__be32 ip, __be16 port)
{
	struct conn_upstream_key k = { .ip = ip, .port = port };
	__u32 *index = bpf_map_lookup_elem(&conn_upstream, &k);
	return index ? *index : 0;
}

// The flags of a task packet as crates/proto decodes it, or -1: a TaskFirst
// (task_first_flags), or a TaskContinuation, which may not carry
// idleSelected (docs/protocol.md: `Inconsistent`).
static __always_inline int conn_task_flags(__u8 type, const __u8 *horus, void *data_end, __u32 len)
{
	if (type != TYPE_TASK_FIRST && type != TYPE_TASK_CONT)
		return -1;
	int flags = task_first_flags(horus, data_end, len);
	if (type == TYPE_TASK_CONT && flags >= 0 && (flags & FLAG_IDLE_SELECTED))
		return -1;
	return flags;
}

// task_id: bytes 12-19 of the datagram, big endian. The caller checked
// that TASK_FIXED bytes are in the packet.
static __always_inline __u64 conn_task_key(const __u8 *horus)
{
	__u64 key = 0;
#pragma unroll
	for (int i = 0; i < 8; i++)
		key = (key << 8) | horus[12 + i];
	return key;
}

#endif
