//! Commands: ranges, offsets, 2-D shapes and launches that do not fit, and buffers of another scheduler.

use super::*;

#[test]
fn a_host_range_outside_its_host_buffer_is_invalid_command() {
    let s = sched(1, 1);
    let host = s.alloc_host::<u32>(100).unwrap();
    let dev = s.alloc::<u32>(1000).unwrap();
    let e = s.task(1, 1).download(&dev, 0, &host, 90..120).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["90..120", "0..100"]);
    let e = s.task(2, 1).readback(&host, 50..=100, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Readback, &["50..101", "0..100"]);
    let e = s.task(3, 1).callback_writing(&host, 0..101, |_, _| Ok(())).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Cpu, &["0..101"]);
    let e = s.task(4, 1).callback_reading(&host, 7..7, |_, _| Ok(())).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Cpu, &["7..7"]);
    // The command index is the bad command's position; the first error is kept.
    let e = s
        .task(5, 1)
        .download(&dev, 0, &host, 0..10)
        .readback(&host, 0..10, &dev, 0)
        .download(&dev, 0, &host, 99..200)
        .download(&dev, 5000, &host, 0..1)
        .submit()
        .unwrap_err();
    assert_invalid_command(e, 5, 2, Stage::Download, &["99..200"]);
}

#[test]
fn a_copy_larger_than_its_device_buffer_is_invalid_command() {
    let s = sched(1, 2);
    let host = s.alloc_host::<u32>(1000).unwrap();
    let dev = s.alloc::<u32>(100).unwrap();
    let e = s.task(1, 1).download(&dev, 0, &host, 0..200).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["200", "100"]);
    // Fits in size, but not at that offset: 60 + 50 = 110 > 100.
    let e = s.task(2, 1).download(&dev, 60, &host, 0..50).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Download, &["110", "100"]);
    let e = s.task(3, 1).readback(&host, 0..150, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Readback, &["150", "100"]);
    // Nothing was submitted, so the ids are free and nothing is outstanding.
    s.task(1, 1).download(&dev, 0, &host, 0..100).submit().unwrap();
    s.synchronize().unwrap();
}

#[test]
fn odd_ranges_and_offsets_are_invalid_command() {
    let s = sched(1, 1);
    let host = s.alloc_host::<u32>(100).unwrap();
    let dev = s.alloc::<u32>(100).unwrap();
    #[allow(clippy::reversed_empty_ranges)]
    let e = s.task(1, 1).download(&dev, 0, &host, 10..5).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["10..5", "0..100"]);
    let e = s.task(2, 1).readback(&host, ..=usize::MAX, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Readback, &["overflows"]);
    let e =
        s.task(3, 1).download(&dev, 0, &host, (Bound::Excluded(usize::MAX), Bound::Unbounded)).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Download, &["overflows"]);
    // An empty range is an empty copy.
    let e = s.task(4, 1).download(&dev, 0, &host, 5..5).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Download, &["empty copy", "width 0"]);
    // A device offset whose end overflows.
    let e = s.task(5, 1).readback(&host, 0..10, &dev, usize::MAX).submit().unwrap_err();
    assert_invalid_command(e, 5, 0, Stage::Readback, &["overflow"]);
    let e = s.task(6, 1).readback(&host, 0..10, &dev, 91).submit().unwrap_err();
    assert_invalid_command(e, 6, 0, Stage::Readback, &["101", "100"]);
    // A 2-D copy of no rows.
    let none = Copy2d { host_offset: 0, host_pitch: 10, dev_offset: 0, dev_pitch: 10, width: 10, height: 0 };
    let e = s.task(7, 1).readback_2d(&host, &dev, none).submit().unwrap_err();
    assert_invalid_command(e, 7, 0, Stage::Readback, &["empty copy", "height 0"]);
    // Nothing was submitted.
    assert_eq!(s.synchronize().unwrap().tasks, 0);
}

#[test]
fn bad_2d_copies_are_invalid_command() {
    let s = sched(1, 1);
    let host = s.alloc_host::<u32>(1000).unwrap();
    let dev = s.alloc::<u32>(1000).unwrap();
    let ok = Copy2d { host_offset: 0, host_pitch: 100, dev_offset: 0, dev_pitch: 50, width: 50, height: 10 };
    // Pitch smaller than the width, on either side.
    let e = s.task(1, 1).download_2d(&dev, &host, Copy2d { host_pitch: 40, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["pitch", "40", "50"]);
    let e = s.task(2, 1).readback_2d(&host, &dev, Copy2d { dev_pitch: 49, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Readback, &["pitch", "49", "50"]);
    // 11 rows of pitch 100 end at element 10 * 100 + 50 = 1050 > 1000.
    let e = s.task(3, 1).download_2d(&dev, &host, Copy2d { height: 11, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Download, &["1050", "1000"]);
    // The device side: offset 600 + 9 * 50 + 50 = 1100 > 1000.
    let e = s.task(4, 1).readback_2d(&host, &dev, Copy2d { dev_offset: 600, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Readback, &["1100", "1000"]);
    let e = s.task(5, 1).download_2d(&dev, &host, Copy2d { width: 0, ..ok }).submit().unwrap_err();
    assert_invalid_command(e, 5, 0, Stage::Download, &["empty"]);
    // An overflowing extent is refused, not wrapped.
    let huge = Copy2d { host_pitch: usize::MAX / 2, height: 3, ..ok };
    let e = s.task(6, 1).download_2d(&dev, &host, huge).submit().unwrap_err();
    assert_invalid_command(e, 6, 0, Stage::Download, &["overflow"]);
    // The valid shape runs.
    s.task(7, 1).download_2d(&dev, &host, ok).readback_2d(&host, &dev, ok).submit().unwrap();
    s.synchronize().unwrap();
}

/// In a one-row copy the pitch is never used, but its size in bytes is computed.
#[test]
fn a_2d_pitch_whose_bytes_overflow_is_invalid_command() {
    let s = sched(1, 1);
    let mut host = s.alloc_host::<u32>(100).unwrap();
    host.write().iter_mut().enumerate().for_each(|(i, x)| *x = i as u32);
    let dev = s.alloc::<u32>(100).unwrap();
    let out = s.alloc_host::<u32>(100).unwrap();
    let row =
        Copy2d { host_offset: 0, host_pitch: usize::MAX, dev_offset: 0, dev_pitch: usize::MAX, width: 10, height: 1 };
    let e = s.task(1, 1).download_2d(&dev, &host, row).readback(&out, 0..10, &dev, 0).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["pitch", &usize::MAX.to_string()]);
}

#[test]
fn a_launch_with_mismatched_arguments_is_invalid_command() {
    let s = sched(1, 1);
    let a = s.alloc::<u32>(16).unwrap();
    let k = s.register_kernel(affine_kernel()).unwrap();
    let args4 = [Arg::buffer(&a), Arg::buffer(&a), Arg::u32(16), Arg::u32(1)];
    let e = s.task(1, 1).launch(&k, 1, 32, 0, &args4).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Kernel, &["affine", "expected", "got"]);
    let wrong_kind = [Arg::buffer(&a), Arg::buffer(&a), Arg::f32(16.0), Arg::u32(1), Arg::u32(2)];
    let e = s.task(2, 1).launch(&k, 1, 32, 0, &wrong_kind).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Kernel, &["F32"]);
    let good = [Arg::buffer(&a), Arg::buffer(&a), Arg::u32(16), Arg::u32(1), Arg::u32(2)];
    let e = s.task(3, 1).launch(&k, 0, 32, 0, &good).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Kernel, &["zero dimension"]);
    let e = s.task(4, 1).launch(&k, 1, (32, 32, 2), 0, &good).submit().unwrap_err();
    assert_invalid_command(e, 4, 0, Stage::Kernel, &["2048", "1024"]);
}

#[test]
fn a_block_whose_thread_count_overflows_is_invalid_command() {
    let s = sched(1, 1);
    let k = s.register_kernel(Kernel::new("none", "").cpu_twin(|_| Ok(()))).unwrap();
    let e = s.task(1, 1).launch(&k, 1, (u32::MAX, u32::MAX, u32::MAX), 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Kernel, &["1024"]);
}

/// CUDA refuses a grid y or z above 65535, a grid x above 2^31 − 1, and a block z above
/// 64 (every GPU since compute capability 3.0). Checked when the command is added, a
/// launch fails the same way on both backends instead of failing on CUDA at dispatch.
#[test]
fn a_launch_beyond_cuda_limits_is_invalid_command() {
    let s = sched(1, 1);
    let k = s.register_kernel(Kernel::new("none", "").cpu_twin(|_| Ok(()))).unwrap();
    let e = s.task(1, 1).launch(&k, (1, 65536), 32, 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Kernel, &["65536", "65535"]);
    let e = s.task(2, 1).launch(&k, 1u32 << 31, 32, 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Kernel, &["2147483648"]);
    let e = s.task(3, 1).launch(&k, 1, (1, 1, 65), 0, &[]).submit().unwrap_err();
    assert_invalid_command(e, 3, 0, Stage::Kernel, &["65", "64"]);
}

#[test]
fn buffers_and_kernels_of_another_scheduler_are_invalid_command() {
    let (s1, s2) = (sched(1, 1), sched(1, 1));
    let host = s1.alloc_host::<u32>(8).unwrap();
    let foreign = s2.alloc::<u32>(8).unwrap();
    let k2 = s2.register_kernel(mix_kernel()).unwrap();
    let e = s1.task(1, 1).download(&foreign, 0, &host, ..).submit().unwrap_err();
    assert_invalid_command(e, 1, 0, Stage::Download, &["another scheduler"]);
    let e =
        s1.task(2, 1).launch(&k2, 1, 8, 0, &[Arg::buffer(&foreign), Arg::u32(8), Arg::u32(1)]).submit().unwrap_err();
    assert_invalid_command(e, 2, 0, Stage::Kernel, &["another scheduler"]);
}
