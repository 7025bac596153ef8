//! Population count and select-in-word chosen at run time: the POPCNT instruction where the
//! CPU has it, BMI2's PDEP for select where it is fast, portable code elsewhere.
//!
//! Why: rank and select (the navigation of the FST and SuRF) are mostly popcounts. Built for
//! plain x86-64 (what a dependent crate gets with no `RUSTFLAGS`), `count_ones` compiles to a
//! dozen shift-and-mask instructions, and FST/SuRF queries ran 1.5–2× slower than with
//! `-C target-cpu=x86-64-v2`. Every x86-64 CPU since about 2009 has POPCNT, so the library
//! detects it once per process and uses it. Select inside a word (the last step of every
//! `select1`, one per LOUDS-Sparse level) is about twenty instructions broadword and two with
//! PDEP and TZCNT: on `paths` (52 levels per lookup) it was a fifth of an FST `get`'s
//! instructions.
//!
//! How: code picks a zero-sized token with [`dispatch!`] ([`HwPdep`] when the CPU has POPCNT
//! and a fast PDEP, else [`Hw`] when it has POPCNT, else [`Portable`]) and runs a body generic
//! over [`Popcount`], so every popcount and select inside it is inlined with no check of its
//! own; the check is a relaxed load of a cached flag. The FST's hot walks (exact lookup,
//! batched lookup, seeks) dispatch once per query and pass the token down through the `*_with`
//! navigation methods; measured with callgrind on 1M rand-8 keys, a get then costs 727
//! instructions against 795 with one dispatch per rank or select (and 723 built for
//! x86-64-v2). Other callers dispatch once per rank or select. The tokens emit their
//! instructions with inline assembly, which needs no `#[target_feature]` on the caller, so the
//! walk stays inlined into the trie's search loops; the copies for older CPUs stay out of
//! line. Where the build already enables POPCNT (`-C target-cpu=native` or `x86-64-v2`), on
//! other architectures (aarch64 has a native `cnt`), and under miri (which runs no assembly),
//! only [`Portable`] exists and there is no check at all; it selects with PDEP when the build
//! enables BMI2.

/// A way to count the set bits of a word, and to find one; implemented by zero-sized tokens.
pub(crate) trait Popcount: Copy {
    /// Number of set bits in `w`.
    fn count(self, w: u64) -> u32;

    /// Position of the set bit numbered `r` (0-based, from the least significant) in `w`, or
    /// 64 when `w` has at most `r` set bits. Broadword unless the token has a faster way.
    #[inline(always)]
    fn select(self, w: u64, r: u32) -> u32 {
        super::rank::select_broadword(self, w, r)
    }
}

/// `u64::count_ones`, compiled for the build's target features.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Portable;

impl Popcount for Portable {
    #[inline(always)]
    fn count(self, w: u64) -> u32 {
        w.count_ones()
    }

    /// With BMI2 enabled at build time (`-C target-cpu=native` on a CPU that has it): PDEP
    /// deposits the single bit `1 << r` at the position of `w`'s set bit number `r`.
    #[cfg(all(target_arch = "x86_64", target_feature = "bmi2"))]
    #[inline(always)]
    fn select(self, w: u64, r: u32) -> u32 {
        if r >= 64 {
            return 64;
        }
        // SAFETY: the build enables BMI2 (the cfg above), so the CPU has PDEP. (Compilers
        // since 1.87 declare the intrinsic safe where the feature is enabled.)
        #[allow(unused_unsafe)]
        let at = unsafe { core::arch::x86_64::_pdep_u64(1 << r, w) };
        at.trailing_zeros()
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
    /// What this CPU offers, detected once per process: 1 = no POPCNT, 2 = POPCNT, 3 = POPCNT
    /// and a fast PDEP (see [`HwPdep`]). One relaxed load after the first call.
    #[inline(always)]
    fn level() -> u8 {
        use core::sync::atomic::{AtomicU8, Ordering};
        // 0 = not yet detected.
        static LEVEL: AtomicU8 = AtomicU8::new(0);
        #[cold]
        fn init() -> u8 {
            let level = if !std::arch::is_x86_feature_detected!("popcnt") {
                1
            } else if std::arch::is_x86_feature_detected!("bmi2") && !slow_pdep() {
                3
            } else {
                2
            };
            LEVEL.store(level, Ordering::Relaxed);
            level
        }
        match LEVEL.load(Ordering::Relaxed) {
            0 => init(),
            l => l,
        }
    }

    /// AMD and Hygon CPUs before Zen 3 (family 0x19) run PDEP in microcode, tens to hundreds
    /// of cycles depending on the operands: slower than the broadword select there.
    fn slow_pdep() -> bool {
        use core::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 CPU; leaves 0 and 1 always exist. (Newer
        // compilers declare `__cpuid` safe; the MSRV's declares it unsafe.)
        #[allow(unused_unsafe)]
        let (vendor, sig) = unsafe { (__cpuid(0), __cpuid(1).eax) };
        let mut name = [0u8; 12];
        name[..4].copy_from_slice(&vendor.ebx.to_le_bytes());
        name[4..8].copy_from_slice(&vendor.edx.to_le_bytes());
        name[8..].copy_from_slice(&vendor.ecx.to_le_bytes());
        let base = (sig >> 8) & 0xF;
        let family = if base == 0xF { base + ((sig >> 20) & 0xFF) } else { base };
        (&name == b"AuthenticAMD" || &name == b"HygonGenuine") && family < 0x19
    }

    /// The POPCNT instruction. Invariant: a value exists only once [`Hw::detect`] has seen
    /// that the CPU supports POPCNT.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Hw(());

    impl Hw {
        /// The token, when this CPU has POPCNT.
        #[inline(always)]
        pub(crate) fn detect() -> Option<Hw> {
            (level() >= 2).then_some(Hw(()))
        }
    }

    impl Popcount for Hw {
        #[inline(always)]
        fn count(self, w: u64) -> u32 {
            popcnt(w)
        }
    }

    /// POPCNT and, for select, BMI2's PDEP with TZCNT: two instructions where the broadword
    /// select takes about twenty. Invariant: a value exists only once [`HwPdep::detect`] has
    /// seen POPCNT and BMI2 on a CPU whose PDEP is not microcoded.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct HwPdep(());

    impl HwPdep {
        /// The token, when this CPU has POPCNT and a fast PDEP.
        #[inline(always)]
        pub(crate) fn detect() -> Option<HwPdep> {
            (level() == 3).then_some(HwPdep(()))
        }
    }

    impl Popcount for HwPdep {
        #[inline(always)]
        fn count(self, w: u64) -> u32 {
            popcnt(w)
        }

        #[inline(always)]
        fn select(self, w: u64, r: u32) -> u32 {
            if r >= 64 {
                return 64;
            }
            let at: u64;
            // SAFETY: PDEP and TZCNT read registers and write one (and the flags); they touch
            // no memory and no stack. The CPU has BMI2 (hence BMI1's TZCNT, which every BMI2
            // CPU has): a `HwPdep` value exists only after `detect` saw it (type invariant).
            // PDEP puts the lone bit of `1 << r` at the position of `w`'s set bit number `r`
            // (nothing when `w` has fewer ones), and TZCNT of 0 is 64. Intel operand order:
            // destination, source, mask.
            unsafe {
                core::arch::asm!(
                    "pdep {t}, {m}, {w}",
                    "tzcnt {t}, {t}",
                    w = in(reg) w,
                    m = in(reg) 1u64 << r,
                    t = out(reg) at,
                    options(pure, nomem, nostack),
                );
            }
            at as u32
        }
    }

    /// The POPCNT instruction; only for tokens whose invariant says the CPU has it.
    #[inline(always)]
    fn popcnt(w: u64) -> u32 {
        let n: u64;
        // SAFETY: POPCNT reads one register and writes another (and the flags); it touches
        // no memory and no stack. Called only from `Hw` and `HwPdep`, which exist only after
        // `level` saw the CPU support it.
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
        let r = if let Some($p) = $crate::substrate::popcount::HwPdep::detect() {
            $body
        } else {
            $crate::substrate::popcount::cold(|| {
                if let Some($p) = $crate::substrate::popcount::Hw::detect() {
                    $body
                } else {
                    let $p = $crate::substrate::popcount::Portable;
                    $body
                }
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

    #[test]
    fn every_token_selects_like_the_broadword_select() {
        for w in words() {
            for r in [0, 1, 5, 31, 32, 62, 63, 64, 65, 200] {
                let want = crate::substrate::rank::select_broadword(Portable, w, r);
                assert_eq!(Portable.select(w, r), want, "{w:#x} {r}");
                dispatch!(p => assert_eq!(p.select(w, r), want, "{w:#x} {r}"));
                #[cfg(all(target_arch = "x86_64", not(target_feature = "popcnt"), not(miri)))]
                {
                    if let Some(hw) = Hw::detect() {
                        assert_eq!(hw.select(w, r), want, "{w:#x} {r}");
                    }
                    if let Some(hw) = HwPdep::detect() {
                        assert_eq!(hw.select(w, r), want, "{w:#x} {r}");
                    }
                }
            }
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
