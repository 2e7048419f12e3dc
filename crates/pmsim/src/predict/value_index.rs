//! The store history's value index: for a value (a 4 B chunk, or the line an 8 B pointer
//! points into) the oldest and newest stores in the history that held it, as the learner's
//! value-tagged lookups need (PMWeaver Sec. V-A2: the store history is "indexed/tagged by the
//! data values").
//!
//! A set-associative array (4 ways) with room for four times the values a full history can
//! hold in the common case of two chunks per store, so collisions are rare; a colliding value
//! replaces the way whose newest occurrence is oldest, as a hardware table would. A value keeps
//! two occurrences: when its oldest leaves the history, the newest one noted before the latest
//! store takes its place, so the oldest-match rule may pick a younger store when a value occurs
//! three or more times within the window.

/// `(store sequence number, chunk)` of one occurrence.
pub type Occurrence = (u64, u8);

const WAYS: usize = 4;
const EMPTY: u64 = u64::MAX;
const NONE: Occurrence = (u64::MAX, 0);

/// Oldest and newest noted occurrences per value.
#[derive(Clone, Debug)]
pub struct ValueIndex {
    keys: Vec<u64>,
    occ: Vec<[Occurrence; 2]>,
    set_mask: usize,
}

impl Default for ValueIndex {
    fn default() -> Self {
        ValueIndex::new(1)
    }
}

impl ValueIndex {
    /// An empty index for about `values` live values.
    pub fn new(values: usize) -> ValueIndex {
        let sets = (values * 4 / WAYS).next_power_of_two().max(1);
        ValueIndex {
            keys: vec![EMPTY; sets * WAYS],
            occ: vec![[NONE; 2]; sets * WAYS],
            set_mask: sets - 1,
        }
    }

    #[inline]
    fn base(&self, key: u64) -> usize {
        let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 40) as usize & self.set_mask) * WAYS
    }

    /// Notes occurrence `x` of `key`; `first` is the oldest sequence number still in the
    /// history.
    #[inline]
    pub fn note(&mut self, key: u64, x: Occurrence, first: u64) {
        let b = self.base(key);
        let way = match self.keys[b..b + WAYS].iter().position(|&k| k == key) {
            Some(w) => w,
            None => {
                // The way whose newest occurrence is oldest (empty ways have none).
                let w = (0..WAYS)
                    .min_by_key(|&w| match self.keys[b + w] {
                        EMPTY => 0,
                        _ => self.occ[b + w][1].0.wrapping_add(1),
                    })
                    .expect("ways");
                self.keys[b + w] = key;
                self.occ[b + w] = [NONE; 2];
                w
            }
        };
        let o = &mut self.occ[b + way];
        if o[0].0 == NONE.0 || o[0].0 < first {
            o[0] = if o[1].0 != NONE.0 && o[1].0 >= first {
                o[1]
            } else {
                x
            };
        }
        o[1] = x;
    }

    /// The oldest occurrence of `key` still in the history (sequence number at least
    /// `first`).
    #[inline]
    pub fn oldest(&self, key: u64, first: u64) -> Option<Occurrence> {
        let b = self.base(key);
        let w = self.keys[b..b + WAYS].iter().position(|&k| k == key)?;
        let o = self.occ[b + w];
        [o[0], o[1]]
            .into_iter()
            .find(|x| x.0 != NONE.0 && x.0 >= first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_oldest_occurrence_in_the_window() {
        let mut v = ValueIndex::new(64);
        v.note(7, (10, 1), 0);
        v.note(7, (20, 2), 0);
        v.note(7, (30, 3), 0);
        assert_eq!(v.oldest(7, 0), Some((10, 1)));
        // Sequence 10 left the window; 20 was not kept (only the oldest and the newest are),
        // so 30, the newest noted before 40, is the oldest now.
        v.note(7, (40, 4), 15);
        assert_eq!(v.oldest(7, 15), Some((30, 3)));
        assert_eq!(v.oldest(7, 35), Some((40, 4)));
        assert_eq!(v.oldest(7, 41), None, "every occurrence left the window");
        assert_eq!(v.oldest(8, 0), None);
    }
}
