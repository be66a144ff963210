//! The cluster form on the sim backend, run under MPI:
//!
//! ```sh
//! cargo build -p gpu-chariot --features mpi --tests
//! mpirun -np 3 --oversubscribe target/debug/deps/mpi-*   # (.ci/run finds the file)
//! ```
//!
//! Three ranks, one simulated GPU each, run the same loop of tasks (download, a 2 ms
//! kernel, readback). Checked on every rank, then gathered:
//! * every task ran once, on one rank, and wrote the right values there; gathered,
//!   rank 0's output buffer holds every task's values;
//! * the balance is dynamic: rank 2, its GPU made 4× slower, runs fewer tasks than
//!   each of the others (about a quarter of theirs);
//! * a failing rank (rank 1's GPU dies mid-batch): its tasks fail, and every rank's
//!   `synchronize` names them with the rank; the others run the rest; nothing hangs;
//! * chains (`after`): a task runs on the rank of the task it names; every task once;
//! * bad input: a second `Cluster::init` or scheduler in the stream, differing loops,
//!   refused submits (alike on every rank; the batch goes on), `gather` in a callback
//!   and of a buffer whose length differs between ranks.
//!
//! Not a libtest harness (`harness = false`): each rank is one process running `main`.
//! A watchdog ends the process after two minutes rather than let CI hang.

use chariot::callback::Resource;
use chariot::cluster::Cluster;
use chariot::sim::{SimFaults, SimProfile};
use chariot::{Arg, Backend, Error, Kernel, Param, Scheduler, TaskId};
use mpi::traits::*;
use std::time::Duration;

/// Elements of one task's region.
const N: usize = 256;
const UNTOUCHED: u32 = 0xDEAD_BEEF;

fn input(i: usize) -> u32 {
    (i as u32).wrapping_mul(2_654_435_761) ^ 0x9e37_79b9
}

fn expected(i: usize) -> u32 {
    input(i).wrapping_mul(3).wrapping_add(7)
}

/// `y = 3x + 7`, 2 ms a launch on the sim.
fn kernel() -> Kernel {
    Kernel::new(
        "affine3",
        "extern \"C\" __global__ void affine3(const unsigned* x, unsigned* y, unsigned n) {\n\
         unsigned i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 3u * x[i] + 7u; }",
    )
    .params([Param::Buffer, Param::Buffer, Param::U32])
    .cpu_twin(|a| {
        let n = a.u32(2)? as usize;
        let (x, y) = a.in_out::<u32, u32>(0, 1)?;
        for i in 0..n {
            y[i] = x[i].wrapping_mul(3).wrapping_add(7);
        }
        Ok(())
    })
    .sim_cost(|_, _| Duration::from_millis(2))
}

/// Runs `tasks` tasks on a scheduler of this rank with `faults`: the ids this rank
/// ran (with records), whether each wrote the right values, and the batch's failures.
/// `chains`: every task but each third runs after the one before it (chains of 3).
fn batch(
    cluster: &Cluster,
    faults: SimFaults,
    tasks: usize,
    chains: bool,
) -> (Vec<u64>, Vec<chariot::report::TaskFailure>) {
    let backend = Backend::SimWith(SimProfile::h100().with_faults(faults));
    let s = Scheduler::builder().backend(backend).streams(2).cluster(cluster).build().expect("scheduler");
    let k = s.register_kernel(kernel()).expect("kernel");
    let mut host_in = s.alloc_host::<u32>(tasks * N).expect("input");
    host_in.write().iter_mut().enumerate().for_each(|(i, x)| *x = input(i));
    let mut host_out = s.alloc_host::<u32>(tasks * N).expect("output");
    host_out.write().fill(UNTOUCHED);
    let (d_in, d_out) = (s.alloc::<u32>(N).expect("d_in"), s.alloc::<u32>(N).expect("d_out"));
    for t in 0..tasks {
        let r = t * N..(t + 1) * N;
        let task = s.task(t as u64, 1);
        let task = if chains && t % 3 != 0 { task.after(TaskId(t as u64 - 1)) } else { task };
        task.download(&d_in, 0, &host_in, r.clone())
            .launch(&k, 2, 128, 0, &[Arg::buffer(&d_in), Arg::buffer(&d_out), Arg::u32(N as u32)])
            .readback(&host_out, r, &d_out, 0)
            .submit()
            .expect("submit");
    }
    let (report, failures) = match s.synchronize() {
        Ok(r) => (r, Vec::new()),
        Err(Error::TasksFailed { failures, report }) => (*report, failures),
        Err(e) => panic!("rank {}: synchronize: {e}", cluster.rank()),
    };
    if std::env::var("MPI_TEST_DEBUG").is_ok() {
        eprintln!(
            "rank {}: tasks {} lost {:?} failures {}",
            cluster.rank(),
            report.tasks,
            report.lost_gpus,
            failures.len()
        );
    }
    let out = host_out.read().to_vec();
    // Rank 0's report covers every rank's GPUs ("rank r: …"); the others', their own.
    let rank = cluster.rank();
    if rank == 0 {
        assert_eq!(report.gpus.len(), 3, "rank 0's report: {:?}", report.gpus);
        assert!(
            report.gpus.iter().enumerate().all(|(r, n)| n.starts_with(&format!("rank {r}: "))),
            "{:?}",
            report.gpus
        );
        // Ranks sharing a host take distinct GPUs by default: rank r the r-th.
        assert!(report.gpus.iter().enumerate().all(|(r, n)| n.ends_with(&format!("#{r}"))), "{:?}", report.gpus);
        for t in 0..tasks {
            let failed = failures.iter().any(|f| f.task == TaskId(t as u64));
            assert!(failed || !report.task_records(TaskId(t as u64)).is_empty(), "task {t} is in rank 0's report");
        }
    }
    let own = |t: usize| report.task_records(TaskId(t as u64)).iter().any(|r| rank != 0 || r.gpu == 0);
    let mut ran = Vec::new();
    for t in 0..tasks {
        let mine = own(t);
        let failed = failures.iter().any(|f| f.task == TaskId(t as u64));
        let region = &out[t * N..(t + 1) * N];
        if mine && !failed {
            ran.push(t as u64);
            assert!(
                region.iter().enumerate().all(|(e, &v)| v == expected(t * N + e)),
                "rank {}: task {t} wrote wrong values",
                cluster.rank()
            );
        } else if !mine {
            assert!(region.iter().all(|&v| v == UNTOUCHED), "rank {}: task {t} is another rank's", cluster.rank());
        }
    }
    // Every rank's results on rank 0: each task that ran well, whichever rank ran it.
    s.gather(&mut host_out).expect("gather");
    if rank == 0 {
        let out = host_out.read();
        for t in 0..tasks {
            if failures.iter().any(|f| f.task == TaskId(t as u64)) {
                continue;
            }
            let region = &out[t * N..(t + 1) * N];
            assert!(
                region.iter().enumerate().all(|(e, &v)| v == expected(t * N + e)),
                "rank 0 after gather: task {t}'s region is wrong"
            );
        }
    }
    (ran, failures)
}

/// Every rank's list, gathered on every rank.
fn all_lists(list: &[u64]) -> Vec<Vec<u64>> {
    let world = mpi::topology::SimpleCommunicator::world();
    let size = world.size() as usize;
    let mut lens = vec![0u64; size];
    world.all_gather_into(&(list.len() as u64), &mut lens[..]);
    let mut out = Vec::new();
    for (r, &len) in lens.iter().enumerate() {
        let mut v = vec![0u64; len as usize];
        if r == world.rank() as usize {
            v.copy_from_slice(list);
        }
        world.process_at_rank(r as i32).broadcast_into(&mut v[..]);
        out.push(v);
    }
    out
}

fn main() {
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("mpi test: still running after 120 s, giving up");
        std::process::exit(3);
    });
    let cluster = Cluster::init().expect("MPI");
    let (rank, size) = (cluster.rank(), cluster.size());
    if size != 3 {
        // `cargo test --features mpi` runs it as one process: nothing to check there.
        println!("mpi test: {size} rank(s); it checks 3 ranks: run it under `mpirun -np 3` (.ci/run does)");
        return;
    }

    // Rank 0's bytes on every rank, whatever the others pass (empty ones too).
    let mine = vec![rank as u8 + 7; 5 + rank];
    assert_eq!(cluster.broadcast_bytes(&mine), vec![7u8; 5], "rank {rank}: broadcast_bytes gives rank 0's");
    assert!(cluster.broadcast_bytes(if rank == 0 { &[] } else { &mine }).is_empty(), "rank {rank}: empty");

    // Dynamic balance, every task once.
    let tasks = 90;
    let faults = if rank == 2 { SimFaults::default().slow_gpu(0, 4.0) } else { SimFaults::default() };
    let (ran, failures) = batch(&cluster, faults, tasks, false);
    assert!(failures.is_empty(), "rank {rank}: {failures:?}");
    let lists = all_lists(&ran);
    let mut every: Vec<u64> = lists.iter().flatten().copied().collect();
    every.sort_unstable();
    assert_eq!(every, (0..tasks as u64).collect::<Vec<_>>(), "every task once, on one rank");
    let counts: Vec<usize> = lists.iter().map(Vec::len).collect();
    assert!(counts[2] * 2 <= counts[0].min(counts[1]), "rank 2 (4× slower) should run far fewer tasks: {counts:?}");
    if rank == 0 {
        println!("balance: tasks per rank {counts:?} (rank 2 is 4x slower)");
    }

    // A failing rank: rank 1's GPU dies 8 ms in (its share would take about 20).
    let tasks = 60;
    let faults =
        if rank == 1 { SimFaults::default().gpu_dies_at(0, Duration::from_millis(8)) } else { SimFaults::default() };
    let (ran, failures) = batch(&cluster, faults, tasks, false);
    assert!(!failures.is_empty(), "rank {rank}: rank 1's tasks fail");
    assert!(failures.iter().all(|f| f.message.starts_with("on rank 1:")), "rank {rank}: {failures:?}");
    let lists = all_lists(&ran);
    let failed: Vec<u64> = failures.iter().map(|f| f.task.0).collect();
    let mut every: Vec<u64> = lists.iter().flatten().copied().chain(failed.iter().copied()).collect();
    every.sort_unstable();
    assert_eq!(every, (0..tasks as u64).collect::<Vec<_>>(), "every task ran once or failed on rank 1");
    assert!(lists[1].len() < lists[0].len() && lists[1].len() < lists[2].len(), "{:?}", lists.iter().map(Vec::len));
    if rank == 0 {
        println!(
            "failing rank: tasks run per rank {:?}, {} failed on rank 1",
            lists.iter().map(Vec::len).collect::<Vec<_>>(),
            failed.len()
        );
    }

    // Chains: a task that names another runs where that one runs; every task once.
    let tasks = 45;
    let (ran, failures) = batch(&cluster, SimFaults::default(), tasks, true);
    assert!(failures.is_empty(), "rank {rank}: {failures:?}");
    let lists = all_lists(&ran);
    let mut every: Vec<u64> = lists.iter().flatten().copied().collect();
    every.sort_unstable();
    assert_eq!(every, (0..tasks as u64).collect::<Vec<_>>(), "chains: every task once");
    for list in &lists {
        for &t in list.iter().filter(|&&t| t % 3 != 0) {
            assert!(list.contains(&(t - 1)), "task {t} ran on another rank than task {}", t - 1);
        }
    }
    if rank == 0 {
        println!("chains: tasks per rank {:?}", lists.iter().map(Vec::len).collect::<Vec<_>>());
    }

    // Bad input. MPI once per process; one scheduler of a process in the stream at a
    // time; ranks whose loops differ get `Error::Cluster` on every rank, and go on.
    assert!(matches!(Cluster::init(), Err(Error::Cluster { .. })), "a second Cluster::init is refused");
    let s =
        std::sync::Arc::new(Scheduler::builder().backend(Backend::Sim).cluster(&cluster).build().expect("scheduler"));
    let second = Scheduler::builder().backend(Backend::Sim).cluster(&cluster).build();
    assert!(matches!(second, Err(Error::Cluster { .. })), "a second scheduler in the stream is refused");
    let mut h = s.alloc_host::<u32>(4).expect("host");
    h.write().fill(1);
    let extra = if rank == 0 { 4 } else { 3 };
    for t in 0..extra {
        s.task(t, 1)
            .callback_writing(&h, t as usize..t as usize + 1, |b, _| {
                b[0] = 2;
                Ok(())
            })
            .submit()
            .expect("submit");
    }
    match s.synchronize() {
        Err(Error::Cluster { message, .. }) => assert!(message.contains("different task streams"), "{message}"),
        other => panic!("rank {rank}: differing loops must be Error::Cluster, got {:?}", other.map(|r| r.tasks)),
    }
    s.task(9, 1).callback_writing(&h, 0..1, |_, _| Ok(())).submit().expect("submit");
    s.synchronize().expect("the scheduler goes on");

    // Bad submits: every rank sees every submit, so every rank refuses the same ones
    // with the same error, and the batch goes on.
    let ok = |_: &chariot::callback::CallInfo| Ok(());
    s.task(20, 1).callback(Resource::Cpu, ok).submit().expect("submit");
    let dup = s.task(20, 1).callback(Resource::Cpu, ok).submit();
    assert!(matches!(dup, Err(Error::DuplicateTask { task: TaskId(20) })), "rank {rank}: {dup:?}");
    let cycle = s.task(21, 1).after(TaskId(21)).callback(Resource::Cpu, ok).submit();
    assert!(matches!(cycle, Err(Error::DependencyCycle { task: TaskId(21) })), "rank {rank}: {cycle:?}");
    let unknown = s.task(22, 1).after(TaskId(99)).callback(Resource::Cpu, ok).submit();
    let named = matches!(unknown, Err(Error::UnknownDependency { task: TaskId(22), dependency: TaskId(99) }));
    assert!(named, "rank {rank}: {unknown:?}");
    s.task(23, 1).after(TaskId(20)).callback(Resource::Cpu, ok).submit().expect("submit");
    s.synchronize().unwrap_or_else(|e| panic!("rank {rank}: the batch after refused submits: {e}"));

    // gather in a callback is refused on the rank that runs it (the others run none).
    let (tx, rx) = std::sync::mpsc::channel();
    let inner = s.clone();
    let mut spare = s.alloc_host::<u32>(4).expect("host");
    s.task(30, 1)
        .callback(Resource::Cpu, move |_| {
            let mut b = inner.alloc_host::<u32>(1)?;
            let _ = tx.send(inner.gather(&mut b));
            Ok(())
        })
        .submit()
        .expect("submit");
    s.synchronize().expect("the callback's task ends well");
    let here: Vec<u64> = match rx.try_recv() {
        Ok(Err(Error::WaitInCallback { task: TaskId(30), .. })) => vec![1],
        Ok(other) => panic!("rank {rank}: gather in a callback gave {other:?}"),
        Err(_) => vec![],
    };
    let ran: usize = all_lists(&here).iter().map(Vec::len).sum();
    assert_eq!(ran, 1, "the callback ran on one rank");
    // gather of a buffer whose length differs between ranks: rank 0 names both lengths.
    let mut odd = s.alloc_host::<u32>(if rank == 1 { 5 } else { 4 }).expect("host");
    match (rank, s.gather(&mut odd)) {
        (0, Err(Error::Cluster { message, .. })) => {
            assert!(message.contains("holds 16 bytes here and 20 bytes on rank 1"), "{message}")
        }
        (0, other) => panic!("rank 0: a length that differs on rank 1 must be Error::Cluster, got {other:?}"),
        (_, other) => assert!(other.is_ok(), "rank {rank}: {other:?}"),
    }
    s.gather(&mut spare).expect("a buffer of one length on every rank");
    if rank == 0 {
        println!("mpi: ok");
    }
}
