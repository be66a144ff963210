//! The hand-pipelined, in-order search (the alignment application's baseline): the same five stages and
//! the same kernel launches as [`crate::search`] with one query (with several, a launch
//! a query: no query pairs, as `--query-pairs no`), written as a CUDA programmer would
//! without chariot, on [`chariot_inorder::in_order`]. R reader threads read and pack
//! chunks in file order into S + R pinned slots; the main thread issues chunk i's
//! download, launches and readback on stream i mod S and, before reusing the stream,
//! waits for its previous chunk and writes that chunk's results itself.

use crate::db::DbIndex;
use crate::hits::Hit;
use crate::matrix::Matrix;
use crate::search::{self, Options, Profiles, Query, Sizes, SlotData, Writer};
use crate::sw::{self, Role};
use chariot::kernel::LaunchShape;
use chariot::sim::SimProfile;
use chariot::Backend;
use chariot_inorder::{self as baseline, DeviceArg, InOrderDevice, InOrderLaunch, InOrderPlan, Prepared};
use std::sync::Arc;
use std::time::Duration;

/// What a hand-pipelined search produced.
#[derive(Debug)]
pub struct HandOutcome {
    /// Best hits per query, best first.
    pub hits: Vec<Vec<Hit>>,
    /// Wall time from the start of the first chunk's read to the end of the last write.
    pub wall: Duration,
    /// File read: sum of the chunks' times, and their busy time (union), ns.
    pub read_sum_ns: u64,
    /// See `read_sum_ns`.
    pub read_busy_ns: u64,
    /// File write: sum and busy time, ns.
    pub write_sum_ns: u64,
    /// See `write_sum_ns`.
    pub write_busy_ns: u64,
    /// Time the main thread waited for a chunk to be read, ns.
    pub starved_ns: u64,
    /// Time the main thread waited for a stream's previous chunk, ns.
    pub waiting_ns: u64,
    /// Cells computed.
    pub cells: u128,
    /// Digest of every score, as [`search::Outcome::digest`].
    pub digest: u64,
    /// Where it ran.
    pub device: InOrderDevice,
    /// The kernel that ran.
    pub kernel: sw::KernelKind,
    /// Scores the DPX kernel aligned again in 32 bits (see [`search::Outcome::repassed`]).
    pub repassed: u64,
}

impl HandOutcome {
    /// G cell updates per second over the wall time.
    pub fn gcups(&self) -> f64 {
        self.cells as f64 / self.wall.as_secs_f64().max(1e-12) / 1e9
    }
}

/// Where the hand pipeline runs for a chariot backend: CUDA GPU 0, or the kernel's CPU
/// twin in place of the simulator.
pub fn device(backend: &Backend) -> InOrderDevice {
    let cuda = match backend {
        Backend::Cuda => true,
        Backend::Auto => Backend::from_name("auto", SimProfile::instant()).is_ok_and(|b| b == Backend::Cuda),
        // The simulator (`Sim`, `SimWith`).
        _ => false,
    };
    if cuda {
        InOrderDevice::Cuda { ordinal: 0 }
    } else {
        InOrderDevice::CpuTwin
    }
}

/// The architecture of the GPU the hand pipeline runs on (`sim` for the CPU twin), for
/// `--kernel auto`: CUDA GPU `ordinal`'s, asked once a process of a scheduler started on
/// it for that and dropped (before the pipeline's timing starts).
fn device_arch(device: InOrderDevice) -> Result<String, String> {
    static ARCHS: parking_lot::Mutex<Vec<(usize, String)>> = parking_lot::Mutex::new(Vec::new());
    match device {
        InOrderDevice::CpuTwin => Ok("sim".into()),
        InOrderDevice::Cuda { ordinal } => {
            let mut known = ARCHS.lock();
            if let Some((_, arch)) = known.iter().find(|(o, _)| *o == ordinal) {
                return Ok(arch.clone());
            }
            let s = chariot::Scheduler::builder()
                .backend(Backend::Cuda)
                .gpus(ordinal + 1)
                .build()
                .map_err(|e| format!("cannot ask the GPU its architecture: {e}"))?;
            let arch = s.gpu_info().get(ordinal).map(|g| g.arch.clone()).unwrap_or_default();
            known.push((ordinal, arch.clone()));
            Ok(arch)
        }
    }
}

/// Searches `queries` over `index` with the hand pipeline: `opt.streams` streams on one
/// GPU and `readers` file-read threads (`opt.gpus`, `order`, `slots` and `stage_depth`
/// are chariot's and do not apply).
pub fn search(
    index: &DbIndex,
    matrix: &Matrix,
    queries: &[Query],
    opt: &Options,
    readers: usize,
) -> Result<HandOutcome, String> {
    let profiles = Profiles::new(queries, matrix)?;
    let nq = queries.len();
    let device = device(&opt.backend);
    let kind = opt.kernel.resolve(&[device_arch(device)?]).for_gaps(opt.gaps);
    let kernel = sw::kernel(kind, Arc::new(profiles.list.clone()), profiles.offsets.clone(), opt.sim_gcups);
    let size = Sizes::of(index);
    let prof_bytes: Vec<u8> = profiles.bytes.iter().map(|&b| b as u8).collect();
    let plan = InOrderPlan {
        device,
        streams: opt.streams.unwrap_or(4),
        readers,
        chunks: index.chunks.len(),
        input_len: size.packed.next_multiple_of(64),
        output_len: nq * size.nseq,
        scratch_bytes: vec![size.residues * 8],
        constants: vec![&prof_bytes],
    };
    let writer = Writer::open(queries, opt, index.residues)?.counting_repasses(kind, &profiles.list);
    let arg = |r: Role| match r {
        Role::Chunk => DeviceArg::Input,
        Role::Profiles => DeviceArg::Constant(0),
        Role::Scratch => DeviceArg::Scratch(0),
        Role::Scores => DeviceArg::Output,
        Role::U32(v) => DeviceArg::U32(v),
        Role::I32(v) => DeviceArg::I32(v),
        Role::U64(v) => DeviceArg::U64(v),
    };
    let timing = baseline::in_order::<u8, i32, SlotData, _, _>(
        &kernel,
        &plan,
        |i, buf| {
            let info = &index.chunks[i];
            let data = search::read_into(index, info, matrix, buf)?;
            let launches = profiles
                .list
                .iter()
                .enumerate()
                .map(|(q, p)| InOrderLaunch {
                    shape: LaunchShape {
                        grid: p.grid_of(kind, info.nseq).into(),
                        block: sw::BLOCK.into(),
                        shared_bytes: p.shared_bytes(),
                    },
                    args: sw::args(p, q, profiles.offsets[q], info.nseq, info.res_off(), info.residues, opt.gaps)
                        .map(arg)
                        .to_vec(),
                })
                .collect();
            Ok(Prepared { meta: data, input_len: info.packed_bytes(), launches, output_len: nq * info.nseq })
        },
        |i, data, scores| Ok(writer.write(&data, scores, &index.chunks[i])?),
    );
    let timing = match timing {
        Ok(t) => t,
        // Not finished: the writer's output is dropped, which removes its `.partial`
        // and leaves whatever was at the target as it was.
        Err(e) => {
            return Err(format!("hand pipeline: {e}"));
        }
    };
    let (hits, digest) = writer.finish()?;
    let repassed = writer.repassed();
    let sum = |v: &[(u64, u64)]| v.iter().map(|&(a, b)| b - a).sum::<u64>();
    Ok(HandOutcome {
        hits,
        wall: Duration::from_nanos(timing.wall_ns),
        read_sum_ns: sum(&timing.produce),
        read_busy_ns: search::union_ns(timing.produce.clone()),
        write_sum_ns: sum(&timing.consume),
        write_busy_ns: search::union_ns(timing.consume.clone()),
        starved_ns: timing.starved_ns,
        waiting_ns: timing.waiting_ns,
        cells: profiles.cells(index),
        digest,
        device: plan.device,
        kernel: kind,
        repassed,
    })
}
