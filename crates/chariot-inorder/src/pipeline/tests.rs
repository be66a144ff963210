//! The in-order pipeline's protocol on its CPU twin, and its setup errors.

use crate::{in_order, DeviceArg, InOrderDevice, InOrderError, InOrderLaunch, InOrderPlan, Prepared};
use chariot::kernel::LaunchShape;
use chariot::{Kernel, Param};

/// out[k] = in[k] * c[0] + n, with `n` a scalar; the scratch buffer counts launches.
fn axpy() -> Kernel {
    Kernel::new(
        "axpy",
        r#"extern "C" __global__ void axpy(const unsigned* in, const unsigned* c, unsigned* out,
            unsigned* scratch, unsigned n) {
            unsigned k = blockIdx.x * blockDim.x + threadIdx.x;
            if (k < n) out[k] = in[k] * c[0] + n;
            if (k == 0) scratch[0] += 1; }"#,
    )
    .params([Param::Buffer, Param::Buffer, Param::Buffer, Param::Buffer, Param::U32])
    .cpu_twin(|a| {
        let n = a.u32(4)? as usize;
        let c = a.buffer::<u32>(1)?[0];
        let input = a.buffer::<u32>(0)?[..n].to_vec();
        for (o, i) in a.buffer_mut::<u32>(2)?[..n].iter_mut().zip(input) {
            *o = i * c + n as u32;
        }
        a.buffer_mut::<u32>(3)?[0] += 1;
        Ok(())
    })
}

fn launch(n: u32) -> InOrderLaunch {
    InOrderLaunch {
        shape: LaunchShape { grid: n.div_ceil(64).max(1).into(), block: 64.into(), shared_bytes: 0 },
        args: vec![
            DeviceArg::Input,
            DeviceArg::Constant(0),
            DeviceArg::Output,
            DeviceArg::Scratch(0),
            DeviceArg::U32(n),
        ],
    }
}

fn plan(device: InOrderDevice, streams: usize, readers: usize, chunks: usize, c: &[u8]) -> InOrderPlan<'_> {
    InOrderPlan {
        device,
        streams,
        readers,
        chunks,
        input_len: 1000,
        output_len: 1000,
        scratch_bytes: vec![4],
        constants: vec![c],
    }
}

/// Chunk i holds i*1000 .. i*1000 + len(i): every output is checked, and chunks are
/// consumed in order exactly once.
fn check_run(device: InOrderDevice, streams: usize, readers: usize, chunks: usize) {
    let three = 3u32.to_le_bytes();
    let k = axpy();
    let len = |i: usize| 1 + (i * 37) % 1000;
    let mut seen = Vec::new();
    let t = in_order::<u32, u32, usize, _, _>(
        &k,
        &plan(device, streams, readers, chunks, &three),
        |i, buf| {
            for (j, x) in buf[..len(i)].iter_mut().enumerate() {
                *x = (i * 1000 + j) as u32;
            }
            Ok(Prepared { meta: i, input_len: len(i), launches: vec![launch(len(i) as u32)], output_len: len(i) })
        },
        |i, meta, out| {
            assert_eq!(i, meta);
            assert_eq!(out.len(), len(i));
            for (j, &o) in out.iter().enumerate() {
                assert_eq!(o, (i * 1000 + j) as u32 * 3 + len(i) as u32, "chunk {i} element {j}");
            }
            seen.push(i);
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(seen, (0..chunks).collect::<Vec<_>>());
    assert_eq!(t.produce.len(), chunks);
    assert!(t.consume.iter().all(|&(a, b)| a <= b && b <= t.wall_ns));
}

#[test]
fn twin_runs_every_chunk_in_order() {
    for (s, r, n) in [(1, 1, 5), (2, 1, 9), (2, 2, 17), (4, 3, 40), (3, 8, 5), (2, 2, 0), (8, 1, 3)] {
        check_run(InOrderDevice::CpuTwin, s, r, n);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_runs_every_chunk_in_order() {
    for (s, r, n) in [(1, 1, 5), (2, 1, 9), (2, 2, 17), (4, 3, 40), (8, 1, 3)] {
        check_run(InOrderDevice::Cuda { ordinal: 0 }, s, r, n);
    }
}

#[test]
fn failures_name_their_chunk_and_stop_the_run() {
    let c = 1u32.to_le_bytes();
    let k = axpy();
    let p = plan(InOrderDevice::CpuTwin, 2, 2, 30, &c);
    let ok = |i: usize| Prepared { meta: i, input_len: 4, launches: vec![launch(4)], output_len: 4 };
    let consumed = std::sync::atomic::AtomicUsize::new(0);
    let count = |_: usize, _: usize, _: &[u32]| {
        consumed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    };
    let e = in_order::<u32, u32, usize, _, _>(
        &k,
        &p,
        |i, _| if i == 7 { Err("bad record".into()) } else { Ok(ok(i)) },
        count,
    )
    .unwrap_err();
    assert!(matches!(&e, InOrderError::Produce { chunk: 7, message } if message == "bad record"), "{e}");
    assert!(consumed.load(std::sync::atomic::Ordering::Relaxed) <= 7);
    let e = in_order::<u32, u32, usize, _, _>(&k, &p, |i, _| if i == 3 { panic!("boom") } else { Ok(ok(i)) }, count)
        .unwrap_err();
    assert!(matches!(&e, InOrderError::Produce { chunk: 3, message } if message.contains("boom")), "{e}");
    let e = in_order::<u32, u32, usize, _, _>(
        &k,
        &p,
        |i, _| Ok(ok(i)),
        |i, _, _| if i == 11 { Err("disk full".into()) } else { Ok(()) },
    )
    .unwrap_err();
    assert!(matches!(&e, InOrderError::Consume { chunk: 11, .. }), "{e}");
    // A chunk that does not fit its slot, or a launch that does not fit the kernel.
    let e =
        in_order::<u32, u32, usize, _, _>(&k, &p, |i, _| Ok(Prepared { input_len: 1001, ..ok(i) }), |_, _, _| Ok(()))
            .unwrap_err();
    assert!(matches!(&e, InOrderError::Produce { chunk: 0, message } if message.contains("fit")), "{e}");
    let mut wrong = launch(4);
    wrong.args[3] = DeviceArg::Scratch(1);
    let e = in_order::<u32, u32, usize, _, _>(
        &k,
        &p,
        |i, _| Ok(Prepared { launches: vec![wrong.clone()], ..ok(i) }),
        |_, _, _| Ok(()),
    )
    .unwrap_err();
    assert!(matches!(&e, InOrderError::Produce { chunk: 0, message } if message.contains("argument 3")), "{e}");
    // The twin's own error comes back as a run failure of its chunk.
    let e = in_order::<u32, u32, usize, _, _>(
        &k,
        &p,
        |i, _| Ok(Prepared { launches: vec![launch(2000)], ..ok(i) }),
        |_, _, _| Ok(()),
    )
    .unwrap_err();
    assert!(matches!(&e, InOrderError::Run { chunk: 0, .. }), "{e}");
}

#[test]
fn plans_are_checked_before_anything_starts() {
    let c = [0u8; 4];
    let k = axpy();
    let mut p = plan(InOrderDevice::CpuTwin, 0, 1, 3, &c);
    let run = |p: &InOrderPlan<'_>, k: &Kernel| {
        in_order::<u32, u32, (), _, _>(k, p, |_, _| panic!("must not run"), |_, _, _| panic!("must not run"))
    };
    assert!(matches!(run(&p, &k), Err(InOrderError::Setup(chariot::Error::InvalidConfig { name: "streams", .. }))));
    p.streams = 2;
    p.readers = 0;
    assert!(matches!(run(&p, &k), Err(InOrderError::Setup(chariot::Error::InvalidConfig { name: "readers", .. }))));
    p.readers = 1;
    p.output_len = 0;
    assert!(matches!(run(&p, &k), Err(InOrderError::Setup(chariot::Error::InvalidConfig { name: "output_len", .. }))));
    p.output_len = 10;
    let no_twin = Kernel::new("axpy", "").params([Param::U32]);
    assert!(matches!(run(&p, &no_twin), Err(InOrderError::Setup(chariot::Error::KernelInvalid { .. }))));
}
