//! The builder, allocation, kernel registration, the task builder's commands, `submit`,
//! the host guards, `synchronize` and `shutdown`, fed arbitrary parameters on the sim
//! backend. Every call must return `Ok` or one of the `Error` variants its documentation
//! names, never panic or hang (run with `-timeout`), and a batch must fail exactly the
//! tasks that had a failing command.
//!
//! Sizes are kept where one run stays cheap: small buffers, or lengths so large that
//! their size in bytes overflows (refused before any allocation); GPUs, streams and
//! thresholds up to a little past what the builder accepts. Callbacks fail by returning
//! an error, never by panicking: libfuzzer-sys aborts on any panic, caught or not
//! (tests/bad_input.rs covers panicking callbacks).
//!
//! `known_bug` skips inputs that reach a bug already found and reported (each has an
//! ignored test in tests/bad_input.rs); remove a case once its bug is fixed.

#![no_main]

use arbitrary::Arbitrary;
use chariot::{
    Arg, Backend, Copy2d, DeviceBuffer, Error, HostBuffer, Kernel, KernelHandle, Order, Param, Resource, Scheduler,
    SimProfile, Stage, TaskBuilder, TaskId,
};
use libfuzzer_sys::fuzz_target;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;

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
    local: Option<[u8; 4]>,
    global: Option<[u8; 4]>,
    buses: Option<u8>,
    cores: Option<u8>,
    pin: bool,
    sim_gpus: u8,
    copy_engines: u8,
    concurrent_kernels: bool,
    sim_buses: Option<u8>,
    memory_kib: u16,
    execute: bool,
}

#[derive(Arbitrary, Debug)]
enum Gpus {
    Count(u8),
    List(Vec<u8>),
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

#[derive(Arbitrary, Debug)]
enum Cmd {
    Download { second: bool, offset: Num, range: Range },
    Readback { range: Range, second: bool, offset: Num },
    Download2d { second: bool, shape: Shape },
    Readback2d { second: bool, shape: Shape },
    Launch { kernel: u8, grid: (u32, u32, u32), block: (u32, u32, u32), shared: u32, args: Vec<ArgSpec> },
    Cpu(Outcome),
    Gpu(Outcome),
    Reading(Range, Outcome),
    Writing(Range, Outcome),
}

impl Cmd {
    /// Whether the command may fail when it runs, and whether it surely does.
    fn risk(&self) -> (bool, bool) {
        match self {
            Cmd::Launch { .. } => (true, false),
            Cmd::Cpu(o) | Cmd::Gpu(o) | Cmd::Reading(_, o) | Cmd::Writing(_, o) => {
                (*o == Outcome::Fail, *o == Outcome::Fail)
            }
            _ => (false, false),
        }
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

/// Inputs that reach a bug already reported; see tests/bad_input.rs. (Two more are out
/// of reach here by construction: G_1 and the GPU count are small; and `Batch` does not
/// check ids taken twice in one batch.)
fn known_bug(input: &Input) -> bool {
    let specs = input.ops.iter().flat_map(|op| match op {
        Op::Submit(t) => std::slice::from_ref(t),
        Op::SubmitUnderRead(_, ts) => &ts[..],
        _ => &[],
    });
    specs.flat_map(|t| &t.commands).any(|c| match c {
        // a_block_whose_thread_count_overflows_is_invalid_command
        Cmd::Launch { block: (x, y, z), .. } => {
            (*x as u64).checked_mul(*y as u64).and_then(|p| p.checked_mul(*z as u64)).is_none()
        }
        // a_2d_pitch_whose_bytes_overflow_is_invalid_command
        Cmd::Download2d { shape, .. } | Cmd::Readback2d { shape, .. } => {
            let s = shape.get();
            s.host_pitch > usize::MAX / 4 || s.dev_pitch > usize::MAX / 4
        }
        _ => false,
    })
}

fn builder(c: &Config) -> chariot::Builder {
    let mut profile =
        SimProfile::instant().with_gpus(c.sim_gpus as usize % 10).with_copy_engines(c.copy_engines as u32 % 4);
    profile.concurrent_kernels = c.concurrent_kernels;
    profile.buses = c.sim_buses.map(|b| b as usize % 4);
    profile.memory_bytes = (c.memory_kib as u64 % 1024) << 10;
    profile.execute = c.execute;
    let mut b = Scheduler::builder()
        .backend(Backend::SimWith(profile))
        .streams(c.streams as usize % 70)
        .stage_depth(c.depth as usize % 18)
        .order([Order::Fcfs, Order::LargestFirst, Order::SmallestFirst][c.order as usize % 3])
        .pin_dispatchers(c.pin);
    b = match &c.gpus {
        Gpus::Count(n) => b.gpus(*n as usize % 11),
        Gpus::List(v) => b.gpu_list(v.iter().map(|&g| g as usize % 11)),
    };
    // Thresholds up to 16: G_1 is the number of executioner threads started.
    let small = |v: [u8; 4]| v.map(|x| x as usize % 17);
    if let Some(l) = c.local {
        b = b.local_thresholds(small(l));
    }
    if let Some(g) = c.global {
        b = b.global_thresholds(small(g));
    }
    if let Some(x) = c.buses {
        b = b.buses(x as usize % 5);
    }
    if let Some(x) = c.cores {
        b = b.cpu_cores(x as usize % 33);
    }
    b
}

fn kernels(s: &Scheduler) -> Vec<KernelHandle> {
    // Kernels the sim backend refuses.
    let e = s.register_kernel(Kernel::new("no_twin", "").params([Param::Buffer])).unwrap_err();
    assert!(matches!(e, Error::KernelInvalid { .. }), "{e:?}");
    let e = s.register_kernel(Kernel::new("", "").cpu_twin(|_| Ok(()))).unwrap_err();
    assert!(matches!(e, Error::KernelInvalid { .. }), "{e:?}");
    let twice = Kernel::new("twice", "").params([Param::Buffer, Param::U32]).cpu_twin(|a| {
        let n = a.u32(1)? as usize;
        let x = a.buffer_mut::<u32>(0)?.get_mut(..n).ok_or("n is past the buffer")?;
        x.iter_mut().for_each(|v| *v = v.wrapping_mul(2));
        Ok(())
    });
    let copy = Kernel::new("copy", "").params([Param::Buffer, Param::Buffer, Param::U32]).cpu_twin(|a| {
        let n = a.u32(2)? as usize;
        let (i, o) = a.in_out::<u32, u32>(0, 1)?;
        let (i, o) = (i.get(..n).ok_or("n is past the input")?, o.get_mut(..n).ok_or("n is past the output")?);
        o.copy_from_slice(i);
        Ok(())
    });
    let none = Kernel::new("none", "").cpu_twin(|_| Ok(()));
    [twice, copy, none].into_iter().map(|k| s.register_kernel(k).expect("a kernel with a twin registers")).collect()
}

fn callback_result(o: Outcome) -> Result<(), chariot::BoxError> {
    match o {
        Outcome::Succeed => Ok(()),
        Outcome::Fail => Err("this callback fails".into()),
    }
}

struct World<'a> {
    s: &'a Scheduler,
    host: HostBuffer<u32>,
    devs: [DeviceBuffer<u32>; 2],
    kernels: Vec<KernelHandle>,
}

impl<'a> World<'a> {
    fn submit(&self, spec: &TaskSpec, batch: &mut Batch, shut: bool) {
        let id = TaskId(spec.id as u64);
        let mut t = self.s.task(spec.id as u64, spec.granularity);
        for c in &spec.commands {
            t = self.add(t, c);
        }
        match t.submit() {
            Ok(got) => {
                assert_eq!(got, id);
                assert!(!shut, "a submit after shutdown was taken");
                assert!(!spec.commands.is_empty(), "an empty task was taken");
                let risky = spec.commands.iter().enumerate().find_map(|(i, c)| {
                    let (may, sure) = c.risk();
                    may.then_some((i, sure))
                });
                if batch.tasks.insert(id, (spec.commands.len(), risky)).is_some() {
                    // The id's first task has ended: taken again, and the report cannot
                    // tell the two apart (a_task_id_reused_in_one_batch_is_refused_or_counted_twice).
                    batch.reused.insert(id);
                }
            }
            Err(Error::InvalidCommand { task, command, stage, message }) => {
                assert_eq!(task, id);
                assert!(command < spec.commands.len() && is_stage(stage) && !message.is_empty());
            }
            Err(Error::EmptyTask { task }) => assert!(task == id && spec.commands.is_empty()),
            Err(Error::DuplicateTask { task }) => {
                assert!(task == id && batch.tasks.contains_key(&id), "{id} is not in flight")
            }
            Err(Error::HostConflict { task, .. }) => assert_eq!(task, id),
            Err(Error::ShutDown) => assert!(shut, "ShutDown before shutdown"),
            Err(e) => panic!("submit: unexpected {e:?}"),
        }
    }

    fn add(&self, t: TaskBuilder<'a>, c: &Cmd) -> TaskBuilder<'a> {
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
                t.launch(k, *grid, *block, *shared, &args)
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
        }
    }
}

/// What a batch's tasks may do: per task, its command count and the first command that
/// may fail (and whether it surely does).
#[derive(Default)]
struct Batch {
    tasks: HashMap<TaskId, (usize, Option<(usize, bool)>)>,
    /// Ids taken twice in the batch (a known bug): not checked.
    reused: HashSet<TaskId>,
}

impl Batch {
    fn check(&mut self, result: chariot::Result<chariot::Report>) {
        let mut tasks = std::mem::take(&mut self.tasks);
        let reused = std::mem::take(&mut self.reused);
        tasks.retain(|id, _| !reused.contains(id));
        let (report, failures) = match result {
            Ok(r) => (r, Vec::new()),
            Err(Error::TasksFailed { failures, report }) => (*report, failures),
            Err(e) => panic!("synchronize: expected Ok or TasksFailed, got {e:?}"),
        };
        let mut failed = HashSet::new();
        for f in failures.iter().filter(|f| !reused.contains(&f.task)) {
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
        for r in report.records.iter().filter(|r| !reused.contains(&r.task)) {
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

fn is_stage(stage: Stage) -> bool {
    Stage::ALL.contains(&stage)
}

fuzz_target!(|input: Input| {
    if known_bug(&input) {
        return;
    }
    let sched = match builder(&input.config).build() {
        Ok(s) => s,
        Err(Error::InvalidConfig { name, value, allowed }) => {
            assert!(!name.is_empty() && !value.is_empty() && !allowed.is_empty());
            return;
        }
        Err(Error::NoSuchGpu { ordinal, available, backend }) => {
            assert!(ordinal >= available && backend == "sim");
            return;
        }
        Err(e) => panic!("build: expected InvalidConfig or NoSuchGpu, got {e:?}"),
    };
    let alloc_error = |e: Error| match e {
        Error::InvalidLength { .. } | Error::OutOfMemory { .. } => {}
        e => panic!("alloc: expected InvalidLength or OutOfMemory, got {e:?}"),
    };
    let host = match sched.alloc_host::<u32>(input.host_len.get()) {
        Ok(h) => h,
        Err(e) => return alloc_error(e),
    };
    let mut devs = Vec::new();
    for len in [input.dev_len.get(), 16] {
        match sched.alloc::<u32>(len) {
            Ok(d) => devs.push(d),
            Err(e) => return alloc_error(e),
        }
    }
    let [d0, d1]: [DeviceBuffer<u32>; 2] = devs.try_into().expect("two buffers");
    let mut w = World { s: &sched, host, devs: [d0, d1], kernels: kernels(&sched) };
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
