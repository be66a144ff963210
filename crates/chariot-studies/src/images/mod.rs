//! A stream of small DAGs (task graphs and resident data, benchmark 1): GrCUDA's image-processing benchmark
//! (IMG, b8) run per image over images streamed from pinned host memory.
//!
//! Per image ([`Node`], edges [`Node::deps`]):
//!
//! ```text
//!           ┌─> blur small ─────> sobel small ───────────────────────────────────┐
//! upload ───┼─> blur large ─────> sobel large ─┬─> maximum ─┬─> extend ─┐        │
//!           │                                  └─> minimum ─┘           ├─> combine ─┴─> combine final ─> readback
//!           └─> blur unsharpen ─> unsharpen ────────────────────────────┘
//! ```
//!
//! 13 nodes (an upload, 11 kernels, a readback) and 15 edges; the three blurs, the two
//! Sobel masks, the maximum and minimum, and the unsharpen branch can run at once.
//! Buffers per image ([`Buf`]): the image, three blurred copies, two masks, the
//! sharpened copy, the first combine, the output, and the partial maxima and minima.
//!
//! The same DAG, described once here ([`Node::launch`] gives each kernel's arguments as
//! uses of buffers), runs four ways:
//!
//! * [`stream`]: chariot, one task per node, the buffers resident in a ring of K sets
//!   that the inferred dependencies order;
//! * [`baseline`]: by hand with the CUDA driver: synchronous, one CUDA graph per
//!   buffer set launched per image, and four streams with events;
//!
//! and [`mod@reference`] is the CPU oracle, [`kernels`] the chariot kernels with their CPU
//! twins, [`mod@bench`] the benchmark's runs, checks and CSV (`benches/images.rs`).

pub mod baseline;
pub mod bench;
mod check;
pub mod kernels;
pub mod reference;
pub mod stream;

pub use check::{compare, fill_images, references, Check, TOLERANCE};

use chariot::kernel::Dim3;

/// A Gaussian filter: odd `diameter` (at most 9), standard deviation `sigma`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Filter {
    /// Taps along each side.
    pub diameter: usize,
    /// Standard deviation, pixels.
    pub sigma: f32,
}

/// The blur at medium frequencies (GrCUDA's small kernel): 3 × 3, σ = 1.
pub const BLUR_SMALL: Filter = Filter { diameter: 3, sigma: 1.0 };
/// The blur at low frequencies (GrCUDA's large kernel): 5 × 5, σ = 10.
pub const BLUR_LARGE: Filter = Filter { diameter: 5, sigma: 10.0 };
/// The blur the sharpening subtracts: 3 × 3, σ = 5.
pub const BLUR_UNSHARPEN: Filter = Filter { diameter: 3, sigma: 5.0 };
/// How much the sharpening subtracts.
pub const UNSHARPEN_AMOUNT: f32 = 0.5;
/// The gain of the extended mask (`min(1, 5 (m − min) / (max − min))`), fixed in the kernel.
pub const EXTEND_GAIN: f32 = 5.0;

/// The per-image buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Buf {
    /// The input image (uploaded).
    Image,
    /// Blurred at medium frequencies.
    BlurSmall,
    /// Blurred at low frequencies.
    BlurLarge,
    /// Blurred for the sharpening.
    BlurUnsharpen,
    /// Edges of the small blur.
    MaskSmall,
    /// Edges of the large blur, then extended in place.
    MaskLarge,
    /// The sharpened image.
    Sharpened,
    /// Sharpened and large blur combined.
    Image2,
    /// The output (read back).
    Combined,
    /// Per-block maxima of the large mask ([`kernels::REDUCE_BLOCKS`] of them).
    MaxPartial,
    /// Per-block minima of the large mask.
    MinPartial,
}

impl Buf {
    /// All of them; `Buf::ALL[b.index()] == b`.
    pub const ALL: [Buf; 11] = [
        Buf::Image,
        Buf::BlurSmall,
        Buf::BlurLarge,
        Buf::BlurUnsharpen,
        Buf::MaskSmall,
        Buf::MaskLarge,
        Buf::Sharpened,
        Buf::Image2,
        Buf::Combined,
        Buf::MaxPartial,
        Buf::MinPartial,
    ];

    /// Its position in [`Buf::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Elements (f32) it holds for `n × n` images.
    ///
    /// ```
    /// use chariot_studies::images::Buf;
    /// assert_eq!(Buf::Image.len(4), 16);
    /// assert_eq!(Buf::MaxPartial.len(4), 256);
    /// ```
    pub fn len(self, n: usize) -> usize {
        match self {
            Buf::MaxPartial | Buf::MinPartial => kernels::REDUCE_BLOCKS as usize,
            _ => n * n,
        }
    }
}

/// The kernels, in the order of [`kernels::all`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelId {
    /// `gaussian_blur`
    GaussianBlur,
    /// `sobel`
    Sobel,
    /// `reduce_max`
    ReduceMax,
    /// `reduce_min`
    ReduceMin,
    /// `extend`
    Extend,
    /// `unsharpen`
    Unsharpen,
    /// `combine`
    Combine,
}

impl KernelId {
    /// Its position in [`kernels::all`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// How a launch uses one argument: a buffer read, written or both, or a scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Use {
    /// A buffer the kernel only reads.
    Read(Buf),
    /// A buffer the kernel only writes (every element it holds for the image).
    Write(Buf),
    /// A buffer the kernel reads and writes in place.
    ReadWrite(Buf),
    /// `unsigned int`
    U32(u32),
    /// `int`
    I32(i32),
    /// `float`
    F32(f32),
}

/// One kernel launch of the DAG.
#[derive(Clone, Debug, PartialEq)]
pub struct Launch {
    /// Which kernel.
    pub kernel: KernelId,
    /// Blocks.
    pub grid: Dim3,
    /// Threads a block.
    pub block: Dim3,
    /// The arguments, in the kernel's parameter order.
    pub args: Vec<Use>,
}

/// A node of the per-image DAG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Node {
    /// Host image → [`Buf::Image`].
    Upload,
    /// Blur at medium frequencies.
    BlurSmall,
    /// Blur at low frequencies.
    BlurLarge,
    /// Blur for the sharpening.
    BlurUnsharpen,
    /// Edges of the small blur.
    SobelSmall,
    /// Edges of the large blur.
    SobelLarge,
    /// Partial maxima of the large mask.
    Maximum,
    /// Partial minima of the large mask.
    Minimum,
    /// Extend the large mask.
    Extend,
    /// Sharpen.
    Unsharpen,
    /// Sharpened and large blur, by the large mask.
    Combine,
    /// That and the small blur, by the small mask: the output.
    CombineFinal,
    /// [`Buf::Combined`] → host.
    Readback,
}

impl Node {
    /// All 13, in a topological order (each after its [`deps`](Node::deps)).
    pub const ALL: [Node; 13] = [
        Node::Upload,
        Node::BlurSmall,
        Node::BlurLarge,
        Node::BlurUnsharpen,
        Node::SobelSmall,
        Node::SobelLarge,
        Node::Maximum,
        Node::Minimum,
        Node::Extend,
        Node::Unsharpen,
        Node::Combine,
        Node::CombineFinal,
        Node::Readback,
    ];

    /// Its position in [`Node::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Short name for tables and traces.
    pub fn name(self) -> &'static str {
        match self {
            Node::Upload => "upload",
            Node::BlurSmall => "blur-small",
            Node::BlurLarge => "blur-large",
            Node::BlurUnsharpen => "blur-unsharpen",
            Node::SobelSmall => "sobel-small",
            Node::SobelLarge => "sobel-large",
            Node::Maximum => "maximum",
            Node::Minimum => "minimum",
            Node::Extend => "extend",
            Node::Unsharpen => "unsharpen",
            Node::Combine => "combine",
            Node::CombineFinal => "combine-final",
            Node::Readback => "readback",
        }
    }

    /// The nodes this one runs after within one image: the DAG's edges (15 in all).
    /// Every buffer hazard between two nodes of an image is ordered by them, directly
    /// or through others.
    pub fn deps(self) -> &'static [Node] {
        match self {
            Node::Upload => &[],
            Node::BlurSmall | Node::BlurLarge | Node::BlurUnsharpen => &[Node::Upload],
            Node::SobelSmall => &[Node::BlurSmall],
            Node::SobelLarge => &[Node::BlurLarge],
            Node::Maximum | Node::Minimum => &[Node::SobelLarge],
            Node::Extend => &[Node::Maximum, Node::Minimum],
            Node::Unsharpen => &[Node::BlurUnsharpen],
            Node::Combine => &[Node::Extend, Node::Unsharpen],
            Node::CombineFinal => &[Node::Combine, Node::SobelSmall],
            Node::Readback => &[Node::CombineFinal],
        }
    }

    /// Which of four streams the hand-written multi-stream pipeline puts it on: 0 the
    /// uploads, 1 the small and the unsharpen branches, 2 the large branch and the
    /// combines, 3 the readbacks.
    pub fn lane(self) -> usize {
        match self {
            Node::Upload => 0,
            Node::BlurSmall | Node::SobelSmall | Node::BlurUnsharpen | Node::Unsharpen => 1,
            Node::Readback => 3,
            _ => 2,
        }
    }

    /// The kernel launch of this node for `n × n` images (`None` for the copies).
    pub fn launch(self, n: usize) -> Option<Launch> {
        let (side, count) = (n as u32, (n * n) as u32);
        let blur = |out: Buf, f: Filter| {
            (
                KernelId::GaussianBlur,
                vec![
                    Use::Read(Buf::Image),
                    Use::Write(out),
                    Use::U32(side),
                    Use::I32(f.diameter as i32),
                    Use::F32(f.sigma),
                ],
            )
        };
        let sobel = |i: Buf, o: Buf| (KernelId::Sobel, vec![Use::Read(i), Use::Write(o), Use::U32(side)]);
        let combine = |x: Buf, y: Buf, m: Buf, o: Buf| {
            (KernelId::Combine, vec![Use::Read(x), Use::Read(y), Use::Read(m), Use::Write(o), Use::U32(count)])
        };
        let (kernel, args) = match self {
            Node::Upload | Node::Readback => return None,
            Node::BlurSmall => blur(Buf::BlurSmall, BLUR_SMALL),
            Node::BlurLarge => blur(Buf::BlurLarge, BLUR_LARGE),
            Node::BlurUnsharpen => blur(Buf::BlurUnsharpen, BLUR_UNSHARPEN),
            Node::SobelSmall => sobel(Buf::BlurSmall, Buf::MaskSmall),
            Node::SobelLarge => sobel(Buf::BlurLarge, Buf::MaskLarge),
            Node::Maximum => {
                (KernelId::ReduceMax, vec![Use::Read(Buf::MaskLarge), Use::Write(Buf::MaxPartial), Use::U32(count)])
            }
            Node::Minimum => {
                (KernelId::ReduceMin, vec![Use::Read(Buf::MaskLarge), Use::Write(Buf::MinPartial), Use::U32(count)])
            }
            Node::Extend => (
                KernelId::Extend,
                vec![
                    Use::ReadWrite(Buf::MaskLarge),
                    Use::Read(Buf::MaxPartial),
                    Use::Read(Buf::MinPartial),
                    Use::U32(kernels::REDUCE_BLOCKS),
                    Use::U32(count),
                ],
            ),
            Node::Unsharpen => (
                KernelId::Unsharpen,
                vec![
                    Use::Read(Buf::Image),
                    Use::Read(Buf::BlurUnsharpen),
                    Use::Write(Buf::Sharpened),
                    Use::F32(UNSHARPEN_AMOUNT),
                    Use::U32(count),
                ],
            ),
            Node::Combine => combine(Buf::Sharpened, Buf::BlurLarge, Buf::MaskLarge, Buf::Image2),
            Node::CombineFinal => combine(Buf::Image2, Buf::BlurSmall, Buf::MaskSmall, Buf::Combined),
        };
        let (grid, block) = match kernel {
            KernelId::GaussianBlur | KernelId::Sobel => (kernels::grid_2d(n), Dim3::from(BLOCK_2D_DIM)),
            KernelId::ReduceMax | KernelId::ReduceMin => {
                (Dim3::from(kernels::REDUCE_BLOCKS), Dim3::from(kernels::BLOCK_1D))
            }
            _ => (Dim3::from(kernels::grid_1d(n * n)), Dim3::from(kernels::BLOCK_1D)),
        };
        Some(Launch { kernel, grid, block, args })
    }

    /// The buffers this node reads and writes (copies included: the upload writes the
    /// image, the readback reads the output).
    pub fn buffers(self, n: usize) -> (Vec<Buf>, Vec<Buf>) {
        match self {
            Node::Upload => (vec![], vec![Buf::Image]),
            Node::Readback => (vec![Buf::Combined], vec![]),
            _ => {
                let (mut reads, mut writes) = (Vec::new(), Vec::new());
                for u in self.launch(n).map(|l| l.args).unwrap_or_default() {
                    match u {
                        Use::Read(b) => reads.push(b),
                        Use::Write(b) => writes.push(b),
                        Use::ReadWrite(b) => {
                            reads.push(b);
                            writes.push(b)
                        }
                        _ => {}
                    }
                }
                (reads, writes)
            }
        }
    }
}

/// [`kernels::BLOCK_2D`] as a tuple `Dim3` converts from.
const BLOCK_2D_DIM: (u32, u32) = kernels::BLOCK_2D;

#[cfg(test)]
mod test {
    use super::*;

    /// Every hazard between two nodes of one image (read after write, write after
    /// read, write after write) is ordered by the edges, transitively.
    #[test]
    fn the_edges_order_every_hazard() {
        let n = 16;
        let before = |a: Node, b: Node| {
            // Is a an ancestor of b?
            let mut stack = vec![b];
            while let Some(x) = stack.pop() {
                for &d in x.deps() {
                    if d == a {
                        return true;
                    }
                    stack.push(d);
                }
            }
            false
        };
        for (i, &a) in Node::ALL.iter().enumerate() {
            for &d in a.deps() {
                assert!(d.index() < i, "{a:?} listed before its dependency {d:?}");
            }
            for &b in &Node::ALL[i + 1..] {
                let (ra, wa) = a.buffers(n);
                let (rb, wb) = b.buffers(n);
                let hazard = wa.iter().any(|x| rb.contains(x) || wb.contains(x)) || ra.iter().any(|x| wb.contains(x));
                if hazard {
                    assert!(before(a, b), "{a:?} and {b:?} share a buffer but are not ordered");
                }
            }
        }
        assert_eq!(Node::ALL.iter().map(|n| n.deps().len()).sum::<usize>(), 15);
        for (i, n) in Node::ALL.iter().enumerate() {
            assert_eq!(n.index(), i);
        }
        for (i, b) in Buf::ALL.iter().enumerate() {
            assert_eq!(b.index(), i);
        }
    }

    /// Each launch names its kernel's parameters in kind and number.
    #[test]
    fn launches_match_the_kernels() {
        let kernels = kernels::all();
        for node in Node::ALL {
            let Some(l) = node.launch(64) else { continue };
            let params = kernels[l.kernel.index()].param_list();
            assert_eq!(params.len(), l.args.len(), "{node:?}");
            for (p, u) in params.iter().zip(&l.args) {
                let want = match u {
                    Use::Read(_) | Use::Write(_) | Use::ReadWrite(_) => chariot::Param::Buffer,
                    Use::U32(_) => chariot::Param::U32,
                    Use::I32(_) => chariot::Param::I32,
                    Use::F32(_) => chariot::Param::F32,
                };
                assert_eq!(*p, want, "{node:?}");
            }
        }
    }

    /// The pixels lie in [0, 1) and differ between seeds.
    #[test]
    fn images_are_reproducible() {
        let (mut a, mut b, mut c) = (vec![0.0; 1000], vec![0.0; 1000], vec![0.0; 1000]);
        fill_images(&mut a, 1);
        fill_images(&mut b, 1);
        fill_images(&mut c, 2);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|&x| (0.0..1.0).contains(&x)));
    }
}
