//! The transposition table: one entry per slot, indexed by the Zobrist key,
//! replaced when the new result is from this search or at least as deep.

/// What a stored score says about the true value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The exact value.
    Exact,
    /// At least this (a beta cutoff).
    Lower,
    /// At most this (no move raised alpha).
    Upper,
}

/// One stored search result.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub key: u64,
    pub mv: u16,
    pub score: i16,
    pub depth: i8,
    pub bound: Bound,
    pub generation: u8,
}

const EMPTY: Entry = Entry {
    key: 0,
    mv: 0,
    score: 0,
    depth: -1,
    bound: Bound::Upper,
    generation: 0,
};

/// A fixed-size table of search results.
pub struct TransTable {
    entries: Vec<Entry>,
    generation: u8,
}

impl TransTable {
    /// A table using about `mb` megabytes (at least one entry).
    pub fn new(mb: usize) -> TransTable {
        let count = (mb.max(1) * 1024 * 1024 / std::mem::size_of::<Entry>()).max(1);
        TransTable {
            entries: vec![EMPTY; count],
            generation: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.fill(EMPTY);
        self.generation = 0;
    }

    /// Marks the start of a new search (older entries become replaceable).
    pub fn new_search(&mut self) {
        self.generation = self.generation.wrapping_add(1);
    }

    fn index(&self, key: u64) -> usize {
        // Multiply-shift maps the key uniformly onto 0..len without a modulo.
        ((key as u128 * self.entries.len() as u128) >> 64) as usize
    }

    pub fn probe(&self, key: u64) -> Option<Entry> {
        let e = self.entries[self.index(key)];
        (e.key == key && e.depth >= 0).then_some(e)
    }

    pub fn store(&mut self, key: u64, mv: u16, score: i32, depth: i32, bound: Bound) {
        let generation = self.generation;
        let i = self.index(key);
        let slot = &mut self.entries[i];
        let replace = slot.key != key
            || slot.generation != generation
            || depth >= slot.depth as i32 - 2
            || bound == Bound::Exact;
        if !replace {
            return;
        }
        // Keep the old best move when the new result has none.
        let mv = if mv == 0 && slot.key == key {
            slot.mv
        } else {
            mv
        };
        *slot = Entry {
            key,
            mv,
            score: score.clamp(i16::MIN as i32, i16::MAX as i32) as i16,
            depth: depth.clamp(0, i8::MAX as i32) as i8,
            bound,
            generation,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_finds_an_entry() {
        let mut tt = TransTable::new(1);
        tt.store(0xdead_beef, 77, -120, 5, Bound::Lower);
        let e = tt.probe(0xdead_beef).unwrap();
        assert_eq!(
            (e.mv, e.score, e.depth, e.bound),
            (77, -120, 5, Bound::Lower)
        );
        assert!(tt.probe(0x1234).is_none());
    }

    #[test]
    fn size_follows_megabytes() {
        assert_eq!(TransTable::new(2).len(), 2 * TransTable::new(1).len());
    }
}
