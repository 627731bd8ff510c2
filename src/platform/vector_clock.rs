//! Vector clocks for the simulator's happens-before tracking: one counter per stream id.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorClock {
    ticks: Vec<u64>,
}

impl VectorClock {
    pub fn get(&self, stream_id: usize) -> u64 {
        self.ticks.get(stream_id).copied().unwrap_or(0)
    }

    /// Advances `stream_id`'s own counter: a new operation on that stream.
    pub fn tick(&mut self, stream_id: usize) -> u64 {
        if self.ticks.len() <= stream_id {
            self.ticks.resize(stream_id + 1, 0);
        }
        self.ticks[stream_id] += 1;
        self.ticks[stream_id]
    }

    /// Learns everything `other` has seen (elementwise maximum).
    pub fn join(&mut self, other: &VectorClock) {
        if self.ticks.len() < other.ticks.len() {
            self.ticks.resize(other.ticks.len(), 0);
        }
        for (mine, theirs) in self.ticks.iter_mut().zip(&other.ticks) {
            *mine = (*mine).max(*theirs);
        }
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
    }
}
