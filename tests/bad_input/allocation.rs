//! Allocation: empty, overflowing and too-large buffers; device memory per stream slot.

use super::*;

#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(32))]
struct Wide([u8; 32]);

#[test]
fn alloc_of_zero_elements_is_invalid_length() {
    let s = sched(1, 1);
    let e = s.alloc::<u32>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 0, elem_size: 4, .. }), "{e:?}");
    assert!(e.to_string().contains("length 0"), "{e}");
    let e = s.alloc_host::<f64>(0).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { len: 0, elem_size: 8, .. }), "{e:?}");
}

#[test]
fn allocations_whose_size_overflows_are_invalid_length() {
    let s = sched(1, 2);
    for e in [
        s.alloc::<u64>(usize::MAX / 4).unwrap_err(),
        s.alloc_host::<u64>(usize::MAX / 4).unwrap_err(),
        s.alloc::<u8>(isize::MAX as usize + 1).unwrap_err(),
    ] {
        assert!(matches!(e, Error::InvalidLength { .. }), "{e:?}");
        assert!(e.to_string().contains("overflows"), "{e}");
    }
    let e = s.alloc_host::<u8>(isize::MAX as usize + 1).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { elem_size: 1, .. }), "{e:?}");
    // Element types: non-empty and at most 16-byte aligned.
    let e = s.alloc_host::<()>(4).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { elem_size: 0, .. }), "{e:?}");
    assert!(e.to_string().contains("non-empty"), "{e}");
    let e = s.alloc::<Wide>(4).unwrap_err();
    assert!(matches!(e, Error::InvalidLength { elem_size: 32, .. }), "{e:?}");
    assert!(e.to_string().contains("16-byte aligned"), "{e}");
    // Nothing was allocated on the GPU.
    assert_eq!(s.device_memory_in_use(0), Some(0));
}

#[test]
fn a_host_allocation_too_large_for_memory_is_out_of_memory() {
    let s = sched(1, 1);
    // 4 EiB: a valid size (under isize::MAX) that no machine can give.
    let e = s.alloc_host::<u8>(1 << 62).unwrap_err();
    let text = e.to_string();
    match e {
        Error::OutOfMemory { what, bytes, message } => {
            assert_eq!(bytes, 1 << 62);
            assert!(matches!(what, MemoryKind::Host | MemoryKind::PinnedHost), "{what}");
            assert!(!message.is_empty());
            assert!(text.contains(&(1usize << 62).to_string()), "{text}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
}

/// "Too many tasks for memory": device memory goes to virtual buffers, one physical copy
/// per GPU and stream slot, all allocated by `alloc`; tasks hold none of their own. So a
/// buffer that does not fit D·S times is refused at `alloc` with nothing left behind.
#[test]
fn device_memory_for_every_stream_is_allocated_up_front() {
    let s = Scheduler::builder().backend(sim_with_memory(2, 1 << 20)).gpus(2).streams(4).build().unwrap();
    let quarter = s.alloc::<u8>(256 << 10).unwrap();
    assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(1 << 20), Some(1 << 20)));
    let e = s.alloc::<u8>(1).unwrap_err();
    let text = e.to_string();
    match e {
        Error::OutOfMemory { what, bytes, message } => {
            assert_eq!(bytes, 1);
            assert_eq!(what, MemoryKind::Device { gpu: 0 });
            assert!(message.contains("1048576 of 1048576"), "{message}");
            assert!(text.contains("device memory"), "{text}");
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    drop(quarter);
    assert_eq!(s.device_memory_in_use(0), Some(0), "a buffer dropped with no task in flight returns its memory");
    // 300 KiB fits three times in 1 MiB, not four: the fourth copy fails and the three
    // that were made are given back.
    let e = s.alloc::<u8>(300 << 10).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { bytes, .. } if bytes == 300 << 10), "{e:?}");
    assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(0), Some(0)));
    // With fewer streams the same buffer fits.
    let two = Scheduler::builder().backend(sim_with_memory(1, 1 << 20)).streams(2).build().unwrap();
    let fits = two.alloc::<u8>(300 << 10).unwrap();
    assert_eq!(two.device_memory_in_use(0), Some(600 << 10));
    // Dropped with no task in flight: its memory returns at once.
    drop(fits);
    assert_eq!(two.device_memory_in_use(0), Some(0));
}

/// Thousands of tasks through one small buffer on a GPU of 64 KiB: every task runs and
/// the memory in use stays at the buffer's D·S copies.
#[test]
fn many_tasks_need_no_more_device_memory() {
    with_timeout(DEADLINE_S, || {
        let (n, tasks) = (256usize, 2000usize);
        let s = Scheduler::builder().backend(sim_with_memory(2, 64 << 10)).gpus(2).streams(4).build().unwrap();
        let mut host = s.alloc_host::<u32>(n * tasks).unwrap();
        let out = s.alloc_host::<u32>(n * tasks).unwrap();
        host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
        let d = s.alloc::<u32>(n).unwrap();
        let held = 4 * (n as u64 * 4);
        for i in 0..tasks {
            let r = i * n..(i + 1) * n;
            s.task(i as u64, n as u64).download(&d, 0, &host, r.clone()).readback(&out, r, &d, 0).submit().unwrap();
            if i % 500 == 0 {
                assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(held), Some(held)));
            }
        }
        let report = s.synchronize().unwrap();
        assert_eq!(report.tasks, tasks);
        assert!(out.read().iter().enumerate().all(|(i, &x)| x == i as u32));
        assert_eq!((s.device_memory_in_use(0), s.device_memory_in_use(1)), (Some(held), Some(held)));
    });
}

/// A user who allocates 200 KiB and is told "819200 of 1048576 bytes in use" cannot see
/// why: the message must say that the buffer needs a copy per GPU and stream.
#[test]
fn out_of_memory_names_the_copies_per_stream() {
    let s = Scheduler::builder().backend(sim_with_memory(1, 1 << 20)).streams(8).build().unwrap();
    let e = s.alloc::<u8>(200 << 10).unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e:?}");
    assert!(text.contains("1638400") && text.contains("stream"), "{text}");
}

/// The sim backend's memory is real memory: a simulated GPU larger than the machine
/// must refuse what the machine cannot give, as `alloc_host` does.
#[test]
fn a_simulated_allocation_beyond_host_memory_is_out_of_memory() {
    if !is_child() {
        let out = in_child(module_path!(), "a_simulated_allocation_beyond_host_memory_is_out_of_memory", &[]);
        return assert_child_passed(&out, "a 2 EiB simulated allocation");
    }
    let s = Scheduler::builder().backend(sim_with_memory(1, u64::MAX)).streams(1).build().unwrap();
    let e = s.alloc::<u8>(1 << 61).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { bytes, .. } if bytes == 1 << 61), "{e:?}");
    assert_eq!(s.device_memory_in_use(0), Some(0));
}
