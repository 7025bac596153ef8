//! Software prefetch: ask for a cache line before it is needed, without waiting for it.
//!
//! A prefetch never faults, whatever the address, so these functions are safe to call with any
//! pointer, including dangling or null ones; they only cost an instruction slot and, for a valid
//! address, a line fill. On targets without a prefetch intrinsic they compile to nothing.
//!
//! Use [`prefetch_read`] for lines a lookup is about to read (the paper's lookahead prefetches,
//! cuckoo-trie.txt §4.1) and [`prefetch_write`] for lines about to be modified, which on x86
//! requests the line in a state that avoids a later ownership upgrade when the CPU supports it.

/// Size of a cache line on every target mlpdex tunes for.
pub const CACHE_LINE: usize = 64;

/// Prefetches the cache line holding `p` into all cache levels, for reading.
#[inline(always)]
pub fn prefetch_read<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint: it never faults and has no architectural effect, whatever the
    // address. SSE is part of the x86-64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Prefetches the cache line holding `p`, announcing an upcoming write.
#[inline(always)]
pub fn prefetch_write<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHW (or its T0 fallback on CPUs without it) is a hint and never faults.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_ET0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetch_of_any_address_is_harmless() {
        let v = [1u64; 64];
        prefetch_read(v.as_ptr());
        prefetch_write(v.as_ptr());
        prefetch_read(core::ptr::null::<u8>());
        prefetch_read(usize::MAX as *const u8);
        assert_eq!(v[63], 1);
    }
}
