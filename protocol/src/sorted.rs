//! A small ordered map kept as one sorted vector: the same lookups and the same key order as a
//! `BTreeMap`, in one allocation that grows by doubling and is freed at once. The machines'
//! maps hold a handful to a few hundred entries, where a vector's shifts cost less than tree
//! nodes.

/// An ordered map as a vector sorted by key, with each key at most once.
#[derive(Clone, Debug)]
pub(crate) struct SortedMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K: Ord, V> SortedMap<K, V> {
    /// An empty map with room for `capacity` entries.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        SortedMap {
            entries: Vec::with_capacity(capacity),
        }
    }

    fn find(&self, key: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.cmp(key))
    }

    /// The value of `key`, if any.
    pub(crate) fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|i| &self.entries[i].1)
    }

    /// Whether `key` is present.
    pub(crate) fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }

    /// Sets the value of `key`, replacing any earlier one.
    pub(crate) fn insert(&mut self, key: K, value: V) {
        match self.find(&key) {
            Ok(i) => self.entries[i].1 = value,
            Err(i) => self.entries.insert(i, (key, value)),
        }
    }

    /// The value of `key`, inserting `value` first if the key is absent.
    pub(crate) fn get_or_insert(&mut self, key: K, value: V) -> &mut V {
        let i = match self.find(&key) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (key, value));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Removes `key`, if present.
    pub(crate) fn remove(&mut self, key: &K) {
        if let Ok(i) = self.find(key) {
            self.entries.remove(i);
        }
    }

    /// The entries in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
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
}
