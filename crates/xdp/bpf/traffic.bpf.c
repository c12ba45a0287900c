// SPDX-License-Identifier: Apache-2.0
//
// The end-to-end benchmark's traffic in XDP (`netsched bench xdp-e2e
// --live`, crates/lab/src/xdp_live.rs): neither the generator nor the
// workers are user space, so the scheduler under test is what limits.
//
// * `gen_tx` is run by BPF_PROG_TEST_RUN with BPF_F_TEST_XDP_LIVE_FRAMES
//   (kernel >= 5.18) on a pre-built single-packet task frame: it writes the
//   frame (`gen_frame`, set by the loader), stamps the send time into the
//   task's 8-byte payload and sends the frame out of the generator's veth
//   (XDP_TX), millions of frames per second. The whole frame, not only the
//   stamp: live frames come from a page pool whose pages are recycled with
//   whatever they last held, and across veths a frame travels without a
//   copy, so a page the scheduler and the responder turned into a reply
//   comes back holding that reply. Its length too: the kernel restores a
//   recycled frame's bounds only when the run's context or the frame's data
//   pointer changed, not after a trim downstream (the responder's), so the
//   run is given one byte more than the frame and `gen_tx` trims it every
//   time, which makes the kernel take the frame's bounds from the run.
// * `responder` (serialised on one CPU by steer.h, as the schedulers are)
//   runs on the generator's veth, where the scheduler sends both tasks (to
//   the workers' addresses, which are the generator's) and replies (to the
//   client's): a task is turned into its idle reply (qlen 0, status ok,
//   the stamp as payload) and sent back (the worker); a reply completes a
//   task (the client): its latency goes into `lat_hist` and it is dropped.
//
// Counters are per-CPU arrays: user space sums them.

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

#define WIRE_HORUS 0x11
#define TYPE_TASK_FIRST 1
#define TYPE_REPLY 3
#define TASK_FIXED 32
#define REPLY_FIXED 23
#define STAMP 8
// A reply is this much shorter than its task (docs/protocol.md).
#define SHRINK (TASK_FIXED - REPLY_FIXED)
// Latency buckets of 1 µs; the last holds everything longer.
#define LAT_BUCKETS 4096

enum stat { S_ANSWERED, S_COMPLETED, S_LATENCY_NS, S_STATS };

#define PERCPU(name, len)                                  \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);   \
		__uint(max_entries, len);                  \
		__type(key, __u32);                        \
		__type(value, __u64);                      \
	} name SEC(".maps")

PERCPU(traffic_stats, S_STATS);
PERCPU(lat_hist, LAT_BUCKETS);

// The generator's task frame: Ethernet, IPv4, UDP, the task's fixed part and
// the stamp (crates/xdp/src/traffic.rs GEN_FRAME_BYTES).
#define GEN_FRAME (sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr) + \
		   TASK_FIXED + STAMP)
struct gen_frame {
	__u8 bytes[GEN_FRAME];
};
ARRAY(gen_frame, struct gen_frame, 1);

char LICENSE[] SEC("license") = "Dual BSD/GPL";

static __always_inline void add(void *map, __u32 key, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &key);
	if (v)
		*v += n;
}

SEC("xdp")
int gen_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u8 *stamp = data + GEN_FRAME - STAMP;
	__u32 zero = 0;
	struct gen_frame *frame = bpf_map_lookup_elem(&gen_frame, &zero);
	// The frame and the byte to trim.
	if (!frame || data + GEN_FRAME + 1 > data_end)
		return XDP_DROP;
	__builtin_memcpy(data, frame->bytes, GEN_FRAME - STAMP);
	__u64 now = bpf_ktime_get_ns();
	__builtin_memcpy(stamp, &now, STAMP);
	if (bpf_xdp_adjust_tail(ctx, -1))
		return XDP_DROP;
	return XDP_TX;
}

static __always_inline void swap_addresses(struct udp_frame *f)
{
	__u8 mac[ETH_ALEN];
	__builtin_memcpy(mac, f->eth->h_dest, ETH_ALEN);
	__builtin_memcpy(f->eth->h_dest, f->eth->h_source, ETH_ALEN);
	__builtin_memcpy(f->eth->h_source, mac, ETH_ALEN);
	__be32 ip = f->ip->daddr;
	f->ip->daddr = f->ip->saddr;
	f->ip->saddr = ip;
	__be16 port = f->udp->dest;
	f->udp->dest = f->udp->source;
	f->udp->source = port;
}

static __always_inline int respond(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct udp_frame f;
	if (parse_udp_frame(data, data_end, &f))
		return XDP_PASS;
	__u8 *h = f.body;
	if ((void *)(h + TASK_FIXED + STAMP) <= data_end && h[0] == WIRE_HORUS &&
	    h[1] == TYPE_TASK_FIRST && h[TASK_FIXED - 2] == 0 && h[TASK_FIXED - 1] == STAMP) {
		// The worker: reply as dst_id, idle (qlen 0), status ok, the stamp.
		h[1] = TYPE_REPLY;
		h[4] = h[6];
		h[5] = h[7];
		h[6] = 0;
		h[7] = 0;
		h[8] = 0;
		h[9] = 0;
		__u8 stamp[STAMP];
		__builtin_memcpy(stamp, h + TASK_FIXED, STAMP);
		h[20] = 0;
		h[21] = 0;
		h[22] = STAMP;
		__builtin_memcpy(h + REPLY_FIXED, stamp, STAMP);
		swap_addresses(&f);
		f.ip->tot_len = bpf_htons(bpf_ntohs(f.ip->tot_len) - SHRINK);
		f.udp->len = bpf_htons(bpf_ntohs(f.udp->len) - SHRINK);
		f.udp->check = 0;
		ipv4_set_checksum(f.ip);
		if (bpf_xdp_adjust_tail(ctx, -SHRINK))
			return XDP_DROP;
		add(&traffic_stats, S_ANSWERED, 1);
		return XDP_TX;
	}
	if ((void *)(h + REPLY_FIXED + STAMP) <= data_end && h[0] == WIRE_HORUS &&
	    h[1] == TYPE_REPLY && h[REPLY_FIXED - 2] == 0 && h[REPLY_FIXED - 1] == STAMP) {
		// The client: the task is done.
		__u64 sent;
		__builtin_memcpy(&sent, h + REPLY_FIXED, STAMP);
		__u64 now = bpf_ktime_get_ns();
		__u64 ns = now > sent ? now - sent : 0;
		__u32 bucket = ns / 1000;
		if (bucket >= LAT_BUCKETS)
			bucket = LAT_BUCKETS - 1;
		add(&lat_hist, bucket, 1);
		add(&traffic_stats, S_COMPLETED, 1);
		add(&traffic_stats, S_LATENCY_NS, ns);
		return XDP_DROP;
	}
	return XDP_PASS;
}

DEFINE_STEERED_PROGRAMS(respond, responder, resp_cpu, responder_steer, responder_cpu)

// The path's floor (`netsched bench xdp-e2e --systems xdp-floor-live`):
// attached where the leaf on every CPU is, it sends every frame back out of
// the interface it came in on, unchanged, by the leaf's own redirect and
// run count (steer.h, DEFINE_REDIRECTING): a task goes back to the
// responder as the leaf sends it to a worker, the worker's reply back to
// the responder as the leaf forwards it to its client. What is left is the
// path without a scheduler: the veth's receive, a program, the redirect,
// the transmit into the peer's ring and its wake-up.
static __always_inline int floor_run(struct xdp_md *ctx)
{
	return XDP_TX;
}
DEFINE_REDIRECTING(floor_run, path_floor, "xdp")
