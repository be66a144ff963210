//! What a kernel's CPU twin and its simulated cost see of a launch: the scalars
//! ([`ScalarArgs`]) and the buffers ([`TwinArgs`]), and the arguments of
//! [`Kernel::run_cpu_twin`](crate::Kernel::run_cpu_twin) ([`TwinArg`]).

use super::{ArgValue, LaunchShape, Param};
use crate::error::BoxError;
use crate::memory::Element;

fn scalar_at(values: &[ArgValue], i: usize) -> Result<&ArgValue, BoxError> {
    values.get(i).ok_or_else(|| format!("argument {i} does not exist ({} arguments)", values.len()).into())
}

macro_rules! scalar_getter {
    ($name:ident, $variant:ident, $t:ty) => {
        #[doc = concat!("Argument `i` as `", stringify!($t), "`; an error if it is another kind.")]
        pub fn $name(&self, i: usize) -> Result<$t, BoxError> {
            match scalar_at(self.values, i)? {
                ArgValue::$variant(v) => Ok(*v),
                other => Err(format!("argument {i} is {:?}, not {:?}", other.param(), Param::$variant).into()),
            }
        }
    };
}

/// The scalar arguments of a launch, for a [`Kernel::sim_cost`](crate::Kernel::sim_cost) model.
#[derive(Debug)]
pub struct ScalarArgs<'a> {
    pub(crate) values: &'a [ArgValue],
}

impl ScalarArgs<'_> {
    scalar_getter!(i32, I32, i32);
    scalar_getter!(u32, U32, u32);
    scalar_getter!(i64, I64, i64);
    scalar_getter!(u64, U64, u64);
    scalar_getter!(f32, F32, f32);
    scalar_getter!(f64, F64, f64);
}

/// What a CPU twin sees: the launch shape, the scalars, and the task's physical
/// buffers on the simulated GPU.
pub struct TwinArgs<'a> {
    shape: LaunchShape,
    values: &'a [ArgValue],
    /// Distinct buffers, held for the twin's run, each cut to its size in bytes.
    memory: Vec<&'a mut [u8]>,
    /// For each argument, its index in `memory` and the bytes of it the argument sees
    /// (buffers only).
    index: Vec<Option<(usize, std::ops::Range<usize>)>>,
}

impl<'a> TwinArgs<'a> {
    pub(crate) fn new(
        shape: LaunchShape,
        values: &'a [ArgValue],
        memory: Vec<&'a mut [u8]>,
        index: Vec<Option<(usize, std::ops::Range<usize>)>>,
    ) -> Self {
        TwinArgs { shape, values, memory, index }
    }

    /// The launch's grid, block and shared memory.
    pub fn shape(&self) -> LaunchShape {
        self.shape
    }

    /// The scalar arguments.
    pub fn scalars(&self) -> ScalarArgs<'_> {
        ScalarArgs { values: self.values }
    }

    scalar_getter!(i32, I32, i32);
    scalar_getter!(u32, U32, u32);
    scalar_getter!(i64, I64, i64);
    scalar_getter!(u64, U64, u64);
    scalar_getter!(f32, F32, f32);
    scalar_getter!(f64, F64, f64);

    fn slot(&self, i: usize) -> Result<(usize, std::ops::Range<usize>), BoxError> {
        scalar_at(self.values, i)?;
        self.index[i]
            .clone()
            .ok_or_else(|| format!("argument {i} is {:?}, not a buffer", self.values[i].param()).into())
    }

    fn cast<T: Element>(bytes: &[u8]) -> Result<&[T], BoxError> {
        let whole = bytes.len() / std::mem::size_of::<T>() * std::mem::size_of::<T>();
        bytemuck::try_cast_slice(&bytes[..whole]).map_err(|e| format!("buffer cast: {e}").into())
    }

    fn cast_mut<T: Element>(bytes: &mut [u8]) -> Result<&mut [T], BoxError> {
        let whole = bytes.len() / std::mem::size_of::<T>() * std::mem::size_of::<T>();
        bytemuck::try_cast_slice_mut(&mut bytes[..whole]).map_err(|e| format!("buffer cast: {e}").into())
    }

    /// Buffer argument `i`, read-only.
    pub fn buffer<T: Element>(&self, i: usize) -> Result<&[T], BoxError> {
        let (m, w) = self.slot(i)?;
        Self::cast(&self.memory[m][w])
    }

    /// Buffer argument `i`, writable.
    pub fn buffer_mut<T: Element>(&mut self, i: usize) -> Result<&mut [T], BoxError> {
        let (m, w) = self.slot(i)?;
        Self::cast_mut(&mut self.memory[m][w])
    }

    /// Buffer `input` read-only and buffer `output` writable, at once; an error if both
    /// arguments name the same buffer (use [`TwinArgs::buffer_mut`] for in-place work).
    pub fn in_out<A: Element, B: Element>(
        &mut self,
        input: usize,
        output: usize,
    ) -> Result<(&[A], &mut [B]), BoxError> {
        let ((mi, wi), (mo, wo)) = (self.slot(input)?, self.slot(output)?);
        if mi == mo {
            // Two ranges of one resident buffer: apart, they may be read and written at once.
            if wi.end <= wo.start || wo.end <= wi.start {
                let mem = &mut self.memory[mi][..];
                let (a, b) = if wi.end <= wo.start {
                    let (lo, hi) = mem.split_at_mut(wo.start);
                    (&lo[wi.clone()], &mut hi[..wo.len()])
                } else {
                    let (lo, hi) = mem.split_at_mut(wi.start);
                    (&hi[..wi.len()], &mut lo[wo.clone()])
                };
                return Ok((Self::cast(a)?, Self::cast_mut(b)?));
            }
            return Err(format!("arguments {input} and {output} are the same buffer").into());
        }
        let (lo, hi) = self.memory.split_at_mut(mi.max(mo));
        let (a, b) = if mi < mo { (&lo[mi], &mut hi[0]) } else { (&hi[0], &mut lo[mo]) };
        Ok((Self::cast(&a[wi])?, Self::cast_mut(&mut b[wo])?))
    }

    /// Buffers `inputs` read-only and buffers `outputs` writable, all at once, in the
    /// order given: for a kernel of several inputs and outputs (`c = a + b` reads two
    /// and writes one). Inputs may name the same memory (they are only read); an
    /// output may share no byte with any other argument given. An error names the
    /// argument when an index is given twice, is not a buffer or does not exist, and
    /// names both when an output overlaps another.
    ///
    /// ```
    /// use chariot::{Arg, Backend, Kernel, Param, Scheduler};
    /// let s = Scheduler::builder().backend(Backend::Sim).build()?;
    /// // add(float* c, const float* a, const float* b, unsigned n)
    /// let add = s.register_kernel(Kernel::new("add", "").params([Param::Buffer, Param::Buffer, Param::Buffer, Param::U32])
    ///     .cpu_twin(|args| {
    ///         let n = args.u32(3)? as usize;
    ///         let (ins, mut outs) = args.ins_outs::<f32, f32>(&[1, 2], &[0])?;
    ///         let (a, b) = (ins[0], ins[1]);
    ///         for (i, c) in outs[0][..n].iter_mut().enumerate() { *c = a[i] + b[i]; }
    ///         Ok(())
    ///     }))?;
    /// let (mut a, mut b, c) = (s.alloc_host::<f32>(4)?, s.alloc_host::<f32>(4)?, s.alloc_host::<f32>(4)?);
    /// a.write().copy_from_slice(&[1.0, 2.0, 3.0, 4.0]);
    /// b.write().fill(0.5);
    /// let (da, db, dc) = (s.alloc::<f32>(4)?, s.alloc::<f32>(4)?, s.alloc::<f32>(4)?);
    /// s.task(0, 4).download(&da, 0, &a, 0..4).download(&db, 0, &b, 0..4)
    ///     .launch(&add, 1, 4, 0, &[Arg::buffer(&dc), Arg::buffer(&da), Arg::buffer(&db), Arg::u32(4)])
    ///     .readback(&c, 0..4, &dc, 0).submit()?;
    /// s.synchronize()?;
    /// assert_eq!(&c.read()[..], &[1.5, 2.5, 3.5, 4.5]);
    /// # Ok::<(), chariot::Error>(())
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn ins_outs<I: Element, O: Element>(
        &mut self,
        inputs: &[usize],
        outputs: &[usize],
    ) -> Result<(Vec<&[I]>, Vec<&mut [O]>), BoxError> {
        // (argument, memory, bytes, writable), in the order given: inputs, then outputs.
        let mut wanted: Vec<(usize, usize, std::ops::Range<usize>, bool)> =
            Vec::with_capacity(inputs.len() + outputs.len());
        for (&i, write) in inputs.iter().map(|i| (i, false)).chain(outputs.iter().map(|o| (o, true))) {
            if let Some(&(_, _, _, w)) = wanted.iter().find(|(j, ..)| *j == i) {
                let role = |w: bool| if w { "an output" } else { "an input" };
                return Err(format!("argument {i} is given twice (as {} and as {})", role(w), role(write)).into());
            }
            let (m, bytes) = self.slot(i)?;
            wanted.push((i, m, bytes, write));
        }
        for (k, (i, m, a, w)) in wanted.iter().enumerate() {
            for (j, n, b, v) in &wanted[k + 1..] {
                if m == n && (*w || *v) && a.start < b.end && b.start < a.end {
                    let out = if *v { j } else { i };
                    return Err(format!("arguments {i} and {j} overlap in one buffer, and {out} is an output").into());
                }
            }
        }
        // Cut each buffer into the pieces asked of it: shared where it is only read,
        // split where it is written (the check above keeps those pieces apart).
        let mut pieces: Vec<Option<Piece<'_>>> = (0..wanted.len()).map(|_| None).collect();
        for (m, mem) in self.memory.iter_mut().enumerate() {
            let mut here: Vec<usize> = (0..wanted.len()).filter(|&k| wanted[k].1 == m).collect();
            if here.is_empty() {
                continue;
            }
            if here.iter().all(|&k| !wanted[k].3) {
                let shared: &[u8] = mem;
                for k in here {
                    pieces[k] = Some(Piece::Read(&shared[wanted[k].2.clone()]));
                }
                continue;
            }
            here.sort_by_key(|&k| wanted[k].2.start);
            let (mut rest, mut at): (&mut [u8], usize) = (mem, 0);
            for k in here {
                let bytes = &wanted[k].2;
                let (_, tail) = std::mem::take(&mut rest).split_at_mut(bytes.start - at);
                let (piece, tail) = tail.split_at_mut(bytes.len());
                (rest, at) = (tail, bytes.end);
                pieces[k] = Some(if wanted[k].3 { Piece::Write(piece) } else { Piece::Read(piece) });
            }
        }
        let (mut ins, mut outs) = (Vec::with_capacity(inputs.len()), Vec::with_capacity(outputs.len()));
        for piece in pieces {
            match piece {
                Some(Piece::Read(bytes)) => ins.push(Self::cast(bytes)?),
                Some(Piece::Write(bytes)) => outs.push(Self::cast_mut(bytes)?),
                None => unreachable!("every argument asked for lies in one of the buffers"),
            }
        }
        Ok((ins, outs))
    }
}

/// A piece of a buffer that [`TwinArgs::ins_outs`] hands out.
enum Piece<'m> {
    Read(&'m [u8]),
    Write(&'m mut [u8]),
}

impl std::fmt::Debug for TwinArgs<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwinArgs").field("shape", &self.shape).field("args", &self.values.len()).finish()
    }
}

/// An argument of [`Kernel::run_cpu_twin`](crate::Kernel::run_cpu_twin): a scalar, or a
/// buffer by its index in the buffers given.
///
/// ```
/// use chariot::kernel::TwinArg;
/// // `scale(float* x, unsigned n, float a)` on the first buffer given:
/// let args = [TwinArg::Buffer(0), TwinArg::U32(1024), TwinArg::F32(0.5)];
/// assert_eq!(args[0], TwinArg::Buffer(0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum TwinArg {
    /// The buffer at this index.
    Buffer(usize),
    /// An `int`.
    I32(i32),
    /// An `unsigned`.
    U32(u32),
    /// A `long long`.
    I64(i64),
    /// An `unsigned long long`.
    U64(u64),
    /// A `float`.
    F32(f32),
    /// A `double`.
    F64(f64),
}

// The tests stand buffers in with `ArgValue::BadRange`, which exists with resident data.
#[cfg(all(test, feature = "resident"))]
mod tests {
    use super::*;
    use crate::kernel::Dim3;

    const ONE: Dim3 = Dim3 { x: 1, y: 1, z: 1 };

    type Split<'a> = Result<(Vec<&'a [f32]>, Vec<&'a mut [f32]>), BoxError>;

    /// Arguments 0..3 are buffers (0 and 1 distinct, 2 the back half of buffer 1);
    /// argument 3 a scalar.
    fn with_args<R>(f: impl FnOnce(&mut TwinArgs<'_>) -> R) -> R {
        let values = [
            ArgValue::BadRange(String::new()),
            ArgValue::BadRange(String::new()),
            ArgValue::BadRange(String::new()),
            ArgValue::U32(4),
        ];
        let (mut a, mut b) = ([0u8; 16], [0u8; 32]);
        for (i, x) in b.chunks_exact_mut(4).enumerate() {
            x.copy_from_slice(&(i as f32).to_ne_bytes());
        }
        let index = vec![Some((0, 0..16)), Some((1, 0..16)), Some((1, 16..32)), None];
        let shape = LaunchShape { grid: ONE, block: ONE, shared_bytes: 0 };
        let mut args = TwinArgs::new(shape, &values, vec![&mut a[..], &mut b[..]], index);
        f(&mut args)
    }

    #[test]
    fn two_inputs_one_output_at_once() {
        let sums = with_args(|args| {
            let (ins, mut outs) = args.ins_outs::<f32, f32>(&[1, 2], &[0]).unwrap();
            assert_eq!((ins.len(), outs.len()), (2, 1));
            assert_eq!(ins[0], &[0.0, 1.0, 2.0, 3.0]);
            assert_eq!(ins[1], &[4.0, 5.0, 6.0, 7.0]);
            for (c, (a, b)) in outs[0].iter_mut().zip(ins[0].iter().zip(ins[1])) {
                *c = a + b;
            }
            args.buffer::<f32>(0).unwrap().to_vec()
        });
        assert_eq!(sums, [4.0, 6.0, 8.0, 10.0]);
    }

    #[test]
    fn inputs_may_share_memory_and_outputs_split_one_buffer() {
        with_args(|args| {
            // Both halves of buffer 1 written at once, in the order asked.
            let (ins, mut outs) = args.ins_outs::<f32, f32>(&[0], &[2, 1]).unwrap();
            assert_eq!(ins[0].len(), 4);
            outs[0].fill(-1.0);
            outs[1].fill(1.0);
            let b = args.buffer::<f32>(1).unwrap().to_vec();
            assert_eq!(b, [1.0; 4]);
            assert_eq!(args.buffer::<f32>(2).unwrap(), &[-1.0; 4]);
            // Two reads of one buffer, no output.
            let (ins, outs) = args.ins_outs::<f32, f32>(&[1, 2, 0], &[]).unwrap();
            assert_eq!((ins.len(), outs.len()), (3, 0));
        });
    }

    #[test]
    fn repeats_scalars_and_overlaps_are_named() {
        with_args(|args| {
            let err = |r: Split<'_>| r.expect_err("an error").to_string();
            let e = err(args.ins_outs::<f32, f32>(&[1, 1], &[0]));
            assert_eq!(e, "argument 1 is given twice (as an input and as an input)");
            let e = err(args.ins_outs::<f32, f32>(&[0], &[0]));
            assert_eq!(e, "argument 0 is given twice (as an input and as an output)");
            let e = err(args.ins_outs::<f32, f32>(&[3], &[0]));
            assert_eq!(e, "argument 3 is U32, not a buffer");
            let e = err(args.ins_outs::<f32, f32>(&[0], &[9]));
            assert_eq!(e, "argument 9 does not exist (4 arguments)");
        });
        // An output that overlaps an input in one buffer.
        let values = [ArgValue::BadRange(String::new()), ArgValue::BadRange(String::new())];
        let mut a = [0u8; 16];
        let index = vec![Some((0, 0..12)), Some((0, 8..16))];
        let shape = LaunchShape { grid: ONE, block: ONE, shared_bytes: 0 };
        let mut args = TwinArgs::new(shape, &values, vec![&mut a[..]], index);
        let e = args.ins_outs::<u32, u32>(&[0], &[1]).expect_err("overlap").to_string();
        assert_eq!(e, "arguments 0 and 1 overlap in one buffer, and 1 is an output");
        assert!(args.ins_outs::<u32, u32>(&[0, 1], &[]).is_ok(), "overlapping inputs are only read");
    }
}
