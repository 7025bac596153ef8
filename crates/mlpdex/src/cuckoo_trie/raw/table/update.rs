//! Rewriting and removing entries a locator names. In a shared table a locator that names
//! nothing means the writer's copies are torn (`Err(Torn)`: it runs again); in an unshared
//! one, a broken invariant.

use super::{Ent, Loc, Slot, Table, Torn, dangling};

impl Table {
    /// Where the entry `l` names is, and the entry.
    #[inline(always)]
    fn locate(&self, l: Loc) -> Result<(Slot, Ent), Torn> {
        match self.find_loc(l) {
            Some(found) => Ok(found),
            None if self.shared => Err(Torn),
            None => dangling(l),
        }
    }

    /// Rewrites the entry `l` names with `f`, which must keep its position fields.
    pub(crate) fn update(&self, l: Loc, f: impl FnOnce(&mut Ent)) -> Result<(), Torn> {
        let (s, mut e) = self.locate(l)?;
        f(&mut e);
        debug_assert_eq!(e.color(), l.color);
        self.write(s, e);
        Ok(())
    }

    /// Rewrites the entry `l` names with `f` if it returns true (same contract as `update`);
    /// returns what `f` returned.
    pub(crate) fn update_if(&self, l: Loc, f: impl FnOnce(&mut Ent) -> bool) -> Result<bool, Torn> {
        let (s, mut e) = self.locate(l)?;
        let changed = f(&mut e);
        if changed {
            debug_assert_eq!(e.color(), l.color);
            self.write(s, e);
        }
        Ok(changed)
    }

    /// Replaces the entry `l` names by `content` (which keeps `l`).
    pub(crate) fn replace(&self, l: Loc, content: Ent) -> Result<(), Torn> {
        self.update(l, |e| *e = content.in_place_of(*e))
    }

    /// Removes the entry `l` names.
    pub(crate) fn remove(&self, l: Loc) -> Result<(), Torn> {
        let (s, _) = self.locate(l)?;
        self.write(s, Ent::EMPTY);
        self.count(-1);
        Ok(())
    }
}
