// SPDX-License-Identifier: Apache-2.0
//
// Sealed state messages (crates/proto/src/seal.rs, docs/protocol.md): a
// notice is followed by a 16-byte trailer, its sender's sequence number and
// SipHash-2-4 under the cluster's 128-bit notice key over every byte before
// the tag (message and sequence number), both big-endian u64. This is the
// check in XDP: the same SipHash-2-4 as the `siphasher` crate's SipHasher24
// (Aumasson & Bernstein 2012, 2 compression and 4 finalisation rounds), the
// key as two little-endian words k0 = key[0..8], k1 = key[8..16].
//
// A message here is at most 32 bytes (a loadUpdate and its seal), so the
// hash reads a copy on the stack whose length is a constant at every call
// site: the loops unroll and the verifier sees fixed offsets.

#ifndef NETSCHED_SEAL_H
#define NETSCHED_SEAL_H

#define SEAL_LEN 16
#define SEALED_MAX 32

// The notice key the loader installs (XdpSpine::set_notice_key).
struct notice_key {
	__u64 k0;
	__u64 k1;
	// 1: sealing on (an unsealed, wrongly sealed or replayed notice is
	// dropped); 0: off (a seal is ignored, as the socket daemon does).
	__u32 on;
	__u32 pad;
};

#define SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIP_ROUND(v0, v1, v2, v3)         \
	do {                              \
		v0 += v1;                 \
		v1 = SIP_ROTL(v1, 13);    \
		v1 ^= v0;                 \
		v0 = SIP_ROTL(v0, 32);    \
		v2 += v3;                 \
		v3 = SIP_ROTL(v3, 16);    \
		v3 ^= v2;                 \
		v0 += v3;                 \
		v3 = SIP_ROTL(v3, 21);    \
		v3 ^= v0;                 \
		v2 += v1;                 \
		v1 = SIP_ROTL(v1, 17);    \
		v1 ^= v2;                 \
		v2 = SIP_ROTL(v2, 32);    \
	} while (0)

// The last word `b` (remaining bytes, length in the top byte) and the 4
// finalisation rounds.
#define SIP_FINISH(v0, v1, v2, v3, b)     \
	do {                              \
		v3 ^= b;                  \
		SIP_ROUND(v0, v1, v2, v3); \
		SIP_ROUND(v0, v1, v2, v3); \
		v0 ^= b;                  \
		v2 ^= 0xff;               \
		SIP_ROUND(v0, v1, v2, v3); \
		SIP_ROUND(v0, v1, v2, v3); \
		SIP_ROUND(v0, v1, v2, v3); \
		SIP_ROUND(v0, v1, v2, v3); \
	} while (0)

static __always_inline __u64 le64_at(const __u8 *m, __u32 at)
{
	__u64 w = 0;
#pragma unroll
	for (int i = 0; i < 8; i++)
		w |= (__u64)m[at + i] << (8 * i);
	return w;
}

static __always_inline __u64 be64_at(const __u8 *m, __u32 at)
{
	__u64 w = 0;
#pragma unroll
	for (int i = 0; i < 8; i++)
		w = (w << 8) | m[at + i];
	return w;
}

// SipHash-2-4 of the first `len` bytes of `m` (`len` a constant below
// SEALED_MAX).
static __always_inline __u64 siphash24(const struct notice_key *k, const __u8 *m, const __u32 len)
{
	__u64 v0 = k->k0 ^ 0x736f6d6570736575ULL;
	__u64 v1 = k->k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k->k0 ^ 0x6c7967656e657261ULL;
	__u64 v3 = k->k1 ^ 0x7465646279746573ULL;
	const __u32 words = len / 8;
#pragma unroll
	for (__u32 i = 0; i < words; i++) {
		__u64 w = le64_at(m, 8 * i);
		v3 ^= w;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= w;
	}
	// The last word: the remaining bytes and the length in its top byte.
	__u64 b = (__u64)(len & 0xff) << 56;
#pragma unroll
	for (__u32 j = 0; j < len % 8; j++)
		b |= (__u64)m[8 * words + j] << (8 * j);
	SIP_FINISH(v0, v1, v2, v3, b);
	return v0 ^ v1 ^ v2 ^ v3;
}

// SipHash-2-4 of the `len` bytes at `m` in a packet ending at `data_end`
// (a sealed task, crates/proto/src/seal.rs "Sealed tasks"). `len` is not a
// constant here, so the words are read by a bounded loop the verifier walks
// once per word, each read checked against `data_end`; the packet must
// hold 8 bytes past `len` (the tag's slot), so the last, partial word is
// one 8-byte read masked to its bytes. 0 and the tag in `out`, or -1 when
// the reads run past the packet or `len` past SIP_PKT_MAX.
#define SIP_PKT_MAX 1504
// Keeps clang from hoisting a packet bounds check out of a loop into a
// form the verifier cannot follow.
#define SIP_OPAQUE(p) asm volatile("" : "+r"(p))
static __always_inline int siphash24_pkt(const struct notice_key *k, const __u8 *m,
					 void *data_end, __u32 len, __u64 *out)
{
	if (len > SIP_PKT_MAX)
		return -1;
	__u64 v0 = k->k0 ^ 0x736f6d6570736575ULL;
	__u64 v1 = k->k1 ^ 0x646f72616e646f6dULL;
	__u64 v2 = k->k0 ^ 0x6c7967656e657261ULL;
	__u64 v3 = k->k1 ^ 0x7465646279746573ULL;
	const __u32 words = len / 8;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < SIP_PKT_MAX / 8; i++) {
		if (i >= words)
			break;
		const __u8 *p = m + 8 * i;
		SIP_OPAQUE(p);
		if ((void *)(p + 8) > data_end)
			return -1;
		// Little-endian words, as siphasher reads them (bpfel).
		__u64 w = *(const __u64 *)p;
		v3 ^= w;
		SIP_ROUND(v0, v1, v2, v3);
		SIP_ROUND(v0, v1, v2, v3);
		v0 ^= w;
	}
	const __u8 *t = m + 8 * words;
	SIP_OPAQUE(t);
	if ((void *)(t + 8) > data_end)
		return -1;
	__u32 rem = len % 8;
	__u64 mask = rem ? (1ULL << (8 * rem)) - 1 : 0;
	__u64 b = ((__u64)(len & 0xff) << 56) | (*(const __u64 *)t & mask);
	SIP_FINISH(v0, v1, v2, v3, b);
	*out = v0 ^ v1 ^ v2 ^ v3;
	return 0;
}

// Whether the sealed message `m` (`plain` bytes, then its seal) carries the
// right tag; its sequence number into `seq`.
static __always_inline int seal_ok(const struct notice_key *k, const __u8 *m, const __u32 plain,
				   __u64 *seq)
{
	*seq = be64_at(m, plain);
	return siphash24(k, m, plain + 8) == be64_at(m, plain + 8);
}

#endif
