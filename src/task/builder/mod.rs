//! Building one task: a [`TaskBuilder`] holds the task's id and granularity (the paper
//! passes them on every call) and checks each command as it is added; `submit` seals
//! the task, claims its host regions and hands it to the task buffer.
//!
//! It sits above the scheduler it feeds ([`Scheduler::task`] starts one here, and
//! `submit` hands the task to the scheduler), so that the task types below it need no
//! scheduler.

mod checks;

use super::command::{Command, Direction, LaunchCmd};
use super::lower::TwinCall;
use super::{Copy2d, HostClaim};
use crate::backend::host_alloc::exclusive;
use crate::backend::op::Twin;
use crate::callback::{CallInfo, GpuCall, GpuCallback, Resource};
use crate::error::{BoxError, Error, Result};
use crate::ids::{InCallback, Preds, TaskId};
use crate::kernel::{Arg, ArgValue, KernelHandle, LaunchShape};
#[cfg(feature = "resident")]
use crate::memory::DevTarget;
use crate::memory::{DeviceData, Element, HostBuffer};
use crate::scheduler::{Scheduler, Submitted};
#[cfg(feature = "resident")]
use crate::seam::ResidentBuffer;
use crate::seam::ResidentRange;
use crate::stage::Stage;
use std::ops::RangeBounds;
use std::sync::Arc;

impl Scheduler {
    /// Starts building task `id` with granularity `granularity` (its chunk's size, used
    /// by the LF and SF rules; the adaptation counts work done by it).
    pub fn task(&self, id: u64, granularity: u64) -> TaskBuilder<'_> {
        TaskBuilder::new(self, TaskId(id), granularity)
    }
}

/// Builds one task: add commands in the order they must run, then [`submit`](TaskBuilder::submit).
///
/// Each method checks its command at once; the first error is kept and returned by
/// `submit` (so a chain needs one `?`). See [`Scheduler::task`](crate::Scheduler::task)
/// for an example.
#[must_use = "a task runs only once submitted"]
pub struct TaskBuilder<'s> {
    sched: &'s Scheduler,
    id: TaskId,
    granularity: u64,
    commands: Vec<Command>,
    claims: Vec<HostClaim>,
    after: Preds,
    refuse_conflicts: bool,
    /// Resident ranges declared for GPU callbacks (`reads`, `writes`, `reads_writes`).
    declared: Vec<ResidentRange>,
    prefer: Option<usize>,
    /// Where the external device memory of its launches binds it, if any.
    external: Option<checks::ExternalHome>,
    error: Option<Error>,
    /// An ended task's box to fill at submit (its command list is `commands`).
    shell: Option<Box<super::Task>>,
    /// Commands added so far: the first `written` of `commands`. Those past it are the
    /// shell's ended launches, each refilled in place by a launch of its kernel at its
    /// position ([`TaskBuilder::refill_launch`]) or replaced, the rest dropped at submit.
    written: usize,
}

impl<'s> TaskBuilder<'s> {
    pub(crate) fn new(sched: &'s Scheduler, id: TaskId, granularity: u64) -> Self {
        let mut shell = sched.spare_task();
        let commands = shell.as_mut().map(|t| std::mem::take(&mut t.commands)).unwrap_or_default();
        TaskBuilder {
            sched,
            id,
            granularity,
            shell,
            commands,
            claims: Vec::new(),
            after: Preds::new(),
            refuse_conflicts: false,
            declared: Vec::new(),
            prefer: None,
            external: None,
            error: None,
            written: 0,
        }
    }

    fn bad(&self, stage: Stage, message: String) -> Error {
        Error::InvalidCommand { task: self.id, command: self.written, stage, message }
    }

    fn push(mut self, built: Result<(Command, Option<HostClaim>)>) -> Self {
        if self.error.is_some() {
            return self;
        }
        match built {
            Ok((cmd, claim)) => {
                match self.commands.get_mut(self.written) {
                    Some(ended) => *ended = cmd,
                    None => self.commands.push(cmd),
                }
                self.written += 1;
                self.claims.extend(claim);
            }
            Err(e) => self.error = Some(e),
        }
        self
    }

    /// Downloads host elements `src_range` into `dst` starting at element `dst_offset`.
    /// `dst` is a virtual [`DeviceBuffer`](crate::DeviceBuffer) (the copy of the task's
    /// stream slot) or a [`ResidentBuffer`] (the copy of the task's GPU: a write of
    /// those elements, which orders the task after their earlier users).
    pub fn download<T: Element>(
        self,
        dst: &impl DeviceData<T>,
        dst_offset: usize,
        src: &HostBuffer<T>,
        src_range: impl RangeBounds<usize>,
    ) -> Self {
        let built = self.linear(Stage::Download, src, src_range).and_then(|r| {
            let n = r.end - r.start;
            self.copy(
                Direction::Download,
                src,
                dst,
                Copy2d {
                    host_offset: r.start,
                    host_pitch: n,
                    dev_offset: dst_offset,
                    dev_pitch: n,
                    width: n,
                    height: 1,
                },
            )
        });
        self.push(built)
    }

    /// Downloads a 2-D region of `src` into `dst` (the paper's `download2D`).
    pub fn download_2d<T: Element>(self, dst: &impl DeviceData<T>, src: &HostBuffer<T>, shape: Copy2d) -> Self {
        let built = self.copy(Direction::Download, src, dst, shape);
        self.push(built)
    }

    /// Reads `src` from element `src_offset` back into host elements `dst_range`. `src`
    /// is a virtual [`DeviceBuffer`](crate::DeviceBuffer) or a [`ResidentBuffer`] (a read
    /// of those elements: the task runs after their last writer, and reads the copy
    /// valid on its GPU; this is how resident data is written back to the host).
    pub fn readback<T: Element>(
        self,
        dst: &HostBuffer<T>,
        dst_range: impl RangeBounds<usize>,
        src: &impl DeviceData<T>,
        src_offset: usize,
    ) -> Self {
        let built = self.linear(Stage::Readback, dst, dst_range).and_then(|r| {
            let n = r.end - r.start;
            self.copy(
                Direction::Readback,
                dst,
                src,
                Copy2d {
                    host_offset: r.start,
                    host_pitch: n,
                    dev_offset: src_offset,
                    dev_pitch: n,
                    width: n,
                    height: 1,
                },
            )
        });
        self.push(built)
    }

    /// Reads a 2-D region of `src` back into `dst` (the paper's `readback2D`).
    pub fn readback_2d<T: Element>(self, dst: &HostBuffer<T>, src: &impl DeviceData<T>, shape: Copy2d) -> Self {
        let built = self.copy(Direction::Readback, dst, src, shape);
        self.push(built)
    }

    /// Launches `kernel` with `args`, which must match its declared parameters.
    ///
    /// The shape must be one CUDA can launch: no zero dimension, grid x below 2^31,
    /// grid y and z at most 65535, block x and y at most 1024, block z at most 64, and
    /// at most 1024 threads a block. Anything else is [`Error::InvalidCommand`] at
    /// `submit`, naming the value and the limit, on either backend.
    pub fn launch(
        mut self,
        kernel: &KernelHandle,
        grid: impl Into<crate::kernel::Dim3>,
        block: impl Into<crate::kernel::Dim3>,
        shared_bytes: u32,
        args: &[Arg],
    ) -> Self {
        let shape = LaunchShape { grid: grid.into(), block: block.into(), shared_bytes };
        let home = match self.check_launch(kernel, shape, args) {
            Ok(home) => home,
            Err(e) => return self.push(Err(e)),
        };
        self.external = home;
        if self.error.is_none() && self.refill_launch(kernel, shape, args) {
            self.written += 1;
            return self;
        }
        let args = self.arg_list(args);
        let threads = shape.block.count() as u32; // at most 1024: checked above
        let waves = kernel.inner.waves(self.sched.machine(), threads, shape.shared_bytes);
        self.sched.note_launch(&kernel.inner, shape.grid.count(), waves.0.first().copied().unwrap_or(0));
        let twin = twin(self.sched, kernel, shape, &args);
        self.push(Ok((Command::Launch(LaunchCmd { kernel: kernel.inner.clone(), shape, args, waves, twin }), None)))
    }

    /// Refills in place the shell's ended launch at this position, where it launched
    /// the same kernel with as many arguments and nothing else holds its list: its
    /// kernel, its waves (for a block of as many threads and as much shared memory) and
    /// each buffer argument naming the same buffer are kept, not taken anew, so a loop
    /// repeating its launches moves no reference count for them (each a locked
    /// instruction, on the submitting thread as it fills the task and again as it
    /// empties it). Whether it did.
    fn refill_launch(&mut self, kernel: &KernelHandle, shape: LaunchShape, args: &[Arg]) -> bool {
        let sched = self.sched;
        let Some(Command::Launch(l)) = self.commands.get_mut(self.written) else { return false };
        if !Arc::ptr_eq(&l.kernel, &kernel.inner) || l.args.len() != args.len() {
            return false;
        }
        let Some(values) = Arc::get_mut(&mut l.args) else { return false };
        for (v, a) in values.iter_mut().zip(args) {
            match (&*v, &a.0) {
                (ArgValue::Buffer(kept), ArgValue::Buffer(b)) if Arc::ptr_eq(kept, b) => {}
                _ => *v = a.0.clone(),
            }
        }
        if l.shape.block.count() != shape.block.count() || l.shape.shared_bytes != shape.shared_bytes {
            let threads = shape.block.count() as u32; // at most 1024: checked by the caller
            l.waves = kernel.inner.waves(sched.machine(), threads, shape.shared_bytes);
        }
        l.shape = shape;
        sched.note_launch(&kernel.inner, shape.grid.count(), l.waves.0.first().copied().unwrap_or(0));
        l.twin = twin(sched, kernel, shape, &l.args);
        true
    }

    /// Adds a callback (the paper's `launchCallbackRoutine`). [`Resource::Cpu`]: `f` runs
    /// on an executioner thread; [`Resource::Gpu`]: use [`TaskBuilder::gpu_callback`].
    /// A CPU callback gets the task's [`CallInfo`].
    ///
    /// A callback must not wait for its own task: in one, `synchronize` and `shutdown`
    /// of this scheduler return [`Error::WaitInCallback`], and so does a host guard on a
    /// range this task claims against it (`HostBuffer::read` and `write`, which return
    /// no `Result`, panic with that error's message, which fails the task).
    pub fn callback(
        self,
        resource: Resource,
        f: impl FnOnce(&CallInfo) -> Result<(), BoxError> + Send + 'static,
    ) -> Self {
        match resource {
            Resource::Cpu => {
                let sched = self.sched.id();
                let cmd = Command::Cpu(Some(Box::new(move |info: &CallInfo| {
                    let _in = InCallback::enter(sched, info.task);
                    f(info)
                })));
                self.push(Ok((cmd, None)))
            }
            Resource::Gpu => self.gpu_callback(move |call| f(&call.info())),
        }
    }

    /// Adds a GPU callback: kernel-stage work that enqueues library calls (cuFFT, …) on
    /// the task's stream, with its resolved device buffers (see [`GpuCall`]). It runs on
    /// the dispatcher's thread, so it must only enqueue work, never wait for it.
    pub fn gpu_callback(self, f: impl FnOnce(&mut GpuCall<'_>) -> Result<(), BoxError> + Send + 'static) -> Self {
        let sched = self.sched.id();
        let cmd = Command::Gpu(Some(GpuCallback::new(Box::new(move |call: &mut GpuCall<'_>| {
            let _in = InCallback::enter(sched, call.info.task);
            f(call)
        }))));
        self.push(Ok((cmd, None)))
    }

    /// Adds a CPU callback that reads host elements `range` of `host` (e.g. writes
    /// results to a file after a readback). The range is claimed for the task.
    pub fn callback_reading<T: Element>(
        self,
        host: &HostBuffer<T>,
        range: impl RangeBounds<usize>,
        f: impl FnOnce(&[T], &CallInfo) -> Result<(), BoxError> + Send + 'static,
    ) -> Self {
        let sched = self.sched.id();
        let built = self.host_region(host, range, false).map(|(shared, region)| {
            let mem = shared.clone();
            let cmd = Command::Cpu(Some(Box::new(move |info: &CallInfo| {
                let _in = InCallback::enter(sched, info.task);
                // This task's read claim on `region` excludes writers while `f` runs.
                f(bytemuck::cast_slice(mem.alloc.bytes(region.start, region.end())), info)
            }) as crate::callback::CpuFn));
            (cmd, Some(HostClaim { host: shared, region, write: false }))
        });
        self.push(built)
    }

    /// Adds a CPU callback that writes host elements `range` of `host` (e.g. reads a
    /// chunk from a file before its download). The range is claimed for the task.
    pub fn callback_writing<T: Element>(
        self,
        host: &HostBuffer<T>,
        range: impl RangeBounds<usize>,
        f: impl FnOnce(&mut [T], &CallInfo) -> Result<(), BoxError> + Send + 'static,
    ) -> Self {
        let sched = self.sched.id();
        let built = self.host_region(host, range, true).map(|(shared, region)| {
            let mem = shared.clone();
            let cmd = Command::Cpu(Some(Box::new(move |info: &CallInfo| {
                let _in = InCallback::enter(sched, info.task);
                // This task's write claim on `region` excludes every other access while
                // `f` runs (checked: `task_exclusive` panics, failing the task, if not).
                let bytes = exclusive::bytes_mut(mem.task_exclusive(region, info.task));
                f(bytemuck::cast_slice_mut(bytes), info)
            }) as crate::callback::CpuFn));
            (cmd, Some(HostClaim { host: shared, region, write: true }))
        });
        self.push(built)
    }

    /// Declares that the task's GPU callbacks read elements `range` of `buf` (kernel
    /// launches declare their own uses through [`Arg::reads`] and its kin): the task
    /// runs after the last task that wrote them, which are fetched to its GPU first.
    /// In the callback, [`GpuCall::resident_ptr`] gives their address.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let host = s.alloc_host::<f32>(8)?;
    /// let r = s.alloc_resident::<f32>(8)?;
    /// s.task(1, 1).download(&r, 0, &host, ..).submit()?;
    /// let r2 = r.clone();
    /// s.task(2, 1).reads_writes(&r, ..).gpu_callback(move |call| {
    ///     call.sim_resident(&r2, 0, |x: &mut [f32]| x.iter_mut().for_each(|v| *v += 1.0));
    ///     Ok(())
    /// }).submit()?; // runs after task 1 (it reads what task 1 wrote)
    /// s.task(3, 1).readback(&host, .., &r, 0).submit()?;
    /// s.synchronize()?;
    /// assert!(host.read().iter().all(|&v| v == 1.0));
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[cfg(feature = "resident")]
    pub fn reads<T: Element>(self, buf: &ResidentBuffer<T>, range: impl RangeBounds<usize>) -> Self {
        self.declare(Arg::reads(buf, range))
    }

    /// Declares that the task's GPU callbacks write elements `range` of `buf` (see
    /// [`reads`](TaskBuilder::reads)).
    #[cfg(feature = "resident")]
    pub fn writes<T: Element>(self, buf: &ResidentBuffer<T>, range: impl RangeBounds<usize>) -> Self {
        self.declare(Arg::writes(buf, range))
    }

    /// Declares that the task's GPU callbacks read and write elements `range` of `buf`
    /// (see [`reads`](TaskBuilder::reads)).
    #[cfg(feature = "resident")]
    pub fn reads_writes<T: Element>(self, buf: &ResidentBuffer<T>, range: impl RangeBounds<usize>) -> Self {
        self.declare(Arg::reads_writes(buf, range))
    }

    #[cfg(feature = "resident")]
    fn declare(mut self, arg: Arg) -> Self {
        if self.error.is_some() {
            return self;
        }
        match arg.0 {
            ArgValue::Resident { buf, bytes, read, write } if buf.sched_id == self.sched.id() => {
                self.declared.push(ResidentRange { buf, bytes, read, write, dense: true })
            }
            ArgValue::Resident { buf, .. } => {
                self.error =
                    Some(self.bad(Stage::Kernel, format!("resident buffer {} belongs to another scheduler", buf.id)))
            }
            ArgValue::BadRange(m) => self.error = Some(self.bad(Stage::Kernel, m)),
            _ => {}
        }
        self
    }

    /// Runs this task after task `id` ends (it starts no command before that task's
    /// last command has ended). `id` must be a task submitted earlier in this batch
    /// (since the last `synchronize`); one that has already ended is no wait. If that
    /// task fails, this one fails too without running (its failure names `id`). The
    /// repository's `docs/graphs.md` says more.
    ///
    /// Besides these, a task runs after every unended task whose host regions conflict
    /// with its own (one writes bytes the other touches), unless it
    /// [`refuse_conflicts`](TaskBuilder::refuse_conflicts).
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// use chariot::callback::Resource;
    /// use std::sync::{Arc, Mutex};
    /// let s = Scheduler::builder().backend(Backend::Sim).gpus(2).build()?;
    /// let log = Arc::new(Mutex::new(Vec::new()));
    /// let step = |i: u32| { let log = log.clone(); move |_: &chariot::callback::CallInfo| { log.lock().unwrap().push(i); Ok(()) } };
    /// let one = s.task(1, 1).callback(Resource::Cpu, step(1)).submit()?;
    /// let two = s.task(2, 1).after(one).callback(Resource::Cpu, step(2)).submit()?;
    /// s.task(3, 1).after_all([one, two]).callback(Resource::Cpu, step(3)).submit()?;
    /// s.synchronize()?;
    /// assert_eq!(*log.lock().unwrap(), [1, 2, 3]);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    ///
    /// # Errors (at `submit`)
    /// [`Error::UnknownDependency`] for an id not submitted in this batch,
    /// [`Error::DependencyCycle`] for the task's own id.
    pub fn after(mut self, id: TaskId) -> Self {
        self.after.push(id);
        self
    }

    /// Runs this task after each of `ids` ends: [`after`](TaskBuilder::after) for each.
    ///
    /// ```
    /// use chariot::{Backend, Scheduler};
    /// use chariot::callback::Resource;
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let mut ids = Vec::new();
    /// for i in 0..3 {
    ///     ids.push(s.task(i, 1).callback(Resource::Cpu, |_| Ok(())).submit()?);
    /// }
    /// s.task(9, 1).after_all(ids).callback(Resource::Cpu, |_| Ok(())).submit()?;
    /// assert_eq!(s.synchronize()?.tasks, 4);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn after_all(mut self, ids: impl IntoIterator<Item = TaskId>) -> Self {
        self.after.extend(ids);
        self
    }

    /// Places this task on GPU `gpu` (an index among the scheduler's GPUs, `0..gpu_count`):
    /// once ready it waits in that GPU's share of Q, ahead of the place its resident
    /// data would give it. Another GPU takes it only as it takes tasks placed by their
    /// data: when that share holds more than S tasks, or the GPU has left the rotation.
    /// For layouts the user knows best, such as MUSTARD's block-cyclic tiles. A placed
    /// task is dispatched by the host (never in a replay window), and a recording
    /// refuses it.
    ///
    /// `submit` returns [`Error::NoSuchPlacement`] where `gpu` is not below the
    /// scheduler's GPU count.
    ///
    /// ```
    /// use chariot::{Backend, Error, Scheduler};
    /// use chariot::callback::Resource;
    /// use chariot::sim::SimProfile;
    /// let s = Scheduler::builder().backend(Backend::SimWith(SimProfile::h100().with_gpus(2))).gpus(2).build()?;
    /// s.task(0, 1).prefer_gpu(1).callback(Resource::Cpu, |c| { assert_eq!(c.gpu, 1); Ok(()) }).submit()?;
    /// let e = s.task(1, 1).prefer_gpu(2).callback(Resource::Cpu, |_| Ok(())).submit().unwrap_err();
    /// assert!(matches!(e, Error::NoSuchPlacement { gpu: 2, gpus: 2, .. }));
    /// s.synchronize()?;
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn prefer_gpu(mut self, gpu: usize) -> Self {
        self.prefer = Some(gpu);
        self
    }

    /// Refuses this task at `submit` with [`Error::HostConflict`] where one of its host
    /// regions conflicts with an unended task's, instead of running it after that task
    /// (the behaviour before task graphs; useful to find conflicts one did not expect).
    ///
    /// ```
    /// use chariot::{Backend, Error, Scheduler};
    /// use chariot::callback::Resource;
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// let host = s.alloc_host::<u32>(8)?;
    /// let (tx, rx) = std::sync::mpsc::channel::<()>();
    /// s.task(1, 1).callback(Resource::Cpu, move |_| { let _ = rx.recv(); Ok(()) }) // held until tx speaks
    ///     .callback_writing(&host, 0..4, |_, _| Ok(())).submit()?;
    /// let e = s.task(2, 1).callback_reading(&host, 2..3, |_, _| Ok(())).refuse_conflicts().submit().unwrap_err();
    /// assert!(matches!(e, Error::HostConflict { .. }));
    /// s.task(3, 1).callback_reading(&host, 2..3, |_, _| Ok(())).submit()?; // waits for task 1
    /// tx.send(()).unwrap();
    /// assert_eq!(s.synchronize()?.tasks, 2);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    pub fn refuse_conflicts(mut self) -> Self {
        self.refuse_conflicts = true;
        self
    }

    /// The task's id.
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// Seals the task and hands it to the runtime. It runs once the tasks it runs after
    /// ([`after`](TaskBuilder::after), and those whose host regions conflict with its
    /// own) have ended.
    ///
    /// # Errors
    /// The first invalid command ([`Error::InvalidCommand`]), an empty task
    /// ([`Error::EmptyTask`]), an id already submitted since the last `synchronize`
    /// ([`Error::DuplicateTask`]), a dependency on itself ([`Error::DependencyCycle`]) or
    /// on an id not submitted in this batch ([`Error::UnknownDependency`]), a host
    /// region that a read guard holds, or that an unended task holds where the task
    /// [`refuse_conflicts`](TaskBuilder::refuse_conflicts) ([`Error::HostConflict`]), or
    /// a scheduler that has shut down ([`Error::ShutDown`]). A refused task leaves no
    /// claim and no id behind.
    pub fn submit(mut self) -> Result<TaskId> {
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.written == 0 {
            return Err(Error::EmptyTask { task: self.id });
        }
        // The shell's ended launches no command refilled.
        self.commands.truncate(self.written);
        let gpus = self.sched.gpu_count();
        if let Some(gpu) = self.prefer.filter(|&g| g >= gpus) {
            return Err(Error::NoSuchPlacement { task: self.id, gpu, gpus });
        }
        let (prefer, bound) = match self.external {
            Some(h) => match self.prefer.filter(|&p| p != h.gpu) {
                Some(p) => {
                    return Err(Error::InvalidCommand {
                        task: self.id,
                        command: h.command,
                        stage: Stage::Kernel,
                        message: format!(
                            "prefer_gpu({p}), but its external device memory is on GPU {} (CUDA GPU {})",
                            h.gpu, h.ordinal
                        ),
                    })
                }
                None => (Some(h.gpu), true),
            },
            None => (self.prefer, false),
        };
        #[allow(unused_mut)] // resident ranges are added only with resident data
        let mut resident = self.declared;
        #[cfg(feature = "resident")]
        for c in &self.commands {
            match c {
                Command::Copy(copy) => {
                    if let DevTarget::Resident(buf) = &copy.dev {
                        let start = copy.dev_offset;
                        let end = start + (copy.height - 1) * copy.dev_pitch + copy.width;
                        let read = copy.dir == Direction::Readback;
                        let dense = copy.height == 1 || copy.dev_pitch == copy.width;
                        resident.push(ResidentRange { buf: buf.clone(), bytes: start..end, read, write: !read, dense });
                    }
                }
                Command::Launch(l) => {
                    for a in l.args.iter() {
                        if let ArgValue::Resident { buf, bytes, read, write } = a {
                            let (buf, bytes, read, write) = (buf.clone(), bytes.clone(), *read, *write);
                            resident.push(ResidentRange { buf, bytes, read, write, dense: true });
                        }
                    }
                }
                _ => {}
            }
        }
        self.sched.submit_task(Submitted {
            id: self.id,
            granularity: self.granularity,
            commands: self.commands,
            claims: self.claims,
            after: self.after,
            refuse_conflicts: self.refuse_conflicts,
            resident,
            prefer,
            bound,
            shell: self.shell,
        })
    }
}

impl std::fmt::Debug for TaskBuilder<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskBuilder")
            .field("id", &self.id)
            .field("granularity", &self.granularity)
            .field("commands", &&self.commands[..self.written])
            .field("after", &self.after)
            .field("refuse_conflicts", &self.refuse_conflicts)
            .finish()
    }
}

/// The sim's CPU twin of a launch (`None` on CUDA).
fn twin(sched: &Scheduler, kernel: &KernelHandle, shape: LaunchShape, args: &Arc<[ArgValue]>) -> Option<Arc<dyn Twin>> {
    sched
        .machine()
        .simulated()
        .then(|| Arc::new(TwinCall { kernel: kernel.inner.clone(), shape, args: args.clone() }) as Arc<dyn Twin>)
}
