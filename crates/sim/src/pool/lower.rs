//! Leaf schedulers: feeding a rack's data plane and carrying out what it
//! emits, including its notices to the spines.

use netsched_core::dataplane::{Action, Input, Notice, Outbox, TaskMeta, Upstream};
use netsched_core::Nanos;
use netsched_core::{Control, DataPlane};

use super::events::Ev;
use super::{notice_input, task_of, PoolSim};
use crate::metrics::{AbortReason, MessageKind};

impl PoolSim<'_> {
    pub(super) fn at_lower(&mut self, now: u64, rack: u32, meta: TaskMeta) {
        if !self.racks[rack as usize].alive {
            self.abort(meta.id as u32, AbortReason::DeadLeaf);
            return;
        }
        self.lower_input(now, rack, Input::Task(meta));
    }

    pub(super) fn lower_input(&mut self, now: u64, rack: u32, input: Input) {
        let carries_task = task_of(&input);
        let first_pass_of_task = matches!(input, Input::Task(_));
        let mut out = self.out.take().unwrap_or_default();
        out.clear();
        if let Some(leaf) = &mut self.leaves[rack as usize] {
            leaf.handle(Nanos::new(now), input, &mut out);
        }
        self.lower_actions(now, rack, &mut out, carries_task, first_pass_of_task);
        self.out = Some(out);
    }

    /// `first_pass_of_task` as in [`Self::upper_actions`].
    pub(super) fn lower_actions(
        &mut self,
        now: u64,
        rack: u32,
        out: &mut Outbox,
        carries_task: Option<u32>,
        first_pass_of_task: bool,
    ) {
        for a in out.drain() {
            match a {
                Action::Dispatch(d) => {
                    let slot = self.count_decision(false, d.task, d.decision);
                    let pool_node = self.racks[rack as usize].nodes[d.node as usize];
                    self.send_task_to_node(now, 1, pool_node, slot);
                }
                Action::Resubmit(r) => {
                    self.count_resubmission(false, carries_task, first_pass_of_task);
                    self.q
                        .after(self.setup.resubmit_ns, Ev::LowerResubmit { rack, r });
                }
                Action::Notify { to, notice } => match to {
                    Upstream::Linked => {
                        let upper = self.linked_upper(rack, notice);
                        self.send_notice(rack, upper, notice);
                        // §A.3's re-sent idleRemove is for the spine that
                        // believed the rack idle, which under a random idle
                        // link need not be the one linked now.
                        if let (true, Notice::IdleRemove, Some(t)) =
                            (self.random_idle_link, notice, carries_task)
                        {
                            let sender = self.tasks[t as usize].upper;
                            if sender != upper && self.uppers[sender as usize].alive {
                                self.send_notice(rack, sender, notice);
                            }
                        }
                    }
                    Upstream::All => {
                        for upper in 0..self.uppers.len() as u32 {
                            if self.uppers[upper as usize].alive {
                                self.send_notice(rack, upper, notice);
                            }
                        }
                    }
                },
                Action::Drop(reason) => self.dropped(carries_task, reason, false),
                Action::Queued => {}
            }
        }
    }

    /// For the resubmission metric: `Some(measured)` if this resubmission is
    /// the first repeat pass of a task at this switch, `None` otherwise
    /// (a later pass of the same task, or a pass carrying no task).
    pub(super) fn twice_processed(
        &self,
        task: Option<u32>,
        first_pass_of_task: bool,
    ) -> Option<bool> {
        task.filter(|_| first_pass_of_task)
            .map(|t| self.tasks[t as usize].measured)
    }

    /// A resubmission pass at the `upper` or lower layer: counted per layer
    /// (a task once per layer) and, the first time any layer repeats a
    /// measured task, once across layers.
    pub(super) fn count_resubmission(
        &mut self,
        upper: bool,
        task: Option<u32>,
        first_pass_of_task: bool,
    ) {
        let twice = self.twice_processed(task, first_pass_of_task);
        self.metrics.resubmission(upper, twice);
        if let (Some(t), Some(measured)) = (task, twice) {
            let rec = &mut self.tasks[t as usize];
            if measured && !std::mem::replace(&mut rec.resubmitted, true) {
                self.metrics.resubmitted_task_any_layer();
            }
        }
    }

    /// The spine a leaf's notice goes to: its group's, except for idle state
    /// under horus-sim's random idle link, where each idleAdd links the leaf
    /// to a spine of the pool drawn at random and the idleRemove follows it.
    pub(super) fn linked_upper(&mut self, rack: u32, notice: Notice) -> u32 {
        let r = rack as usize;
        if !self.random_idle_link {
            return self.racks[r].link.0;
        }
        match notice {
            Notice::IdleAdd => {
                let alive: u32 = self.uppers.iter().filter(|u| u.alive).count() as u32;
                let mut k = self.rng_idle_link.below(alive.max(1));
                let pick = (0..self.uppers.len() as u32)
                    .find(|&u| {
                        if !self.uppers[u as usize].alive {
                            return false;
                        }
                        if k == 0 {
                            return true;
                        }
                        k -= 1;
                        false
                    })
                    .unwrap_or(self.racks[r].link.0);
                self.racks[r].idle_link = Some(pick);
                pick
            }
            Notice::IdleRemove => self.racks[r]
                .idle_link
                .take()
                .unwrap_or(self.racks[r].link.0),
            Notice::LoadUpdate(_) | Notice::SlotAdd => self.racks[r].link.0,
        }
    }

    /// Soft state (`HorusOptions::soft_state_ns`): every live leaf and spine
    /// runs its control-plane timer; leaves' refreshes travel as notices.
    pub(super) fn refresh(&mut self, now: u64) {
        for rack in 0..self.racks.len() as u32 {
            if !self.racks[rack as usize].alive {
                continue;
            }
            let mut out = self.out.take().unwrap_or_default();
            out.clear();
            if let Some(leaf) = &mut self.leaves[rack as usize] {
                leaf.tick(Nanos::new(now), &mut out);
            }
            self.lower_actions(now, rack, &mut out, None, false);
            self.out = Some(out);
        }
        for upper in 0..self.uppers.len() as u32 {
            if self.uppers[upper as usize].alive {
                self.settle(upper);
                let mut out = Outbox::new();
                self.uppers[upper as usize]
                    .sched
                    .tick(Nanos::new(now), &mut out);
                debug_assert!(out.is_empty(), "an upper's tick emitted actions");
            }
        }
        let every = self.setup.horus.data_plane.refresh_interval_ns();
        if now + every < self.setup.end_ns {
            self.q.after(every, Ev::Refresh);
        }
    }

    pub(super) fn send_notice(&mut self, rack: u32, upper: u32, notice: Notice) {
        self.metrics.message(match notice {
            Notice::IdleAdd | Notice::SlotAdd => MessageKind::IdleAdd,
            Notice::IdleRemove => MessageKind::IdleRemove,
            Notice::LoadUpdate(_) => MessageKind::LoadUpdate,
        });
        if self.lost() {
            return;
        }
        let Some(local) = self.uppers[upper as usize].local_of(rack) else {
            return;
        };
        let hops = self.spine_leaf_hops(upper, rack);
        let d = self.hop_delay(hops);
        let input = notice_input(local, notice);
        let u = &mut self.uppers[upper as usize];
        if !self.setup.eager_state_writes && u.sched.writes_state_only(&input) {
            u.inbox.push(self.q.reserve_after(d), (local, notice));
        } else {
            self.q.after(
                d,
                Ev::NoticeAtUpper {
                    upper,
                    rack: local,
                    notice,
                },
            );
        }
    }
}
