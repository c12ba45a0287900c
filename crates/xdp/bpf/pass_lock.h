// SPDX-License-Identifier: Apache-2.0
//
// A scheduler on every CPU (docs/xdp.md, "Every CPU"): with `on` set, the
// program runs straight at the XDP hook on whichever CPU received the frame,
// and a packet's passes (the decision: every register array it reads or
// writes, the random stream, the notices it queues) run under one lock
// taken with an atomic compare-and-swap. Everything else (parsing, the
// frame's rewrite, its checksum, sealing, reply forwarding, XDP_TX) runs in
// parallel on every CPU. A bpf_spin_lock cannot cover the passes (no helper
// calls, map lookups included, while it is held), so this is a
// test-and-test-and-set lock of our own, spun by bpf_loop under a bound.
//
// Why it is enough: at the XDP hook a program runs with bottom halves off
// and is not preempted, so a holder keeps the lock for one packet's passes
// (a few hundred nanoseconds at most). A CPU that spins PASS_SPIN_MAX times
// without getting it (a holder's vCPU descheduled by a hypervisor, or a
// preemptible BPF_PROG_TEST_RUN) gives the packet up: counted in `busy`,
// a task dropped (its client retries, as after a full RX ring), a reply
// passed up unapplied to the daemon, which sends it on (a lost reply to
// the leaf's state, which §A.3 and `loss_resync_ns` already recover from).
//
// The lock's atomics are full barriers (the kernel's BPF memory model:
// BPF_CMPXCHG and BPF_XCHG are fully ordered), so the register cells one
// holder wrote are what the next holder reads.
//
// `ticket` numbers the packets in the order they took the lock: the
// linearisation order of the concurrent runs. With `log_on` (the
// differential tests), each packet's key (its task id's low word) is kept
// in `pass_order` at its ticket, so a test can replay the packets through
// the sans-IO leaf in that order and compare every register. The Horus
// spine takes the same lock for its passes (horus_spine.bpf.c).

#ifndef NETSCHED_PASS_LOCK_H
#define NETSCHED_PASS_LOCK_H

// A few milliseconds of spinning (a few nanoseconds an iteration): only a
// holder that is not running (a descheduled vCPU) keeps it that long.
#define PASS_SPIN_MAX (1 << 20)
#define PASS_ORDER_LEN (1 << 14)

struct pass_lock {
	__u32 held; // 1 while a CPU runs a packet's passes
	__u32 on; // nonzero: every CPU (take the lock); zero: one CPU (steer.h)
	__u64 ticket; // packets that ran their passes (under the lock when on)
	__u64 busy; // packets given up after PASS_SPIN_MAX tries
	__u32 log_on; // nonzero: keep each packet's key in pass_order
	__u32 pad;
};

ARRAY(pass_lock, struct pass_lock, 1);
ARRAY(pass_order, __u32, PASS_ORDER_LEN);

struct pass_spin {
	struct pass_lock *lock;
	__u32 got;
};

static long pass_spin_once(__u32 index, void *ctx)
{
	struct pass_spin *s = ctx;
	// Test before test-and-set: waiters read a shared line, not bounce it.
	if (*(volatile __u32 *)&s->lock->held)
		return 0;
	if (__sync_val_compare_and_swap(&s->lock->held, 0, 1) == 0) {
		s->got = 1;
		return 1;
	}
	return 0;
}

// The pass lock's cell, NULL only if the map is missing.
static __always_inline struct pass_lock *pass_lock_cell(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&pass_lock, &zero);
}

// Whether the program runs on every CPU (the lock is on).
static __always_inline int pass_every_cpu(void)
{
	struct pass_lock *lock = pass_lock_cell();
	return lock && lock->on;
}

// Takes the lock when it is on: 0 (`*held` the lock to give back by
// pass_end, NULL when none was taken), -1 when it could not be had.
static __always_inline int pass_take(struct pass_lock *lock, struct pass_lock **held)
{
	*held = NULL;
	if (lock && lock->on) {
		struct pass_spin spin = { .lock = lock };
		bpf_loop(PASS_SPIN_MAX, pass_spin_once, &spin, 0);
		if (!spin.got)
			return -1;
		*held = lock;
	}
	return 0;
}

// Work under the lock that is no packet's passes (a spine's soft-state
// expiry, which the first packet after the clock moved runs): no ticket,
// and a lock not had is not counted (the caller leaves the work to a later
// packet).
static __always_inline int pass_lock_only(struct pass_lock **held)
{
	return pass_take(pass_lock_cell(), held);
}

// Before a packet's passes: 0 to run them (`*held` is the lock to give back
// by pass_end, NULL when none was taken), -1 when the lock
// could not be had (counted; the caller gives the packet up).
static __always_inline int pass_begin(struct pass_lock **held, __u32 key)
{
	struct pass_lock *lock = pass_lock_cell();
	if (pass_take(lock, held)) {
		if (lock)
			__sync_fetch_and_add(&lock->busy, 1);
		return -1;
	}
	if (!lock)
		return 0;
	__u64 ticket = lock->ticket;
	lock->ticket = ticket + 1;
	if (lock->log_on) {
		__u32 at = (__u32)ticket % PASS_ORDER_LEN;
		__u32 *slot = bpf_map_lookup_elem(&pass_order, &at);
		if (slot)
			*slot = key;
	}
	return 0;
}

// After a packet's passes: the next CPU may run its own.
static __always_inline void pass_end(struct pass_lock *held)
{
	if (held)
		__sync_lock_test_and_set(&held->held, 0);
}

#endif
