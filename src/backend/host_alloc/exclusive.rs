//! Writable host bytes for code outside `backend/`, against a proof instead of a
//! promise: [`bytes_mut`] takes an [`Exclusive`], which only `src/memory` makes, each
//! time from the buffer's region claims (see its doc for the two places).
//!
//! It lives beside [`HostAlloc`](super::HostAlloc) because the call it wraps is
//! `unsafe` and unsafe code stays in `backend/`; it sits in layer 5 with memory (not 1,
//! as its parent) because it names the claims' token (`scripts/ci/check-layers.py`).

use crate::memory::claims::Exclusive;

/// The bytes that `token` proves nothing else touches, writable for the token's life.
/// The token is consumed: one slice per proof.
pub(crate) fn bytes_mut<'a>(token: Exclusive<'a>) -> &'a mut [u8] {
    let (alloc, range) = (token.alloc(), token.range());
    // SAFETY: an `Exclusive` is made only in `src/memory` (its fields and constructor
    // are private to it), under the buffer's claims lock, for bytes that no other claim
    // meets and that no claim can come to meet while its lifetime lasts (a task's own
    // write claim, given back only when the task ends, or a `&mut HostBuffer` borrow;
    // see `Exclusive`'s doc for the two places);
    // taking it by value gives one slice per token. The slice lives for `'a`, for which
    // the token borrows the allocation. The bounds are checked by `bytes_mut`.
    unsafe { alloc.bytes_mut(range.start, range.end) }
}
