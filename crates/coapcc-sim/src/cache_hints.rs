//! Hints to the hardware that never change a result: start loading the cache lines of a
//! record whose event comes soon ([`prefetch`], [`prefetch_bytes`]), and back the large
//! per-client arrays with transparent huge pages ([`advise_huge_pages`]).

/// Ask the CPU to start loading the cache lines of `*r` (a hint; no effect on results).
/// On x86-64 a `prefetcht0`; elsewhere nothing.
#[inline(always)]
pub(crate) fn prefetch<T>(r: &T) {
    prefetch_bytes(r, std::mem::size_of::<T>());
}

/// As [`prefetch`], for the first `n` bytes of `*r` only (at least one line).
#[inline(always)]
pub(crate) fn prefetch_bytes<T>(r: &T, n: usize) {
    let p = r as *const T as *const u8;
    let n = n.max(1);
    // Every line the bytes overlap.
    let first = p as usize & !63;
    let mut line = first;
    while line < p as usize + n {
        prefetch_line(p.wrapping_add(line.wrapping_sub(p as usize)));
        line += 64;
    }
}

#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint that never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Arrays from which [`advise_huge_pages`] asks for huge pages, bytes.
const HUGE_FROM: usize = 4 << 20;

/// Ask the kernel to back the buffer of `v` (its whole capacity) with transparent huge pages
/// where they fit, if it holds at least [`HUGE_FROM`] bytes (a hint, no effect on results;
/// call it before filling `v`, so that the pages are huge from their first touch). A large
/// population's per-client records are reached at random, a few lines per event: with 4 KiB
/// pages nearly every access also misses the TLB. Linux only; elsewhere, or if the kernel
/// says no, nothing.
pub(crate) fn advise_huge_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_FROM {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE);
        let end = (v.as_ptr() as usize + bytes) & !(HUGE - 1);
        if end > start {
            madvise_huge(start, end - start);
        }
    }
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn madvise_huge(start: usize, len: usize) {
    // SAFETY: `[start, start + len)` lies within one live allocation of ours (a vector's
    // buffer); MADV_HUGEPAGE changes how the kernel backs it, never its contents, and
    // failure (no transparent huge pages) is ignored.
    let _ = unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE) };
}
