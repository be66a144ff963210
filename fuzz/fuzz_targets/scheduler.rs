//! The builder, allocation, kernel registration, the task builder's commands, `submit`,
//! the host guards, `synchronize` and `shutdown`, fed arbitrary parameters on the sim
//! backend. Every call must return `Ok` or one of the `Error` variants its documentation
//! names, never panic or hang (run with `-timeout`), and a batch must fail exactly the
//! tasks that had a failing command.
//!
//! Where the documentation says which error an input gets, the target knows it too:
//! `build` gives `InvalidConfig` naming the first parameter out of range (or the sim
//! profile, `backend`, e.g. a `time_scale` outside `0..=1e6`), else `NoSuchGpu` naming the
//! first ordinal missing (`gpus(usize::MAX)` among them), else a scheduler; `submit`
//! gives `InvalidCommand` at the first command the rules of docs/bad-input.md refuse (ranges, copy
//! extents, pitches whose bytes overflow, launch arguments, CUDA's launch limits and
//! thread count), else `EmptyTask`, else `ShutDown`, else `DuplicateTask` for an id taken
//! since the last `synchronize` (ended or not; a submit refused with `HostConflict` frees
//! its id), else `Ok` or `HostConflict` (every task here refuses conflicts rather than
//! running after the task it meets). In a callback, `synchronize`, `shutdown` and a
//! host guard on a range the task claims against it give `WaitInCallback`, and the
//! scheduler goes on.
//!
//! Sizes are kept where one run stays cheap: small buffers, or lengths so large that
//! their size in bytes overflows (refused before any allocation; an allocation the host
//! cannot give would stop libFuzzer at its malloc limit, so `OutOfMemory` comes only
//! from the sim's small GPU memories); GPUs and streams up to a little past what the
//! builder accepts, ordinals and thresholds small or near `usize::MAX` (the executioner
//! threads are capped at D·S). Callbacks fail by returning an error, never by panicking:
//! libfuzzer-sys aborts on any panic, caught or not (tests/bad_input/callbacks.rs covers panicking
//! callbacks); an assertion in a callback stops the run, as one anywhere else does.
//!
//! Why this file is long: one fuzz target is one program whose parts only make sense
//! together: the input grammar, the oracle of what each call must return, and the check
//! of each batch.

#![no_main]

use arbitrary::Arbitrary;
use chariot::{Arg, Backend, Copy2d, DeviceBuffer, Error, HostBuffer, Kernel, Order, Param, Scheduler, Stage, TaskBuilder, TaskId};
use chariot::callback::Resource;
use chariot::error::ConflictHolder;
use chariot::kernel::KernelHandle;
use chariot::sim::SimProfile;
use libfuzzer_sys::fuzz_target;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex, Weak};

#[derive(Arbitrary, Debug)]
struct Input {
    config: Config,
    host_len: Len,
    dev_len: Len,
    ops: Vec<Op>,
}

#[derive(Arbitrary, Debug)]
struct Config {
    gpus: Gpus,
    streams: u8,
    depth: u8,
    order: u8,
    local: Option<[Count; 4]>,
    global: Option<[Count; 4]>,
    buses: Option<Count>,
    cores: Option<Count>,
    pin: bool,
    sim_gpus: u8,
    copy_engines: u8,
    concurrent_kernels: bool,
    sim_buses: Option<u8>,
    memory_kib: u16,
    execute: bool,
    /// With 255, a `time_scale` outside `0..=1e6` made of the number; else 0, the
    /// instant profile's.
    time_scale: (u8, f64),
}

#[derive(Arbitrary, Debug)]
enum Gpus {
    Count(u8),
    /// `usize::MAX - k`: refused before any list is built.
    Huge(u8),
    List(Vec<u8>),
}

/// A threshold, bus or core count: small (0 among them), or near `usize::MAX`.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Count {
    Small(u8),
    Huge(u8),
}

impl Count {
    fn get(self) -> usize {
        match self {
            Count::Small(n) => (n as usize + 1) % 17,
            Count::Huge(k) => usize::MAX - k as usize,
        }
    }
}

/// A GPU ordinal of a list: up to 10, or near `usize::MAX` for the bytes 250..=255.
/// (Elsewhere, too, a zero byte, what `arbitrary` gives once the input runs out, maps
/// to a value the builder accepts.)
fn ordinal(g: u8) -> usize {
    if g < 250 {
        g as usize % 11
    } else {
        usize::MAX - (255 - g) as usize
    }
}

/// What the builder is given, from `Config`.
struct Params {
    gpus: GpuSel,
    streams: usize,
    depth: usize,
    order: Order,
    local: Option<[usize; 4]>,
    global: Option<[usize; 4]>,
    buses: Option<usize>,
    cores: Option<usize>,
    profile: SimProfile,
}

enum GpuSel {
    Count(usize),
    List(Vec<usize>),
}

impl Params {
    fn new(c: &Config) -> Params {
        // 1..=max, or 0 for one byte in 16.
        let rarely_zero = |x: u8, max: usize| match x % 16 {
            15 => 0,
            k => 1 + k as usize % max,
        };
        let mut profile =
            SimProfile::instant()
                .with_gpus(rarely_zero(c.sim_gpus, 9))
                .with_copy_engines(rarely_zero(c.copy_engines, 3) as u32);
        profile.concurrent_kernels = c.concurrent_kernels;
        profile.buses = c.sim_buses.map(|b| rarely_zero(b, 3));
        profile.memory_bytes = (c.memory_kib as u64 % 1024) << 10;
        profile.execute = c.execute;
        if let (255, x) = c.time_scale {
            // Scales in range are moved past it: a run at real time would be slow.
            let max = SimProfile::MAX_TIME_SCALE;
            profile.time_scale = if (0.0..=max).contains(&x) { x + 2.0 * max } else { x };
        }
        Params {
            gpus: match &c.gpus {
                Gpus::Count(n) => GpuSel::Count((*n as usize + 1) % 11),
                Gpus::Huge(k) => GpuSel::Count(usize::MAX - *k as usize),
                Gpus::List(v) => GpuSel::List(v.iter().map(|&g| ordinal(g)).collect()),
            },
            streams: (c.streams as usize + 1) % 70,
            depth: (c.depth as usize + 1) % 18,
            order: [Order::Fcfs, Order::LargestFirst, Order::SmallestFirst][c.order as usize % 3],
            local: c.local.map(|v| v.map(Count::get)),
            global: c.global.map(|v| v.map(Count::get)),
            buses: c.buses.map(Count::get),
            cores: c.cores.map(Count::get),
            profile,
        }
    }

    fn builder(&self, pin: bool) -> chariot::Builder {
        let mut b = Scheduler::builder()
            .backend(Backend::SimWith(self.profile.clone()))
            .streams(self.streams)
            .stage_depth(self.depth)
            .order(self.order)
            .pin_dispatchers(pin);
        b = match &self.gpus {
            GpuSel::Count(n) => b.gpus(*n),
            GpuSel::List(v) => b.gpu_list(v.iter().copied()),
        };
        if let Some(l) = self.local {
            b = b.local_thresholds(l);
        }
        if let Some(g) = self.global {
            b = b.global_thresholds(g);
        }
        if let Some(x) = self.buses {
            b = b.buses(x);
        }
        if let Some(x) = self.cores {
            b = b.cpu_cores(x);
        }
        b
    }

    /// What `build` must give: the name of the first parameter out of range
    /// (`InvalidConfig`), the first missing ordinal (`NoSuchGpu`), or a scheduler.
    fn expect(&self) -> Built {
        let bad = |name| Built::Invalid(name);
        match &self.gpus {
            GpuSel::Count(0) => return bad("gpus"),
            GpuSel::List(v) if v.is_empty() || v.iter().collect::<HashSet<_>>().len() != v.len() => {
                return bad("gpu_list")
            }
            _ => {}
        }
        if !(1..=64).contains(&self.streams) {
            return bad("streams");
        }
        if !(1..=16).contains(&self.depth) {
            return bad("stage_depth");
        }
        if self.local.is_some_and(|v| v.contains(&0)) {
            return bad("local_thresholds");
        }
        if self.global.is_some_and(|v| v.contains(&0)) {
            return bad("global_thresholds");
        }
        if self.buses == Some(0) {
            return bad("buses");
        }
        if self.cores == Some(0) {
            return bad("cpu_cores");
        }
        let p = &self.profile;
        if !(0.0..=SimProfile::MAX_TIME_SCALE).contains(&p.time_scale) || p.copy_engines == 0 || p.buses == Some(0) {
            return bad("backend");
        }
        let available = p.gpus;
        match &self.gpus {
            GpuSel::Count(n) if *n > available => Built::NoGpu(available),
            GpuSel::List(v) => v.iter().find(|&&o| o >= available).map_or(Built::Ok, |&o| Built::NoGpu(o)),
            _ => Built::Ok,
        }
    }
}

#[derive(Debug, PartialEq)]
enum Built {
    Ok,
    Invalid(&'static str),
    NoGpu(usize),
}

/// A buffer length: small, or so large that its size in bytes overflows.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Len {
    Small(u16),
    Overflowing(u8),
}

impl Len {
    fn get(self) -> usize {
        match self {
            Len::Small(n) => n as usize % 4097,
            Len::Overflowing(k) => usize::MAX - k as usize,
        }
    }
}

/// An index or count: usually within the buffers (up to 4096 elements), sometimes anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Num {
    Small(u16),
    Any(usize),
}

impl Num {
    fn get(self) -> usize {
        match self {
            Num::Small(n) => n as usize % 1024,
            Num::Any(n) => n,
        }
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Range {
    Half(Num, Num),
    Inclusive(Num, Num),
    From(Num),
    To(Num),
    Full,
    ExcludedStart(Num, Num),
}

impl Range {
    fn bounds(self) -> (Bound<usize>, Bound<usize>) {
        use Bound::*;
        match self {
            Range::Half(a, b) => (Included(a.get()), Excluded(b.get())),
            Range::Inclusive(a, b) => (Included(a.get()), Included(b.get())),
            Range::From(a) => (Included(a.get()), Unbounded),
            Range::To(b) => (Unbounded, Excluded(b.get())),
            Range::Full => (Unbounded, Unbounded),
            Range::ExcludedStart(a, b) => (Excluded(a.get()), Excluded(b.get())),
        }
    }

    /// The elements it names in a buffer of `len`, if it fits (the rule of docs/bad-input.md:
    /// not reversed, not past the end, no bound that overflows).
    fn resolve(self, len: usize) -> Option<std::ops::Range<usize>> {
        let (start, end) = self.bounds();
        let start = match start {
            Bound::Included(s) => s,
            Bound::Excluded(s) => s.checked_add(1)?,
            Bound::Unbounded => 0,
        };
        let end = match end {
            Bound::Included(e) => e.checked_add(1)?,
            Bound::Excluded(e) => e,
            Bound::Unbounded => len,
        };
        (start <= end && end <= len).then_some(start..end)
    }
}

#[derive(Arbitrary, Debug, Clone, Copy)]
struct Shape {
    host_offset: Num,
    host_pitch: Num,
    dev_offset: Num,
    dev_pitch: Num,
    width: Num,
    height: Num,
}

impl Shape {
    fn get(self) -> Copy2d {
        Copy2d {
            host_offset: self.host_offset.get(),
            host_pitch: self.host_pitch.get(),
            dev_offset: self.dev_offset.get(),
            dev_pitch: self.dev_pitch.get(),
            width: self.width.get(),
            height: self.height.get(),
        }
    }
}

/// Whether `submit` takes a copy of `s` between buffers of these lengths (of u32): not
/// empty, pitches at least the width, both extents inside their buffers without
/// overflow, and every offset, pitch and width expressible in bytes.
fn copy_fits(s: Copy2d, host_len: usize, dev_len: usize) -> bool {
    let extent = |offset: usize, pitch: usize| {
        (s.height - 1).checked_mul(pitch).and_then(|r| r.checked_add(offset)).and_then(|r| r.checked_add(s.width))
    };
    s.width > 0
        && s.height > 0
        && s.host_pitch >= s.width
        && s.dev_pitch >= s.width
        && extent(s.host_offset, s.host_pitch).is_some_and(|e| e <= host_len)
        && extent(s.dev_offset, s.dev_pitch).is_some_and(|e| e <= dev_len)
        && [s.host_offset, s.host_pitch, s.dev_offset, s.dev_pitch, s.width].iter().all(|x| x.checked_mul(4).is_some())
}

/// A 1-D copy of `range` of the host buffer at `offset` of the device buffer, as the
/// task builder turns it into a 2-D one.
fn linear(range: Range, offset: usize, host_len: usize) -> Option<Copy2d> {
    let r = range.resolve(host_len)?;
    let n = r.end - r.start;
    Some(Copy2d { host_offset: r.start, host_pitch: n, dev_offset: offset, dev_pitch: n, width: n, height: 1 })
}

/// Launch dimensions: small (each below 256), or anything.
#[derive(Arbitrary, Debug, Clone, Copy)]
enum Dims {
    Small(u8, u8, u8),
    Any(u32, u32, u32),
}

impl Dims {
    fn get(self) -> (u32, u32, u32) {
        match self {
            Dims::Small(x, y, z) => (x as u32, y as u32, z as u32),
            Dims::Any(x, y, z) => (x, y, z),
        }
    }
}

/// Whether CUDA can launch this shape: no zero dimension, grid x below 2^31, grid y and
/// z at most 65535, block x and y at most 1024, block z at most 64, at most 1024 threads.
fn launchable(grid: (u32, u32, u32), block: (u32, u32, u32)) -> bool {
    let nonzero = |(x, y, z): (u32, u32, u32)| x > 0 && y > 0 && z > 0;
    let threads = block.0 as u128 * block.1 as u128 * block.2 as u128;
    nonzero(grid)
        && nonzero(block)
        && grid.0 < 1 << 31
        && grid.1 <= 65_535
        && grid.2 <= 65_535
        && block.0 <= 1024
        && block.1 <= 1024
        && block.2 <= 64
        && threads <= 1024
}

#[derive(Arbitrary, Debug, Clone, Copy, PartialEq)]
enum Outcome {
    Succeed,
    Fail,
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum ArgSpec {
    Buffer(bool),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
}

impl ArgSpec {
    fn param(self) -> Param {
        match self {
            ArgSpec::Buffer(_) => Param::Buffer,
            ArgSpec::I32(_) => Param::I32,
            ArgSpec::U32(_) => Param::U32,
            ArgSpec::I64(_) => Param::I64,
            ArgSpec::U64(_) => Param::U64,
            ArgSpec::F32(_) => Param::F32,
            ArgSpec::F64(_) => Param::F64,
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Cmd {
    Download {
        second: bool,
        offset: Num,
        range: Range,
    },
    Readback {
        range: Range,
        second: bool,
        offset: Num,
    },
    Download2d {
        second: bool,
        shape: Shape,
    },
    Readback2d {
        second: bool,
        shape: Shape,
    },
    Launch {
        kernel: u8,
        grid: Dims,
        block: Dims,
        shared: u32,
        args: Vec<ArgSpec>,
    },
    Cpu(Outcome),
    Gpu(Outcome),
    Reading(Range, Outcome),
    Writing(Range, Outcome),
    /// A CPU (or GPU) callback that calls `synchronize` (or `shutdown`) of its own
    /// scheduler: `WaitInCallback`, and nothing is waited for or shut down.
    Wait {
        shutdown: bool,
        gpu: bool,
        outcome: Outcome,
    },
    /// A callback claiming `claim` of the aside buffer (writing or reading) that takes a
    /// guard on part of that claim, which its own claim is against (a write guard, or a
    /// read guard under a write claim): `WaitInCallback`; or on a range past the buffer
    /// (`outside`): `InvalidLength`.
    GuardIn {
        write_claim: bool,
        write_guard: bool,
        claim: Range,
        at: u16,
        len: u16,
        outside: bool,
        outcome: Outcome,
    },
}

impl Cmd {
    /// Whether the command may fail when it runs, and whether it surely does.
    fn risk(&self) -> (bool, bool) {
        match self {
            Cmd::Launch { .. } => (true, false),
            Cmd::Cpu(o)
            | Cmd::Gpu(o)
            | Cmd::Reading(_, o)
            | Cmd::Writing(_, o)
            | Cmd::Wait { outcome: o, .. }
            | Cmd::GuardIn { outcome: o, .. } => (*o == Outcome::Fail, *o == Outcome::Fail),
            _ => (false, false),
        }
    }

    /// The stage an `InvalidCommand` for it names.
    fn stage(&self) -> Stage {
        match self {
            Cmd::Download { .. } | Cmd::Download2d { .. } => Stage::Download,
            Cmd::Readback { .. } | Cmd::Readback2d { .. } => Stage::Readback,
            Cmd::Launch { .. } | Cmd::Gpu(_) => Stage::Kernel,
            Cmd::Wait { gpu: true, .. } => Stage::Kernel,
            Cmd::Cpu(_) | Cmd::Reading(..) | Cmd::Writing(..) | Cmd::Wait { .. } | Cmd::GuardIn { .. } => Stage::Cpu,
        }
    }

    /// Whether it claims a host region (and so may meet `HostConflict`).
    fn claims(&self) -> bool {
        !matches!(self, Cmd::Launch { .. } | Cmd::Cpu(_) | Cmd::Gpu(_) | Cmd::Wait { .. })
    }
}

#[derive(Arbitrary, Debug)]
struct TaskSpec {
    id: u8,
    granularity: u64,
    commands: Vec<Cmd>,
}

#[derive(Arbitrary, Debug)]
enum Op {
    Submit(TaskSpec),
    /// Submits the tasks while a read guard on the range lives.
    SubmitUnderRead(Range, Vec<TaskSpec>),
    Synchronize,
    Read(Range),
    Write(Range),
    Shutdown,
}

/// The kernels every run registers, and their parameters.
const KERNELS: [&[Param]; 3] = [&[Param::Buffer, Param::U32], &[Param::Buffer, Param::Buffer, Param::U32], &[]];

fn kernels(s: &Scheduler) -> Vec<KernelHandle> {
    // Kernels the sim backend refuses.
    let e = s.register_kernel(Kernel::new("no_twin", "").params([Param::Buffer])).unwrap_err();
    assert!(matches!(e, Error::KernelInvalid { .. }), "{e:?}");
    let e = s.register_kernel(Kernel::new("", "").cpu_twin(|_| Ok(()))).unwrap_err();
    assert!(matches!(e, Error::KernelInvalid { .. }), "{e:?}");
    let twice = Kernel::new("twice", "").params(KERNELS[0].iter().copied()).cpu_twin(|a| {
        let n = a.u32(1)? as usize;
        let x = a.buffer_mut::<u32>(0)?.get_mut(..n).ok_or("n is past the buffer")?;
        x.iter_mut().for_each(|v| *v = v.wrapping_mul(2));
        Ok(())
    });
    let copy = Kernel::new("copy", "").params(KERNELS[1].iter().copied()).cpu_twin(|a| {
        let n = a.u32(2)? as usize;
        let (i, o) = a.in_out::<u32, u32>(0, 1)?;
        let (i, o) = (i.get(..n).ok_or("n is past the input")?, o.get_mut(..n).ok_or("n is past the output")?);
        o.copy_from_slice(i);
        Ok(())
    });
    let none = Kernel::new("none", "").params(KERNELS[2].iter().copied()).cpu_twin(|_| Ok(()));
    [twice, copy, none].into_iter().map(|k| s.register_kernel(k).expect("a kernel with a twin registers")).collect()
}

fn callback_result(o: Outcome) -> Result<(), chariot::BoxError> {
    match o {
        Outcome::Succeed => Ok(()),
        Outcome::Fail => Err("this callback fails".into()),
    }
}

/// Checks what a call made in a callback of task `id` gave: `WaitInCallback` naming the
/// task and the call.
fn assert_refused<T: std::fmt::Debug>(r: chariot::Result<T>, id: TaskId, what: &str) {
    match r {
        Err(Error::WaitInCallback { task, call, reason }) => {
            assert!(
                task == id && call == what && !reason.is_empty(),
                "{what} in a callback of {id}: {task} {call} {reason}"
            )
        }
        r => panic!("{what} in a callback of task {id}: expected WaitInCallback, got {r:?}"),
    }
}

/// Elements of the aside buffer, which only `GuardIn` commands touch.
const ASIDE: usize = 1024;

struct World<'a> {
    s: &'a Scheduler,
    weak: Weak<Scheduler>,
    host: HostBuffer<u32>,
    devs: [DeviceBuffer<u32>; 2],
    kernels: Vec<KernelHandle>,
    /// Shared with callbacks, so that they can take guards on it.
    aside: Arc<Mutex<HostBuffer<u32>>>,
}

impl<'a> World<'a> {
    fn dev_len(&self, second: bool) -> usize {
        self.devs[second as usize].len()
    }

    /// Whether `submit` refuses the command (the rules of docs/bad-input.md).
    fn invalid(&self, c: &Cmd) -> bool {
        let host = self.host.len();
        match c {
            Cmd::Download { second, offset, range } | Cmd::Readback { range, second, offset } => {
                !linear(*range, offset.get(), host).is_some_and(|s| copy_fits(s, host, self.dev_len(*second)))
            }
            Cmd::Download2d { second, shape } | Cmd::Readback2d { second, shape } => {
                !copy_fits(shape.get(), host, self.dev_len(*second))
            }
            Cmd::Launch { kernel, grid, block, args, .. } => {
                let params: Vec<Param> = args.iter().map(|a| a.param()).collect();
                params != KERNELS[*kernel as usize % KERNELS.len()] || !launchable(grid.get(), block.get())
            }
            Cmd::Cpu(_) | Cmd::Gpu(_) | Cmd::Wait { .. } => false,
            Cmd::Reading(r, _) | Cmd::Writing(r, _) => r.resolve(host).is_none_or(|r| r.is_empty()),
            Cmd::GuardIn { claim, .. } => claim.resolve(ASIDE).is_none_or(|r| r.is_empty()),
        }
    }

    fn submit(&self, spec: &TaskSpec, batch: &mut Batch, shut: bool) {
        // Sixteen ids, so that batches reuse them.
        let id = TaskId(spec.id as u64 % 16);
        let mut t = self.s.task(id.0, spec.granularity);
        for c in &spec.commands {
            t = self.add(t, id, c);
        }
        // Conflicts refused, as before task graphs: the oracle fails a batch's
        // tasks by their own commands, and a task run after a failing one would fail with
        // it. Task graphs are checked in tests/graphs.rs.
        let result = t.refuse_conflicts().submit();
        // The order `submit` checks in: commands, emptiness, shutdown, the id, claims.
        if let Some(first) = spec.commands.iter().position(|c| self.invalid(c)) {
            match result {
                Err(Error::InvalidCommand { task, command, stage, message }) => {
                    let want = spec.commands[first].stage();
                    assert!(
                        task == id && command == first && stage == want && !message.is_empty(),
                        "command {first} ({want:?}) of {id}: got {task}, {command} ({stage:?}): {message}"
                    );
                }
                r => {
                    panic!("command {first} of {id} is invalid: expected InvalidCommand, got {r:?}")
                }
            }
            return;
        }
        match result {
            Err(Error::InvalidCommand { command, message, .. }) => {
                panic!("command {command} of {id} ({:?}) was refused: {message}", spec.commands[command])
            }
            Err(Error::EmptyTask { task }) => assert!(task == id && spec.commands.is_empty(), "EmptyTask for {task}"),
            _ if spec.commands.is_empty() => panic!("an empty task got {result:?}"),
            Err(Error::ShutDown) => assert!(shut, "ShutDown before shutdown"),
            _ if shut => panic!("a submit after shutdown got {result:?}"),
            Err(Error::DuplicateTask { task }) => {
                assert!(
                    task == id && batch.tasks.contains_key(&id),
                    "DuplicateTask for {task}, not taken in this batch"
                )
            }
            _ if batch.tasks.contains_key(&id) => {
                panic!("{id}, taken in this batch, was submitted again: {result:?}")
            }
            Ok(got) => {
                assert_eq!(got, id);
                let risky = spec.commands.iter().enumerate().find_map(|(i, c)| {
                    let (may, sure) = c.risk();
                    may.then_some((i, sure))
                });
                batch.tasks.insert(id, (spec.commands.len(), risky));
            }
            Err(Error::HostConflict { task, region, holder, .. }) => {
                assert!(task == id && region.end() > region.start, "{task} {region} {holder}");
                assert!(holder != ConflictHolder::Task(id), "{task} conflicts with itself");
                assert!(spec.commands.iter().any(Cmd::claims), "HostConflict for {id}, which claims nothing");
            }
            Err(e) => panic!("submit: unexpected {e:?}"),
        }
    }

    fn add(&self, t: TaskBuilder<'a>, id: TaskId, c: &Cmd) -> TaskBuilder<'a> {
        let dev = |second: bool| &self.devs[second as usize];
        match c {
            Cmd::Download { second, offset, range } => {
                t.download(dev(*second), offset.get(), &self.host, range.bounds())
            }
            Cmd::Readback { range, second, offset } => {
                t.readback(&self.host, range.bounds(), dev(*second), offset.get())
            }
            Cmd::Download2d { second, shape } => t.download_2d(dev(*second), &self.host, shape.get()),
            Cmd::Readback2d { second, shape } => t.readback_2d(&self.host, dev(*second), shape.get()),
            Cmd::Launch { kernel, grid, block, shared, args } => {
                let args: Vec<Arg> = args
                    .iter()
                    .map(|a| match *a {
                        ArgSpec::Buffer(second) => Arg::buffer(dev(second)),
                        ArgSpec::I32(v) => Arg::i32(v),
                        ArgSpec::U32(v) => Arg::u32(v % 8192),
                        ArgSpec::I64(v) => Arg::i64(v),
                        ArgSpec::U64(v) => Arg::u64(v),
                        ArgSpec::F32(v) => Arg::f32(v),
                        ArgSpec::F64(v) => Arg::f64(v),
                    })
                    .collect();
                let k = &self.kernels[*kernel as usize % self.kernels.len()];
                t.launch(k, grid.get(), block.get(), *shared, &args)
            }
            Cmd::Cpu(o) => {
                let o = *o;
                t.callback(Resource::Cpu, move |_| callback_result(o))
            }
            Cmd::Gpu(o) => {
                let o = *o;
                t.gpu_callback(move |_| callback_result(o))
            }
            Cmd::Reading(r, o) => {
                let o = *o;
                t.callback_reading(&self.host, r.bounds(), move |_, _| callback_result(o))
            }
            Cmd::Writing(r, o) => {
                let o = *o;
                t.callback_writing(&self.host, r.bounds(), move |x, _| {
                    x.fill(7);
                    callback_result(o)
                })
            }
            Cmd::Wait { shutdown, gpu, outcome } => {
                let (weak, shutdown, o) = (self.weak.clone(), *shutdown, *outcome);
                let wait = move || {
                    // The fuzz target's handle outlives every task (it synchronizes last).
                    let s = weak.upgrade().expect("the scheduler lives while its tasks run");
                    if shutdown {
                        assert_refused(s.shutdown(), id, "Scheduler::shutdown");
                    } else {
                        assert_refused(s.synchronize(), id, "Scheduler::synchronize");
                    }
                    callback_result(o)
                };
                if *gpu {
                    t.gpu_callback(move |_| wait())
                } else {
                    t.callback(Resource::Cpu, move |_| wait())
                }
            }
            Cmd::GuardIn { write_claim, write_guard, claim, at, len, outside, outcome } => {
                let guard = match claim.resolve(ASIDE) {
                    _ if *outside => ASIDE..ASIDE + 1,
                    Some(r) if !r.is_empty() => {
                        let start = r.start + *at as usize % r.len();
                        start..start + 1 + *len as usize % (r.end - start)
                    }
                    // The command is refused at submit; its callback never runs.
                    _ => 0..1,
                };
                let (write, outside, o) = (*write_guard || !*write_claim, *outside, *outcome);
                let aside = self.aside.clone();
                let take = move || {
                    let mut h = aside.lock().expect("no callback panics");
                    let (r, call) = if write {
                        (h.write_range(guard.clone()).map(drop), "HostBuffer::write_range")
                    } else {
                        (h.read_range(guard.clone()).map(drop), "HostBuffer::read_range")
                    };
                    if outside {
                        assert!(matches!(r, Err(Error::InvalidLength { .. })), "{call}({guard:?}) of {ASIDE}: {r:?}");
                    } else {
                        assert_refused(r, id, call);
                    }
                    callback_result(o)
                };
                let h = self.aside.lock().expect("no callback panics");
                if *write_claim {
                    t.callback_writing(&h, claim.bounds(), move |_, _| take())
                } else {
                    t.callback_reading(&h, claim.bounds(), move |_, _| take())
                }
            }
        }
    }
}

/// What a batch's tasks may do: per task, its command count and the first command that
/// may fail (and whether it surely does). Its keys are the ids taken since the last
/// `synchronize`.
#[derive(Default)]
struct Batch {
    tasks: HashMap<TaskId, (usize, Option<(usize, bool)>)>,
}

impl Batch {
    fn check(&mut self, result: chariot::Result<chariot::report::Report>) {
        let tasks = std::mem::take(&mut self.tasks);
        let (report, failures) = match result {
            Ok(r) => (r, Vec::new()),
            Err(Error::TasksFailed { failures, report }) => (*report, failures),
            Err(e) => panic!("synchronize: expected Ok or TasksFailed, got {e:?}"),
        };
        let mut failed = HashSet::new();
        for f in &failures {
            assert!(failed.insert(f.task), "task {} failed twice: {failures:?}", f.task);
            let (len, risky) = tasks.get(&f.task).unwrap_or_else(|| panic!("unknown task failed: {f:?}"));
            let (first, sure) = risky.unwrap_or_else(|| panic!("a task with no failing command failed: {f:?}"));
            assert!(f.command < *len && f.command >= first, "{f:?}: the first command that may fail is {first}");
            if sure {
                assert_eq!(f.command, first, "{f:?}");
            }
            assert!(!f.message.is_empty());
        }
        for (id, (_, risky)) in &tasks {
            if let Some((_, true)) = risky {
                assert!(failed.contains(id), "task {id} had a failing command but did not fail");
            }
        }
        let mut records: HashMap<TaskId, usize> = HashMap::new();
        for r in &report.records {
            *records.entry(r.task).or_default() += 1;
        }
        for (id, n) in &records {
            let (len, _) = tasks.get(id).unwrap_or_else(|| panic!("a record of an unknown task {id}"));
            assert!(n <= len, "task {id}: {n} records for {len} commands");
            if !failed.contains(id) {
                assert_eq!(n, len, "task {id} succeeded with {n} records for {len} commands");
            }
        }
        for id in tasks.keys() {
            assert!(failed.contains(id) || records.contains_key(id), "task {id} did not run");
        }
        assert_eq!(report.failures, failures);
    }
}

fuzz_target!(|input: Input| {
    let params = Params::new(&input.config);
    let expected = params.expect();
    let sched = match (params.builder(input.config.pin).build(), expected) {
        (Ok(s), Built::Ok) => Arc::new(s),
        (Err(Error::InvalidConfig { name, value, allowed }), Built::Invalid(want)) => {
            assert!(name == want && !value.is_empty() && !allowed.is_empty(), "{want}: {name} {value} {allowed}");
            return;
        }
        (Err(Error::NoSuchGpu { ordinal, available, backend }), Built::NoGpu(want)) => {
            assert!(ordinal == want && available == params.profile.gpus && backend == "sim", "{ordinal} {available}");
            return;
        }
        (r, want) => panic!("build: expected {want:?}, got {:?}", r.map(|_| "a scheduler")),
    };
    let alloc_error = |e: Error| match e {
        Error::InvalidLength { .. } | Error::OutOfMemory { .. } => {}
        e => panic!("alloc: expected InvalidLength or OutOfMemory, got {e:?}"),
    };
    let host = match sched.alloc_host::<u32>(input.host_len.get()) {
        Ok(h) => h,
        Err(e) => return alloc_error(e),
    };
    let aside = sched.alloc_host::<u32>(ASIDE).expect("a small host buffer");
    let mut devs = Vec::new();
    for len in [input.dev_len.get(), 16] {
        match sched.alloc::<u32>(len) {
            Ok(d) => devs.push(d),
            Err(e) => return alloc_error(e),
        }
    }
    let [d0, d1]: [DeviceBuffer<u32>; 2] = devs.try_into().expect("two buffers");
    let mut w = World {
        s: &sched,
        weak: Arc::downgrade(&sched),
        host,
        devs: [d0, d1],
        kernels: kernels(&sched),
        aside: Arc::new(Mutex::new(aside)),
    };
    let mut batch = Batch::default();
    let mut shut = false;
    let guard_error = |e: Error| assert!(matches!(e, Error::InvalidLength { .. }), "guard: {e:?}");
    for op in &input.ops {
        match op {
            Op::Submit(spec) => w.submit(spec, &mut batch, shut),
            Op::SubmitUnderRead(r, specs) => {
                let guard = w.host.read_range(r.bounds());
                for spec in specs {
                    w.submit(spec, &mut batch, shut);
                }
                if let Err(e) = guard {
                    guard_error(e);
                }
            }
            Op::Synchronize => batch.check(w.s.synchronize()),
            Op::Read(r) => {
                if let Err(e) = w.host.read_range(r.bounds()) {
                    guard_error(e);
                }
            }
            Op::Write(r) => match w.host.write_range(r.bounds()) {
                Ok(mut g) => g.iter_mut().for_each(|x| *x = x.wrapping_add(1)),
                Err(e) => guard_error(e),
            },
            Op::Shutdown => {
                batch.check(w.s.shutdown());
                shut = true;
            }
        }
    }
    batch.check(w.s.synchronize());
    assert!(w.s.device_memory_in_use(w.s.gpu_count()).is_none());
});
