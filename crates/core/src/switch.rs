//! The programmable-switch model every data plane is written against, and the
//! checker that holds each data plane to it.
//!
//! # What a switch enforces (Horus §3.3 "Switch Model"; RackSched §3.3)
//!
//! * A register array lives in one pipeline stage. A packet visits the stages
//!   in order, once per *pass*, so within a pass an array is accessed at most
//!   once (read, write or one atomic read-modify-write in its stateful ALU)
//!   and never after an array of a later stage. Anything else needs a
//!   resubmission: an explicit new pass that carries metadata from the first.
//! * A register cell is at most 32 bits; a stateful ALU may treat a cell as a
//!   pair of 32-bit halves and update both in one access (Tofino's paired
//!   registers), so 64 bits are allowed as a pair.
//!
//! # How the model checks it
//!
//! A data plane builds its [`Layout`] once, at construction: it opens stages
//! in pipeline order ([`Layout::stage`]) and creates every [`RegisterArray`]
//! through [`Layout::array`], which records the array's stage and cell width
//! ([`RegisterCell::BITS`]). The finished layout goes into the data plane's
//! [`Pipeline`], which counts the stages the program needs
//! ([`Layout::stage_count`]); docs/switch-model.md lists every shipped data
//! plane's layout and a test keeps that list true.
//!
//! Wherever debug assertions are on, which includes every test build (the
//! test profile keeps them on at opt-level 2):
//!
//! * [`Layout::array`] refuses a cell wider than the [`Profile`] allows
//!   (Tofino-like by default: 32-bit cells, pairs of 32). A cell that cannot
//!   be split without changing results is declared with
//!   [`Layout::wide_array`], which records why; the docs list each one.
//! * An array that a data plane needs at two points of the stage order (a
//!   pass that reads it early, another that writes it late, where a switch
//!   would recirculate and the model's pass counts would change) is declared
//!   with [`Layout::unordered_array`], which records why; its accesses are
//!   still one per pass but do not take part in the stage order.
//! * Every data-plane access ([`RegisterArray::read`], `write`, `update`)
//!   checks that the array was not touched before in this pass and that its
//!   stage is not before the latest stage the pass has reached. Arrays in the
//!   same stage may be touched in any order: the model does not see data
//!   dependencies between arrays of one stage, so a layout puts an array whose
//!   index or update depends on another array's value in a later stage.
//!
//! Release builds (simulator runs, benchmarks) compile the checks out; the
//! per-array stage and the per-pass progress are not even stored there.
//!
//! # Control plane
//!
//! `peek`, `control_write` and `control_resize` are the switch CPU (and tests,
//! metrics). They are not data-plane accesses and are not checked. A data
//! plane may base a decision on a `peek` only of state that the control plane
//! alone writes, the equivalent of a match-action table it installed earlier
//! (LoadTable's `slot_of`, pow2's `slot_of`, array sizes); the model does not
//! police this, so docs/switch-model.md lists each such read.

#[cfg(debug_assertions)]
use std::cell::Cell;

/// What the target switch allows; Tofino-like by default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    /// Width of one register cell.
    pub cell_bits: u32,
    /// A stateful ALU may update a pair of cells in one access.
    pub pair: bool,
    /// Match-action stages in one pipeline (reported, not enforced: a
    /// program needing more would fold or recirculate).
    pub stages: u32,
}

impl Profile {
    /// Tofino: 32-bit registers, paired access, 12 stages per pipeline.
    pub const TOFINO: Profile = Profile {
        cell_bits: 32,
        pair: true,
        stages: 12,
    };

    /// Widest cell one access may touch.
    pub fn max_cell_bits(&self) -> u32 {
        if self.pair {
            2 * self.cell_bits
        } else {
            self.cell_bits
        }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Profile::TOFINO
    }
}

/// A value a register cell can hold, with the bits the switch must store.
pub trait RegisterCell: Copy {
    const BITS: u32;
}

macro_rules! cell_bits {
    ($($t:ty => $bits:expr),* $(,)?) => {
        $(impl RegisterCell for $t { const BITS: u32 = $bits; })*
    };
}

cell_bits! {
    bool => 1,
    u8 => 8,
    u16 => 16,
    u32 => 32,
    u64 => 64,
    // A rate or byte count of Baraat's SPC (its software switch, Baraat
    // §4.4, keeps them as integers; an RMT ALU has no floating point): a
    // 64-bit pair here, so the flow simulator's results stay bit for bit.
    f64 => 64,
}

impl<A: RegisterCell, B: RegisterCell> RegisterCell for (A, B) {
    const BITS: u32 = A::BITS + B::BITS;
}

/// A pipeline stage, numbered from 0 in the order a packet visits them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Stage(u16);

impl Stage {
    pub fn index(&self) -> u16 {
        self.0
    }
}

/// One register array of a [`Layout`], for the docs and the stage count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayInfo {
    pub name: &'static str,
    pub stage: u16,
    pub bits: u32,
    /// Cells at construction; a mode that does not use an array gives it none.
    pub cells: usize,
    /// Why a cell wider than the profile was kept (see [`Layout::wide_array`]).
    pub wide_because: Option<&'static str>,
    /// Why the array is outside the stage order (see [`Layout::unordered_array`]).
    pub unordered_because: Option<&'static str>,
    /// Why one access may read every cell (see [`Layout::scanned_array`]).
    pub scanned_because: Option<&'static str>,
    /// Rows installed by the control plane at run time: the array starts
    /// empty and still takes its stage ([`Layout::installed_rows`]).
    pub installed_rows: bool,
}

/// The register arrays of one program in stage order: built once by the data
/// plane, kept by its [`Pipeline`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    profile: Profile,
    stages: u16,
    arrays: Vec<ArrayInfo>,
}

impl Layout {
    /// An empty program for the Tofino-like profile.
    pub fn new() -> Self {
        Self::with_profile(Profile::TOFINO)
    }

    pub fn with_profile(profile: Profile) -> Self {
        Layout {
            profile,
            stages: 0,
            arrays: Vec::new(),
        }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Opens the next stage of the pipeline.
    pub fn stage(&mut self) -> Stage {
        self.stages += 1;
        Stage(self.stages - 1)
    }

    /// A register array of `len` cells in `stage`. In checked builds a cell
    /// wider than the profile allows panics here.
    pub fn array<T: RegisterCell>(
        &mut self,
        stage: Stage,
        name: &'static str,
        len: usize,
        init: T,
    ) -> RegisterArray<T> {
        self.place(stage, name, len, init, None, None)
    }

    /// A register array whose cells are wider than the profile allows, kept
    /// because splitting them would change what the data plane decides (or
    /// the split is not done yet); `because` says which, and
    /// docs/switch-model.md repeats it.
    pub fn wide_array<T: RegisterCell>(
        &mut self,
        stage: Stage,
        name: &'static str,
        len: usize,
        init: T,
        because: &'static str,
    ) -> RegisterArray<T> {
        self.place(stage, name, len, init, Some(because), None)
    }

    /// A register array listed in `stage` whose accesses the stage order does
    /// not check, because one pass needs it before and another after an
    /// array of a later stage; `because` says why, and docs/switch-model.md
    /// repeats it. Still one access per pass, and the cell width is checked.
    pub fn unordered_array<T: RegisterCell>(
        &mut self,
        stage: Stage,
        name: &'static str,
        len: usize,
        init: T,
        because: &'static str,
    ) -> RegisterArray<T> {
        self.place(stage, name, len, init, None, Some(because))
    }

    /// A register array of cells wider than the profile that one access may
    /// read and update in full ([`RegisterArray::scan_update`]): a loop over
    /// a table that a software switch runs in one pass and an RMT pipeline
    /// cannot. `because` says why the program needs it; docs/switch-model.md
    /// repeats it. Still one access per pass, in stage order.
    pub fn scanned_array<T: RegisterCell>(
        &mut self,
        stage: Stage,
        name: &'static str,
        len: usize,
        init: T,
        because: &'static str,
    ) -> RegisterArray<T> {
        #[cfg_attr(not(debug_assertions), allow(unused_mut))]
        let mut a = self.place(stage, name, len, init, Some(because), None);
        #[cfg(debug_assertions)]
        {
            a.scannable = true;
        }
        if let Some(info) = self.arrays.last_mut() {
            info.wide_because = None;
            info.scanned_because = Some(because);
        }
        a
    }

    /// Marks the array placed last as a table whose rows the control plane
    /// installs at run time (`RegisterArray::control_insert`): it may start
    /// empty and still takes its stage.
    pub fn installed_rows(&mut self) {
        if let Some(a) = self.arrays.last_mut() {
            a.installed_rows = true;
        }
    }

    fn place<T: RegisterCell>(
        &mut self,
        stage: Stage,
        name: &'static str,
        len: usize,
        init: T,
        wide_because: Option<&'static str>,
        unordered_because: Option<&'static str>,
    ) -> RegisterArray<T> {
        debug_assert!(
            wide_because.is_some() || T::BITS <= self.profile.max_cell_bits(),
            "switch model violation: register array `{name}` has {}-bit cells, the profile allows {}",
            T::BITS,
            self.profile.max_cell_bits()
        );
        debug_assert!(
            stage.0 < self.stages,
            "register array `{name}` placed in a stage this layout never opened"
        );
        self.arrays.push(ArrayInfo {
            name,
            stage: stage.0,
            bits: T::BITS,
            cells: len,
            wide_because,
            unordered_because,
            scanned_because: None,
            installed_rows: false,
        });
        RegisterArray {
            name,
            len,
            mask: len.max(1).next_power_of_two() - 1,
            cells: RegisterArray::storage(Vec::new(), len, init),
            #[cfg(debug_assertions)]
            stage: unordered_because.map_or(Some(stage.0), |_| None),
            #[cfg(debug_assertions)]
            scannable: false,
            #[cfg(debug_assertions)]
            last_pass: 0,
        }
    }

    /// The arrays in the order they were placed.
    pub fn arrays(&self) -> &[ArrayInfo] {
        &self.arrays
    }

    /// The layout as a Markdown table under a `### {program}` heading, for
    /// docs/switch-model.md (a test keeps the doc equal to this).
    pub fn markdown(&self, program: &str) -> String {
        let p = self.profile;
        let mut md = format!(
            "### {program}\n\n{} stages (the profile has {}; {}-bit cells{}).\n\n| stage | array | cell bits | note |\n| --- | --- | --- | --- |\n",
            self.stage_count(),
            p.stages,
            p.cell_bits,
            if p.pair { ", pairs" } else { "" },
        );
        for a in self
            .arrays
            .iter()
            .filter(|a| a.cells > 0 || a.installed_rows)
        {
            let note = match (a.wide_because, a.unordered_because, a.scanned_because) {
                (Some(why), _, _) => format!("wider than the profile: {why}"),
                (None, Some(why), _) => format!("outside the stage order: {why}"),
                (None, None, Some(why)) => format!("scanned in one access: {why}"),
                (None, None, None) if a.bits > p.cell_bits => "pair".to_string(),
                (None, None, None) => String::new(),
            };
            md += &format!("| {} | `{}` | {} | {} |\n", a.stage, a.name, a.bits, note);
        }
        md
    }

    /// Stages the program occupies: every opened stage that holds an array
    /// with cells.
    pub fn stage_count(&self) -> u32 {
        let mut used: Vec<u16> = self
            .arrays
            .iter()
            .filter(|a| a.cells > 0 || a.installed_rows)
            .map(|a| a.stage)
            .collect();
        used.sort_unstable();
        used.dedup();
        used.len() as u32
    }
}

/// Identifies one pass through the pipeline of one switch.
#[derive(Debug)]
pub struct Pass {
    // Read only by the one-access check, which release builds compile out.
    #[cfg_attr(not(debug_assertions), allow(dead_code))]
    seq: u64,
    resubmitted: bool,
    /// The latest stage an access of this pass reached (checked builds).
    #[cfg(debug_assertions)]
    reached: Cell<u16>,
}

impl Pass {
    pub fn is_resubmission(&self) -> bool {
        self.resubmitted
    }

    fn new(seq: u64, resubmitted: bool) -> Self {
        Pass {
            seq,
            resubmitted,
            #[cfg(debug_assertions)]
            reached: Cell::new(0),
        }
    }
}

/// Hands out passes and counts them; holds the program's [`Layout`].
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    seq: u64,
    /// Passes that started from a packet arriving on a port.
    pub first_passes: u64,
    /// Passes that were resubmissions/recirculations of an earlier pass.
    pub resubmissions: u64,
    layout: Layout,
}

impl Pipeline {
    /// A pipeline with no register arrays (stateless data planes, tests).
    pub fn new() -> Self {
        Self::default()
    }

    /// The pipeline of a program whose arrays `layout` placed.
    pub fn with_layout(layout: Layout) -> Self {
        Pipeline {
            layout,
            ..Self::default()
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// A packet enters the pipeline from a port.
    #[inline]
    pub fn begin(&mut self) -> Pass {
        self.seq += 1;
        self.first_passes += 1;
        Pass::new(self.seq, false)
    }

    /// A packet re-enters the pipeline carrying metadata from a previous pass.
    #[inline]
    pub fn resubmit(&mut self) -> Pass {
        self.seq += 1;
        self.resubmissions += 1;
        Pass::new(self.seq, true)
    }

    pub fn total_passes(&self) -> u64 {
        self.first_passes + self.resubmissions
    }
}

/// One register array's cells widened to u64, read by the control plane
/// (`HorusLeaf::registers`): how another implementation of a data plane
/// (crates/xdp) is installed with, and checked against, this one's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterDump {
    pub name: &'static str,
    pub cells: Vec<u64>,
}

impl RegisterDump {
    pub fn of<T: Copy>(array: &RegisterArray<T>, widen: impl Fn(T) -> u64) -> Self {
        RegisterDump {
            name: array.name(),
            cells: array.as_slice().iter().map(|&c| widen(c)).collect(),
        }
    }
}

/// A register array: `len` cells of `T` in one pipeline stage. Created by
/// [`Layout::array`].
///
/// The cells are stored in a power-of-two number of slots (at least one),
/// the `len` cells first, so a data-plane access (`read`, `write`,
/// `update`) masks its index instead of bounds-checking it: about 25 accesses make a busy Horus decision, and
/// each check was a compare and a branch to a panic that kept the compiler
/// from merging the accesses around it. An index is below `len` by the data
/// plane's own construction (a node it checked with `contains`, a slot below
/// `count`, cell 0 of a one-cell array); checked builds assert it, so every
/// test still catches an index out of range, while a release build would
/// touch a spare slot or wrap instead of panicking. Control-plane accesses
/// stay bounds-checked.
#[derive(Clone, Debug)]
pub struct RegisterArray<T: Copy> {
    name: &'static str,
    /// Cells the program declared; `cells` holds at least this many.
    len: usize,
    /// `cells.len() - 1`, with `cells.len()` a power of two, so
    /// `index & mask` is always a slot.
    mask: usize,
    cells: Vec<T>,
    /// `None`: outside the stage order ([`Layout::unordered_array`]).
    #[cfg(debug_assertions)]
    stage: Option<u16>,
    /// Declared with [`Layout::scanned_array`].
    #[cfg(debug_assertions)]
    scannable: bool,
    #[cfg(debug_assertions)]
    last_pass: u64,
}

impl<T: Copy> RegisterArray<T> {
    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// `cells` holding `len` cells of which the first ones are kept, the
    /// rest `init`, padded with `init` to a power of two.
    fn storage(mut cells: Vec<T>, len: usize, init: T) -> Vec<T> {
        cells.truncate(len);
        cells.resize(len, init);
        cells.resize(len.max(1).next_power_of_two(), init);
        cells
    }

    /// The slot of cell `index`. Checked builds assert `index < len`.
    #[inline(always)]
    fn slot(&self, index: usize) -> usize {
        debug_assert!(
            index < self.len,
            "register array `{}`: cell {index} of {}",
            self.name,
            self.len
        );
        index & self.mask
    }

    #[inline(always)]
    fn cell(&self, index: usize) -> &T {
        let slot = self.slot(index);
        // SAFETY: `mask == cells.len() - 1` (set with `cells` in `place`
        // and `control_resize`), so `slot = index & mask < cells.len()`.
        unsafe { self.cells.get_unchecked(slot) }
    }

    #[inline(always)]
    fn cell_mut(&mut self, index: usize) -> &mut T {
        let slot = self.slot(index);
        // SAFETY: as in `cell`.
        unsafe { self.cells.get_unchecked_mut(slot) }
    }

    /// Checked wherever debug assertions are on; release builds skip it
    /// (it was 15 % of a leaf decision).
    #[inline]
    fn touch(&mut self, pass: &Pass) {
        #[cfg(debug_assertions)]
        {
            assert!(
                self.last_pass != pass.seq,
                "switch model violation: register array `{}` accessed twice in one pass",
                self.name
            );
            self.last_pass = pass.seq;
            if let Some(stage) = self.stage {
                assert!(
                    stage >= pass.reached.get(),
                    "switch model violation: register array `{}` (stage {}) accessed after stage {} in one pass",
                    self.name,
                    stage,
                    pass.reached.get()
                );
                pass.reached.set(stage);
            }
        }
        #[cfg(not(debug_assertions))]
        let _ = pass;
    }

    /// The data plane reads one cell.
    #[inline]
    pub fn read(&mut self, pass: &Pass, index: usize) -> T {
        self.touch(pass);
        *self.cell(index)
    }

    /// The data plane writes one cell.
    #[inline]
    pub fn write(&mut self, pass: &Pass, index: usize, value: T) {
        self.touch(pass);
        *self.cell_mut(index) = value;
    }

    /// One atomic read-modify-write of one cell (a stateful ALU). Returns what
    /// the closure returns, typically the old or new value.
    #[inline]
    pub fn update<R>(&mut self, pass: &Pass, index: usize, f: impl FnOnce(&mut T) -> R) -> R {
        self.touch(pass);
        f(self.cell_mut(index))
    }

    /// One access that reads and may update every cell (a loop over the
    /// array in one pass). Only for arrays declared with
    /// [`Layout::scanned_array`]: checked builds refuse it on any other.
    #[inline]
    pub fn scan_update<R>(&mut self, pass: &Pass, f: impl FnOnce(&mut [T]) -> R) -> R {
        #[cfg(debug_assertions)]
        assert!(
            self.scannable,
            "switch model violation: register array `{}` scanned but not declared with Layout::scanned_array",
            self.name
        );
        self.touch(pass);
        let len = self.len;
        f(&mut self.cells[..len])
    }

    /// Control plane inserts a cell at `index`, shifting the later ones up
    /// (a table kept in key order: the switch CPU installs a new key).
    pub fn control_insert(&mut self, index: usize, value: T) {
        let mut cells = std::mem::take(&mut self.cells);
        cells.truncate(self.len);
        cells.insert(index, value);
        self.len += 1;
        self.cells = Self::storage(cells, self.len, value);
        self.mask = self.cells.len() - 1;
    }

    /// Control plane removes the cell at `index`, shifting the later ones
    /// down, and returns it.
    pub fn control_remove(&mut self, index: usize) -> T {
        let v = self.cells[..self.len][index];
        self.cells.copy_within(index + 1..self.len, index);
        self.len -= 1;
        v
    }

    /// Control-plane read: not a data-plane access (the switch CPU reading
    /// registers, tests inspecting state, metrics).
    #[inline]
    pub fn peek(&self, index: usize) -> T {
        self.as_slice()[index]
    }

    /// Control-plane write (the switch controller configuring state).
    pub fn control_write(&mut self, index: usize, value: T) {
        self.cells[..self.len][index] = value;
    }

    /// Control plane grows the array, for workers or racks added at run time.
    pub fn control_resize(&mut self, len: usize, init: T) {
        self.cells = Self::storage(std::mem::take(&mut self.cells), len, init);
        self.len = len;
        self.mask = self.cells.len() - 1;
    }

    pub fn as_slice(&self) -> &[T] {
        &self.cells[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipeline of one stage holding one array `a` of `len` cells.
    fn one_array<T: RegisterCell>(len: usize, init: T) -> (RegisterArray<T>, Pipeline) {
        let mut layout = Layout::new();
        let s = layout.stage();
        let a = layout.array(s, "a", len, init);
        (a, Pipeline::with_layout(layout))
    }

    #[test]
    fn one_access_per_pass_in_stage_order_is_allowed_and_counted() {
        let mut layout = Layout::new();
        let (s0, s1) = (layout.stage(), layout.stage());
        let mut a = layout.array(s0, "a", 4, 0u32);
        let mut b = layout.array(s1, "b", 4, (0u32, 0u32));
        let mut pipe = Pipeline::with_layout(layout);
        let p1 = pipe.begin();
        a.write(&p1, 0, 5);
        b.write(&p1, 0, (1, 2));
        // A resubmission starts again at the first stage.
        let p2 = pipe.resubmit();
        assert_eq!(
            a.update(&p2, 0, |v| {
                *v += 1;
                *v
            }),
            6
        );
        assert_eq!(pipe.first_passes, 1);
        assert_eq!(pipe.resubmissions, 1);
        assert!(p2.is_resubmission());
        assert_eq!(pipe.layout().stage_count(), 2);
    }

    #[test]
    fn arrays_of_one_stage_may_be_touched_in_any_order() {
        let mut layout = Layout::new();
        let s = layout.stage();
        let mut a = layout.array(s, "a", 1, 0u32);
        let mut b = layout.array(s, "b", 1, 0u32);
        let mut pipe = Pipeline::with_layout(layout);
        let p = pipe.begin();
        b.write(&p, 0, 1);
        a.write(&p, 0, 1);
        assert_eq!(pipe.layout().stage_count(), 1);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "accessed twice in one pass")]
    fn second_access_in_one_pass_panics() {
        let (mut a, mut pipe) = one_array(4, 0u32);
        let p = pipe.begin();
        let _ = a.read(&p, 0);
        let _ = a.read(&p, 1);
    }

    /// A toy program that reads `count` after `sum`, against its declared
    /// order: what RackSched's reply path did before it read `count` first.
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "register array `count` (stage 0) accessed after stage 1")]
    fn going_back_a_stage_panics() {
        let mut layout = Layout::new();
        let (s0, s1) = (layout.stage(), layout.stage());
        let mut count = layout.array(s0, "count", 1, 0u32);
        let mut sum = layout.array(s1, "sum", 1, 0u64);
        let mut pipe = Pipeline::with_layout(layout);
        let p = pipe.begin();
        sum.update(&p, 0, |s| *s += 1);
        let _ = count.read(&p, 0);
    }

    #[derive(Clone, Copy)]
    struct Wide {
        _key: u64,
        _at: u64,
    }

    impl RegisterCell for Wide {
        const BITS: u32 = 128;
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "has 128-bit cells, the profile allows 64")]
    fn a_cell_wider_than_the_profile_panics() {
        let mut layout = Layout::new();
        let s = layout.stage();
        let _ = layout.array(s, "wide", 1, Wide { _key: 0, _at: 0 });
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "has 64-bit cells, the profile allows 32")]
    fn a_pair_is_too_wide_without_paired_access() {
        let mut layout = Layout::with_profile(Profile {
            pair: false,
            ..Profile::TOFINO
        });
        let s = layout.stage();
        let _ = layout.array(s, "pair", 1, (0u32, 0u32));
    }

    #[test]
    fn an_unordered_array_may_come_after_a_later_stage_but_only_once() {
        let mut layout = Layout::new();
        let (s0, s1) = (layout.stage(), layout.stage());
        let mut early = layout.unordered_array(s0, "early", 1, 0u32, "test");
        let mut late = layout.array(s1, "late", 1, 0u32);
        let mut pipe = Pipeline::with_layout(layout);
        let p = pipe.begin();
        late.write(&p, 0, 1);
        early.write(&p, 0, 1);
        assert_eq!(pipe.layout().arrays()[0].unordered_because, Some("test"));
    }

    /// Cells live in a power-of-two number of slots; the spare ones must
    /// never show, and cells dropped by a shrink come back as `init`.
    #[test]
    fn resizing_keeps_cells_and_hides_the_spare_slots() {
        let (mut a, mut pipe) = one_array(5, 7u32);
        assert_eq!(a.as_slice(), &[7; 5]);
        for i in 0..5 {
            a.write(&pipe.begin(), i, i as u32);
        }
        a.control_resize(2, 9);
        assert_eq!(a.as_slice(), &[0, 1]);
        a.control_resize(9, 9);
        assert_eq!(a.len(), 9);
        assert_eq!(a.as_slice(), &[0, 1, 9, 9, 9, 9, 9, 9, 9]);
        assert_eq!(a.read(&pipe.begin(), 8), 9);
        let mut empty = Layout::new();
        let s = empty.stage();
        let e = empty.array(s, "empty", 0, 0u8);
        assert!(e.is_empty() && e.as_slice().is_empty());
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "register array `a`: cell 5 of 5")]
    fn a_data_plane_access_past_the_end_panics_in_checked_builds() {
        let (mut a, mut pipe) = one_array(5, 0u32);
        // Slot 5 exists (8 slots), cell 5 does not.
        let _ = a.read(&pipe.begin(), 5);
    }

    #[test]
    fn a_declared_wide_cell_is_recorded_with_its_reason() {
        let mut layout = Layout::new();
        let s = layout.stage();
        let _ = layout.wide_array(s, "wide", 1, Wide { _key: 0, _at: 0 }, "test");
        assert_eq!(layout.arrays()[0].bits, 128);
        assert_eq!(layout.arrays()[0].wide_because, Some("test"));
    }
}
