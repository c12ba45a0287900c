// SPDX-License-Identifier: Apache-2.0
//
// The Draconis switch queue (EuroSys'24 §4.2-§4.7, priority levels §6.1) at
// the XDP hook, decision for decision the sans-IO Draconis of
// crates/core/src/pull/ (mod.rs, queue.rs) run as the Draconis-Server runs
// it: every recirculation of a packet (the rest of a job's tasks, repair
// packets, the next priority level) right after the pass that caused it.
//
// State: one BPF array map per register array of the switch model
// (docs/switch-model.md, "Draconis"): draconis.retrieve_ptr, .add_ptr,
// .repair_flags and .queue, as drac_retrieve, drac_add, drac_repair and
// drac_queue. A queue entry keeps the client's IPv4 address and port (the
// paper's CLIENT_IP, §4.1) where the sans-IO entry keeps the daemon's client
// index; docs/xdp.md has the table.
//
// A recirculation is another iteration of a bpf_loop inside the same program
// run: no other packet runs between one packet's passes (the Draconis-Server
// execution model, server.rs), so a repair lands before the next packet and
// a request never meets a pending repair unless the loader installed one.
// The repair flags are kept and checked anyway: the program is the paper's.
// Like the Horus leaf, one CPU runs it at a time: the daemon attaches
// draconis_steer, which hands every packet to one CPU (end of this file).
//
// A job_submission is answered in place: the frame becomes the Ack and goes
// back to the client (XDP_TX). Tasks that did not fit (§4.3) are pushed onto
// the `errors` queue map for user space to send as one error_packet: XDP
// cannot originate a second frame. A task_request becomes the
// task_assignment or the no-op (§4.6) and goes back to the executor.
// Everything else, and every frame that is not exactly one well-formed
// job_submission or task_request in an unfragmented IPv4/UDP datagram without
// options, is passed up unchanged (XDP_PASS) before any state is touched.

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

// Priority levels one program holds (the loader refuses more).
#define MAX_LEVELS 8
#define MAX_TASKS 8
// A job's tasks each take a pass and may each send a repair; a request
// takes at most one pass per level.
#define MAX_PASSES (2 * MAX_TASKS + 2)

#define WIRE_PULL 0x13
#define TYPE_JOB_SUBMISSION 1
#define TYPE_TASK_REQUEST 2
#define TYPE_TASK_ASSIGNMENT 3
#define TYPE_NOOP 4
#define TYPE_ACK 5
#define WIRE_TASK_LEN 29
#define JOB_HEADER_LEN 11
#define REQUEST_LEN 14
#define ASSIGNMENT_LEN (10 + WIRE_TASK_LEN)
#define NOOP_LEN 2
#define ACK_LEN 11
#define HEADERS_LEN (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))

// Counters (crates/xdp/src/draconis.rs XdpDraconisCounters), indices into
// `drac_counters`; the first six are DraconisStats of the sans-IO switch.
enum counter {
	C_ENQUEUED,
	C_REJECTED,
	C_ASSIGNED,
	C_NOOPS,
	C_ADD_REPAIRS,
	C_RETRIEVE_REPAIRS,
	C_RECIRCULATIONS,
	C_PASSED,
	C_DROP_UNKNOWN_EXECUTOR,
	C_NO_TAILROOM,
	C_ERRORS_LOST,
	C_COUNTERS,
};

// TASK_INFO (§4.1) in host order.
struct task_info {
	__u64 id;
	__u64 fn_par;
	__u64 props;
	__u32 fn_id;
	__u8 priority;
	__u8 pad[3];
};

// One cell of draconis.queue: TASK_INFO, the client's address (network
// order), skip counter, the position it was written at and the valid bit.
struct slot {
	struct task_info task;
	__be32 client_ip;
	__be16 client_port;
	__u16 skips;
	__u32 pos;
	__u8 valid;
	__u8 pad[3];
};

// One cell of draconis.repair_flags (queue.rs RepairFlags): each flag with
// the pointer value its repair will write.
struct repair_flags {
	__u32 add_value;
	__u32 retrieve_value;
	__u8 add;
	__u8 retrieve;
	__u16 pad;
};

struct drac_config {
	// Entries per level, a power of two.
	__u32 capacity;
	__u32 levels;
};

struct executor_key {
	__be32 ip;
	__be16 port;
	__u16 pad;
};

// An error_packet (§4.3) for user space to send.
struct error_out {
	__be32 client_ip;
	__be16 client_port;
	__u8 n;
	__u8 pad;
	struct task_info tasks[MAX_TASKS];
};

enum pass_kind { PASS_SUBMIT, PASS_REQUEST };
enum repair_kind { REPAIR_NONE, REPAIR_ADD, REPAIR_RETRIEVE };

// What one packet carries from pass to pass (a switch's recirculation
// metadata); per-CPU scratch, too large for the 512-byte stack.
struct run {
	struct task_info tasks[MAX_TASKS];
	struct slot taken;
	struct error_out error;
	__be32 client_ip;
	__be16 client_port;
	__u16 pad;
	__u32 kind;
	__u32 n;
	__u32 next;
	__u32 accepted;
	__u32 rejected;
	__u32 level;
	__u32 repair;
	__u32 repair_level;
	__u32 repair_value;
	__u32 assigned;
	__u32 done;
};

// The switch model's arrays, stages 0-3 (queue.rs CircularQueue).
ARRAY(drac_retrieve, __u32, MAX_LEVELS);
ARRAY(drac_add, __u32, MAX_LEVELS);
ARRAY(drac_repair, struct repair_flags, MAX_LEVELS);
// levels × capacity entries: the loader sets the size before loading.
ARRAY(drac_queue, struct slot, 1);
ARRAY(drac_config, struct drac_config, 1);
DEFINE_COUNTERS(drac_counters, C_COUNTERS)

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct executor_key);
	__type(value, __u32);
} drac_executors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 1024);
	__type(value, struct error_out);
} drac_errors SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct run);
} drac_scratch SEC(".maps");

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// ---- the circular queue (queue.rs) ----

enum admit { A_INSERT, A_INSERT_REPAIR_RETRIEVE, A_REJECT, A_REJECT_REPAIR_ADD };

// queue.rs `admit` (§4.5, §4.7.1): inside the repair cell's update.
static __always_inline enum admit admit(struct repair_flags *f, __u32 a, __u32 r, __u32 capacity)
{
	if (f->add)
		return A_REJECT;
	__u32 head = f->retrieve ? f->retrieve_value : r;
	__s32 occupied = (__s32)(a - head);
	if (occupied >= (__s32)capacity) {
		f->add = 1;
		f->add_value = a;
		return A_REJECT_REPAIR_ADD;
	}
	if (occupied < 0) {
		f->retrieve = 1;
		f->retrieve_value = a;
		return A_INSERT_REPAIR_RETRIEVE;
	}
	return A_INSERT;
}

static __always_inline __u32 slot_index(const struct drac_config *cfg, __u32 level, __u32 pos)
{
	return level * cfg->capacity + (pos & (cfg->capacity - 1));
}

// Draconis::level_of: priorities clamp to 1..=levels (§6.1).
static __always_inline __u32 level_of(const struct drac_config *cfg, __u8 priority)
{
	__u32 p = priority < 1 ? 1 : priority;
	return (p > cfg->levels ? cfg->levels : p) - 1;
}

// One submission pass (§4.2, §4.3, §4.5): CircularQueue::enqueue and
// Draconis::submit for task `run->next`.
static __always_inline void submit_pass(struct run *run, const struct drac_config *cfg)
{
	__u32 i = run->next;
	if (i >= MAX_TASKS)
		return;
	struct task_info *task = &run->tasks[i];
	__u32 level = level_of(cfg, task->priority);
	__u32 *rp = bpf_map_lookup_elem(&drac_retrieve, &level);
	__u32 *ap = bpf_map_lookup_elem(&drac_add, &level);
	struct repair_flags *flags = bpf_map_lookup_elem(&drac_repair, &level);
	if (!rp || !ap || !flags)
		return;
	__u32 r = *rp;
	__u32 a = *ap;
	*ap = a + 1;
	enum admit decision = admit(flags, a, r, cfg->capacity);
	if (decision == A_REJECT || decision == A_REJECT_REPAIR_ADD) {
		run->rejected |= 1u << i;
		count(C_REJECTED, 1);
		if (decision == A_REJECT_REPAIR_ADD) {
			run->repair = REPAIR_ADD;
			run->repair_level = level;
			run->repair_value = a;
		}
	} else {
		__u32 index = slot_index(cfg, level, a);
		struct slot *s = bpf_map_lookup_elem(&drac_queue, &index);
		if (s) {
			s->task = *task;
			s->client_ip = run->client_ip;
			s->client_port = run->client_port;
			s->skips = 0;
			s->pos = a;
			s->valid = 1;
		}
		run->accepted += 1;
		count(C_ENQUEUED, 1);
		if (decision == A_INSERT_REPAIR_RETRIEVE) {
			run->repair = REPAIR_RETRIEVE;
			run->repair_level = level;
			run->repair_value = a;
		}
	}
	run->next = i + 1;
}

// A repair pass (§4.5, §4.7.1): CircularQueue::repair.
static __always_inline void repair_pass(struct run *run)
{
	__u32 level = run->repair_level;
	struct repair_flags *flags = bpf_map_lookup_elem(&drac_repair, &level);
	__u32 *ptr = bpf_map_lookup_elem(run->repair == REPAIR_ADD ? (void *)&drac_add
								  : (void *)&drac_retrieve,
					 &level);
	if (ptr)
		*ptr = run->repair_value;
	if (flags) {
		if (run->repair == REPAIR_ADD)
			flags->add = 0;
		else
			flags->retrieve = 0;
	}
	count(run->repair == REPAIR_ADD ? C_ADD_REPAIRS : C_RETRIEVE_REPAIRS, 1);
	run->repair = REPAIR_NONE;
}

// A task-request pass on `run->level` (§4.6, §4.7.2, §6.1):
// CircularQueue::dequeue and Draconis::request with cFCFS's check (every
// task fits). Returns 1 when the request is answered.
static __always_inline int request_pass(struct run *run, const struct drac_config *cfg)
{
	__u32 level = run->level;
	__u32 *rp = bpf_map_lookup_elem(&drac_retrieve, &level);
	struct repair_flags *flags = bpf_map_lookup_elem(&drac_repair, &level);
	if (!rp || !flags)
		return 1;
	__u32 p = *rp;
	*rp = p + 1;
	if (!flags->retrieve) {
		__u32 index = slot_index(cfg, level, p);
		struct slot *s = bpf_map_lookup_elem(&drac_queue, &index);
		if (s && s->valid && s->pos == p) {
			s->valid = 0;
			run->taken = *s;
			run->assigned = 1;
			count(C_ASSIGNED, 1);
			return 1;
		}
	}
	// Empty, or a retrieve repair pending: the next level (RTRV_PRIO + 1),
	// a no-op past the last.
	if (level + 1 < cfg->levels) {
		run->level = level + 1;
		return 0;
	}
	count(C_NOOPS, 1);
	return 1;
}

// bpf_loop's context must be on the stack and the run is not (too large):
// each pass looks the per-CPU run up again, as a recirculated packet
// carries its metadata.
static long drac_pass(__u32 index, void *ctx)
{
	__u32 zero = 0;
	struct run *run = bpf_map_lookup_elem(&drac_scratch, &zero);
	const struct drac_config *cfg = bpf_map_lookup_elem(&drac_config, &zero);
	if (!run || !cfg)
		return 1;
	if (index > 0)
		count(C_RECIRCULATIONS, 1);
	// A repair a pass sent is the next recirculation to come back, before
	// the packet's own (the server's FIFO, server.rs).
	if (run->repair != REPAIR_NONE) {
		repair_pass(run);
	} else if (run->kind == PASS_SUBMIT) {
		submit_pass(run, cfg);
	} else if (request_pass(run, cfg)) {
		run->done = 1;
		return 1;
	}
	if (run->kind == PASS_SUBMIT && run->next >= run->n && run->repair == REPAIR_NONE) {
		run->done = 1;
		return 1;
	}
	return 0;
}

// ---- the frame ----

static __always_inline __u64 get_be64(const __u8 *p)
{
	__u64 v;
	__builtin_memcpy(&v, p, 8);
	return bpf_be64_to_cpu(v);
}

static __always_inline __u32 get_be32(const __u8 *p)
{
	__u32 v;
	__builtin_memcpy(&v, p, 4);
	return bpf_ntohl(v);
}

static __always_inline void put_be64(__u8 *p, __u64 v)
{
	v = bpf_cpu_to_be64(v);
	__builtin_memcpy(p, &v, 8);
}

static __always_inline void put_be32(__u8 *p, __u32 v)
{
	v = bpf_htonl(v);
	__builtin_memcpy(p, &v, 4);
}

// Turns the frame around to its sender with a `payload_len`-byte datagram:
// addresses and ports swapped, lengths and the IPv4 checksum recomputed, no
// UDP checksum (optional over IPv4). The frame must already have that size.
static __always_inline int reply_headers(void *data, void *data_end, __u16 payload_len)
{
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return -1;
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, eth->h_dest, ETH_ALEN);
	__builtin_memcpy(eth->h_dest, eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, mac, ETH_ALEN);
	__be32 addr = ip->saddr;
	ip->saddr = ip->daddr;
	ip->daddr = addr;
	ip->tot_len = bpf_htons(sizeof(struct iphdr) + sizeof(struct udphdr) + payload_len);
	ipv4_set_checksum(ip);
	__be16 port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	udp->len = bpf_htons(sizeof(struct udphdr) + payload_len);
	udp->check = 0;
	return 0;
}

// Resizes the frame to the headers plus `payload_len`.
static __always_inline int resize(struct xdp_md *ctx, __u32 payload_len)
{
	long frame = (long)ctx->data_end - (long)ctx->data;
	return bpf_xdp_adjust_tail(ctx, (int)(HEADERS_LEN + payload_len - frame));
}

static __always_inline int answer_job(struct xdp_md *ctx, struct run *run)
{
	if (run->rejected) {
		struct error_out *e = &run->error;
		e->client_ip = run->client_ip;
		e->client_port = run->client_port;
		e->n = 0;
#pragma unroll
		for (int i = 0; i < MAX_TASKS; i++) {
			if (run->rejected & (1u << i)) {
				__u32 k = e->n & (MAX_TASKS - 1);
				e->tasks[k] = run->tasks[i];
				e->n += 1;
			}
		}
		// A full queue loses the error_packet, as a lost datagram would;
		// the client's timeout resubmits (§8.3).
		if (bpf_map_push_elem(&drac_errors, e, 0))
			count(C_ERRORS_LOST, 1);
	}
	// The Ack is the submission's first 11 bytes with its type and count
	// byte rewritten: framing, type, job, accepted (§4.3).
	if (resize(ctx, ACK_LEN))
		return XDP_DROP;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *body = data + HEADERS_LEN;
	if ((void *)(body + ACK_LEN) > data_end)
		return XDP_DROP;
	body[1] = TYPE_ACK;
	body[10] = (__u8)run->accepted;
	if (reply_headers(data, data_end, ACK_LEN))
		return XDP_DROP;
	return XDP_TX;
}

static __always_inline int answer_request(struct xdp_md *ctx, struct run *run)
{
	__u32 len = run->assigned ? ASSIGNMENT_LEN : NOOP_LEN;
	// The frame was grown to ASSIGNMENT_LEN before any state changed.
	if (!run->assigned && resize(ctx, NOOP_LEN))
		return XDP_DROP;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *body = data + HEADERS_LEN;
	if ((void *)(body + NOOP_LEN) > data_end)
		return XDP_DROP;
	body[0] = WIRE_PULL;
	if (run->assigned) {
		if ((void *)(body + ASSIGNMENT_LEN) > data_end)
			return XDP_DROP;
		struct slot *s = &run->taken;
		body[1] = TYPE_TASK_ASSIGNMENT;
		__builtin_memcpy(body + 2, &s->client_ip, 4);
		__builtin_memcpy(body + 6, &s->client_port, 2);
		body[8] = (__u8)(s->skips >> 8);
		body[9] = (__u8)s->skips;
		__u8 *t = body + 10;
		put_be64(t, s->task.id);
		put_be32(t + 8, s->task.fn_id);
		t[12] = s->task.priority;
		put_be64(t + 13, s->task.fn_par);
		put_be64(t + 21, s->task.props);
	} else {
		body[1] = TYPE_NOOP;
	}
	if (reply_headers(data, data_end, (__u16)len))
		return XDP_DROP;
	return XDP_TX;
}

static __always_inline void read_task(const __u8 *p, struct task_info *t)
{
	t->id = get_be64(p);
	t->fn_id = get_be32(p + 8);
	t->priority = p[12];
	t->fn_par = get_be64(p + 13);
	t->props = get_be64(p + 21);
	t->pad[0] = t->pad[1] = t->pad[2] = 0;
}

static __always_inline int queue_run(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udp_frame frame;
	if (parse_udp_frame(data, data_end, &frame))
		goto pass;
	__u8 *body = frame.body;
	if ((void *)(body + 2) > data_end)
		goto pass;
	__u32 len;
	if (udp_payload_len(&frame, data_end, 2, &len))
		goto pass;
	if (body[0] != WIRE_PULL)
		goto pass;
	__u8 type = body[1];
	__be32 src_ip = frame.ip->saddr;
	__be16 src_port = frame.udp->source;

	__u32 zero = 0;
	struct run *run = bpf_map_lookup_elem(&drac_scratch, &zero);
	const struct drac_config *cfg = bpf_map_lookup_elem(&drac_config, &zero);
	if (!run || !cfg || cfg->levels == 0 || cfg->levels > MAX_LEVELS)
		goto pass;
	run->client_ip = src_ip;
	run->client_port = src_port;
	run->next = 0;
	run->accepted = 0;
	run->rejected = 0;
	run->level = 0;
	run->repair = REPAIR_NONE;
	run->assigned = 0;
	run->done = 0;

	if (type == TYPE_JOB_SUBMISSION) {
		if (len < JOB_HEADER_LEN || (void *)(body + JOB_HEADER_LEN) > data_end)
			goto pass;
		__u32 n = body[10];
		if (n == 0 || n > MAX_TASKS || len != JOB_HEADER_LEN + n * WIRE_TASK_LEN)
			goto pass;
#pragma unroll
		for (int i = 0; i < MAX_TASKS; i++) {
			const __u8 *t = body + JOB_HEADER_LEN + i * WIRE_TASK_LEN;
			if (i >= (int)n || (void *)(t + WIRE_TASK_LEN) > data_end)
				break;
			read_task(t, &run->tasks[i]);
		}
		run->kind = PASS_SUBMIT;
		run->n = n;
	} else if (type == TYPE_TASK_REQUEST) {
		if (len != REQUEST_LEN)
			goto pass;
		struct executor_key key = { .ip = src_ip, .port = src_port };
		if (!bpf_map_lookup_elem(&drac_executors, &key)) {
			// The daemon drops an executor message from an address not in
			// its `executors` (crates/node/src/pull/switch.rs).
			count(C_DROP_UNKNOWN_EXECUTOR, 1);
			return XDP_DROP;
		}
		// Room for the assignment first: once a task is dequeued the
		// packet must carry it.
		if (resize(ctx, ASSIGNMENT_LEN)) {
			count(C_NO_TAILROOM, 1);
			goto pass;
		}
		run->kind = PASS_REQUEST;
		run->n = 0;
	} else {
		// Acks, assignments, completions, R2P2's and Sparrow's messages are
		// not the queue's: user space decodes (and counts) them.
		goto pass;
	}

	bpf_loop(MAX_PASSES, drac_pass, NULL, 0);
	if (run->kind == PASS_SUBMIT)
		return answer_job(ctx, run);
	return answer_request(ctx, run);
pass:
	count(C_PASSED, 1);
	return XDP_PASS;
}

// Serialising the queue, as the Horus leaf is (steer.h): the pointers, the
// slots and `drac_scratch` are updated without atomics, and two submissions
// on two CPUs could otherwise both read one add_ptr and write one slot
// (seen: a job enqueued and never assigned). `draconis_steer` hands every
// packet to `queue_cpu`'s one entry, whose program is `draconis_queue_cpu`.
DEFINE_STEERED_PROGRAMS(queue_run, draconis_queue, queue_cpu, draconis_steer, draconis_queue_cpu)
