//! Records grouped by a small id (a job's, an entity's), for the checkers' per-run state: the
//! records of one id are threaded through one vector, so that a lookup reads only that id's few
//! records instead of searching or shifting every record of the run, and emptying the groups
//! keeps their storage for the next run. The order of the records is never read, only whether
//! one is there.

use crate::JOBS_LAID_OUT;
use std::collections::BTreeMap;

/// Ids below this find their records by position; the rest through a map.
const NEAR: u32 = 4096;

/// Records grouped by a small id (an entity's, a job's): the records of one id are threaded
/// through one vector, so that a lookup reads only that id's few records, not every record of
/// the run, and emptying the groups keeps their storage for the next run.
pub(crate) struct Groups<T> {
    /// Id -> its latest record + 1 (0 for none), for ids below `NEAR`.
    near: Vec<u32>,
    /// Id -> its latest record + 1, for the others.
    far: BTreeMap<u32, u32>,
    /// Each record, with the one filed before it under the same id + 1 (0 for none).
    items: Vec<(T, u32)>,
}

impl<T> Default for Groups<T> {
    fn default() -> Self {
        Groups {
            near: Vec::new(),
            far: BTreeMap::new(),
            items: Vec::new(),
        }
    }
}

impl<T> Groups<T> {
    /// Empties every group, keeping the storage.
    pub(crate) fn clear(&mut self) {
        self.near.clear();
        // Emptying a map that is empty already would still drop and remake its root.
        if !self.far.is_empty() {
            self.far.clear();
        }
        self.items.clear();
    }

    /// Lays out the heads of the ids below `ids` (up to `JOBS_LAID_OUT`), empty, so that filing
    /// under one of them finds its place without growing the storage.
    pub(crate) fn lay_out(&mut self, ids: usize) {
        let n = ids.min(JOBS_LAID_OUT).min(NEAR as usize);
        if self.near.len() < n {
            self.near.resize(n, 0);
        }
    }

    /// The latest record of `id` + 1, or 0.
    pub(crate) fn head(&self, id: u32) -> u32 {
        match self.near.get(id as usize) {
            Some(&h) => h,
            None if id < NEAR => 0,
            None => self.far.get(&id).copied().unwrap_or(0),
        }
    }

    /// The records of `id`, latest first.
    pub(crate) fn of(&self, id: u32) -> impl Iterator<Item = &T> + '_ {
        let mut next = self.head(id);
        std::iter::from_fn(move || {
            let (item, before) = self.items.get(next.checked_sub(1)? as usize)?;
            next = *before;
            Some(item)
        })
    }

    /// The record `k` (as `of` finds it, by position among `items`).
    pub(crate) fn get_mut(&mut self, k: usize) -> &mut T {
        &mut self.items[k].0
    }

    /// The position of the latest record of `id` that `pred` accepts.
    pub(crate) fn find(&self, id: u32, pred: impl Fn(&T) -> bool) -> Option<usize> {
        let mut next = self.head(id);
        while next != 0 {
            let k = next as usize - 1;
            let (item, before) = &self.items[k];
            if pred(item) {
                return Some(k);
            }
            next = *before;
        }
        None
    }

    /// Files a record under `id`.
    pub(crate) fn push(&mut self, id: u32, item: T) {
        let before = self.head(id);
        self.items.push((item, before));
        let k = self.items.len() as u32;
        if id < NEAR {
            let i = id as usize;
            if self.near.len() <= i {
                self.near.resize(i + 1, 0);
            }
            self.near[i] = k;
        } else {
            self.far.insert(id, k);
        }
    }
}
