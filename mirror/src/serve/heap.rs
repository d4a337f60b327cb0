//! Giving the heap that an index build freed back to the system.
//!
//! Building the index parses every manifest whole (a 100 000-file bundle's
//! is 47 MB of JSON and twice that parsed) and then drops it. glibc keeps
//! freed memory for reuse and returns it only from the top of the heap, so
//! without this the mirror's RSS stayed at the build's peak for as long as
//! it ran: a cost of the biggest bundle ever read, not of what is held.
//!
//! Invariant: only called between builds, never on a request's path (a
//! trim walks the whole heap).

/// Returns free heap pages to the system (glibc's `malloc_trim`); does
/// nothing with another allocator.
pub fn give_back_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it takes the
    // allocator's own locks and may be called from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}
