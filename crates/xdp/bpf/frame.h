// SPDX-License-Identifier: Apache-2.0
//
// The Ethernet/IPv4/UDP framing both programs read and rewrite: finding the
// datagram in a frame, checking its lengths, and the IPv4 header checksum
// after a rewrite. What a program does with a frame that fails a check
// (pass it up, count it or not) stays the program's: the helpers only say
// whether it passed, so the counters stay as they were.
//
// Include after <linux/if_ether.h>, <linux/ip.h>, <linux/udp.h> and
// <bpf/bpf_endian.h>.

#ifndef NETSCHED_FRAME_H
#define NETSCHED_FRAME_H

#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

// The headers of one IPv4/UDP frame; `body` is the UDP payload.
struct udp_frame {
	struct ethhdr *eth;
	struct iphdr *ip;
	struct udphdr *udp;
	__u8 *body;
};

// Finds the UDP datagram in the frame [data, data_end): 0 when the frame is
// IPv4 without options, unfragmented and UDP. Options would move the UDP
// header, a fragment has none or only part of the datagram; the daemons send
// neither. The UDP header is in bounds on success, the body is not checked.
static __always_inline int parse_udp_frame(void *data, void *data_end, struct udp_frame *f)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP))
		return -1;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end || ip->version != 4 || ip->ihl != 5 ||
	    ip->protocol != IPPROTO_UDP || (ip->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		return -1;
	struct udphdr *udp = (void *)(ip + 1);
	f->eth = eth;
	f->ip = ip;
	f->udp = udp;
	f->body = (void *)(udp + 1);
	return 0;
}

// The datagram's payload length into `len`: 0 when its lengths agree. The
// datagram is the UDP length (Ethernet may pad the frame beyond it), which
// the IPv4 total length must match, the frame must hold, and which must
// leave at least `min_payload` bytes.
static __always_inline int udp_payload_len(const struct udp_frame *f, void *data_end,
					   __u32 min_payload, __u32 *len)
{
	__u32 udp_len = bpf_ntohs(f->udp->len);
	if (udp_len < sizeof(struct udphdr) + min_payload ||
	    bpf_ntohs(f->ip->tot_len) != sizeof(struct iphdr) + udp_len ||
	    (void *)f->udp + udp_len > data_end)
		return -1;
	*len = udp_len - sizeof(struct udphdr);
	return 0;
}

static __always_inline __u16 csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

// A fresh IPv4 header checksum, after addresses or lengths were rewritten.
static __always_inline void ipv4_set_checksum(struct iphdr *ip)
{
	ip->check = 0;
	__u32 sum = 0;
	__u16 *words = (__u16 *)ip;
#pragma unroll
	for (int i = 0; i < (int)sizeof(struct iphdr) / 2; i++)
		sum += words[i];
	ip->check = csum_fold(sum);
}

#endif
