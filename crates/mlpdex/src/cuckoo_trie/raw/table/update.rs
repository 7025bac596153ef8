//! Rewriting and removing entries a locator names.

use core::sync::atomic::Ordering::Relaxed;

use super::{Ent, Loc, Locks, Table, dangling};

impl Table {
    /// Rewrites the entry `l` names with `f`, which must keep its position fields.
    pub(crate) fn update(&self, w: &mut Locks, l: Loc, f: impl FnOnce(&mut Ent)) {
        let Some((s, mut e)) = self.find_loc(l) else {
            dangling(l)
        };
        f(&mut e);
        debug_assert_eq!(e.color(), l.color);
        self.write(w, s, e);
    }

    /// Rewrites the entry `l` names with `f` if it returns true (same contract as `update`);
    /// returns what `f` returned.
    pub(crate) fn update_if(
        &self,
        w: &mut Locks,
        l: Loc,
        f: impl FnOnce(&mut Ent) -> bool,
    ) -> bool {
        let Some((s, mut e)) = self.find_loc(l) else {
            dangling(l)
        };
        let changed = f(&mut e);
        if changed {
            debug_assert_eq!(e.color(), l.color);
            self.write(w, s, e);
        }
        changed
    }

    /// Replaces the entry `l` names by `content` (which keeps `l`).
    pub(crate) fn replace(&self, w: &mut Locks, l: Loc, content: Ent) {
        self.update(w, l, |e| *e = content.in_place_of(*e));
    }

    /// Removes the entry `l` names.
    pub(crate) fn remove(&self, w: &mut Locks, l: Loc) {
        let Some((s, _)) = self.find_loc(l) else {
            dangling(l)
        };
        self.write(w, s, Ent::EMPTY);
        self.used.fetch_sub(1, Relaxed);
    }
}
