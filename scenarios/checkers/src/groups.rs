//! Records grouped by a small id (a job's, an entity's), for the checkers' per-run state: the
//! records of one id are threaded through one vector, so that a lookup reads only that id's few
//! records instead of searching or shifting every record of the run, and emptying the groups
//! keeps their storage for the next run. The order of the records is never read, only whether
//! one is there.

use crate::{NearIds, JOBS_LAID_OUT};
use std::collections::BTreeMap;

/// Records grouped by a small id (an entity's, a job's): the records of one id are threaded
/// through one vector, so that a lookup reads only that id's few records, not every record of
/// the run, and emptying the groups keeps their storage for the next run.
pub(crate) struct Groups<T> {
    /// The ids found by position (see [`NearIds`]): those below 4,096, or, once laid out for a
    /// run, below twice its number of jobs.
    near_ids: NearIds,
    /// Id -> its latest record + 1 (0 for none), for the ids of `near_ids`.
    near: Vec<u32>,
    /// Id -> its latest record + 1, for the others.
    far: BTreeMap<u32, u32>,
    /// Each record, with the one filed before it under the same id + 1 (0 for none).
    items: Vec<(T, u32)>,
}

impl<T> Default for Groups<T> {
    fn default() -> Self {
        Groups {
            near_ids: NearIds::default(),
            near: Vec::new(),
            far: BTreeMap::new(),
            items: Vec::new(),
        }
    }
}

impl<T> Groups<T> {
    /// Empties every group, keeping the storage.
    pub(crate) fn clear(&mut self) {
        self.near_ids = NearIds::default();
        self.near.clear();
        // Emptying a map that is empty already would still drop and remake its root.
        if !self.far.is_empty() {
            self.far.clear();
        }
        self.items.clear();
    }

    /// Finds the ids below twice `ids` by position ([`NearIds`]), for ids about as many as a
    /// run's jobs (its entities).
    pub(crate) fn expect(&mut self, ids: usize) {
        self.near_ids = NearIds::for_jobs(ids);
    }

    /// Files the records of a run of `ids` jobs: ids below twice that are found by position
    /// ([`NearIds`]), and the heads of the first (up to `JOBS_LAID_OUT`) are laid out, empty, so
    /// that filing under one of them finds its place without growing the storage.
    pub(crate) fn lay_out(&mut self, ids: usize) {
        self.near_ids = NearIds::for_jobs(ids);
        let n = ids.min(JOBS_LAID_OUT);
        if self.near.len() < n {
            self.near.resize(n, 0);
        }
    }

    /// The latest record of `id` + 1, or 0.
    pub(crate) fn head(&self, id: u32) -> u32 {
        match self.near.get(id as usize) {
            Some(&h) => h,
            None if self.near_ids.holds(id) => 0,
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
        if self.near_ids.holds(id) {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids on both sides of the bound of those found by position ([`NearIds`]) file and find
    /// their records alike, whatever the bound.
    #[test]
    fn ids_found_by_position_or_through_the_map_give_the_same_records() {
        let ids = [0, 3, 4_095, 4_096, 9_999, 70_000, 1 << 20, u32::MAX];
        // 4,096 ids by position (a run of 10 jobs); then 200,000 (100,000 jobs); then 2^20.
        for jobs in [10, 100_000, usize::MAX] {
            let mut g: Groups<(u32, u32)> = Groups::default();
            g.lay_out(jobs);
            for round in 0..3 {
                for &id in &ids {
                    g.push(id, (id, round));
                }
            }
            for &id in &ids {
                let got: Vec<_> = g.of(id).copied().collect();
                assert_eq!(got, [(id, 2), (id, 1), (id, 0)], "id {id}, {jobs} jobs");
                assert_eq!(
                    g.find(id, |&(_, r)| r == 1).map(|k| g.items[k].0),
                    Some((id, 1))
                );
            }
            for unnamed in [1, 4_097, 80_000, u32::MAX - 1] {
                assert_eq!(g.head(unnamed), 0, "id {unnamed}, {jobs} jobs");
            }
            g.clear();
            assert!(ids.iter().all(|&id| g.head(id) == 0));
        }
    }

    #[test]
    fn the_ids_found_by_position_are_bounded() {
        assert_eq!(NearIds::for_jobs(0).0, 4_096);
        assert_eq!(NearIds::for_jobs(2_048).0, 4_096);
        assert_eq!(NearIds::for_jobs(10_000).0, 20_000);
        assert_eq!(NearIds::for_jobs(usize::MAX).0, 1 << 20);
        assert_eq!(NearIds::default(), NearIds::for_jobs(0));
        assert!(NearIds::for_jobs(10_000).holds(19_999));
        assert!(!NearIds::for_jobs(10_000).holds(20_000));
    }
}
