//! Unit tests of resident data's state: dependencies, MSI transitions and fetch plans,
//! eviction with write-back.

use super::*;
use crate::memory::FreeDevice;
use crate::memory::Graveyard;

#[derive(Debug, Default)]
struct Fake {
    cap: usize,
    used: Mutex<usize>,
}
impl ResidentMemory for Fake {
    fn alloc_copy(&self, _gpu: usize, bytes: usize) -> crate::Result<PhysBuf> {
        let mut used = self.used.lock();
        if *used + bytes > self.cap {
            return Err(crate::Error::OutOfMemory {
                what: crate::error::MemoryKind::Device { gpu: 0 },
                bytes,
                message: "full".into(),
            });
        }
        *used += bytes;
        Ok(PhysBuf::Cuda { gpu: 0, ptr: bytes as u64 })
    }
    fn free_copy(&self, buf: PhysBuf) {
        if let PhysBuf::Cuda { ptr, .. } = buf {
            *self.used.lock() -= ptr as usize;
        }
    }
    fn read_copy(&self, _: &PhysBuf, _: usize, out: &mut [u8]) -> Result<(), super::ReadBackFailure> {
        out.fill(7);
        Ok(())
    }
}
impl FreeDevice for Fake {
    fn free_device(&self, _: Vec<PhysBuf>) {}
}

fn buffer(fake: &Arc<Fake>, bytes: usize, piece: usize) -> Arc<ResidentInner> {
    let graveyard = Graveyard::new(fake.clone());
    Arc::new(ResidentInner::new(0, 2, bytes, piece, fake.clone(), graveyard))
}

#[test]
fn dependencies_are_raw_war_and_waw_per_piece() {
    let fake = Arc::new(Fake { cap: 1 << 20, ..Fake::default() });
    let b = buffer(&fake, 400, 100);
    let live = |_: TaskId| true;
    let mut p = crate::ids::Preds::new();
    b.track(TaskId(1), &[0, 1], true, &live, &mut p);
    assert!(p.is_empty());
    b.track(TaskId(2), &[1], false, &live, &mut p);
    assert_eq!(p[..], [TaskId(1)]); // RAW
    p.clear();
    b.track(TaskId(3), &[1, 2], false, &live, &mut p);
    assert_eq!(p[..], [TaskId(1)]); // readers share
    p.clear();
    b.track(TaskId(4), &[1], true, &live, &mut p);
    assert_eq!(p[..], [TaskId(1), TaskId(2), TaskId(3)]); // WAW and WAR
    p.clear();
    b.track(TaskId(5), &[3], true, &live, &mut p);
    assert!(p.is_empty()); // another piece
                           // Ended tasks are no wait.
    b.track(TaskId(6), &[1], false, &|t| t != TaskId(4), &mut p);
    assert!(p.is_empty());
}

#[test]
fn fetches_follow_msi_and_wait_for_each_other() {
    let fake = Arc::new(Fake { cap: 1 << 20, ..Fake::default() });
    let b = buffer(&fake, 300, 100);
    b.bind(0, &Vec::new).unwrap();
    // Fresh: zeros.
    let Plan::Copy(parts) = b.plan_fetch(0, &[0, 1, 2]) else { panic!() };
    assert_eq!(parts, [FetchPart { pieces: 0..3, from: Source::Zero }]);
    assert_eq!(b.plan_fetch(0, &[1]), Plan::Wait);
    b.fetched(0, &parts, true);
    assert_eq!(b.plan_fetch(0, &[0, 1, 2]), Plan::Valid);
    assert_eq!(b.msi(0, 1), 'S'); // zeros are valid "everywhere"
    b.ended(0, &[1], true, true, TaskId(1));
    assert_eq!((b.msi(0, 1), b.msi(1, 1)), ('M', 'I'));
    b.bind(1, &Vec::new).unwrap();
    let Plan::Copy(parts) = b.plan_fetch(1, &[0, 1]) else { panic!() };
    assert_eq!(
        parts,
        [FetchPart { pieces: 0..1, from: Source::Zero }, FetchPart { pieces: 1..2, from: Source::Gpu(0) }]
    );
    b.fetched(1, &parts, true);
    assert_eq!((b.msi(0, 1), b.msi(1, 1)), ('S', 'S'));
    // A failed writer that started leaves its copy invalid; the other stays.
    b.ended(1, &[1], false, true, TaskId(2));
    assert_eq!((b.msi(0, 1), b.msi(1, 1)), ('M', 'I'));
    b.ended(0, &[1], false, true, TaskId(3));
    assert_eq!(b.plan_fetch(1, &[1]), Plan::Lost { piece: 1, by: TaskId(3) });
}

#[test]
fn a_full_gpu_evicts_the_least_recently_used_idle_copy_writing_back_what_only_it_holds() {
    let fake = Arc::new(Fake { cap: 250, ..Fake::default() });
    let a = buffer(&fake, 100, 100);
    let b = buffer(&fake, 100, 100);
    let c = buffer(&fake, 100, 100);
    let all = || vec![a.clone(), b.clone(), c.clone()];
    a.bind(0, &all).unwrap();
    a.ended(0, &[0], true, true, TaskId(1)); // modified on GPU 0 only
    b.bind(0, &all).unwrap();
    // a is idle, b is in use: c's copy evicts a's, writing it back first.
    a.unbind(0);
    c.bind(0, &all).unwrap();
    assert!(a.copy(0).is_none() && b.copy(0).is_some() && c.copy(0).is_some());
    assert_eq!(a.plan_fetch(1, &[0]), Plan::Copy(vec![FetchPart { pieces: 0..1, from: Source::Host }]));
    assert!(a.shadow().iter().all(|&x| x == 7));
    // Nothing idle to evict: the allocation's error stands.
    let d = buffer(&fake, 100, 100);
    assert!(matches!(d.bind(0, &|| vec![b.clone(), c.clone()]), Err(crate::Error::OutOfMemory { .. })));
}
