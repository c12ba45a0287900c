// SPDX-License-Identifier: Apache-2.0
//
// Serialising a scheduler on one CPU (docs/xdp.md): its maps are updated
// without atomics, so one CPU at a time may run a pass. The steering
// program is what the daemon attaches to the interface: on whichever CPU
// took the packet it only redirects it into the cpumap, whose one entry (the
// daemon's chosen CPU, in `steer_cpu`) runs the scheduler's cpumap program
// from that CPU's cpumap thread, one packet after the other. A cpumap
// program has no XDP_TX: an answer leaves by a redirect to the interface it
// came in on. The loader side is crates/xdp/src/daemon.rs `attach_steered`.
//
// DEFINE_STEERING(cpumap, steer) defines the cpumap, `steer_cpu`, `runs_on`
// (packets per CPU: [cpu] the steering program took, [64 + cpu] the
// scheduler ran: the tests' proof that packets came in on several CPUs and
// one ran them), count_run() for the cpumap program to call with offset 64,
// and the steering program `steer`.
//
// DEFINE_STEERED_PROGRAMS(run, prog, cpumap, steer, prog_cpu) defines a
// scheduler's programs over its `int run(struct xdp_md *)`: `prog`, run on
// the interface itself (and by BPF_PROG_TEST_RUN), the steering above, and
// `prog_cpu`, the program of the cpumap entry, which turns XDP_TX into the
// redirect.
//
// DEFINE_REDIRECTING(run, prog, sec) defines `prog` in section `sec`: `run`
// counted in `runs_on` at offset 64, its XDP_TX turned into a redirect to the
// interface the frame came in on. The cpumap program is one; a scheduler
// run on every CPU (pass_lock.h) attaches another to the interface itself,
// because on a veth the two differ: the frames of an XDP_TX are queued at
// the peer, which the kernel wakes to take them only when the peer runs an
// XDP program of its own (veth_xdp_flush), while a redirect's flush wakes a
// peer with any NAPI (GRO on, too). Without that wake the frames wait in the
// peer's ring for other traffic, and past its 256 entries are dropped.

#ifndef NETSCHED_STEER_H
#define NETSCHED_STEER_H

#define STEER_MAX_CPUS 64

#define DEFINE_STEERING(cpumap, steer)                                         \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_CPUMAP);                             \
		__uint(max_entries, STEER_MAX_CPUS);                           \
		__type(key, __u32);                                            \
		__type(value, struct bpf_cpumap_val);                          \
	} cpumap SEC(".maps");                                                 \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                              \
		__uint(max_entries, 1);                                        \
		__type(key, __u32);                                            \
		__type(value, __u32);                                          \
	} steer_cpu SEC(".maps");                                              \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                              \
		__uint(max_entries, 2 * STEER_MAX_CPUS);                       \
		__type(key, __u32);                                            \
		__type(value, __u64);                                          \
	} runs_on SEC(".maps");                                                \
	static __always_inline void count_run(__u32 offset)                    \
	{                                                                      \
		__u32 cpu = bpf_get_smp_processor_id() + offset;               \
		__u64 *runs = bpf_map_lookup_elem(&runs_on, &cpu);             \
		if (runs)                                                      \
			__sync_fetch_and_add(runs, 1);                         \
	}                                                                      \
	SEC("xdp")                                                             \
	int steer(struct xdp_md *ctx)                                          \
	{                                                                      \
		__u32 zero = 0;                                                \
		__u32 *cpu = bpf_map_lookup_elem(&steer_cpu, &zero);           \
		count_run(0);                                                  \
		/* Not a cpumap entry: nothing runs the scheduler, and the     \
		   packet goes up. */                                          \
		return bpf_redirect_map(&cpumap, cpu ? *cpu : 0, XDP_PASS);    \
	}

#define DEFINE_STEERED_PROGRAMS(run, prog, cpumap, steer, prog_cpu)          \
	SEC("xdp")                                                             \
	int prog(struct xdp_md *ctx)                                           \
	{                                                                      \
		return run(ctx);                                               \
	}                                                                      \
	DEFINE_STEERING(cpumap, steer)                                         \
	DEFINE_REDIRECTING(run, prog_cpu, "xdp/cpumap")

#define DEFINE_REDIRECTING(run, prog, sec)                                    \
	SEC(sec)                                                               \
	int prog(struct xdp_md *ctx)                                           \
	{                                                                      \
		count_run(64);                                                 \
		int verdict = run(ctx);                                        \
		if (verdict == XDP_TX)                                         \
			return bpf_redirect(ctx->ingress_ifindex, 0);          \
		return verdict;                                                \
	}

#endif
