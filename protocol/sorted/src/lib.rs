//! Small ordered collections kept as one sorted vector each: the same lookups and the same
//! order as `BTreeMap` and `BTreeSet`, in one allocation that grows by doubling, is emptied
//! without giving its storage back, and is freed at once. The machines keep their tables in
//! them, and the checkers their per-run state: a handful to a few hundred entries, where a
//! vector's shifts cost less than a tree's nodes built and freed every run.
//!
//! Internal to leasesim: a crate of its own so that the protocol's machines and the checkers
//! share one implementation without either crate's API offering it. It is not a supported
//! interface and changes with them. Like the protocol, it reads no clock, does no I/O and
//! depends on no other crate.

/// An ordered map as a vector sorted by key, with each key at most once.
#[derive(Clone, Debug)]
pub struct SortedMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    /// An empty map with room for `capacity` entries.
    pub fn with_capacity(capacity: usize) -> Self {
        SortedMap {
            entries: Vec::with_capacity(capacity),
        }
    }

    fn find(&self, key: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp(key))
    }

    /// Empties the map and keeps its storage.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Gives back storage beyond room for `capacity` entries (or the entries it holds).
    pub fn shrink_to(&mut self, capacity: usize) {
        self.entries.shrink_to(capacity);
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `key`, if any.
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Where `key` is (`Ok`), or where it would be inserted (`Err`): one search for a read that
    /// may be followed by a write (`value_at_mut`, `insert_at`) with nothing changed between.
    pub fn search(&self, key: &K) -> Result<usize, usize> {
        self.find(key)
    }

    /// The value at a position `search` found.
    pub fn value_at(&self, i: usize) -> &V {
        &self.entries[i].1
    }

    /// The value at a position `search` found, to change it.
    pub fn value_at_mut(&mut self, i: usize) -> &mut V {
        &mut self.entries[i].1
    }

    /// Inserts `key` at the position `search` gave for it.
    pub fn insert_at(&mut self, i: usize, key: K, value: V) {
        debug_assert!(i == 0 || self.entries[i - 1].0 < key);
        debug_assert!(self.entries.get(i).is_none_or(|(k, _)| key < *k));
        self.entries.insert(i, (key, value));
    }

    /// Sets the value of `key`, replacing any earlier one.
    pub fn insert(&mut self, key: K, value: V) {
        match self.find(&key) {
            Ok(i) => self.entries[i].1 = value,
            Err(i) => self.entries.insert(i, (key, value)),
        }
    }

    /// The value of `key`, inserting `value` first if the key is absent.
    pub fn get_or_insert(&mut self, key: K, value: V) -> &mut V {
        self.get_or_insert_with(key, || value)
    }

    /// The value of `key`, made with `make` first if the key is absent.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Takes `key` out, with its value.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.find(key).ok().map(|i| self.entries.remove(i).1)
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The smallest key.
    pub fn first_key(&self) -> Option<&K> {
        self.entries.first().map(|(k, _)| k)
    }
}

/// An ordered set as a sorted vector.
#[derive(Clone, Debug)]
pub struct SortedSet<T> {
    items: Vec<T>,
}

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet { items: Vec::new() }
    }
}

impl<T: Ord> SortedSet<T> {
    /// Empties the set and keeps its storage.
    pub fn clear(&mut self) {
        self.items.clear();
    }

    /// Adds `x`; whether it was not there yet.
    pub fn insert(&mut self, x: T) -> bool {
        match self.items.binary_search(&x) {
            Ok(_) => false,
            Err(k) => {
                self.items.insert(k, x);
                true
            }
        }
    }

    /// Takes `x` out; whether it was there.
    pub fn remove(&mut self, x: &T) -> bool {
        match self.items.binary_search(x) {
            Ok(k) => {
                self.items.remove(k);
                true
            }
            Err(_) => false,
        }
    }

    /// Keeps only the members `keep` says to keep.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
    }

    /// Whether `x` is in the set.
    pub fn contains(&self, x: &T) -> bool {
        self.items.binary_search(x).is_ok()
    }

    /// The members, in ascending order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }

    /// How many members.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn behaves_like_a_btree_map() {
        let mut m = SortedMap::with_capacity(0);
        let mut b = BTreeMap::new();
        // A fixed pseudo-random sequence of operations on keys 0..32.
        let mut x: u32 = 12345;
        for step in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let key = (x >> 16) % 32;
            match step % 4 {
                0 => {
                    m.insert(key, step);
                    b.insert(key, step);
                }
                1 => {
                    *m.get_or_insert(key, step) += 1;
                    *b.entry(key).or_insert(step) += 1;
                }
                2 => {
                    m.remove(&key);
                    b.remove(&key);
                }
                _ => {
                    assert_eq!(m.get(&key), b.get(&key));
                    assert_eq!(m.contains_key(&key), b.contains_key(&key));
                }
            }
            assert!(m.iter().eq(b.iter()));
        }
    }

    #[test]
    fn behaves_like_a_btree_set() {
        let mut m = SortedSet::default();
        let mut b = std::collections::BTreeSet::new();
        let mut x: u32 = 54321;
        for step in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let key = (x >> 16) % 32;
            match step % 3 {
                0 => assert_eq!(m.insert(key), b.insert(key)),
                1 => assert_eq!(m.remove(&key), b.remove(&key)),
                _ => assert_eq!(m.contains(&key), b.contains(&key)),
            }
            assert!(m.iter().eq(b.iter()));
            assert_eq!(m.len(), b.len());
        }
    }
}
