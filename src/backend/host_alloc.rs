//! Raw host memory behind a [`crate::HostBuffer`]: page-locked (pinned) on the CUDA
//! backend, an ordinary aligned heap block on the sim backend. Also the sim backend's
//! device memory ([`zeroed_words`]), which is host memory too.
//!
//! Who may touch which bytes when is decided above this layer, by the region claims
//! of `memory::claims`: every slice handed out here is covered by a claim that
//! excludes conflicting access (a user guard, or a task whose commands touch it) for
//! as long as the slice lives. This file only owns the allocation. Writable slices
//! are an `unsafe fn` ([`HostAlloc::bytes_mut`]); code outside `backend/` gets them
//! from [`exclusive::bytes_mut`], which takes the claims' proof (`Exclusive`) instead.

pub(crate) mod exclusive;

use std::alloc::Layout;
use std::ptr::NonNull;

/// How the block was allocated, and so how it is freed.
pub(crate) enum HostKind {
    /// `std::alloc` with this layout.
    Heap(Layout),
    /// Pinned by the driver; the closure frees it (it holds what it needs, the context).
    Pinned(Box<dyn Fn(*mut u8) + Send + Sync>),
}

/// One host allocation, aligned to at least 64 bytes.
pub(crate) struct HostAlloc {
    ptr: NonNull<u8>,
    bytes: usize,
    kind: HostKind,
}

// SAFETY: the block is plain memory owned by this value; concurrent access to its
// bytes is arbitrated by the region claims (see the module comment).
unsafe impl Send for HostAlloc {}
// SAFETY: as above; a shared reference hands out writable slices only through the
// `unsafe` `bytes_mut`, whose callers prove that nothing else touches those bytes.
unsafe impl Sync for HostAlloc {}

/// Why the host gave no memory for a block or a simulated GPU's words.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HostRefusal {
    /// The size and alignment make no layout (the size overflows `isize::MAX`).
    #[error(transparent)]
    Layout(#[from] std::alloc::LayoutError),
    /// The allocator returned null for a block.
    #[error("the allocator returned null")]
    Null,
    /// The words' size overflows what one allocation can hold.
    #[error("{words} 16-byte words are more than an allocation can hold")]
    TooManyWords {
        /// The words asked for.
        words: usize,
    },
    /// The allocator returned null for the words.
    #[error("the host could not give {bytes} bytes")]
    NoMemory {
        /// The bytes asked for.
        bytes: usize,
    },
}

impl HostAlloc {
    /// A zeroed heap block of `bytes` bytes (`bytes` > 0).
    pub(crate) fn heap(bytes: usize) -> Result<Self, HostRefusal> {
        let layout = Layout::from_size_align(bytes, 64)?;
        // SAFETY: the layout has a non-zero size (callers refuse empty buffers).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(ptr).ok_or(HostRefusal::Null)?;
        Ok(HostAlloc { ptr, bytes, kind: HostKind::Heap(layout) })
    }

    /// Wraps a pinned block the CUDA backend allocated and zeroed.
    pub(crate) fn pinned(ptr: NonNull<u8>, bytes: usize, free: Box<dyn Fn(*mut u8) + Send + Sync>) -> Self {
        HostAlloc { ptr, bytes, kind: HostKind::Pinned(free) }
    }

    /// Whether the block is page-locked.
    pub(crate) fn is_pinned(&self) -> bool {
        matches!(self.kind, HostKind::Pinned(_))
    }

    /// Base address, for DMA by the driver.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The bytes `start..end`, read-only. The caller holds a claim on them that
    /// excludes writers for the slice's life.
    pub(crate) fn bytes(&self, start: usize, end: usize) -> &[u8] {
        assert!(start <= end && end <= self.bytes, "host range {start}..{end} outside {} bytes", self.bytes);
        // SAFETY: in bounds (asserted); no writer overlaps while the caller's claim lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(start), end - start) }
    }

    /// The bytes `start..end`, writable, through a shared reference (many threads
    /// write disjoint parts of one buffer at once).
    ///
    /// # Safety
    /// For as long as the returned slice lives (`'a`, the caller's choice, as with
    /// `slice::from_raw_parts_mut`; not tied to `&self`, which would make a `&mut` from a
    /// `&`):
    /// - the allocation lives (`self` is not dropped), and
    /// - nothing else reads or writes any of its bytes: no other slice from
    ///   [`bytes`](Self::bytes) or `bytes_mut` that shares a byte with it, and no copy by
    ///   the driver to or from them.
    ///
    /// The region claims of `memory::claims` establish the second: outside `backend/`,
    /// call [`exclusive::bytes_mut`], which takes their proof (`memory::claims::Exclusive`)
    /// and ties the slice to the proof's lifetime.
    ///
    /// # Panics
    /// If `start..end` is not a range within the block (checked before any access).
    pub(crate) unsafe fn bytes_mut<'a>(&self, start: usize, end: usize) -> &'a mut [u8] {
        assert!(start <= end && end <= self.bytes, "host range {start}..{end} outside {} bytes", self.bytes);
        // SAFETY: in bounds (asserted); the caller guarantees that the block outlives the
        // slice and that nothing aliases it (see `# Safety`).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(start), end - start) }
    }
}

/// `words` zeroed 16-byte words (a simulated GPU's memory), or the allocator's refusal.
///
/// `vec![0u128; words]` aborts the process when the host cannot give the memory; this
/// returns an error instead. Like `vec!`, it asks the allocator for zeroed memory
/// (`calloc`), so pages nothing touches (timing-only runs) cost no host memory.
pub(crate) fn zeroed_words(words: usize) -> Result<Vec<u128>, HostRefusal> {
    if words == 0 {
        return Ok(Vec::new());
    }
    let layout = Layout::array::<u128>(words).map_err(|_| HostRefusal::TooManyWords { words })?;
    // SAFETY: the layout has a non-zero size (`words` > 0).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<u128>();
    if ptr.is_null() {
        return Err(HostRefusal::NoMemory { bytes: layout.size() });
    }
    // SAFETY: `ptr` comes from the global allocator, which `Vec` uses, with the layout
    // of `words` u128s (size and alignment as `Vec` computes them); all `words` are
    // initialised, as zero is a valid u128; the Vec owns the block from here on.
    Ok(unsafe { Vec::from_raw_parts(ptr, words, words) })
}

impl Drop for HostAlloc {
    fn drop(&mut self) {
        match &self.kind {
            // SAFETY: allocated in `heap` with exactly this layout, freed once.
            HostKind::Heap(layout) => unsafe { std::alloc::dealloc(self.ptr.as_ptr(), *layout) },
            HostKind::Pinned(free) => free(self.ptr.as_ptr()),
        }
    }
}

impl std::fmt::Debug for HostAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostAlloc").field("bytes", &self.bytes).field("pinned", &self.is_pinned()).finish()
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    // Asks the allocator for exabytes: Miri reports the request instead of refusing it.
    #[cfg_attr(miri, ignore)]
    fn zeroed_words_are_zero_or_refused() {
        let words = zeroed_words(1000).unwrap();
        assert_eq!(words.len(), 1000);
        assert!(words.iter().all(|&w| w == 0));
        assert!(zeroed_words(0).unwrap().is_empty());
        // 2 EiB: more than any host has; an error, not an abort.
        let e = zeroed_words(1 << 57).unwrap_err().to_string();
        assert!(e.contains(&(1u64 << 61).to_string()), "{e}");
        assert!(zeroed_words(usize::MAX).is_err());
    }
}
