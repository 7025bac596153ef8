//! Operation sequences for property tests: proptest strategies for keys and operation sequences
//! (`arb_key`, `arb_ops`, ...) that shrink to a minimal failing case, and `run_ops` /
//! `run_ops_concurrent`, which play one sequence against the oracle.

use core::ops::Bound;

use proptest::strategy::{BoxedStrategy, Just, Strategy};

use crate::api::{ConcurrentOrderedMap, OrderedMap};

use super::{
    apply::{Oracle, apply_concurrent, apply_ordered},
    keys::{CHAINS, SHARED_PREFIXES, TAIL_ALPHABET, long_pattern},
    ops::{MapOp, Walk},
    report::Mismatch,
};

pub(super) fn describe_op(driver: &str, i: usize, n: usize, op: &MapOp, m: Mismatch) -> String {
    format!(
        "{driver}: op #{i} of {n}: {op}\n  expected: {}\n  actual:   {}",
        m.expected, m.actual
    )
}

/// Applies `ops` to `map` (which must be empty) and to a `BTreeMap` oracle, then compares the
/// whole map; returns the first divergence, naming the operation's index.
pub fn run_ops<M: OrderedMap<u64>>(map: &mut M, ops: &[MapOp]) -> Result<(), String> {
    if !map.is_empty() {
        return Err(format!(
            "run_ops: the map must start empty, it holds {} keys",
            map.len()
        ));
    }
    let mut oracle = Oracle::new();
    for (i, op) in ops.iter().chain([&MapOp::Iter]).enumerate() {
        apply_ordered(map, &mut oracle, op)
            .map_err(|m| describe_op("run_ops", i, ops.len(), op, m))?;
    }
    Ok(())
}

/// [`run_ops`] for a [`ConcurrentOrderedMap`], single-threaded; [`MapOp::Clear`] removes every
/// key one by one.
pub fn run_ops_concurrent<M: ConcurrentOrderedMap<u64>>(
    map: &M,
    ops: &[MapOp],
) -> Result<(), String> {
    if !map.is_empty() {
        return Err(format!(
            "run_ops_concurrent: the map must start empty, it holds {} keys",
            map.len()
        ));
    }
    let mut oracle = Oracle::new();
    for (i, op) in ops.iter().chain([&MapOp::Iter]).enumerate() {
        apply_concurrent(map, &mut oracle, op)
            .map_err(|m| describe_op("run_ops_concurrent", i, ops.len(), op, m))?;
    }
    Ok(())
}

/// A proptest strategy for adversarial keys: prefix chains (the empty key included), 0x00/0xFF
/// strings, short strings favouring 0x00, 0xFF and `a`/`b`, long shared prefixes with short
/// tails, 8-byte integers, and (rarely) 1–4 KiB keys. Shrinks towards short chain prefixes.
pub fn arb_key() -> impl Strategy<Value = Vec<u8>> + Clone {
    use proptest::collection::vec;
    use proptest::prelude::{any, prop_oneof};
    use proptest::sample::select;

    let chains = (0..CHAINS.len(), 0usize..=26).prop_map(|(c, n)| {
        let chain = CHAINS[c];
        chain[..n.min(chain.len())].to_vec()
    });
    let zero_ff = vec(prop_oneof![Just(0x00u8), Just(0xffu8)], 0..=12);
    let bytes = vec(
        prop_oneof![
            Just(0x00u8),
            Just(0xffu8),
            Just(b'a'),
            Just(b'b'),
            any::<u8>()
        ],
        0..=12,
    );
    let shared =
        (0..SHARED_PREFIXES.len(), vec(select(TAIL_ALPHABET), 0..=3)).prop_map(|(p, tail)| {
            let mut key = SHARED_PREFIXES[p].to_vec();
            key.extend(tail);
            key
        });
    let ints = prop_oneof![Just(0u64), Just(u64::MAX), 0u64..512, any::<u64>()]
        .prop_map(|x| x.to_be_bytes().to_vec());
    let long = (0u64..3, 1024usize..=4096, any::<u8>()).prop_map(|(base, len, last)| {
        let mut key: Vec<u8> = (0..len).map(|i| long_pattern(base, i)).collect();
        key.push(last);
        key
    });
    prop_oneof![
        3 => chains,
        3 => zero_ff,
        3 => bytes,
        2 => shared,
        2 => ints,
        1 => long,
    ]
}

/// A proptest strategy for 8-byte big-endian integer keys (edges, dense small values, random),
/// for integer-only maps.
pub fn arb_u64_key() -> impl Strategy<Value = Vec<u8>> + Clone {
    use proptest::prelude::{any, prop_oneof};
    prop_oneof![
        Just(0u64),
        Just(u64::MAX),
        0u64..64,
        (u64::MAX - 64)..=u64::MAX,
        any::<u64>(),
    ]
    .prop_map(|x| x.to_be_bytes().to_vec())
}

/// A proptest strategy for operation sequences over [`arb_key`] keys; see [`arb_ops_with`].
pub fn arb_ops() -> impl Strategy<Value = Vec<MapOp>> {
    arb_ops_with(arb_key())
}

/// A proptest strategy for sequences of up to 128 operations whose keys come mostly from a
/// pool of up to 16 keys drawn from `key` (so operations hit the same keys), sometimes fresh
/// from `key`.
///
/// Every [`MapOp`] variant occurs, with writes most frequent and `Clear` rare. Operations name
/// pool keys by index and the pool is drawn separately (no `prop_flat_map`), so proptest first
/// deletes operations, then simplifies the rest and the keys: failures shrink to a few
/// operations within proptest's default shrink budget.
pub fn arb_ops_with<S>(key: S) -> impl Strategy<Value = Vec<MapOp>>
where
    S: Strategy<Value = Vec<u8>> + Clone + 'static,
{
    let templates = proptest::collection::vec(arb_op_template(key.clone().boxed()), 1..128);
    let pool = proptest::collection::vec(key, 1..16);
    (templates, pool)
        .prop_map(|(templates, pool)| templates.into_iter().map(|t| t.resolve(&pool)).collect())
}

/// A key of a generated operation: an index into the pool, or a fresh key.
#[derive(Clone, Debug)]
pub(super) enum KeyPick {
    Pool(proptest::sample::Index),
    Fresh(Vec<u8>),
}

impl KeyPick {
    fn resolve(self, pool: &[Vec<u8>]) -> Vec<u8> {
        match self {
            KeyPick::Pool(i) => pool[i.index(pool.len())].clone(),
            KeyPick::Fresh(k) => k,
        }
    }
}

/// A [`MapOp`] whose keys are still [`KeyPick`]s.
#[derive(Clone, Debug)]
pub(super) enum OpTemplate {
    Insert(KeyPick, u64),
    Remove(KeyPick),
    Get(KeyPick),
    ContainsKey(KeyPick),
    LowerBound(Bound<KeyPick>),
    UpperBound(Bound<KeyPick>),
    Range(Bound<KeyPick>, Bound<KeyPick>, Walk),
    Keyless(MapOp),
}

impl OpTemplate {
    fn resolve(self, pool: &[Vec<u8>]) -> MapOp {
        let bound = |b: Bound<KeyPick>| b.map(|k| k.resolve(pool));
        match self {
            OpTemplate::Insert(k, v) => MapOp::Insert(k.resolve(pool), v),
            OpTemplate::Remove(k) => MapOp::Remove(k.resolve(pool)),
            OpTemplate::Get(k) => MapOp::Get(k.resolve(pool)),
            OpTemplate::ContainsKey(k) => MapOp::ContainsKey(k.resolve(pool)),
            OpTemplate::LowerBound(b) => MapOp::LowerBound(bound(b)),
            OpTemplate::UpperBound(b) => MapOp::UpperBound(bound(b)),
            OpTemplate::Range(s, e, w) => MapOp::Range(bound(s), bound(e), w),
            OpTemplate::Keyless(op) => op,
        }
    }
}

pub(super) fn arb_op_template(fresh: BoxedStrategy<Vec<u8>>) -> BoxedStrategy<OpTemplate> {
    use proptest::prelude::{any, prop_oneof};
    use proptest::sample::Index;

    let key: BoxedStrategy<KeyPick> = prop_oneof![
        4 => any::<Index>().prop_map(KeyPick::Pool),
        1 => fresh.prop_map(KeyPick::Fresh),
    ]
    .boxed();
    let bound = prop_oneof![
        key.clone().prop_map(Bound::Included),
        key.clone().prop_map(Bound::Excluded),
        Just(Bound::Unbounded),
    ]
    .boxed();
    let limit = prop_oneof![Just(usize::MAX), 0usize..32];
    let walk = prop_oneof![
        limit.clone().prop_map(Walk::Forward),
        limit.clone().prop_map(Walk::Backward),
        (any::<u64>(), limit).prop_map(|(p, n)| Walk::Alternate(p, n)),
    ];
    let keyless = prop_oneof![
        4 => Just(MapOp::Len),
        4 => Just(MapOp::First),
        4 => Just(MapOp::Last),
        4 => Just(MapOp::Iter),
        1 => Just(MapOp::Clear),
        2 => Just(MapOp::MemoryUsage),
    ];
    prop_oneof![
        30 => (key.clone(), any::<u64>()).prop_map(|(k, v)| OpTemplate::Insert(k, v)),
        15 => key.clone().prop_map(OpTemplate::Remove),
        15 => key.clone().prop_map(OpTemplate::Get),
        5 => key.prop_map(OpTemplate::ContainsKey),
        10 => bound.clone().prop_map(OpTemplate::LowerBound),
        10 => bound.clone().prop_map(OpTemplate::UpperBound),
        20 => (bound.clone(), bound, walk).prop_map(|(s, e, w)| OpTemplate::Range(s, e, w)),
        19 => keyless.prop_map(OpTemplate::Keyless),
    ]
    .boxed()
}
