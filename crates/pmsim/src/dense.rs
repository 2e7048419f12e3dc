//! [`Dense`]: a vector whose indexing skips the bounds check in release builds, for the
//! memory system's hot path.
//!
//! Replaying a request indexes queue slots, per-bank lists and per-channel state a few dozen
//! times; the bounds checks alone were about 6% of replay time (`cargo bench -p pmsim --bench
//! replay_speed`, measured with and without). A `Dense` is private to the structure that owns
//! it, and that owner indexes it only with positions it handed out itself (a slot, a list
//! position) or with numbers it checked against the table's length once, where they entered
//! through a public method (a request's bank, a scheduler's pick). Debug builds check every
//! access as well.

use std::ops::{Deref, DerefMut, Index, IndexMut};

/// A `Vec` indexed without bounds checks in release builds (see the module docs for the
/// contract its owner keeps).
#[derive(Clone, Debug)]
pub(crate) struct Dense<T>(Vec<T>);

impl<T> Dense<T> {
    /// Wraps `v`.
    pub(crate) fn new(v: Vec<T>) -> Dense<T> {
        Dense(v)
    }
}

impl<T> Deref for Dense<T> {
    type Target = Vec<T>;

    #[inline(always)]
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> DerefMut for Dense<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T> Index<usize> for Dense<T> {
    type Output = T;

    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        debug_assert!(i < self.0.len(), "index {i} of {}", self.0.len());
        // SAFETY: the owner indexes only with positions it handed out or checked against
        // this table's length (module docs); debug builds check here too.
        unsafe { self.0.get_unchecked(i) }
    }
}

impl<T> IndexMut<usize> for Dense<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        debug_assert!(i < self.0.len(), "index {i} of {}", self.0.len());
        // SAFETY: as for `index`.
        unsafe { self.0.get_unchecked_mut(i) }
    }
}

impl<T> FromIterator<T> for Dense<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Dense<T> {
        Dense(iter.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_like_a_vec() {
        let mut d = Dense::new(vec![1, 2, 3]);
        d[1] = 20;
        d.push(4);
        assert_eq!((d[0], d[1], d[3], d.len()), (1, 20, 4, 4));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "index 3 of 3")]
    fn debug_builds_check_bounds() {
        let d = Dense::new(vec![1, 2, 3]);
        let _ = d[3];
    }
}
