//! Vector clocks for the simulator's happens-before tracking: one counter per stream id.

use std::collections::HashSet;

/// A vector clock: per stream id, how much of that stream's work is ordered before. Sparse
/// (sorted by id, no zero entries), so that ids of streams that are gone and no longer
/// compared against can be dropped (`forget`) and clocks stay as small as the streams that
/// matter.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorClock {
    ticks: Vec<(usize, u64)>,
}

impl VectorClock {
    pub fn get(&self, stream_id: usize) -> u64 {
        match self.ticks.binary_search_by_key(&stream_id, |&(id, _)| id) {
            Ok(at) => self.ticks[at].1,
            Err(_) => 0,
        }
    }

    /// Advances `stream_id`'s own counter: a new operation on that stream.
    pub fn tick(&mut self, stream_id: usize) -> u64 {
        match self.ticks.binary_search_by_key(&stream_id, |&(id, _)| id) {
            Ok(at) => {
                self.ticks[at].1 += 1;
                self.ticks[at].1
            }
            Err(at) => {
                self.ticks.insert(at, (stream_id, 1));
                1
            }
        }
    }

    /// Learns everything `other` has seen (elementwise maximum).
    pub fn join(&mut self, other: &VectorClock) {
        if other.ticks.is_empty() || self == other {
            return;
        }
        let mut merged = Vec::with_capacity(self.ticks.len().max(other.ticks.len()));
        let (mut mine, mut theirs) = (self.ticks.iter().peekable(), other.ticks.iter().peekable());
        loop {
            let next = match (mine.peek(), theirs.peek()) {
                (Some(&&(a, x)), Some(&&(b, y))) if a == b => {
                    mine.next();
                    theirs.next();
                    (a, x.max(y))
                }
                (Some(&&(a, x)), Some(&&(b, _))) if a < b => {
                    mine.next();
                    (a, x)
                }
                (_, Some(&&entry)) => {
                    theirs.next();
                    entry
                }
                (Some(&&entry), None) => {
                    mine.next();
                    entry
                }
                (None, None) => break,
            };
            merged.push(next);
        }
        self.ticks = merged;
    }

    /// Drops what it knows of the streams in `ids` (gone, and compared against no more).
    pub fn forget(&mut self, ids: &HashSet<usize>) {
        self.ticks.retain(|(id, _)| !ids.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn join_is_elementwise_maximum_and_tick_advances_own_counter() {
        let mut a = VectorClock::default();
        let mut b = VectorClock::default();
        a.tick(0);
        a.tick(0);
        b.tick(3);
        b.join(&a);
        assert_eq!((b.get(0), b.get(3), b.get(7)), (2, 1, 0));
        a.join(&b);
        assert_eq!(a, b);
        assert_eq!(a.tick(3), 2);
        a.forget(&[3].into_iter().collect());
        assert_eq!((a.get(0), a.get(3)), (2, 0));
        b.tick(5);
        b.join(&a);
        assert_eq!((b.get(0), b.get(3), b.get(5)), (2, 1, 1));
    }
}
