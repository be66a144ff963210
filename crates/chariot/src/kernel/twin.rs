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
