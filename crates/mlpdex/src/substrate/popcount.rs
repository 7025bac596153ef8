//! Population count chosen at run time: the POPCNT instruction where the CPU has it, the
//! portable `u64::count_ones` elsewhere.
//!
//! Why: rank and select (the navigation of the FST and SuRF) are mostly popcounts. Built for
//! plain x86-64 (what a dependent crate gets with no `RUSTFLAGS`), `count_ones` compiles to a
//! dozen shift-and-mask instructions, and FST/SuRF queries ran 1.5–2× slower than with
//! `-C target-cpu=x86-64-v2`. Every x86-64 CPU since about 2009 has POPCNT, so the library
//! detects it once per process and uses it.
//!
//! How: code picks a zero-sized token with [`dispatch!`] ([`Hw`] when the CPU has POPCNT, else
//! [`Portable`]) and runs a body generic over [`Popcount`], so every popcount inside it is one
//! inlined instruction with no check of its own; the check is a relaxed load of a cached flag.
//! The FST's hot walks (exact lookup, batched lookup, seeks) dispatch once per query and pass
//! the token down through the `*_with` navigation methods; measured with callgrind on 1M rand-8
//! keys, a get then costs 727 instructions against 795 with one dispatch per rank or select
//! (and 723 built for x86-64-v2). Other callers dispatch once per rank or select. [`Hw`] emits POPCNT with
//! inline assembly, which needs no `#[target_feature]` on the caller, so the walk stays
//! inlined into the trie's search loops. Where the build already enables POPCNT (`-C
//! target-cpu=native` or `x86-64-v2`), on other architectures (aarch64 has a native
//! `cnt`), and under miri (which runs no assembly), only [`Portable`] exists and there is no
//! check at all.

/// A way to count the set bits of a word; implemented by zero-sized tokens.
pub(crate) trait Popcount: Copy {
    /// Number of set bits in `w`.
    fn count(self, w: u64) -> u32;
}

/// `u64::count_ones`, compiled for the build's target features.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Popcount for Portable {
    #[inline(always)]
    fn count(self, w: u64) -> u32 {
        w.count_ones()
    }
}

/// Whether [`Hw`] exists in this build: x86-64 built without POPCNT, outside miri.
macro_rules! cfg_hw {
    ($($item:item)*) => {$(
        #[cfg(all(target_arch = "x86_64", not(target_feature = "popcnt"), not(miri)))]
        $item
    )*};
}

cfg_hw! {
    /// The POPCNT instruction. Invariant: a value exists only once [`Hw::detect`] has seen
    /// that the CPU supports POPCNT.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Hw(());

    impl Hw {
        /// The token, when this CPU has POPCNT (detected once per process, then one relaxed
        /// load).
        #[inline(always)]
        pub(crate) fn detect() -> Option<Hw> {
            use core::sync::atomic::{AtomicU8, Ordering};
            // 0 = not yet detected, 1 = absent, 2 = present.
            static STATE: AtomicU8 = AtomicU8::new(0);
            #[cold]
            fn init() -> bool {
                let has = std::arch::is_x86_feature_detected!("popcnt");
                STATE.store(if has { 2 } else { 1 }, Ordering::Relaxed);
                has
            }
            let has = match STATE.load(Ordering::Relaxed) {
                0 => init(),
                s => s == 2,
            };
            has.then_some(Hw(()))
        }
    }

    impl Popcount for Hw {
        #[inline(always)]
        fn count(self, w: u64) -> u32 {
            let n: u64;
            // SAFETY: POPCNT reads one register and writes another (and the flags); it touches
            // no memory and no stack. The CPU supports it: a `Hw` value exists only after
            // `detect` saw the feature (type invariant).
            unsafe {
                core::arch::asm!(
                    "popcnt {n}, {w}",
                    w = in(reg) w,
                    n = lateout(reg) n,
                    options(pure, nomem, nostack),
                );
            }
            n as u32
        }
    }
}

cfg_hw! {
    /// Runs `f` out of line: the portable copy of a dispatched body, taken only on a CPU without
    /// POPCNT, stays out of its callers, so the body inlined into a search loop is the POPCNT
    /// copy and a branch.
    #[cold]
    #[inline(never)]
    pub(crate) fn cold<R>(f: impl FnOnce() -> R) -> R {
        f()
    }
}

/// Evaluates `$body` with `$p` bound to the fastest [`Popcount`] token this CPU supports: the
/// body is compiled once per token (the portable copy out of line, in [`cold`]), and the
/// choice costs one well-predicted branch per evaluation.
macro_rules! dispatch {
    ($p:ident => $body:expr) => {{
        #[cfg(all(target_arch = "x86_64", not(target_feature = "popcnt"), not(miri)))]
        let r = if let Some($p) = $crate::substrate::popcount::Hw::detect() {
            $body
        } else {
            $crate::substrate::popcount::cold(|| {
                let $p = $crate::substrate::popcount::Portable;
                $body
            })
        };
        #[cfg(not(all(target_arch = "x86_64", not(target_feature = "popcnt"), not(miri))))]
        let r = {
            let $p = $crate::substrate::popcount::Portable;
            $body
        };
        r
    }};
}
pub(crate) use dispatch;

#[cfg(test)]
mod tests {
    use super::*;

    fn words() -> Vec<u64> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut v = vec![0, 1, u64::MAX, 1 << 63, 0x5555_5555_5555_5555];
        for _ in 0..if cfg!(miri) { 20 } else { 10_000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            v.push(x);
        }
        v
    }

    #[test]
    fn every_token_counts_like_count_ones() {
        for w in words() {
            assert_eq!(Portable.count(w), w.count_ones());
            dispatch!(p => assert_eq!(p.count(w), w.count_ones(), "{w:#x}"));
        }
    }

    cfg_hw! {
        #[test]
        fn hardware_popcount_is_found_and_exact() {
            // Every x86-64 CPU this runs on has POPCNT (it arrived in 2008); if detection
            // fails here, the fast path is never taken and queries run at the portable speed.
            let hw = Hw::detect().expect("this CPU reports POPCNT");
            for w in words() {
                assert_eq!(hw.count(w), w.count_ones(), "{w:#x}");
            }
        }
    }
}
