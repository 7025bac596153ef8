//! Single-threaded edge cases through the `&self` API, compared with a `BTreeMap`: the empty key
//! alone and next to its neighbours, and prefix keys inserted in every order.

use core::ops::{Bound, ControlFlow};
use std::collections::BTreeMap;

use crate::ConcurrentOrderedMap;
use crate::key::{Escaped, show_bound};
use crate::testing::permutations;

use super::{
    helpers::{entries, entries_rev},
    subject::Subject,
};

pub(super) type Oracle = BTreeMap<Vec<u8>, u64>;

/// Compares `map` with `oracle`: full visits both ways, `len`, and `get`, `lower_bound_with`
/// and `upper_bound_with` with every bound kind around each probe.
pub(super) fn check_against<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    oracle: &Oracle,
    probes: &[Vec<u8>],
    ctx: &str,
) {
    let want: Vec<(Vec<u8>, u64)> = oracle.iter().map(|(k, v)| (k.clone(), *v)).collect();
    assert!(entries(map) == want, "{ctx}: visit_range(..) differs");
    let mut rev = entries_rev(map);
    rev.reverse();
    assert!(rev == want, "{ctx}: visit_range_rev(..) differs");
    assert_eq!(map.len(), oracle.len(), "{ctx}: len()");
    assert_eq!(map.is_empty(), oracle.is_empty(), "{ctx}: is_empty()");
    let own = |k: &[u8], v: &u64| (k.to_vec(), *v);
    for p in probes {
        assert_eq!(
            map.get(p),
            oracle.get(p).copied(),
            "{ctx}: get({})",
            Escaped(p)
        );
        for b in [
            Bound::Included(&p[..]),
            Bound::Excluded(&p[..]),
            Bound::Unbounded,
        ] {
            let lo = oracle
                .range::<[u8], _>((b, Bound::Unbounded))
                .next()
                .map(|(k, v)| (k.clone(), *v));
            assert_eq!(
                map.lower_bound_with(b, own),
                lo,
                "{ctx}: lower_bound_with({})",
                show_bound(b)
            );
            let hi = oracle
                .range::<[u8], _>((Bound::Unbounded, b))
                .next_back()
                .map(|(k, v)| (k.clone(), *v));
            assert_eq!(
                map.upper_bound_with(b, own),
                hi,
                "{ctx}: upper_bound_with({})",
                show_bound(b)
            );
        }
    }
}

/// Keys next to `key`: one byte longer (0x00 and 0xFF), one shorter, last byte incremented.
pub(super) fn neighbours(key: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::with_capacity(4);
    for b in [0x00, 0xff] {
        let mut k = key.to_vec();
        k.push(b);
        out.push(k);
    }
    if let Some((&last, head)) = key.split_last() {
        out.push(head.to_vec());
        let mut k = key.to_vec();
        if last < 0xff {
            *k.last_mut().unwrap() += 1;
        } else {
            k.push(0x01);
        }
        out.push(k);
    }
    out
}

/// The empty key alone (every seek and range around it), replaced, next to `"\x00"` and
/// `"\xff"`, and removed, on one map from `subject`, compared with a `BTreeMap`.
///
/// # Panics
///
/// At the first difference.
pub fn empty_key_alone_and_with_others<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>) {
    let name = subject.name();
    let map = subject.make();
    let e: &[u8] = b"";
    assert_eq!(map.get(e), None, "[{name}]");
    assert_eq!(map.insert(e, 7), Ok(None), "[{name}]");
    assert_eq!(map.get(e), Some(7), "[{name}]");
    assert_eq!(map.len(), 1, "[{name}]");
    let own = |k: &[u8], v: &u64| (k.to_vec(), *v);
    let empty = Some((Vec::new(), 7));
    assert_eq!(
        map.lower_bound_with(Bound::Unbounded, own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.lower_bound_with(Bound::Included(e), own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.lower_bound_with(Bound::Excluded(e), own),
        None,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Unbounded, own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Included(e), own),
        empty,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Excluded(e), own),
        None,
        "[{name}]"
    );
    assert_eq!(
        map.upper_bound_with(Bound::Included(b"\x00"), own),
        empty,
        "[{name}]"
    );
    let count = |r: (Bound<&[u8]>, Bound<&[u8]>)| {
        let mut n = 0;
        map.visit_range(r, |_, _| {
            n += 1;
            ControlFlow::Continue(())
        });
        n
    };
    assert_eq!(
        count((Bound::Included(e), Bound::Excluded(e))),
        0,
        "[{name}]"
    );
    assert_eq!(count((Bound::Unbounded, Bound::Included(e))), 1, "[{name}]");
    assert_eq!(count((Bound::Excluded(e), Bound::Unbounded)), 0, "[{name}]");
    assert_eq!(map.insert(e, 8), Ok(Some(7)), "[{name}]");
    assert_eq!(map.insert(b"\x00", 9), Ok(None), "[{name}]");
    assert_eq!(map.insert(b"\xff", 10), Ok(None), "[{name}]");
    let mut oracle: Oracle = [(vec![], 8), (vec![0], 9), (vec![0xff], 10)].into();
    let probes = vec![
        vec![],
        vec![0],
        vec![0, 0],
        vec![1],
        vec![0xff],
        vec![0xff, 0],
    ];
    check_against(
        &map,
        &oracle,
        &probes,
        &format!("[{name}] empty key and two"),
    );
    subject.audit(&map, "empty key and two");
    assert_eq!(map.remove(e), Some(8), "[{name}]");
    oracle.remove(&[][..]);
    assert_eq!(map.remove(e), None, "[{name}]");
    check_against(
        &map,
        &oracle,
        &probes,
        &format!("[{name}] empty key removed"),
    );
    assert_eq!(map.remove(b"\x00"), Some(9), "[{name}]");
    assert_eq!(map.remove(b"\xff"), Some(10), "[{name}]");
    assert!(map.is_empty(), "[{name}]");
    subject.audit(&map, "emptied");
}

/// Six keys that are prefixes of each other (`""`, `"a"`, `"ab"`, `"abc"`, `"ab\x00"`,
/// `"ab\xff"`) inserted into a map from `subject` in each of the 720 orders, with every key
/// read back after each insert, then the full contents compared with a `BTreeMap` (seeks around
/// every key and its neighbours on every 8th order), then removed in another order, compared
/// after each removal.
///
/// # Panics
///
/// At the first difference.
pub fn prefix_keys_in_every_insertion_order<M: ConcurrentOrderedMap<u64>>(subject: &Subject<M>) {
    let name = subject.name();
    let keys: [&[u8]; 6] = [b"", b"a", b"ab", b"abc", b"ab\x00", b"ab\xff"];
    let mut probes: Vec<Vec<u8>> = keys.iter().map(|k| k.to_vec()).collect();
    for k in keys {
        probes.extend(neighbours(k));
    }
    probes.extend([b"b".to_vec(), b"aa".to_vec(), b"abcd".to_vec(), vec![0xff]]);
    let perms = permutations(keys.len());
    assert_eq!(perms.len(), 720);
    for (p, perm) in perms.iter().enumerate() {
        let ctx = |what: &str| format!("[{name}] prefix keys, order {perm:?}: {what}");
        let map = subject.make();
        let mut oracle = Oracle::new();
        for &i in perm {
            assert_eq!(
                map.insert(keys[i], i as u64),
                Ok(None),
                "{}",
                ctx(&format!("insert({})", Escaped(keys[i])))
            );
            oracle.insert(keys[i].to_vec(), i as u64);
            for k in keys {
                assert_eq!(
                    map.get(k),
                    oracle.get(k).copied(),
                    "{}",
                    ctx(&format!(
                        "get({}) after inserting {}",
                        Escaped(k),
                        Escaped(keys[i])
                    ))
                );
            }
        }
        // Seeks on every 8th order (they hardly depend on the order); visits on all.
        let seek_probes: &[Vec<u8>] = if p % 8 == 0 { &probes } else { &[] };
        check_against(&map, &oracle, seek_probes, &ctx("full"));
        subject.audit(&map, &format!("prefix keys, order {perm:?}: full"));
        // Remove in another order, comparing after each removal.
        for &i in perm.iter().rev().cycle().skip(p % 6).take(keys.len()) {
            assert_eq!(
                map.remove(keys[i]),
                Some(i as u64),
                "{}",
                ctx(&format!("remove({})", Escaped(keys[i])))
            );
            oracle.remove(keys[i]);
            check_against(
                &map,
                &oracle,
                &[],
                &ctx(&format!("after removing {}", Escaped(keys[i]))),
            );
        }
        assert!(map.is_empty(), "{}", ctx("emptied"));
        subject.audit(&map, &format!("prefix keys, order {perm:?}: emptied"));
    }
}
