// SPDX-License-Identifier: Apache-2.0
//
// The map definitions both programs repeat: an array per register array of
// the switch model, and the counters array with `count()` adding to one of
// its cells (a program's `enum counter` names them).

#ifndef NETSCHED_MAPS_H
#define NETSCHED_MAPS_H

#define ARRAY(name, value_t, len)                     \
	struct {                                      \
		__uint(type, BPF_MAP_TYPE_ARRAY);     \
		__uint(max_entries, len);             \
		__type(key, __u32);                   \
		__type(value, value_t);               \
	} name SEC(".maps")

// count(): unsynchronised, for what one CPU runs at a time (steer.h, or
// the passes under pass_lock.h); count_atomic(): for what every CPU may run
// at once.
#define DEFINE_COUNTERS(name, len)                                       \
	ARRAY(name, __u64, len);                                         \
	static __always_inline void count(enum counter c, __u64 n)       \
	{                                                                \
		__u32 key = c;                                           \
		__u64 *v = bpf_map_lookup_elem(&name, &key);             \
		if (v)                                                   \
			*v += n;                                         \
	}                                                                \
	static __always_inline __attribute__((unused)) void              \
	count_atomic(enum counter c, __u64 n)                            \
	{                                                                \
		__u32 key = c;                                           \
		__u64 *v = bpf_map_lookup_elem(&name, &key);             \
		if (v)                                                   \
			__sync_fetch_and_add(v, n);                      \
	}

#endif
