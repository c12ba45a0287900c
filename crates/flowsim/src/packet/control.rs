//! The SPC control loop of the packet-level engine: one request per flow
//! per RTT through every port on its path (Alg. 1), the sender's demand and
//! rate (Alg. 2), FINs, and each port's virtual-capacity interval
//! (footnote 5).

use super::{Flow, PacketEngine, EPS_BYTES};
use crate::topology::MAX_HOPS;
use netsched_core::baraat::{FlowDataPlane, FlowPlane, SpcFeedback, SpcRequest};

impl PacketEngine {
    /// Once per RTT, every port with flows moves its virtual capacity
    /// towards full, queue-free use, from the bytes that arrived since the
    /// last interval and its standing queue (as the UDP lab's switch:
    /// only while it has flows, as RCP).
    pub(super) fn port_intervals(&mut self) {
        let rtt_s = self.opts.rtt_ns as f64 / 1e9;
        for stage in &self.active {
            for &l in stage {
                let l = l as usize;
                if !self.link_flows[l].is_empty() {
                    let input_bps = self.rx[l] * 8.0 / rtt_s;
                    if !self.topo.is_host_link(l as u32) {
                        let port = &self.ports[l];
                        // The port's physical capacity, which it was built with.
                        let capacity = self.topo.capacity(l as u32) as f64;
                        self.stats.switch_active_bits += capacity * rtt_s;
                        if port.allocated() >= 0.95 * port.virtual_capacity() {
                            self.stats.switch_booked_idle_bits +=
                                (capacity - input_bps).max(0.0) * rtt_s;
                        }
                    }
                    self.ports[l].on_interval(input_bps, self.queue[l]);
                    let top = top_class(&self.ports[l]);
                    if top.is_some() && self.top_class[l].is_some() && top != self.top_class[l] {
                        if self.topo.is_host_link(l as u32) {
                            self.stats.host_handovers += 1;
                        } else {
                            self.stats.switch_handovers += 1;
                        }
                    }
                    self.top_class[l] = top;
                }
                self.rx[l] = 0.0;
            }
        }
    }

    /// Feedback that arrives at this tick sets its sender's rate (Alg. 2,
    /// §4.3.3: the smallest AR); a sender with data left and no request in
    /// flight sends its next request, which every port on the path answers
    /// now (Alg. 1) and whose feedback arrives one RTT later.
    pub(super) fn control(&mut self, tick: u64) {
        let k = self.ticks_per_rtt();
        for f in self.flows.iter_mut() {
            if !f.alive || f.finned {
                continue;
            }
            if let Some((due, fb)) = f.pending {
                if due == tick {
                    let fb = &fb[..f.n as usize];
                    f.rate = f.sender.on_feedback(fb);
                    f.min_nr = fb.iter().map(|x| x.nr).reduce(f64::min);
                    f.pending = None;
                }
            }
            if f.pending.is_none() && f.unsent > EPS_BYTES {
                let lowered = f.counted && f.held_demand < f.sender.nic_bps;
                let fb = request(f, &mut self.ports);
                if lowered
                    && f.held_demand
                        >= f.sender
                            .nic_bps
                            .min(f.unsent * 8e9 / self.opts.rtt_ns as f64)
                            * 0.999
                {
                    self.stats.demand_reraises += 1;
                }
                f.pending = Some((tick + k, fb));
                self.stats.requests += 1;
            }
        }
    }

    /// The sender's last byte left: the FIN returns its demand and
    /// allocation to every port of the path; no more feedback matters.
    pub(super) fn fin(&mut self, id: u32) {
        let f = &mut self.flows[id as usize];
        for h in 0..f.n as usize {
            self.ports[f.links[h] as usize].on_flow_end(f.class_id, f.held_demand, f.held_alloc[h]);
        }
        f.finned = true;
        f.pending = None;
        f.rate = 0.0;
    }
}

/// The leader of the first class with a flow at the port: who the port
/// serves first.
fn top_class(port: &FlowPlane) -> Option<u64> {
    let c = port.classifier();
    c.classes()
        .zip(c.tasks())
        .find(|(_, t)| t.flows > 0)
        .map(|((_, _, leader), _)| leader)
}

/// One request of flow `f` through its path: the demand for the next RTT
/// from the bytes still unsent and the last feedback's smallest NR, then
/// Alg. 1 at each port with what that port holds for the flow.
fn request(f: &mut Flow, ports: &mut [FlowPlane]) -> [SpcFeedback; MAX_HOPS] {
    let demand = f.sender.next_demand(f.unsent.ceil() as u64, f.min_nr);
    let mut fb = [SpcFeedback { ar: 0.0, nr: 0.0 }; MAX_HOPS];
    for h in 0..f.n as usize {
        fb[h] = ports[f.links[h] as usize].on_request(SpcRequest {
            task_id: f.class_id,
            demand,
            prev_demand: f.held_demand,
            prev_alloc: f.held_alloc[h],
            new_flow: !f.counted,
        });
        f.held_alloc[h] = fb[h].ar;
    }
    f.held_demand = demand;
    f.counted = true;
    fb
}
