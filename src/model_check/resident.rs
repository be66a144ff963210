//! Resident data's shared state under concurrent dispatchers: a fetch that
//! copies from another GPU's copy while that GPU evicts copies to make room; an
//! eviction's write-back while another GPU writes the piece; two GPUs evicting their
//! copies of the same piece at once.
//!
//! Buffer A's one piece is modified on GPU 1 (the only valid copy). Dispatcher 0 binds A
//! and fetches the piece; dispatcher 1, meanwhile, binds buffer B on a GPU 1 that holds
//! one copy only, so it must evict A's copy there, writing the piece back to A's host
//! shadow first. Whatever the interleaving: the fetch never reads a copy that has been
//! freed (the plan counts the source as used, and eviction skips used copies), the
//! piece arrives on GPU 0 with its value (from GPU 1's copy, or from the shadow if the
//! eviction came first), and B gets its copy once the fetch has let go of A's.

use super::{pct, random, spawn};
use crate::backend::device::PhysBuf;
use crate::ext::resident::memory::{Plan, ResidentInner, ResidentMemory, Source};
use crate::ids::TaskId;
use crate::memory::{FreeDevice, Graveyard};
use crate::sync::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

const BYTES: usize = 16;
const VALUE: u8 = 0x5a;

/// Model device memory: live copies by id, with their bytes; GPU 1 holds one copy.
#[derive(Debug, Default)]
struct Memory {
    live: Mutex<HashMap<u64, (usize, Vec<u8>)>>,
    next: Mutex<u64>,
    /// Every GPU holds one copy (else GPU 1 alone does).
    one_copy: Mutex<bool>,
}

impl Memory {
    fn bytes(&self, buf: &PhysBuf) -> Option<Vec<u8>> {
        let PhysBuf::Cuda { ptr, .. } = buf else { return None };
        self.live.lock().get(ptr).map(|(_, b)| b.clone())
    }

    fn write(&self, buf: &PhysBuf, bytes: &[u8]) {
        let PhysBuf::Cuda { ptr, .. } = buf else { return };
        if let Some((_, b)) = self.live.lock().get_mut(ptr) {
            b.copy_from_slice(bytes);
        }
    }
}

impl ResidentMemory for Memory {
    fn alloc_copy(&self, gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
        let mut live = self.live.lock();
        let full = *self.one_copy.lock() || gpu == 1;
        if full && live.values().any(|(g, _)| *g == gpu) {
            return Err(crate::Error::OutOfMemory {
                what: crate::error::MemoryKind::Device { gpu: 1 },
                bytes,
                message: "full".into(),
            });
        }
        let id = {
            let mut next = self.next.lock();
            *next += 1;
            *next
        };
        live.insert(id, (gpu, vec![0; bytes]));
        Ok(PhysBuf::Cuda { gpu, ptr: id })
    }

    fn free_copy(&self, buf: PhysBuf) {
        if let PhysBuf::Cuda { ptr, .. } = buf {
            self.live.lock().remove(&ptr);
        }
    }

    fn read_copy(&self, buf: &PhysBuf, offset: usize, out: &mut [u8]) -> Result<(), crate::seam::ReadBackFailure> {
        let b = self.bytes(buf).ok_or(crate::seam::ReadBackFailure::Freed)?;
        out.copy_from_slice(&b[offset..offset + out.len()]);
        Ok(())
    }
}

impl FreeDevice for Memory {
    fn free_device(&self, bufs: Vec<PhysBuf>) {
        bufs.into_iter().for_each(|b| self.free_copy(b));
    }
}

/// Model memory (`one_copy`: every GPU holds one copy, else GPU 1 alone does) and
/// `count` resident buffers of one piece on two GPUs.
fn setup(one_copy: bool, count: usize) -> (Arc<Memory>, Vec<Arc<ResidentInner>>) {
    let memory = Arc::new(Memory::default());
    *memory.one_copy.lock() = one_copy;
    let graveyard = Graveyard::new(memory.clone());
    let bufs = (0..count)
        .map(|_| Arc::new(ResidentInner::new(0, 2, BYTES, BYTES, memory.clone(), graveyard.clone())))
        .collect();
    (memory, bufs)
}

/// A task on `gpu` wrote `a`'s piece with `value` and ended: modified there, unused.
fn written_on(memory: &Memory, a: &ResidentInner, gpu: usize, value: u8) {
    a.bind(gpu, &Vec::new).expect("an empty GPU");
    memory.write(&a.copy(gpu).expect("bound"), &[value; BYTES]);
    a.ended(gpu, &[0], true, true, TaskId(1));
    a.unbind(gpu);
}

fn fetch_during_eviction() {
    let (memory, bufs) = setup(false, 2);
    let (a, b) = (bufs[0].clone(), bufs[1].clone());
    written_on(&memory, &a, 1, VALUE);

    let all = {
        let (a, b) = (a.clone(), b.clone());
        move || vec![a.clone(), b.clone()]
    };
    let fetcher = {
        let (a, memory, all) = (a.clone(), memory.clone(), all.clone());
        spawn("dispatcher 0".into(), move || {
            a.bind(0, &all).expect("GPU 0 has room");
            let Plan::Copy(parts) = a.plan_fetch(0, &[0]) else { panic!("the piece is not on GPU 0") };
            let from = parts[0].from;
            // The copy, in two steps, so that the eviction can come between them.
            let src = match from {
                Source::Gpu(h) => {
                    let copy = a.copy(h).expect("a planned source keeps its copy");
                    crate::sync::thread::yield_now();
                    memory.bytes(&copy).expect("a planned source copy is never freed while fetched from")
                }
                Source::Host => a.shadow().clone(),
                Source::Zero => panic!("the piece was written"),
            };
            memory.write(&a.copy(0).expect("bound"), &src);
            a.fetched(0, &parts, true);
            let got = memory.bytes(&a.copy(0).expect("bound")).expect("live");
            assert_eq!(got, [VALUE; BYTES], "fetched from {from:?}");
            a.unbind(0);
            from
        })
    };
    let evicter = {
        let (b, all) = (b.clone(), all.clone());
        spawn("dispatcher 1".into(), move || {
            // B needs GPU 1's only slot: it waits (retries) while A's copy is in use.
            loop {
                match b.bind(1, &all) {
                    Ok(()) => return,
                    Err(crate::Error::OutOfMemory { .. }) => crate::sync::thread::yield_now(),
                    Err(e) => panic!("{e}"),
                }
            }
        })
    };
    let from = fetcher.join().expect("dispatcher 0");
    evicter.join().expect("dispatcher 1");
    assert!(matches!(from, Source::Gpu(1) | Source::Host));
    assert!(a.copy(1).is_none() && b.copy(1).is_some(), "A's copy on GPU 1 gave way to B's");
    // The piece is valid on GPU 0 (alone, or with the shadow where the eviction wrote it
    // back), and a shadow, where written, holds the value: nothing was lost.
    assert!(a.msi(0, 0) != 'I');
    assert!(a.shadow().is_empty() || *a.shadow() == vec![VALUE; BYTES]);
}

/// Piece modified on GPU 0 (version 1). GPU 0 evicts it (writing version 1 back) while
/// a task on GPU 1 overwrites it whole (version 2) and ends; then GPU 1 evicts too, and
/// GPU 0 fetches the piece: it must read version 2, whatever the interleaving (the
/// first eviction must not mark the shadow as holding the piece once version 2 exists).
fn write_during_eviction() {
    let (memory, bufs) = setup(true, 3);
    let (a, b, c) = (bufs[0].clone(), bufs[1].clone(), bufs[2].clone());
    written_on(&memory, &a, 0, 1);
    let all = {
        let (a, b, c) = (a.clone(), b.clone(), c.clone());
        move || vec![a.clone(), b.clone(), c.clone()]
    };
    let evicter = {
        let (b, all) = (b.clone(), all.clone());
        spawn("dispatcher 0".into(), move || b.bind(0, &all).expect("A's copy is idle: evicted"))
    };
    let writer = {
        let (a, memory, all) = (a.clone(), memory.clone(), all.clone());
        spawn("dispatcher 1".into(), move || {
            // A whole-piece writer: no fetch, it writes and ends.
            a.bind(1, &all).expect("GPU 1 is empty");
            memory.write(&a.copy(1).expect("bound"), &[2; BYTES]);
            a.ended(1, &[0], true, true, TaskId(2));
            a.unbind(1);
        })
    };
    evicter.join().expect("dispatcher 0");
    writer.join().expect("dispatcher 1");
    // GPU 1 evicts A's copy (C needs the room), then GPU 0 (holding B, idle) reads A.
    c.bind(1, &all).expect("A's copy on GPU 1 is idle: evicted");
    b.unbind(0);
    a.bind(0, &all).expect("B's copy on GPU 0 is idle: evicted");
    let Plan::Copy(parts) = a.plan_fetch(0, &[0]) else { panic!("the piece is not on GPU 0") };
    let src = match parts[0].from {
        Source::Host => a.shadow().clone(),
        Source::Gpu(h) => memory.bytes(&a.copy(h).expect("planned")).expect("live"),
        Source::Zero => panic!("the piece was written"),
    };
    assert_eq!(src, [2; BYTES], "read from {:?}: a stale version", parts[0].from);
}

/// The piece is shared by GPUs 0 and 1 (no other copy); both evict it at once, each to
/// make room for another buffer. It must stay valid somewhere: on a GPU or written back.
fn both_gpus_evict() {
    let (memory, bufs) = setup(true, 3);
    let (a, b, c) = (bufs[0].clone(), bufs[1].clone(), bufs[2].clone());
    written_on(&memory, &a, 0, VALUE);
    a.bind(1, &Vec::new).expect("GPU 1 is empty");
    let Plan::Copy(parts) = a.plan_fetch(1, &[0]) else { panic!("not on GPU 1 yet") };
    memory.write(&a.copy(1).expect("bound"), &[VALUE; BYTES]);
    a.fetched(1, &parts, true);
    a.unbind(1);
    let all = {
        let (a, b, c) = (a.clone(), b.clone(), c.clone());
        move || vec![a.clone(), b.clone(), c.clone()]
    };
    let threads: Vec<_> = [(0, b.clone()), (1, c.clone())]
        .into_iter()
        .map(|(g, other)| {
            let all = all.clone();
            spawn(format!("dispatcher {g}"), move || {
                // Retried while the other GPU's eviction of the same buffer holds it.
                loop {
                    match other.bind(g, &all) {
                        Ok(()) => return,
                        Err(crate::Error::OutOfMemory { .. }) => crate::sync::thread::yield_now(),
                        Err(e) => panic!("{e}"),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("dispatchers");
    }
    match a.plan_fetch(0, &[0]) {
        Plan::Valid => assert_eq!(memory.bytes(&a.copy(0).expect("valid")).expect("live"), [VALUE; BYTES]),
        Plan::Copy(parts) => {
            let src = match parts[0].from {
                Source::Host => a.shadow().clone(),
                Source::Gpu(h) => memory.bytes(&a.copy(h).expect("planned")).expect("live"),
                Source::Zero => panic!("the piece was written"),
            };
            assert_eq!(src, [VALUE; BYTES]);
        }
        other => panic!("the piece was lost: {other:?}"),
    }
}

#[test]
fn resident_write_during_eviction_random() {
    random(3000, write_during_eviction);
}

#[test]
fn resident_write_during_eviction_pct() {
    pct(3000, 3, write_during_eviction);
}

#[test]
fn resident_both_gpus_evict_random() {
    random(3000, both_gpus_evict);
}

#[test]
fn resident_both_gpus_evict_pct() {
    pct(3000, 3, both_gpus_evict);
}

#[test]
fn resident_fetch_during_eviction_random() {
    random(3000, fetch_during_eviction);
}

#[test]
fn resident_fetch_during_eviction_pct() {
    pct(3000, 3, fetch_during_eviction);
}
