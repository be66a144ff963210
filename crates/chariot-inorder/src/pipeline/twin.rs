//! The in-order pipeline with no GPU: the kernel's CPU twin run at issue ([`Twin`]),
//! for checking a pipeline's wiring.

use super::{Device, DeviceArg, InOrderLaunch, InOrderPlan};
use chariot::kernel::TwinArg;
use chariot::{Error, Kernel};
use parking_lot::Mutex;

/// The CPU stand-in: per stream, memory for the input, output and scratch buffers, and
/// the constants; `issue` copies in, runs the twin for each launch and copies out.
pub(super) struct Twin<'k> {
    kernel: &'k Kernel,
    inputs: Vec<(Mutex<Vec<u128>>, usize)>,
    outputs: Vec<(Mutex<Vec<u128>>, usize)>,
    scratch: Vec<Vec<(Mutex<Vec<u128>>, usize)>>,
    constants: Vec<(Mutex<Vec<u128>>, usize)>,
}

fn zeroed(bytes: usize) -> (Mutex<Vec<u128>>, usize) {
    (Mutex::new(vec![0u128; bytes.div_ceil(16)]), bytes)
}

impl<'k> Twin<'k> {
    pub(super) fn new(
        kernel: &'k Kernel,
        plan: &InOrderPlan<'_>,
        in_bytes: usize,
        out_bytes: usize,
    ) -> Result<Self, Error> {
        if !kernel.has_cpu_twin() {
            return Err(Error::KernelInvalid {
                kernel: kernel.name().to_string(),
                message: "the CPU-twin in-order pipeline needs a kernel with a CPU twin".into(),
            });
        }
        let constants = plan
            .constants
            .iter()
            .map(|c| {
                let (m, n) = zeroed(c.len());
                bytemuck::cast_slice_mut::<u128, u8>(&mut m.lock()[..])[..n].copy_from_slice(c);
                (m, n)
            })
            .collect();
        Ok(Twin {
            kernel,
            inputs: (0..plan.streams).map(|_| zeroed(in_bytes)).collect(),
            outputs: (0..plan.streams).map(|_| zeroed(out_bytes)).collect(),
            scratch: (0..plan.streams).map(|_| plan.scratch_bytes.iter().map(|&b| zeroed(b)).collect()).collect(),
            constants,
        })
    }

    fn buffer(&self, s: usize, a: &DeviceArg) -> Option<&(Mutex<Vec<u128>>, usize)> {
        match *a {
            DeviceArg::Input => Some(&self.inputs[s]),
            DeviceArg::Output => Some(&self.outputs[s]),
            DeviceArg::Scratch(k) => Some(&self.scratch[s][k]),
            DeviceArg::Constant(k) => Some(&self.constants[k]),
            _ => None,
        }
    }

    fn launch(&self, s: usize, l: &InOrderLaunch) -> Result<(), String> {
        // Lock each distinct buffer once; arguments naming the same buffer share it.
        let mut mems: Vec<&(Mutex<Vec<u128>>, usize)> = Vec::new();
        let mut args = Vec::with_capacity(l.args.len());
        for a in &l.args {
            args.push(match *a {
                DeviceArg::I32(v) => TwinArg::I32(v),
                DeviceArg::U32(v) => TwinArg::U32(v),
                DeviceArg::I64(v) => TwinArg::I64(v),
                DeviceArg::U64(v) => TwinArg::U64(v),
                DeviceArg::F32(v) => TwinArg::F32(v),
                DeviceArg::F64(v) => TwinArg::F64(v),
                _ => {
                    let m = self.buffer(s, a).ok_or("not a buffer")?;
                    TwinArg::Buffer(mems.iter().position(|x| std::ptr::eq(*x, m)).unwrap_or_else(|| {
                        mems.push(m);
                        mems.len() - 1
                    }))
                }
            });
        }
        let mut guards: Vec<_> = mems.iter().map(|m| m.0.lock()).collect();
        let mut buffers: Vec<&mut [u8]> =
            guards.iter_mut().zip(&mems).map(|(g, m)| &mut bytemuck::cast_slice_mut(&mut g[..])[..m.1]).collect();
        self.kernel.run_cpu_twin(l.shape, &args, &mut buffers).map_err(|e| e.to_string())
    }
}

impl Device for Twin<'_> {
    unsafe fn issue(
        &mut self,
        s: usize,
        input: &[u8],
        launches: &[InOrderLaunch],
        output: &mut [u8],
    ) -> Result<(), String> {
        bytemuck::cast_slice_mut::<u128, u8>(&mut self.inputs[s].0.lock()[..])[..input.len()].copy_from_slice(input);
        for l in launches {
            self.launch(s, l)?;
        }
        output.copy_from_slice(&bytemuck::cast_slice::<u128, u8>(&self.outputs[s].0.lock()[..])[..output.len()]);
        Ok(())
    }

    fn wait(&mut self, _: usize) -> Result<(), String> {
        Ok(())
    }

    fn quiesce(&mut self) {}
}
