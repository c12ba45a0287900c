//! The programmable-switch model every data plane is written against.
//!
//! A packet traverses the pipeline once per *pass*. Each register array may be
//! accessed at most once per pass (read, write or atomic read-modify-write),
//! because in an RMT pipeline an array lives in one stage and a packet visits
//! each stage once (Horus §3.3 "Switch Model"; RackSched §3.3). Anything that
//! needs a second access must be resubmitted: an explicit new pass that carries
//! metadata from the first one.
//!
//! Violating the rule is a bug in the data plane, not a runtime condition, so it
//! panics: every test that drives a data plane checks the rule for free.

/// Identifies one pass through the pipeline of one switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    seq: u64,
    resubmitted: bool,
}

impl Pass {
    pub fn is_resubmission(&self) -> bool {
        self.resubmitted
    }
}

/// Hands out passes and counts them.
#[derive(Clone, Debug, Default)]
pub struct Pipeline {
    seq: u64,
    /// Passes that started from a packet arriving on a port.
    pub first_passes: u64,
    /// Passes that were resubmissions/recirculations of an earlier pass.
    pub resubmissions: u64,
}

impl Pipeline {
    pub fn new() -> Self {
        Self::default()
    }

    /// A packet enters the pipeline from a port.
    #[inline]
    pub fn begin(&mut self) -> Pass {
        self.seq += 1;
        self.first_passes += 1;
        Pass {
            seq: self.seq,
            resubmitted: false,
        }
    }

    /// A packet re-enters the pipeline carrying metadata from a previous pass.
    #[inline]
    pub fn resubmit(&mut self) -> Pass {
        self.seq += 1;
        self.resubmissions += 1;
        Pass {
            seq: self.seq,
            resubmitted: true,
        }
    }

    pub fn total_passes(&self) -> u64 {
        self.first_passes + self.resubmissions
    }
}

/// A register array: `len` cells of `T` in one pipeline stage.
#[derive(Clone, Debug)]
pub struct RegisterArray<T: Copy> {
    name: &'static str,
    cells: Vec<T>,
    last_pass: u64,
}

impl<T: Copy> RegisterArray<T> {
    pub fn new(name: &'static str, len: usize, init: T) -> Self {
        RegisterArray {
            name,
            cells: vec![init; len],
            last_pass: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Checked wherever debug assertions are on, which includes every test
    /// build (the test profile keeps them on at opt-level 2); release builds
    /// (simulator runs, benchmarks) skip it: 15 % of a leaf decision.
    #[inline]
    fn touch(&mut self, pass: &Pass) {
        debug_assert!(
            self.last_pass != pass.seq,
            "switch model violation: register array `{}` accessed twice in one pass",
            self.name
        );
        self.last_pass = pass.seq;
    }

    /// The data plane reads one cell.
    #[inline]
    pub fn read(&mut self, pass: &Pass, index: usize) -> T {
        self.touch(pass);
        self.cells[index]
    }

    /// The data plane writes one cell.
    #[inline]
    pub fn write(&mut self, pass: &Pass, index: usize, value: T) {
        self.touch(pass);
        self.cells[index] = value;
    }

    /// One atomic read-modify-write of one cell (a stateful ALU). Returns what
    /// the closure returns, typically the old or new value.
    #[inline]
    pub fn update<R>(&mut self, pass: &Pass, index: usize, f: impl FnOnce(&mut T) -> R) -> R {
        self.touch(pass);
        f(&mut self.cells[index])
    }

    /// Control-plane read: not a data-plane access (the switch CPU reading
    /// registers, tests inspecting state, metrics).
    #[inline]
    pub fn peek(&self, index: usize) -> T {
        self.cells[index]
    }

    /// Control-plane write (the switch controller configuring state).
    pub fn control_write(&mut self, index: usize, value: T) {
        self.cells[index] = value;
    }

    /// Control plane grows the array, for workers or racks added at run time.
    pub fn control_resize(&mut self, len: usize, init: T) {
        self.cells.resize(len, init);
    }

    pub fn as_slice(&self) -> &[T] {
        &self.cells
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_access_per_pass_is_allowed_and_counted() {
        let mut pipe = Pipeline::new();
        let mut a = RegisterArray::new("a", 4, 0u32);
        let p1 = pipe.begin();
        a.write(&p1, 0, 5);
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
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "accessed twice in one pass")]
    fn second_access_in_one_pass_panics() {
        let mut pipe = Pipeline::new();
        let mut a = RegisterArray::new("a", 4, 0u32);
        let p = pipe.begin();
        let _ = a.read(&p, 0);
        let _ = a.read(&p, 1);
    }
}
