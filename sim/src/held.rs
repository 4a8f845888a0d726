//! The messages a director holds (a fault's `Hold`), by message id: a sorted vector rather
//! than a tree, so that a run that holds one message allocates nothing once a thread's earlier
//! runs grew it, and a run that holds none costs nothing.
//!
//! Ids are handed out in increasing order and a message is held when it is sent, so holding
//! appends. A release marks its entry taken; taken entries are dropped once they are half the
//! list, so each operation costs a binary search plus amortised constant work, whatever the
//! number held.

/// Held messages: `(id, the send's trace index)`, ascending by id; a taken entry's index is
/// [`TAKEN`].
#[derive(Debug, Default)]
pub(crate) struct Held {
    items: Vec<(u64, usize)>,
    taken: usize,
}

/// The index of an entry already released.
const TAKEN: usize = usize::MAX;

impl Held {
    /// Empties the table, keeping its storage.
    pub(crate) fn clear(&mut self) {
        self.items.clear();
        self.taken = 0;
    }

    /// Holds message `id`, sent by trace event `send`. An id not above every id held so far
    /// (not how the engine numbers messages) is filed in its place all the same.
    pub(crate) fn insert(&mut self, id: u64, send: usize) {
        match self.items.last() {
            Some(&(last, _)) if last >= id => match self.items.binary_search_by_key(&id, |e| e.0) {
                Ok(i) => {
                    if self.items[i].1 == TAKEN {
                        self.taken -= 1;
                    }
                    self.items[i].1 = send;
                }
                Err(i) => self.items.insert(i, (id, send)),
            },
            _ => self.items.push((id, send)),
        }
    }

    /// Releases message `id`: its send, if it is held.
    pub(crate) fn remove(&mut self, id: u64) -> Option<usize> {
        let i = self.items.binary_search_by_key(&id, |e| e.0).ok()?;
        let send = std::mem::replace(&mut self.items[i].1, TAKEN);
        if send == TAKEN {
            return None;
        }
        self.taken += 1;
        if self.taken * 2 >= self.items.len() {
            self.items.retain(|e| e.1 != TAKEN);
            self.taken = 0;
        }
        Some(send)
    }

    /// The earliest send of a message still held, if any.
    pub(crate) fn earliest_send(&self) -> Option<usize> {
        self.items.iter().map(|e| e.1).filter(|&s| s != TAKEN).min()
    }

    /// Moves every held send `by` places back (the trace's first `by` events were dropped).
    pub(crate) fn shift(&mut self, by: usize) {
        for e in &mut self.items {
            if e.1 != TAKEN {
                e.1 -= by;
            }
        }
    }

    /// The storage, for the next run ([`crate::Buffers`]).
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.items
            .capacity()
            .saturating_mul(std::mem::size_of::<(u64, usize)>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The table against a map, over a deterministic mix of holds and releases (in order, out
    /// of order, repeated, of ids never held).
    #[test]
    fn the_table_behaves_as_a_map() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for round in 0..200 {
            let mut held = Held::default();
            let mut map = BTreeMap::new();
            let mut id = 0u64;
            for step in 0..500usize {
                let r = next();
                if r % 3 == 0 || map.is_empty() {
                    // Mostly increasing ids; now and then one that is not.
                    id += 1 + r % 4;
                    let at = if round % 5 == 0 && r % 7 == 0 {
                        r % (id + 1)
                    } else {
                        id
                    };
                    held.insert(at, step);
                    map.insert(at, step);
                } else {
                    let probe = if r % 5 == 0 {
                        r % (id + 2)
                    } else {
                        *map.keys().nth((r as usize / 7) % map.len()).unwrap()
                    };
                    assert_eq!(held.remove(probe), map.remove(&probe), "release of {probe}");
                }
                assert!(held.taken * 2 < held.items.len().max(1));
            }
            for (&k, &v) in &map {
                assert_eq!(held.remove(k), Some(v));
            }
            assert_eq!(held.items.len(), 0);
        }
    }
}
