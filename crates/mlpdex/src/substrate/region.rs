//! Large zeroed memory regions backed by 2 MiB transparent huge pages where the OS allows.
//!
//! Why: a lookup that touches random lines of a multi-GiB table misses the TLB on nearly every
//! access with 4 KiB pages, and the page walk is itself a chain of dependent memory reads that
//! caps memory-level parallelism (mlp-data-structures.txt §2.4). With 2 MiB pages the page-walk
//! entries of a 10 GiB table fit in the caches.
//!
//! How: [`Region::new_zeroed`] maps anonymous memory aligned to 2 MiB and asks the kernel for
//! huge pages with `madvise(MADV_HUGEPAGE)`. That works when
//! `/sys/kernel/mm/transparent_hugepage/enabled` is `always` or `madvise`; otherwise (or off
//! Linux) the region silently uses normal pages, which is correct, only slower. Whether pages
//! really are huge is visible as `AnonHugePages` in `/proc/self/smaps`.
//!
//! Each structure chooses per instance, with the [`HugePages`] field of its `Config`; the
//! default, [`HugePages::Auto`], follows the environment variable `MLPDEX_HUGE_PAGES` (`0`
//! turns huge pages off), so benchmarks can compare against 4 KiB pages without a rebuild.
//!
//! Under miri, which cannot unmap part of a mapping nor take `madvise` advice, regions are
//! zeroed heap blocks aligned as the mappings would be (`cfg(miri)` in this file only); the
//! rest of the crate sees the same type and invariants.
//!
//! Memory accounting: a region reports its whole mapped length as owned memory
//! ([`Region::memory_usage`]), since every byte of it is reserved for the structure (pages are
//! zero-filled lazily, but a structure's table is touched all over soon after creation).

use core::ptr::NonNull;

use crate::Error;

/// Size of a transparent huge page on x86-64 and aarch64 (4 KiB granule).
pub const HUGE_PAGE: usize = 2 << 20;

/// Whether a structure asks the kernel to back its large tables with 2 MiB transparent huge
/// pages: a field of the `Config` of every structure that maps tables
/// ([`cuckoo_trie::Config`](crate::cuckoo_trie::Config),
/// [`mlp_index::Config`](crate::mlp_index::Config), [`pi::Config`](crate::pi::Config)).
///
/// Huge pages make random lookups in a large table cheaper (each TLB miss costs a page walk, a
/// chain of dependent memory reads), at the price of memory rounded up to 2 MiB per table. They
/// apply only to tables of at least 2 MiB, and only where the kernel allows them
/// (`/sys/kernel/mm/transparent_hugepage/enabled` set to `always` or `madvise`, on Linux);
/// elsewhere a table silently uses normal pages, which is correct, only slower.
///
/// ```
/// use mlpdex::cuckoo_trie::{Config, CuckooTrie};
/// use mlpdex::HugePages;
///
/// // 4 KiB pages for this map, whatever the environment says.
/// let config = Config { huge_pages: HugePages::Never, ..Config::default() };
/// let mut map: CuckooTrie<u32> = CuckooTrie::with_config(config).unwrap();
/// map.insert(b"key", 1).unwrap();
/// assert_eq!(map.get(b"key"), Some(&1));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HugePages {
    /// Huge pages unless the environment variable `MLPDEX_HUGE_PAGES` is `0`, `off` or
    /// `false` (read once per process), so a benchmark can compare page sizes without a
    /// rebuild. The default.
    #[default]
    Auto,
    /// Ask for huge pages (`madvise(MADV_HUGEPAGE)`) for every table of at least 2 MiB.
    Always,
    /// Never ask: 4 KiB pages.
    Never,
}

impl HugePages {
    /// Whether this setting asks for huge pages, the environment variable resolved for
    /// [`Auto`](Self::Auto).
    pub fn requested(self) -> bool {
        match self {
            HugePages::Always => true,
            HugePages::Never => false,
            HugePages::Auto => env_allows_huge_pages(),
        }
    }
}

/// `MLPDEX_HUGE_PAGES` read once: `0`, `off` or `false` turn huge pages off, anything else
/// (or no variable) leaves them on.
fn env_allows_huge_pages() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        !matches!(
            std::env::var("MLPDEX_HUGE_PAGES").as_deref(),
            Ok("0" | "off" | "false")
        )
    })
}

/// An owned, zero-initialised, page-aligned anonymous mapping.
///
/// Invariants:
/// 1. `ptr` is the start of a live mapping of exactly `len` bytes owned by this value, `len > 0`.
/// 2. `len` is a multiple of the system page size (4 KiB), and of [`HUGE_PAGE`] when `huge`.
/// 3. When `huge`, `ptr` is aligned to [`HUGE_PAGE`].
#[derive(Debug)]
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    huge: bool,
}

// SAFETY: a Region is a uniquely owned block of plain memory, like a Box<[u8]>; all access to its
// contents goes through &self / &mut self (or raw pointers whose users give their own proofs).
unsafe impl Send for Region {}
// SAFETY: shared references only allow reads through `as_slice` or raw pointers; see above.
unsafe impl Sync for Region {}

impl Region {
    /// Maps at least `bytes` zeroed bytes, on huge pages when `huge` asks for them and `bytes`
    /// is at least one huge page (smaller requests are rounded to 4 KiB pages; a huge page
    /// would waste memory).
    pub fn new_zeroed(bytes: usize, huge: HugePages) -> Result<Region, Error> {
        Self::with_policy(bytes, huge.requested())
    }

    /// As [`new_zeroed`](Self::new_zeroed), with the huge-page choice made by the caller.
    pub fn with_policy(bytes: usize, want_huge: bool) -> Result<Region, Error> {
        let bytes = bytes.max(1);
        let huge = want_huge && bytes >= HUGE_PAGE && cfg!(target_os = "linux");
        let page = if huge { HUGE_PAGE } else { 4096 };
        let len = bytes
            .checked_next_multiple_of(page)
            .ok_or(Error::OutOfMemory { bytes })?;
        let ptr = if huge {
            map_aligned(len, HUGE_PAGE)?
        } else {
            map(len)?
        };
        if huge {
            advise_huge(ptr, len);
        }
        let r = Region { ptr, len, huge };
        debug_assert!(r.len.is_multiple_of(page));
        debug_assert!(!r.huge || (r.ptr.as_ptr() as usize).is_multiple_of(HUGE_PAGE));
        Ok(r)
    }

    /// Start of the region.
    #[inline]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The start of the mapping, as the non-null pointer it is.
    #[inline]
    pub(crate) fn base(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Length of the mapping in bytes (the request rounded up to whole pages).
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether huge pages were requested for this region (the kernel may still decline).
    #[cfg(test)]
    #[inline]
    pub fn huge_pages_requested(&self) -> bool {
        self.huge
    }

    /// The region as bytes.
    #[cfg(test)]
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: invariant 1: `ptr..ptr+len` is a live mapping owned by self, readable and
        // initialised (anonymous mappings are zero-filled); the borrow of self keeps it alive.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The region as mutable bytes.
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only access.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Bytes of memory the region owns: its mapped length.
    #[inline]
    pub fn memory_usage(&self) -> usize {
        self.len
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: invariant 1: the mapping is ours and live; nothing borrows it past drop.
        // `align` is the one it was mapped with (invariant 3 and `with_policy`).
        unsafe { unmap(self.ptr, self.len, if self.huge { HUGE_PAGE } else { 4096 }) };
    }
}

/// A block of the global allocator for a large table: aligned to a huge page when it fills
/// one, and then advised to be backed by huge pages when [`HugePages`] asks. Unlike a
/// [`Region`], its memory is the allocator's: a heap already on huge pages (or prefaulted, as
/// the benchmark harness's) serves it as it serves every other allocation, and the system
/// allocator maps a fresh block that the advice puts on huge pages.
///
/// Invariant: `ptr` is a live allocation of `layout`, owned by the block, uninitialised until
/// its user writes it.
#[derive(Debug)]
pub(crate) struct HugeBlock {
    ptr: NonNull<u8>,
    layout: core::alloc::Layout,
}

// SAFETY: a block is plain memory uniquely owned, like a `Box<[MaybeUninit<u8>]>`.
unsafe impl Send for HugeBlock {}
// SAFETY: the block hands out only raw pointers; their users give their own proofs.
unsafe impl Sync for HugeBlock {}

impl HugeBlock {
    /// A block of `bytes` (at least 1) aligned to `align` (a power of two), or to a huge page
    /// when `bytes` fills one; `None` if the allocator refuses.
    pub(crate) fn new(bytes: usize, align: usize, huge: HugePages) -> Option<HugeBlock> {
        let bytes = bytes.max(1);
        let fills = bytes >= HUGE_PAGE;
        let align = if fills { align.max(HUGE_PAGE) } else { align };
        let layout = core::alloc::Layout::from_size_align(bytes, align).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc(layout) })?;
        if fills && huge.requested() {
            advise_huge(ptr, bytes);
        }
        Some(HugeBlock { ptr, layout })
    }

    /// Start of the block.
    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes of the block.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for HugeBlock {
    fn drop(&mut self) {
        // SAFETY: the invariant: allocated with this layout, freed once, here.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// A read-only array of plain `T` for a table built by pushing, then only read at random
/// (PI's index levels): once it fills a huge page it is copied into a [`HugeBlock`], so it
/// asks for huge pages as `huge` says; smaller, it stays in its `Vec`.
///
/// Invariant: `ptr` points to `len` initialised elements of `T`, at the start of `block`
/// when that is `Some`, in `vec`'s buffer otherwise; neither is written or freed while `self`
/// lives.
#[derive(Debug)]
pub(crate) struct HugeSlice<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    vec: Vec<T>,
    block: Option<HugeBlock>,
}

// SAFETY: a `HugeSlice` owns its elements like a `Vec<T>` and gives only shared access.
unsafe impl<T: Copy + Send> Send for HugeSlice<T> {}
// SAFETY: as above.
unsafe impl<T: Copy + Sync> Sync for HugeSlice<T> {}

impl<T: Copy> Default for HugeSlice<T> {
    fn default() -> Self {
        HugeSlice::new(Vec::new(), HugePages::Never)
    }
}

impl<T: Copy> HugeSlice<T> {
    /// The elements of `vec`, copied to a huge-page block when they fill a huge page.
    pub(crate) fn new(mut vec: Vec<T>, huge: HugePages) -> HugeSlice<T> {
        let bytes = size_of_val(vec.as_slice());
        if bytes >= HUGE_PAGE
            && let Some(block) = HugeBlock::new(bytes, align_of::<T>(), huge)
        {
            let dst = block.as_ptr().cast::<T>();
            // SAFETY: the block holds `bytes` bytes aligned for `T` (at least `align_of::<T>()`)
            // and does not overlap the vector; `T: Copy`.
            unsafe { core::ptr::copy_nonoverlapping(vec.as_ptr(), dst, vec.len()) };
            return HugeSlice {
                ptr: NonNull::new(dst).expect("an allocation"),
                len: vec.len(),
                vec: Vec::new(),
                block: Some(block),
            };
        }
        vec.shrink_to_fit();
        HugeSlice {
            ptr: NonNull::new(vec.as_mut_ptr()).expect("a vector's pointer"),
            len: vec.len(),
            vec,
            block: None,
        }
    }

    /// Whether the elements moved to a huge-page block.
    #[cfg(test)]
    fn in_block(&self) -> bool {
        self.block.is_some()
    }

    /// Bytes owned: the block, or the vector's buffer.
    pub(crate) fn memory_usage(&self) -> usize {
        match &self.block {
            Some(b) => b.len(),
            None => self.vec.capacity() * size_of::<T>(),
        }
    }
}

impl<T: Copy> core::ops::Deref for HugeSlice<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: the invariant: `len` elements at `ptr`, alive and unwritten while `self` is
        // borrowed.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

/// Unmaps a whole mapping made by [`map`] or [`map_aligned`].
///
/// # Safety
/// `ptr..ptr+len` is a live mapping made by [`map`] (then `align` is 4096) or [`map_aligned`]
/// with `align`, and nothing uses it afterwards.
#[cfg(not(miri))]
unsafe fn unmap(ptr: NonNull<u8>, len: usize, _align: usize) {
    // SAFETY: per the contract, a live mapping of `len` bytes that is ours to end.
    let rc = unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
    debug_assert_eq!(rc, 0, "munmap of an owned region failed");
}

#[cfg(not(miri))]
fn map(len: usize) -> Result<NonNull<u8>, Error> {
    // SAFETY: an anonymous private mapping at a kernel-chosen address touches no existing memory.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(Error::OutOfMemory { bytes: len });
    }
    NonNull::new(p.cast()).ok_or(Error::OutOfMemory { bytes: len })
}

/// Maps `len` bytes aligned to `align` by over-mapping and trimming the slack at both ends.
#[cfg(not(miri))]
fn map_aligned(len: usize, align: usize) -> Result<NonNull<u8>, Error> {
    let total = len
        .checked_add(align)
        .ok_or(Error::OutOfMemory { bytes: len })?;
    let raw = map(total)?;
    let start = raw.as_ptr() as usize;
    let aligned = start.next_multiple_of(align);
    let head = aligned - start;
    let tail = total - head - len;
    // SAFETY: both trimmed ranges lie inside the mapping of `total` bytes just created and are
    // never handed out; unmapping them leaves exactly `aligned..aligned+len` mapped.
    unsafe {
        if head > 0 {
            libc::munmap(raw.as_ptr().cast(), head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
    }
    NonNull::new(aligned as *mut u8).ok_or(Error::OutOfMemory { bytes: len })
}

/// The miri stand-ins for [`map`], [`map_aligned`] and [`unmap`]: zeroed heap blocks with the
/// alignment the mappings would have. Miri cannot unmap part of a mapping (`map_aligned`'s
/// trimming), and it stops rather than failing an allocation it cannot make, so requests over
/// [`MIRI_MAX`] are refused as the kernel would refuse an absurd mapping.
#[cfg(miri)]
mod heap {
    use core::ptr::NonNull;
    use std::alloc::{Layout, alloc_zeroed, dealloc};

    use crate::Error;

    /// Largest block the miri stand-in allocates (far above what the tests use).
    pub(super) const MIRI_MAX: usize = 1 << 32;

    fn layout(len: usize, align: usize) -> Result<Layout, Error> {
        if len > MIRI_MAX {
            return Err(Error::OutOfMemory { bytes: len });
        }
        Layout::from_size_align(len, align).map_err(|_| Error::OutOfMemory { bytes: len })
    }

    pub(super) fn map(len: usize) -> Result<NonNull<u8>, Error> {
        map_aligned(len, 4096)
    }

    pub(super) fn map_aligned(len: usize, align: usize) -> Result<NonNull<u8>, Error> {
        debug_assert!(len > 0);
        let layout = layout(len, align)?;
        // SAFETY: `layout` has a non-zero size (`with_policy` asks for at least one page).
        let p = unsafe { alloc_zeroed(layout) };
        NonNull::new(p).ok_or(Error::OutOfMemory { bytes: len })
    }

    /// # Safety
    /// `ptr` came from `map_aligned(len, align)` (or `map(len)` with `align` 4096) and is
    /// not used afterwards.
    pub(super) unsafe fn unmap(ptr: NonNull<u8>, len: usize, align: usize) {
        // SAFETY: the same layout was valid when the block was allocated.
        let layout = unsafe { Layout::from_size_align_unchecked(len, align) };
        // SAFETY: per the contract, allocated with `layout` and freed once.
        unsafe { dealloc(ptr.as_ptr(), layout) };
    }
}

#[cfg(miri)]
use heap::{map, map_aligned, unmap};

#[cfg(all(target_os = "linux", not(miri)))]
fn advise_huge(ptr: NonNull<u8>, len: usize) {
    // SAFETY: advice on our own fresh mapping; MADV_HUGEPAGE changes no contents. Failure (THP
    // disabled, old kernel) leaves normal pages, which is correct, so the result is ignored.
    unsafe {
        libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(any(not(target_os = "linux"), miri))]
fn advise_huge(_ptr: NonNull<u8>, _len: usize) {}

#[cfg(test)]
mod tests {
    use super::*;

    /// A slice keeps its elements whether it stays in its vector or moves to a block, and a
    /// block that fills a huge page is aligned to one.
    #[test]
    fn huge_slices_keep_their_elements() {
        let small: Vec<u64> = (0..1000).collect();
        let s = HugeSlice::new(small.clone(), HugePages::Always);
        assert_eq!(&*s, &small[..]);
        assert!(!s.in_block());
        // Page-sized elements keep this cheap under miri.
        let big: Vec<[u8; 4096]> = (0..HUGE_PAGE / 4096 + 3).map(|i| [i as u8; 4096]).collect();
        for huge in [HugePages::Always, HugePages::Never] {
            let s = HugeSlice::new(big.clone(), huge);
            assert!(s.in_block());
            assert!((s.as_ptr() as usize).is_multiple_of(HUGE_PAGE));
            assert!(s.iter().zip(&big).all(|(a, b)| a == b) && s.len() == big.len());
            assert_eq!(s.memory_usage(), 4096 * big.len());
        }
        assert!(HugeSlice::<u64>::default().is_empty());
    }

    #[test]
    fn small_region_is_zeroed_and_writable() {
        let mut r = Region::with_policy(100, true).unwrap();
        assert_eq!(r.len(), 4096);
        assert!(!r.huge_pages_requested());
        assert!(r.as_slice().iter().all(|&b| b == 0));
        r.as_mut_slice()[4095] = 7;
        assert_eq!(r.as_slice()[4095], 7);
        assert_eq!(r.memory_usage(), 4096);
    }

    #[test]
    fn huge_region_is_aligned_and_rounded() {
        let mut r = Region::with_policy(HUGE_PAGE + 1, true).unwrap();
        assert_eq!(r.len(), 2 * HUGE_PAGE);
        assert!(r.huge_pages_requested());
        assert_eq!(r.as_ptr() as usize % HUGE_PAGE, 0);
        let s = r.as_mut_slice();
        s[0] = 1;
        s[2 * HUGE_PAGE - 1] = 2;
        assert_eq!(s[1], 0);
    }

    #[test]
    fn policy_off_uses_small_pages() {
        let r = Region::with_policy(4 * HUGE_PAGE, false).unwrap();
        assert!(!r.huge_pages_requested());
        assert_eq!(r.len(), 4 * HUGE_PAGE);
    }

    #[test]
    fn absurd_size_is_an_error_not_a_panic() {
        assert!(matches!(
            Region::with_policy(usize::MAX - 10, true),
            Err(Error::OutOfMemory { .. })
        ));
        assert!(matches!(
            Region::with_policy(1 << 62, false),
            Err(Error::OutOfMemory { .. })
        ));
        // Sizes whose rounding up to a page, or whose alignment slack, passes usize::MAX.
        for bytes in [
            usize::MAX,
            usize::MAX - 4095,
            usize::MAX - HUGE_PAGE + 1,
            usize::MAX - HUGE_PAGE - 1,
            usize::MAX - 2 * HUGE_PAGE,
            isize::MAX as usize + 1,
        ] {
            for huge in [false, true] {
                assert!(
                    matches!(
                        Region::with_policy(bytes, huge),
                        Err(Error::OutOfMemory { .. })
                    ),
                    "with_policy({bytes}, {huge})"
                );
            }
            for huge in [HugePages::Auto, HugePages::Always, HugePages::Never] {
                assert!(matches!(
                    Region::new_zeroed(bytes, huge),
                    Err(Error::OutOfMemory { .. })
                ));
            }
        }
    }

    /// The kernel's flags of the mapping holding `addr` (the `VmFlags` line of its entry in
    /// `/proc/self/smaps`), or `None` where that file is unavailable.
    fn vm_flags(addr: usize) -> Option<Vec<String>> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.split_whitespace().map(str::to_string).collect());
            }
        }
        None
    }

    /// `Never` maps without `MADV_HUGEPAGE` (no `hg` flag on the mapping); `Always` asks for
    /// huge pages (the flag is set wherever the kernel has transparent huge pages at all).
    #[test]
    #[cfg_attr(miri, ignore = "reads /proc, which miri's isolation hides")]
    fn huge_pages_setting_reaches_the_kernel() {
        let never = Region::new_zeroed(2 * HUGE_PAGE, HugePages::Never).unwrap();
        let always = Region::new_zeroed(2 * HUGE_PAGE, HugePages::Always).unwrap();
        assert!(!never.huge_pages_requested());
        assert!(always.huge_pages_requested());
        assert_eq!(HugePages::default(), HugePages::Auto);
        let Some(never_flags) = vm_flags(never.as_ptr() as usize) else {
            return; // No /proc/self/smaps: nothing more is observable.
        };
        assert!(!never_flags.iter().any(|f| f == "hg"), "{never_flags:?}");
        let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
        if cfg!(target_os = "linux") && thp {
            let always_flags = vm_flags(always.as_ptr() as usize).unwrap();
            assert!(always_flags.iter().any(|f| f == "hg"), "{always_flags:?}");
        }
    }
}
