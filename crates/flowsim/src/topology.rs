//! §5.2's three-level tree with no path diversity. Links are directed; a
//! flow's path is its source's uplink, then (if it leaves the rack) its ToR's
//! uplink, then (if it leaves the pod) its pod's uplink to the core, and down
//! the same way to the destination.

use crate::config::TopologyConfig;

pub type LinkId = u32;

/// At most six links: host up, ToR up, pod up, pod down, ToR down, host down.
pub const MAX_HOPS: usize = 6;

#[derive(Clone, Debug)]
pub struct Topology {
    pub hosts: u32,
    pub servers_per_rack: u32,
    pub racks_per_pod: u32,
    pub racks: u32,
    pub pods: u32,
    pub host_bps: u64,
    /// ToR ↔ aggregation, each direction: servers × host / tor_oversub.
    pub tor_bps: u64,
    /// Aggregation ↔ core, each direction: racks × ToR / agg_oversub.
    pub pod_bps: u64,
}

impl Topology {
    pub fn new(c: &TopologyConfig) -> Self {
        let host_bps = (c.host_gbps * 1e9).round() as u64;
        let tor_bps = (c.servers_per_rack as f64 * host_bps as f64 / c.tor_oversub).round() as u64;
        let pod_bps = (c.racks_per_pod as f64 * tor_bps as f64 / c.agg_oversub).round() as u64;
        let racks = c.pods * c.racks_per_pod;
        Topology {
            hosts: racks * c.servers_per_rack,
            servers_per_rack: c.servers_per_rack,
            racks_per_pod: c.racks_per_pod,
            racks,
            pods: c.pods,
            host_bps,
            tor_bps,
            pod_bps,
        }
    }

    pub fn links(&self) -> u32 {
        2 * self.hosts + 2 * self.racks + 2 * self.pods
    }

    pub fn rack_of(&self, h: u32) -> u32 {
        h / self.servers_per_rack
    }

    pub fn pod_of_rack(&self, r: u32) -> u32 {
        r / self.racks_per_pod
    }

    pub fn host(&self, pod: u32, rack_in_pod: u32, server: u32) -> u32 {
        (pod * self.racks_per_pod + rack_in_pod) * self.servers_per_rack + server
    }

    pub fn host_up(&self, h: u32) -> LinkId {
        h
    }
    pub fn host_down(&self, h: u32) -> LinkId {
        self.hosts + h
    }
    /// The host whose downlink `l` is, if it is one.
    pub fn port_of_down(&self, l: LinkId) -> Option<u32> {
        (self.hosts..2 * self.hosts)
            .contains(&l)
            .then(|| l - self.hosts)
    }
    fn tor_up(&self, r: u32) -> LinkId {
        2 * self.hosts + r
    }
    fn tor_down(&self, r: u32) -> LinkId {
        2 * self.hosts + self.racks + r
    }
    fn pod_up(&self, p: u32) -> LinkId {
        2 * self.hosts + 2 * self.racks + p
    }
    fn pod_down(&self, p: u32) -> LinkId {
        2 * self.hosts + 2 * self.racks + self.pods + p
    }

    /// The link's stage on the way up and down the tree: 0 host up, 1 ToR
    /// up, 2 pod up, 3 pod down, 4 ToR down, 5 host down. Every path
    /// visits its links in increasing stage.
    pub fn stage(&self, l: LinkId) -> usize {
        let (h, r, p) = (self.hosts, self.racks, self.pods);
        if l < h {
            0
        } else if l < 2 * h {
            5
        } else if l < 2 * h + r {
            1
        } else if l < 2 * h + 2 * r {
            4
        } else if l < 2 * h + 2 * r + p {
            2
        } else {
            3
        }
    }

    pub fn is_host_link(&self, l: LinkId) -> bool {
        l < 2 * self.hosts
    }

    pub fn capacity(&self, l: LinkId) -> u64 {
        if l < 2 * self.hosts {
            self.host_bps
        } else if l < 2 * self.hosts + 2 * self.racks {
            self.tor_bps
        } else {
            self.pod_bps
        }
    }

    /// The links from `src` to `dst` (`src != dst`), in order.
    pub fn path(&self, src: u32, dst: u32) -> ([LinkId; MAX_HOPS], usize) {
        let mut p = [0; MAX_HOPS];
        let mut n = 0;
        let mut push = |l| {
            p[n] = l;
            n += 1;
        };
        let (rs, rd) = (self.rack_of(src), self.rack_of(dst));
        let (ps, pd) = (self.pod_of_rack(rs), self.pod_of_rack(rd));
        push(self.host_up(src));
        if rs != rd {
            push(self.tor_up(rs));
            if ps != pd {
                push(self.pod_up(ps));
                push(self.pod_down(pd));
            }
            push(self.tor_down(rd));
        }
        push(self.host_down(dst));
        (p, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_capacities_and_paths() {
        let t = Topology::new(&TopologyConfig::default());
        assert_eq!(t.hosts, 36_000);
        assert_eq!(t.tor_bps, 20_000_000_000);
        assert_eq!(t.pod_bps, 600_000_000_000);
        assert_eq!(t.path(0, 1).1, 2);
        assert_eq!(t.path(0, 40).1, 4);
        let (p, n) = t.path(0, 1200);
        assert_eq!(n, 6);
        assert_eq!(t.capacity(p[2]), t.pod_bps);
        assert_eq!(t.capacity(p[5]), t.host_bps);
        assert!(p[..n].iter().all(|&l| l < t.links()));
        let stages: Vec<usize> = p[..n].iter().map(|&l| t.stage(l)).collect();
        assert_eq!(stages, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(t.stage(t.path(0, 40).0[1]), 1);
    }
}
