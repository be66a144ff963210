//! chariot's run of the image stream: the plain loop over images, one task per node of
//! the per-image DAG, the buffers resident on the GPUs in a ring of K sets.
//!
//! Nothing is ordered by hand: each task names what it reads and writes (the launch
//! arguments' [`Arg::reads`], [`Arg::writes`], [`Arg::reads_writes`], the upload's
//! write of the image, the readback's read of the output), and the scheduler infers
//! the DAG's edges within an image and, across images, the reuse of a set (image i + K
//! writes a buffer only after image i's readers of it are done).

use super::{kernels, Buf, Node, Use};
use chariot::kernel::KernelHandle;
use chariot::report::Report;
use chariot::resident::ResidentBuffer;
use chariot::{Arg, HostBuffer, Result, Scheduler};

/// The kernels registered on a scheduler and K resident buffer sets for `n × n` images.
#[derive(Debug)]
pub struct ChariotImages {
    n: usize,
    kernels: Vec<KernelHandle>,
    slots: Vec<Vec<ResidentBuffer<f32>>>,
}

impl ChariotImages {
    /// Registers the kernels on `sched` and allocates `ring` sets of the per-image
    /// buffers ([`Buf`]), resident.
    ///
    /// # Errors
    /// What registering or allocating returns; [`chariot::Error::InvalidConfig`] for
    /// `n` or `ring` zero or images of 2³² pixels or more.
    pub fn new(sched: &Scheduler, n: usize, ring: usize) -> Result<ChariotImages> {
        if n == 0 || n.checked_mul(n).is_none_or(|p| p > u32::MAX as usize) || ring == 0 {
            return Err(chariot::Error::InvalidConfig {
                name: if ring == 0 { "ring" } else { "n" },
                value: if ring == 0 { "0".into() } else { n.to_string() },
                allowed: "n in 1 ..= 65535, ring at least 1".into(),
            });
        }
        let kernels = kernels::all().into_iter().map(|k| sched.register_kernel(k)).collect::<Result<Vec<_>>>()?;
        let mut slots = Vec::with_capacity(ring);
        for _ in 0..ring {
            slots.push(Buf::ALL.iter().map(|b| sched.alloc_resident::<f32>(b.len(n))).collect::<Result<Vec<_>>>()?);
        }
        Ok(ChariotImages { n, kernels, slots })
    }

    /// Buffer sets in the ring.
    pub fn ring(&self) -> usize {
        self.slots.len()
    }

    /// Submits images `images` of `input` (consecutive `n × n` images), each into the
    /// same place of `output`: per image 13 tasks, ids `13·i + node`, image i on set
    /// i mod K.
    ///
    /// # Errors
    /// What submitting returns (an image outside the buffers, for one).
    pub fn submit(
        &self,
        sched: &Scheduler,
        input: &HostBuffer<f32>,
        output: &HostBuffer<f32>,
        images: std::ops::Range<usize>,
    ) -> Result<()> {
        let len = self.n * self.n;
        let nodes = Node::ALL.len() as u64;
        for i in images {
            let slot = &self.slots[i % self.slots.len()];
            let range = i * len..(i + 1) * len;
            for node in Node::ALL {
                let id = i as u64 * nodes + node.index() as u64;
                let task = sched.task(id, len as u64);
                let task = match node {
                    Node::Upload => task.download(&slot[Buf::Image.index()], 0, input, range.clone()),
                    Node::Readback => task.readback(output, range.clone(), &slot[Buf::Combined.index()], 0),
                    _ => {
                        let l = node.launch(self.n).expect("kernel nodes have a launch");
                        let args: Vec<Arg> = l
                            .args
                            .iter()
                            .map(|u| match *u {
                                Use::Read(b) => Arg::reads(&slot[b.index()], ..),
                                Use::Write(b) => Arg::writes(&slot[b.index()], ..),
                                Use::ReadWrite(b) => Arg::reads_writes(&slot[b.index()], ..),
                                Use::U32(v) => Arg::u32(v),
                                Use::I32(v) => Arg::i32(v),
                                Use::F32(v) => Arg::f32(v),
                            })
                            .collect();
                        task.launch(&self.kernels[l.kernel.index()], l.grid, l.block, 0, &args)
                    }
                };
                task.submit()?;
            }
        }
        Ok(())
    }

    /// [`submit`](Self::submit) for the first `count` images, then synchronize: the
    /// report of the batch.
    ///
    /// # Errors
    /// What submitting or synchronizing returns.
    pub fn run(
        &self,
        sched: &Scheduler,
        input: &HostBuffer<f32>,
        output: &HostBuffer<f32>,
        count: usize,
    ) -> Result<Report> {
        let submitted = self.submit(sched, input, output, 0..count);
        // What was submitted runs to its end either way.
        let report = sched.synchronize();
        submitted?;
        report
    }
}
