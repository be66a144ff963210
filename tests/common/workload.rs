//! A deterministic workload: recipes of task shapes, a seeded plan of tasks over host
//! buffers, and a [`Workload`] that submits them and verifies every output against its
//! CPU reference.

use super::expect::TaskSpec;
use super::kernels::{
    affine_kernel, affine_ref, checksum, gen, gen2, gpu_fill, grid, mix_kernel, mix_ref, BLOCK, SENTINEL,
};
use chariot::callback::{CallInfo, Resource};
use chariot::kernel::KernelHandle;
use chariot::report::Report;
use chariot::{Arg, DeviceBuffer, HostBuffer, Scheduler, Stage, TaskId};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The shape of one task of a [`Workload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recipe {
    /// download, affine, readback.
    Plain,
    /// download, mix, affine, readback.
    TwoKernels,
    /// callback_writing (fills the input chunk with `gen2`), download, affine, readback,
    /// callback_reading (checksums the output chunk).
    CpuAround,
    /// callback(Resource::Cpu) recording its CallInfo, download, affine, readback.
    CpuInfo,
    /// download, gpu_callback filling the device input with `k`, affine, readback.
    GpuFill,
    /// download, gpu_callback adding `k` through `GpuCall::sim_buffer` (sim only),
    /// affine, readback.
    GpuAddSim,
    /// download, callback(Resource::Gpu) recording its CallInfo, affine, readback.
    GpuResource,
}

/// Every recipe the sim backend runs.
pub const SIM_RECIPES: &[Recipe] = &[
    Recipe::Plain,
    Recipe::TwoKernels,
    Recipe::CpuAround,
    Recipe::CpuInfo,
    Recipe::GpuFill,
    Recipe::GpuAddSim,
    Recipe::GpuResource,
];

/// Every recipe the CUDA backend runs.
pub const CUDA_RECIPES: &[Recipe] =
    &[Recipe::Plain, Recipe::TwoKernels, Recipe::CpuAround, Recipe::CpuInfo, Recipe::GpuFill, Recipe::GpuResource];

impl Recipe {
    pub fn stages(self) -> Vec<Stage> {
        use Stage::*;
        match self {
            Recipe::Plain => vec![Download, Kernel, Readback],
            Recipe::TwoKernels => vec![Download, Kernel, Kernel, Readback],
            Recipe::CpuAround => vec![Cpu, Download, Kernel, Readback, Cpu],
            Recipe::CpuInfo => vec![Cpu, Download, Kernel, Readback],
            Recipe::GpuFill | Recipe::GpuAddSim | Recipe::GpuResource => {
                vec![Download, Kernel, Kernel, Readback]
            }
        }
    }

    /// Whether the task records a CallInfo.
    fn records_info(self) -> bool {
        matches!(self, Recipe::CpuInfo | Recipe::GpuResource)
    }
}

/// One planned task: its chunk `offset..offset + len` of the host buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Planned {
    pub id: u64,
    pub offset: usize,
    pub len: usize,
    pub recipe: Recipe,
    pub a: u32,
    pub b: u32,
    pub k: u32,
}

/// `count` tasks with ids `first_id..`, random lengths in `1..=max_len`, the recipes in
/// turn, tiling the host buffers from element 0.
pub fn plan(seed: u64, first_id: u64, count: usize, max_len: usize, recipes: &[Recipe]) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut offset = 0;
    (0..count)
        .map(|i| {
            let len = rng.random_range(1..=max_len);
            let p = Planned {
                id: first_id + i as u64,
                offset,
                len,
                recipe: recipes[i % recipes.len()],
                a: rng.random::<u32>() | 1,
                b: rng.random(),
                k: rng.random(),
            };
            offset += len;
            p
        })
        .collect()
}

/// Host and device buffers, kernels and a plan of tasks over them.
pub struct Workload {
    pub inp: HostBuffer<u32>,
    pub out: HostBuffer<u32>,
    pub d_in: DeviceBuffer<u32>,
    pub d_out: DeviceBuffer<u32>,
    pub affine: KernelHandle,
    pub mix: KernelHandle,
    pub plan: Vec<Planned>,
    /// Output checksums computed by `callback_reading` callbacks, by task.
    pub checksums: Arc<Mutex<HashMap<u64, u64>>>,
    /// CallInfos seen by callbacks, by task.
    pub infos: Arc<Mutex<Vec<CallInfo>>>,
}

impl Workload {
    /// Allocates and fills the buffers for `plan` and registers the kernels.
    pub fn new(sched: &Scheduler, plan: Vec<Planned>) -> chariot::Result<Workload> {
        Self::with_kernel_cost(sched, plan, None)
    }

    /// As [`Workload::new`], with a fixed modeled kernel time on the sim backend.
    pub fn with_kernel_cost(
        sched: &Scheduler,
        plan: Vec<Planned>,
        cost: Option<Duration>,
    ) -> chariot::Result<Workload> {
        let total: usize = plan.iter().map(|p| p.offset + p.len).max().unwrap_or(1).max(1);
        let max_len = plan.iter().map(|p| p.len).max().unwrap_or(1).max(1);
        let mut inp = sched.alloc_host::<u32>(total)?;
        let mut out = sched.alloc_host::<u32>(total)?;
        inp.write().iter_mut().enumerate().for_each(|(i, x)| *x = gen(i));
        out.write().fill(SENTINEL);
        let (mut affine, mut mix) = (affine_kernel(), mix_kernel());
        if let Some(c) = cost {
            affine = affine.sim_cost(move |_, _| c);
            mix = mix.sim_cost(move |_, _| c);
        }
        Ok(Workload {
            inp,
            out,
            d_in: sched.alloc::<u32>(max_len)?,
            d_out: sched.alloc::<u32>(max_len)?,
            affine: sched.register_kernel(affine)?,
            mix: sched.register_kernel(mix)?,
            plan,
            checksums: Default::default(),
            infos: Default::default(),
        })
    }

    /// Submits planned task `p`.
    pub fn submit(&self, sched: &Scheduler, p: &Planned) -> chariot::Result<TaskId> {
        let Planned { id, offset, len, recipe, a, b, k } = *p;
        let range = offset..offset + len;
        let n = len as u32;
        let affine_args = [Arg::buffer(&self.d_in), Arg::buffer(&self.d_out), Arg::u32(n), Arg::u32(a), Arg::u32(b)];
        let t = sched.task(id, len as u64);
        let t = match recipe {
            Recipe::CpuAround => t.callback_writing(&self.inp, range.clone(), move |s, info| {
                if info.task != TaskId(id) {
                    return Err(format!("callback of task #{id} got the CallInfo of {}", info.task).into());
                }
                if s.len() != len {
                    return Err(format!("callback_writing got {} elements, expected {len}", s.len()).into());
                }
                s.iter_mut().enumerate().for_each(|(j, x)| *x = gen2(offset + j));
                Ok(())
            }),
            Recipe::CpuInfo => {
                let infos = self.infos.clone();
                t.callback(Resource::Cpu, move |info| {
                    infos.lock().unwrap().push(*info);
                    // Long enough that CPU callbacks of different tasks overlap and the
                    // CPU stage's thresholds matter.
                    std::thread::sleep(Duration::from_micros(300));
                    Ok(())
                })
            }
            _ => t,
        };
        let t = t.download(&self.d_in, 0, &self.inp, range.clone());
        let t = match recipe {
            Recipe::TwoKernels => {
                t.launch(&self.mix, grid(len), BLOCK, 0, &[Arg::buffer(&self.d_in), Arg::u32(n), Arg::u32(k)])
            }
            Recipe::GpuFill | Recipe::GpuAddSim => {
                let d = self.d_in.clone();
                t.gpu_callback(move |call| {
                    if call.info().task != TaskId(id) {
                        return Err(
                            format!("GPU callback of task #{id} got the CallInfo of {}", call.info().task).into()
                        );
                    }
                    if recipe == Recipe::GpuFill {
                        return gpu_fill(call, &d, len, k);
                    }
                    let mut mem = call.sim_buffer(&d).ok_or("GpuAddSim needs the sim backend")?;
                    mem[..len].iter_mut().for_each(|x| *x = x.wrapping_add(k));
                    Ok(())
                })
            }
            Recipe::GpuResource => {
                let infos = self.infos.clone();
                t.callback(Resource::Gpu, move |info| {
                    infos.lock().unwrap().push(*info);
                    Ok(())
                })
            }
            _ => t,
        };
        let t = t.launch(&self.affine, grid(len), BLOCK, 0, &affine_args).readback(
            &self.out,
            range.clone(),
            &self.d_out,
            0,
        );
        let t = match recipe {
            Recipe::CpuAround => {
                let sums = self.checksums.clone();
                t.callback_reading(&self.out, range, move |s, _info| {
                    sums.lock().unwrap().insert(id, checksum(s));
                    Ok(())
                })
            }
            _ => t,
        };
        t.submit()
    }

    /// Submits every planned task, in plan order.
    pub fn submit_all(&self, sched: &Scheduler) -> chariot::Result<()> {
        for p in &self.plan {
            let id = self.submit(sched, p)?;
            assert_eq!(id, TaskId(p.id), "submit returns the task's id");
        }
        Ok(())
    }

    /// The checker's view of the plan.
    pub fn specs(&self) -> Vec<TaskSpec> {
        self.plan.iter().map(|p| TaskSpec::new(p.id, p.len as u64, &p.recipe.stages())).collect()
    }

    /// The output chunk task `p` must produce (CPU reference).
    pub fn expected(p: &Planned) -> Vec<u32> {
        (0..p.len)
            .map(|j| {
                let i = p.offset + j;
                let x = match p.recipe {
                    Recipe::CpuAround => gen2(i),
                    _ => gen(i),
                };
                let x = match p.recipe {
                    Recipe::TwoKernels => mix_ref(x, p.k, j),
                    Recipe::GpuFill => p.k,
                    Recipe::GpuAddSim => x.wrapping_add(p.k),
                    _ => x,
                };
                affine_ref(x, p.a, p.b)
            })
            .collect()
    }

    /// Compares every output element with the CPU reference, and the callbacks'
    /// checksums and CallInfos with the report.
    pub fn verify(&self, report: &Report) {
        self.verify_tasks(report, |_| true);
    }

    /// As [`Workload::verify`], for the planned tasks that `keep` selects.
    pub fn verify_tasks(&self, report: &Report, keep: impl Fn(&Planned) -> bool) {
        let out = self.out.read();
        let inp = self.inp.read();
        let sums = self.checksums.lock().unwrap();
        let mut bad = Vec::new();
        for p in self.plan.iter().filter(|p| keep(p)) {
            let want = Self::expected(p);
            let got = &out[p.offset..p.offset + p.len];
            if let Some(j) = (0..p.len).find(|&j| got[j] != want[j]) {
                bad.push(format!(
                    "task #{} ({:?}, {} elements): element {} = {:#x}, expected {:#x}",
                    p.id, p.recipe, p.len, j, got[j], want[j]
                ));
            }
            if p.recipe == Recipe::CpuAround {
                if let Some(j) = (0..p.len).find(|&j| inp[p.offset + j] != gen2(p.offset + j)) {
                    bad.push(format!("task #{}: callback_writing did not write input element {j}", p.id));
                }
                match sums.get(&p.id) {
                    Some(&s) if s == checksum(&want) => {}
                    Some(_) => bad
                        .push(format!("task #{}: callback_reading saw an output chunk other than the final one", p.id)),
                    None => bad.push(format!("task #{}: callback_reading never ran", p.id)),
                }
            }
        }
        let infos = self.infos.lock().unwrap();
        let slots: HashMap<u64, (u16, u16)> = report.records.iter().map(|r| (r.task.0, (r.gpu, r.stream))).collect();
        let wanted = self.plan.iter().filter(|p| keep(p) && p.recipe.records_info()).count();
        let seen = infos.iter().filter(|i| self.plan.iter().any(|p| p.id == i.task.0 && keep(p))).count();
        if seen != wanted {
            bad.push(format!("{seen} callbacks recorded a CallInfo, expected {wanted}"));
        }
        for info in infos.iter() {
            match slots.get(&info.task.0) {
                Some(&(g, s)) if (g as usize, s as usize) == (info.gpu, info.stream) => {}
                Some(&(g, s)) => bad.push(format!(
                    "task {}: callback ran with gpu {} stream {}, but the report has gpu {g} stream {s}",
                    info.task, info.gpu, info.stream
                )),
                None => bad.push(format!("task {}: CallInfo of a task without records", info.task)),
            }
        }
        assert!(bad.is_empty(), "{} wrong result(s):\n  {}", bad.len(), bad.join("\n  "));
    }
}
