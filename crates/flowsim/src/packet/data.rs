//! The data plane of the packet-level engine, one tick at a time: senders
//! inject at their rate, links forward up to capacity in path order and
//! queue the rest, and flows whose last byte got through are delivered.

use super::{PacketEngine, EPS_BYTES};

impl PacketEngine {
    /// Move one tick's data from `now`.
    pub(super) fn move_data(&mut self, now: u64) {
        let dt = self.tick_ns as f64;
        let t0 = now as f64;
        let mut fins = Vec::new();
        for (id, f) in self.flows.iter_mut().enumerate() {
            if !f.alive || f.finned {
                continue;
            }
            if f.unsent <= EPS_BYTES {
                // Nothing left to send (residue): the FIN goes now.
                f.unsent = 0.0;
                f.last_byte = f.last_byte.max(t0);
                fins.push(id as u32);
                continue;
            }
            if f.rate <= 0.0 {
                continue;
            }
            let can = f.rate * dt / 8e9;
            // A remainder below EPS_BYTES would never be sent (nor FIN'd).
            let sent = if f.unsent <= can + EPS_BYTES {
                f.last_byte = t0 + f.unsent * 8e9 / f.rate;
                fins.push(id as u32);
                std::mem::replace(&mut f.unsent, 0.0)
            } else {
                f.unsent -= can;
                can
            };
            f.backlog[0] += sent;
            self.rx[f.links[0] as usize] += sent;
        }
        for id in fins {
            self.fin(id);
        }
        for stage in 0..self.active.len() {
            let mut i = 0;
            while i < self.active[stage].len() {
                let l = self.active[stage][i];
                if self.link_flows[l as usize].is_empty() {
                    self.active[stage].swap_remove(i);
                    self.in_active[l as usize] = false;
                    self.rx[l as usize] = 0.0;
                    self.queue[l as usize] = 0.0;
                    continue;
                }
                self.serve_link(l, t0, dt);
                i += 1;
            }
        }
        self.deliver();
    }

    /// Link `l` forwards up to its capacity over the tick, each flow's
    /// backlog in proportion (fluid FIFO), into the flow's next hop.
    fn serve_link(&mut self, l: u32, t0: f64, dt: f64) {
        let li = l as usize;
        let cap = self.topo.capacity(l) as f64 * dt / 8e9;
        let total: f64 = self.link_flows[li]
            .iter()
            .map(|&(f, h)| self.flows[f as usize].backlog[h as usize])
            .sum();
        if total <= 0.0 {
            self.queue[li] = 0.0;
            return;
        }
        let frac = (cap / total).min(1.0);
        if frac < 1.0 {
            if self.topo.is_host_link(l) {
                self.stats.host_saturated_ticks += 1;
            } else {
                self.stats.switch_saturated_ticks += 1;
            }
        }
        // When the link has sent what it forwards this tick.
        let busy_until = t0 + dt * (total / cap).min(1.0);
        let mut left = 0.0;
        for &(fid, h) in &self.link_flows[li] {
            let f = &mut self.flows[fid as usize];
            let h = h as usize;
            let b = f.backlog[h];
            if b <= 0.0 {
                continue;
            }
            let mut served = b * frac;
            if b - served <= EPS_BYTES {
                served = b;
            }
            f.backlog[h] = b - served;
            left += f.backlog[h];
            if h + 1 < f.n as usize {
                f.backlog[h + 1] += served;
                self.rx[f.links[h + 1] as usize] += served;
            }
            let upstream_empty = f.unsent <= EPS_BYTES && f.backlog[..=h].iter().all(|&x| x <= 0.0);
            if upstream_empty {
                f.last_byte = f.last_byte.max(busy_until);
            }
        }
        self.queue[li] = left;
        self.stats.queue_byte_ticks += left;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(left);
    }

    /// Flows whose every byte got through: off their links, done after the
    /// path's propagation delay.
    fn deliver(&mut self) {
        for id in 0..self.flows.len() {
            let f = &self.flows[id];
            if !f.alive || !f.finned || f.backlog.iter().any(|&b| b > 0.0) {
                continue;
            }
            let (task, spec, n, links) = (f.task, f.spec, f.n as usize, f.links);
            let at = f.last_byte.ceil() as u64 + n as u64 * self.hop_delay_ns;
            self.flows[id].alive = false;
            for &l in &links[..n] {
                let lf = &mut self.link_flows[l as usize];
                let p = lf
                    .iter()
                    .position(|&(x, _)| x == id as u32)
                    .expect("flow is on its link");
                lf.swap_remove(p);
            }
            self.free_flows.push(id as u32);
            self.live_flows -= 1;
            self.flow_done(task, spec, at);
        }
    }
}
