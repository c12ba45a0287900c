//! Draconis' switch-resident circular task queue (EuroSys'24 §4.2, §4.5, §4.7),
//! one independent queue per priority level (§6).
//!
//! Register arrays, in pipeline stage order (Fig. 4), each touched at most
//! once per pass:
//!
//! 1. `retrieve_ptr` (one cell per level): read-and-increment by a task
//!    request, read by a submission, written by a retrieve repair.
//! 2. `add_ptr` (one cell per level): read-and-increment by a submission,
//!    written by an add repair.
//! 3. `repair` (one cell per level): the two repair flags of §4.7, each with
//!    the pointer value its repair packet will write (see [`RepairFlags`]).
//! 4. `slots` (`levels × capacity` cells): the queue entries.
//!
//! Pointers are free-running 32-bit counters (§4.2: "two 32-bit pointers"); a
//! position `p` lives in slot `p & (capacity - 1)` and every comparison is a
//! wrapping difference read as a signed number ([`ahead`]), so wrap-around of
//! the counters needs no special case. That requires a power-of-two capacity
//! (the slot index is a bit mask, which a switch computes for free, and stays
//! consistent across the 2^32 wrap) and bounds the retrieve pointer's
//! overshoot at 2^31 task requests between two submissions.
//!
//! Every entry carries the position it was written at. A request at position
//! `p` takes the entry only if it is valid *and* tagged `p`, and marks it
//! invalid in the same read-modify-write: an entry is consumed exactly once and
//! an entry of an earlier lap is never mistaken for the current one.

use crate::switch::{Layout, Pass, RegisterArray, RegisterCell};

use super::{ClientId, TaskInfo};

/// `a` is strictly after `b` in wrapping 32-bit pointer arithmetic.
#[inline]
pub fn ahead(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// One queue entry (§4.2: TASK_INFO plus the submitting client).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    pub task: TaskInfo,
    pub client: ClientId,
    /// Locality scheduling's skip_counter, stored with the task (§5.3).
    pub skips: u16,
    /// The queue position (add_ptr value) this entry was written at.
    pub pos: u32,
    pub valid: bool,
}

impl RegisterCell for Slot {
    const BITS: u32 = TaskInfo::BITS + 32 + 16 + 32 + 1;
}

impl RegisterCell for TaskInfo {
    const BITS: u32 = 64 + 32 + 8 + 64 + 64;
}

/// Why a [`Slot`] is still one cell (docs/switch-model.md). A switch would
/// keep `(pos, valid)` as one pair, tested and cleared by a dequeue's single
/// stateful-ALU operation, and each payload field in its own array of the
/// next stage, read or exchanged only when the tag admits it; that split
/// preserves behaviour but is not done yet.
const SLOT_IS_WIDE: &str = "313-bit entry; splitting into a (pos, valid) tag pair and per-field payload arrays in the next stage preserves behaviour but is not done yet";

/// Why [`RepairFlags`] is one 66-bit cell: on Tofino each flag would take one
/// bit of a 32-bit half, leaving 31-bit pointer values; the model keeps the
/// pointers 32-bit so that they wrap as the queue pointers do.
const REPAIR_IS_WIDE: &str = "two flags with two 32-bit pointer values (66 bits); a Tofino pair would leave 31-bit values, which wrap differently";

impl Slot {
    pub fn new(task: TaskInfo, client: ClientId) -> Self {
        Slot {
            task,
            client,
            skips: 0,
            pos: 0,
            valid: true,
        }
    }
}

/// The two repair flags of one level (§4.5, §4.7.1), in one register cell
/// updated by one stateful-ALU operation per pass.
///
/// `add = Some(v)`: an add repair is in flight and will write `add_ptr = v`.
/// `retrieve = Some(v)`: a retrieve repair is in flight and will write
/// `retrieve_ptr = v`. The value rides with the flag because a submission
/// must judge fullness against the head the pending repair will restore, not
/// against the overshot `retrieve_ptr` (see `admit`). The cell is two flag bits
/// plus two 32-bit values: a paired register on Tofino (two 32-bit halves per
/// stateful ALU) would give the flags one bit of each half; this model keeps
/// the pointers 32-bit for clarity.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RepairFlags {
    pub add: Option<u32>,
    pub retrieve: Option<u32>,
}

impl RegisterCell for RepairFlags {
    const BITS: u32 = 2 * (32 + 1);
}

/// What a repair packet must do after a pass (it is recirculated, §4.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repair {
    /// Write `add_ptr = value` and clear the add flag.
    Add { level: u8, value: u32 },
    /// Write `retrieve_ptr = value` and clear the retrieve flag.
    Retrieve { level: u8, value: u32 },
}

/// Outcome of one enqueue pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Enqueued {
    /// The task is at position `pos`; `repair` is a retrieve repair to send.
    Inserted { pos: u32, repair: Option<Repair> },
    /// The queue is full (or an add repair is pending): the task did not fit.
    /// `repair` is the add repair this pass must send (only the pass that set
    /// the flag sends one, §4.7.1).
    Full { repair: Option<Repair> },
}

/// Outcome of one dequeue pass (§4.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dequeued {
    Task {
        slot: Slot,
        pos: u32,
    },
    /// Nothing valid at the head: the queue is empty (retrieve_ptr now
    /// overshoots; the next submission repairs it, §4.5).
    Empty,
    /// A retrieve repair is in flight: answer with a no-op (§4.7.2).
    RepairPending,
}

/// Outcome of one swap pass (§5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swapped {
    /// The hand went to position `at`; `got` is the task that was there.
    /// `retrieve_ptr` is the value read this pass (the next pkt_retrieve_ptr).
    Exchanged {
        got: Slot,
        at: u32,
        retrieve_ptr: u32,
    },
    /// The walk reached the end of the queue: the hand was appended at the
    /// tail in this same pass (§5.1: "treats the swap_task packet as a
    /// job_submission packet").
    Appended { pos: u32, repair: Option<Repair> },
    /// End of queue but no room (the queue refilled while the hand was out).
    Full { repair: Option<Repair> },
    /// Nothing was exchanged: retry at `swap_indx` in another pass (and send
    /// `repair` if set).
    Reaim {
        swap_indx: u32,
        retrieve_ptr: u32,
        repair: Option<Repair>,
    },
}

/// Admission decision of a pass that claimed position `a` (a submission, or a
/// swap packet appending at the tail), given `retrieve_ptr = r`. Runs inside
/// the `repair` cell's read-modify-write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admit {
    Insert,
    InsertRepairRetrieve,
    Reject,
    RejectRepairAdd,
}

#[inline]
fn admit(flags: &mut RepairFlags, a: u32, r: u32, capacity: u32) -> Admit {
    // §4.7.1 + our rule for a pending add repair: add_ptr has overshot and the
    // repair will roll it back to `v`; nothing may be written at or beyond
    // `v` before that, or the rollback would let a later submission overwrite
    // it. So every submission is refused until the repair lands.
    if flags.add.is_some() {
        return Admit::Reject;
    }
    // While a retrieve repair is pending, retrieve_ptr overshoots the real
    // head; the head is the value the repair will write. Judging fullness
    // against the overshot pointer would let submissions lap the head and
    // overwrite it.
    let head = flags.retrieve.unwrap_or(r);
    let occupied = a.wrapping_sub(head) as i32;
    if occupied >= capacity as i32 {
        // §4.5: add_ptr was wrongly incremented; this pass set the flag, so
        // it sends the one repair, which restores the value it read.
        flags.add = Some(a);
        Admit::RejectRepairAdd
    } else if occupied < 0 {
        // §4.5: retrieve_ptr ran past add_ptr on an empty queue; point it at
        // the task inserted now. (`occupied < 0` cannot happen while a
        // retrieve repair is pending: its target is at or before every later
        // insertion.)
        flags.retrieve = Some(a);
        Admit::InsertRepairRetrieve
    } else {
        Admit::Insert
    }
}

/// `levels` independent circular queues of `capacity` entries each.
#[derive(Clone, Debug)]
pub struct CircularQueue {
    capacity: u32,
    levels: u8,
    retrieve_ptr: RegisterArray<u32>,
    add_ptr: RegisterArray<u32>,
    repair: RegisterArray<RepairFlags>,
    slots: RegisterArray<Slot>,
}

impl CircularQueue {
    /// `capacity` must be a power of two in `1..=2^30`; `levels` in `1..=255`.
    /// Four consecutive stages of `layout`, in the order of the module docs.
    pub fn new(layout: &mut Layout, capacity: u32, levels: u8) -> Self {
        if let Err(e) = crate::limits::queue_capacity(capacity) {
            panic!("queue capacity: {e}");
        }
        if let Err(e) = crate::limits::priority_levels(levels.into()) {
            panic!("levels: {e}");
        }
        let l = levels as usize;
        let stages = [
            layout.stage(),
            layout.stage(),
            layout.stage(),
            layout.stage(),
        ];
        CircularQueue {
            capacity,
            levels,
            retrieve_ptr: layout.array(stages[0], "draconis.retrieve_ptr", l, 0),
            add_ptr: layout.array(stages[1], "draconis.add_ptr", l, 0),
            repair: layout.wide_array(
                stages[2],
                "draconis.repair_flags",
                l,
                RepairFlags::default(),
                REPAIR_IS_WIDE,
            ),
            slots: layout.wide_array(
                stages[3],
                "draconis.queue",
                l * capacity as usize,
                Slot {
                    valid: false,
                    ..Slot::default()
                },
                SLOT_IS_WIDE,
            ),
        }
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn levels(&self) -> u8 {
        self.levels
    }

    #[inline]
    fn index(&self, level: u8, pos: u32) -> usize {
        level as usize * self.capacity as usize + (pos & (self.capacity - 1)) as usize
    }

    /// Submission pass (§4.2, §4.3, §4.5): read-and-increment add_ptr,
    /// read retrieve_ptr, update the repair flags, write the entry.
    pub fn enqueue(&mut self, pass: &Pass, level: u8, mut slot: Slot) -> Enqueued {
        let l = level as usize;
        let r = self.retrieve_ptr.read(pass, l);
        let a = self.add_ptr.update(pass, l, |a| {
            let old = *a;
            *a = old.wrapping_add(1);
            old
        });
        self.commit(pass, level, a, r, &mut slot)
    }

    /// Stages 3 and 4 of a pass that claimed position `a`.
    #[inline]
    fn commit(&mut self, pass: &Pass, level: u8, a: u32, r: u32, slot: &mut Slot) -> Enqueued {
        let cap = self.capacity;
        let decision = self
            .repair
            .update(pass, level as usize, |f| admit(f, a, r, cap));
        self.write_admitted(pass, level, a, decision, slot)
    }

    /// Stage 4 of a pass whose admission decision is `decision`.
    #[inline]
    fn write_admitted(
        &mut self,
        pass: &Pass,
        level: u8,
        a: u32,
        decision: Admit,
        slot: &mut Slot,
    ) -> Enqueued {
        match decision {
            Admit::Reject => Enqueued::Full { repair: None },
            Admit::RejectRepairAdd => Enqueued::Full {
                repair: Some(Repair::Add { level, value: a }),
            },
            Admit::Insert | Admit::InsertRepairRetrieve => {
                slot.pos = a;
                slot.valid = true;
                let i = self.index(level, a);
                self.slots.write(pass, i, *slot);
                let repair = (decision == Admit::InsertRepairRetrieve)
                    .then_some(Repair::Retrieve { level, value: a });
                Enqueued::Inserted { pos: a, repair }
            }
        }
    }

    /// Task-request pass (§4.6, §4.7.2).
    pub fn dequeue(&mut self, pass: &Pass, level: u8) -> Dequeued {
        let l = level as usize;
        let p = self.retrieve_ptr.update(pass, l, |r| {
            let old = *r;
            *r = old.wrapping_add(1);
            old
        });
        if self.repair.read(pass, l).retrieve.is_some() {
            return Dequeued::RepairPending;
        }
        let i = self.index(level, p);
        let taken = self.slots.update(pass, i, |s| {
            if s.valid && s.pos == p {
                s.valid = false;
                Some(*s)
            } else {
                None
            }
        });
        match taken {
            Some(slot) => Dequeued::Task { slot, pos: p },
            None => Dequeued::Empty,
        }
    }

    /// Swap pass (§5.1): exchange `hand` with the entry at `swap_indx`, or at
    /// the head if retrieve_ptr has passed `swap_indx`; append `hand` at the
    /// tail if that position is the end of the queue.
    ///
    /// The paper detects that retrieve_ptr moved by comparing it with the
    /// packet's pkt_retrieve_ptr and then swaps with the head. We compare it
    /// with SWAP_INDX instead, for two reasons found by the property tests
    /// (docs/draconis.md): (1) retrieve_ptr moving is not enough to jump: if
    /// it has not passed SWAP_INDX, the head is behind tasks the hand was
    /// already swapped past, and jumping there breaks the relative order the
    /// swap is meant to keep; (2) a retrieve repair *lowers* retrieve_ptr, so
    /// "pkt_retrieve_ptr < retrieve_ptr" can be false while retrieve_ptr has
    /// passed SWAP_INDX, and writing the hand there strands it behind the
    /// head, lost. The danger the rule guards against, writing behind
    /// retrieve_ptr, is exactly "retrieve_ptr > SWAP_INDX".
    pub fn swap(&mut self, pass: &Pass, level: u8, mut hand: Slot, swap_indx: u32) -> Swapped {
        let l = level as usize;
        let r = self.retrieve_ptr.read(pass, l);
        let jump = ahead(r, swap_indx);
        let target = if jump { r } else { swap_indx };
        // One conditional read-and-increment: claim the tail only if the
        // target is at or beyond it (a comparison of the register with a
        // packet field, which a stateful ALU evaluates).
        let claim = self.add_ptr.update(pass, l, |a| {
            let old = *a;
            if ahead(old, target) {
                Err(old)
            } else {
                *a = old.wrapping_add(1);
                Ok(old)
            }
        });
        match claim {
            Ok(a) if jump => {
                // Jumped to an empty tail. If a retrieve repair is pending,
                // retrieve_ptr overshoots the real head `t` and the entries
                // from `t` on are younger than the hand: appending would put
                // it behind them. Undo the claim the way a full queue undoes
                // one (an add repair back to `a`, unless one is already
                // pending, which rolls back further) and aim at `t` next pass.
                let cap = self.capacity;
                let mut reaim = None;
                let decision = self.repair.update(pass, l, |f| match f.retrieve {
                    Some(t) => {
                        let repair = if f.add.is_none() {
                            f.add = Some(a);
                            Some(Repair::Add { level, value: a })
                        } else {
                            None
                        };
                        reaim = Some((t, repair));
                        Admit::Reject
                    }
                    None => admit(f, a, r, cap),
                });
                if let Some((t, repair)) = reaim {
                    let swap_indx = if ahead(t, swap_indx) { t } else { swap_indx };
                    return Swapped::Reaim {
                        swap_indx,
                        retrieve_ptr: r,
                        repair,
                    };
                }
                match self.write_admitted(pass, level, a, decision, &mut hand) {
                    Enqueued::Inserted { pos, repair } => Swapped::Appended { pos, repair },
                    Enqueued::Full { repair } => Swapped::Full { repair },
                }
            }
            Ok(a) => match self.commit(pass, level, a, r, &mut hand) {
                Enqueued::Inserted { pos, repair } => Swapped::Appended { pos, repair },
                Enqueued::Full { repair } => Swapped::Full { repair },
            },
            Err(_) => {
                let flags = self.repair.read(pass, l);
                if jump {
                    // A pending retrieve repair means retrieve_ptr overshoots
                    // the real head `t` (the queue drained while this hand
                    // was out and refilled from `t`): jumping to retrieve_ptr
                    // would skip the younger entries from `t` on. Aim at `t`.
                    if let Some(t) = flags.retrieve {
                        if ahead(target, t) {
                            let swap_indx = if ahead(t, swap_indx) { t } else { swap_indx };
                            return Swapped::Reaim {
                                swap_indx,
                                retrieve_ptr: r,
                                repair: None,
                            };
                        }
                    }
                }
                // A pending add repair will roll add_ptr back to `v`: the
                // positions from `v` on are not queue entries.
                if let Some(v) = flags.add {
                    if !ahead(v, target) {
                        return Swapped::Full { repair: None };
                    }
                }
                hand.pos = target;
                hand.valid = true;
                let i = self.index(level, target);
                let got = self.slots.update(pass, i, |s| std::mem::replace(s, hand));
                Swapped::Exchanged {
                    got,
                    at: target,
                    retrieve_ptr: r,
                }
            }
        }
    }

    /// Repair pass (§4.5, §4.7.1): write the pointer, clear its flag.
    pub fn repair(&mut self, pass: &Pass, repair: Repair) {
        match repair {
            Repair::Add { level, value } => {
                self.add_ptr.write(pass, level as usize, value);
                self.repair.update(pass, level as usize, |f| f.add = None);
            }
            Repair::Retrieve { level, value } => {
                self.retrieve_ptr.write(pass, level as usize, value);
                self.repair
                    .update(pass, level as usize, |f| f.retrieve = None);
            }
        }
    }

    // ---- control plane / inspection (not data-plane accesses) ----

    /// (retrieve_ptr, add_ptr, repair flags) of `level`.
    pub fn pointers(&self, level: u8) -> (u32, u32, RepairFlags) {
        let l = level as usize;
        (
            self.retrieve_ptr.peek(l),
            self.add_ptr.peek(l),
            self.repair.peek(l),
        )
    }

    /// The register cells of `level`'s entries as they are, valid or not,
    /// in slot order (position `p` is cell `p & (capacity - 1)`): a
    /// read-only control-plane view, so another implementation (the XDP
    /// queue, crates/xdp) can start from the same state and be compared
    /// cell by cell.
    pub fn entries(&self, level: u8) -> &[Slot] {
        assert!(level < self.levels, "no level {level}");
        let base = level as usize * self.capacity as usize;
        &self.slots.as_slice()[base..base + self.capacity as usize]
    }

    /// The position of the oldest queued entry of `level`, as the pointers
    /// will say once pending repairs land.
    fn head_tail(&self, level: u8) -> (u32, u32) {
        let (r, a, f) = self.pointers(level);
        let head = f.retrieve.unwrap_or(r);
        let tail = f.add.unwrap_or(a);
        (head, tail)
    }

    /// Valid entries of `level`, oldest position first. Every valid entry in
    /// the level is listed, including any (there should be none) outside the
    /// head..tail window, so tests can detect stranded entries.
    pub fn contents(&self, level: u8) -> Vec<Slot> {
        let (head, _) = self.head_tail(level);
        let base = level as usize * self.capacity as usize;
        let mut v: Vec<Slot> = self.slots.as_slice()[base..base + self.capacity as usize]
            .iter()
            .filter(|s| s.valid)
            .copied()
            .collect();
        v.sort_by_key(|s| s.pos.wrapping_sub(head));
        v
    }

    /// Entries that a request can reach: valid, tagged with their slot's
    /// position, inside the head..tail window.
    pub fn reachable(&self, level: u8) -> usize {
        let (head, tail) = self.head_tail(level);
        if !ahead(tail, head) {
            return 0;
        }
        let mut n = 0;
        let mut p = head;
        while p != tail {
            let s = self.slots.peek(self.index(level, p));
            if s.valid && s.pos == p {
                n += 1;
            }
            p = p.wrapping_add(1);
        }
        n
    }

    /// Number of valid entries across all levels.
    pub fn len(&self) -> usize {
        self.slots.as_slice().iter().filter(|s| s.valid).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Control plane: write `slot` as it is (valid bit and position tag
    /// included) into the register cell that position `at` of `level` maps
    /// to. No packet sequence leaves a valid entry of another lap where a
    /// request looks (the property tests pass without the tag check); this is
    /// how tests plant one, as a control-plane restore of stale state or a
    /// corrupted cell would, to show the tag check rejects it.
    pub fn control_write_entry(&mut self, level: u8, at: u32, slot: Slot) {
        assert!(level < self.levels, "no level {level}");
        let i = self.index(level, at);
        self.slots.control_write(i, slot);
    }

    /// Control plane: start every pointer of every level at `value` (tests use
    /// it to exercise the 2^32 wrap-around). Only valid on an empty queue.
    pub fn control_set_pointers(&mut self, value: u32) {
        assert!(
            self.is_empty(),
            "pointers can only be moved on an empty queue"
        );
        for l in 0..self.levels as usize {
            self.retrieve_ptr.control_write(l, value);
            self.add_ptr.control_write(l, value);
            self.repair.control_write(l, RepairFlags::default());
        }
    }
}
