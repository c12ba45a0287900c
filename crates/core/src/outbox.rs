//! The bounded action list both scheduler families emit into: filled by one
//! input, drained by the driver, never allocated per input.

/// What an [`ActionList`] keeps its actions in: a fixed array for the push
/// family (its bound is small and known), a boxed slice sized once for the
/// pull family.
pub trait ActionSlots {
    type Action: Copy;
    /// Who overflowed it, for the panic message.
    const EMITTER: &'static str;
    fn slots(&self) -> &[Self::Action];
    fn slots_mut(&mut self) -> &mut [Self::Action];
}

/// Actions in arrival order, at most as many as its slots; pushing more is a
/// bug in the data plane (its bound is part of its contract), so it panics.
#[derive(Clone, Debug)]
pub struct ActionList<S> {
    len: usize,
    items: S,
}

impl<S: ActionSlots> ActionList<S> {
    pub(crate) fn from_slots(items: S) -> Self {
        ActionList { len: 0, items }
    }

    #[inline]
    pub fn capacity(&self) -> usize {
        self.items.slots().len()
    }

    /// Always inlined: left to itself rustc kept it out of line (a call
    /// per action, 9 % of `bench dataplane`'s samples).
    #[inline(always)]
    pub fn push(&mut self, a: S::Action) {
        let capacity = self.capacity();
        if self.len >= capacity {
            overflow(S::EMITTER, capacity);
        }
        self.items.slots_mut()[self.len] = a;
        self.len += 1;
    }

    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn as_slice(&self) -> &[S::Action] {
        &self.items.slots()[..self.len]
    }

    /// Removes and returns all actions, leaving the list empty.
    #[inline]
    pub fn drain(&mut self) -> impl Iterator<Item = S::Action> + '_ {
        let n = self.len;
        self.len = 0;
        self.items.slots()[..n].iter().copied()
    }
}

/// Out of line and cold: `push` is inlined into every data plane's path and
/// should carry only the test, not the formatting of the message.
#[cold]
#[inline(never)]
fn overflow(emitter: &str, capacity: usize) -> ! {
    panic!("outbox overflow: {emitter} emitted more than {capacity} actions")
}
