//! Sets and maps kept in sorted vectors, for the checkers' state between events: the same order
//! and answers as `BTreeSet` and `BTreeMap`, but emptied without giving their storage back, so
//! that state kept per thread and cleared for each run allocates nothing once the first runs
//! grew it. A run names a handful of nodes, entities and keys; a search in a short vector and an
//! insertion that moves a few entries cost less than a tree's nodes built and freed every run.

/// A set of `T`, in ascending order.
#[derive(Clone, Debug)]
pub(crate) struct VecSet<T> {
    items: Vec<T>,
}

impl<T> Default for VecSet<T> {
    fn default() -> Self {
        VecSet { items: Vec::new() }
    }
}

impl<T: Ord> VecSet<T> {
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
}

/// A map from `K` to `V`, in ascending order of keys.
#[derive(Clone, Debug)]
pub(crate) struct VecMap<K, V> {
    entries: Vec<(K, V)>,
}

impl<K, V> Default for VecMap<K, V> {
    fn default() -> Self {
        VecMap {
            entries: Vec::new(),
        }
    }
}

impl<K: Ord + Copy, V> VecMap<K, V> {
    fn find(&self, k: &K) -> Result<usize, usize> {
        self.entries.binary_search_by(|(x, _)| x.cmp(k))
    }

    /// Empties the map and keeps its storage.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value of `k`.
    pub fn get(&self, k: &K) -> Option<&V> {
        self.find(k).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `k`, made with `make` if it has none.
    pub fn get_or_insert_with(&mut self, k: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(&k) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (k, make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Sets the value of `k`.
    pub fn insert(&mut self, k: K, v: V) {
        match self.find(&k) {
            Ok(i) => self.entries[i].1 = v,
            Err(i) => self.entries.insert(i, (k, v)),
        }
    }

    /// Takes `k` out, with its value.
    pub fn remove(&mut self, k: &K) -> Option<V> {
        self.find(k).ok().map(|i| self.entries.remove(i).1)
    }

    /// The smallest key.
    pub fn first_key(&self) -> Option<K> {
        self.entries.first().map(|(k, _)| *k)
    }
}
