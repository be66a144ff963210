//! cudaFlow's micro-benchmark shapes (replay, `chariot_studies::flow`) on the sim
//! backend: each shape's graph has the right nodes and edges (and LC, EP and DC the
//! sizes cudaFlow's Table 1 implies), and chariot's run of each, one task per node with
//! its edges by `after`, honours every edge in the recorded timeline and lists it in
//! the report. The `#[ignore]`d test runs chariot and the hand-written CUDA graph on a
//! GPU. The device-side graph's CSR is checked on the CPU; its `#[ignore]`d tests run
//! every shape on one GPU and on two, a failing node and the watchdog.

mod common;

use chariot::sim::SimProfile;
use chariot::{Backend, Scheduler};
use chariot_studies::flow::{
    edge_violations, spin_value, ChariotFlow, DeviceCsr, DeviceGraph, Graph, HandGraph, Shape, DAG_FAN_OUT, DAG_WIDTH,
    MAPPERS, RND_DEGREE, RND_WINDOW,
};
use common::with_timeout;
use std::collections::HashSet;
use std::time::{Duration, Instant};

const DEADLINE_S: u64 = 120;

/// Every edge goes forward and none is listed twice.
fn assert_well_formed(g: &Graph) {
    let mut seen = HashSet::new();
    for &(p, s) in &g.edges {
        assert!(p < s && s < g.nodes, "{:?} {}: edge {p} -> {s} of {} nodes", g.shape, g.size, g.nodes);
        assert!(seen.insert((p, s)), "{:?} {}: edge {p} -> {s} twice", g.shape, g.size);
    }
}

/// Out- and in-degrees of every node.
fn degrees(g: &Graph) -> (Vec<usize>, Vec<usize>) {
    let (mut out, mut inn) = (vec![0; g.nodes], vec![0; g.nodes]);
    for &(p, s) in &g.edges {
        out[p] += 1;
        inn[s] += 1;
    }
    (out, inn)
}

#[test]
fn each_shape_has_its_nodes_and_edges() {
    let lc = Graph::new(Shape::Lc, 10, 0).unwrap();
    assert_eq!((lc.nodes, lc.edges.len()), (10, 9));
    assert!(lc.edges.iter().all(|&(p, s)| s == p + 1));
    let ep = Graph::new(Shape::Ep, 10, 0).unwrap();
    assert_eq!((ep.nodes, ep.edges.len()), (10, 0));
    let dc = Graph::new(Shape::Dc, 4, 0).unwrap();
    assert_eq!((dc.nodes, dc.edges.len()), (15, 14));
    let (out, inn) = degrees(&dc);
    assert_eq!(inn[0], 0);
    assert!(inn[1..].iter().all(|&d| d == 1), "every node but the root has one parent");
    assert_eq!(out.iter().filter(|&&d| d == 2).count(), 7, "7 inner nodes of two children");
    assert_eq!(out.iter().filter(|&&d| d == 0).count(), 8, "8 leaves");
    let mr = Graph::new(Shape::Mr, 3, 0).unwrap();
    assert_eq!((mr.nodes, mr.edges.len()), (3 * (MAPPERS + 1), 3 * MAPPERS + 2 * MAPPERS));
    let (out, inn) = degrees(&mr);
    for k in 0..3 {
        let reducer = k * (MAPPERS + 1) + MAPPERS;
        assert_eq!(inn[reducer], MAPPERS);
        assert_eq!(out[reducer], if k < 2 { MAPPERS } else { 0 });
        for m in reducer - MAPPERS..reducer {
            assert_eq!((inn[m], out[m]), (usize::from(k > 0), 1));
        }
    }
    for g in [&lc, &ep, &dc, &mr] {
        assert_well_formed(g);
    }
    // Longest chains: the chain's nodes, one, root to leaf, and per round a mapper and
    // its reducer.
    let chains = [&lc, &ep, &dc, &mr].map(|g| g.longest_chain());
    assert_eq!(chains, [10, 1, 4, 6]);
    // cudaFlow's Table 1 counts nodes + edges of graphs whose nodes are three
    // operations (copy in, kernel, copy out: 3 nodes and 2 edges each).
    let table1 = |g: &Graph| 5 * g.nodes + g.edges.len();
    assert_eq!(table1(&Graph::new(Shape::Lc, 65_536, 0).unwrap()), 393_215);
    assert_eq!(table1(&Graph::new(Shape::Ep, 65_536, 0).unwrap()), 327_680);
    assert_eq!(table1(&Graph::new(Shape::Dc, 16, 0).unwrap()), 393_209);
    assert!(Graph::new(Shape::Lc, 0, 0).is_err());
    assert!(Graph::new(Shape::Dc, 25, 0).is_err());
}

#[test]
fn random_dags_are_levels_of_bounded_width_and_fan_out() {
    for seed in 0..20 {
        let levels = 1 + seed as usize % 7;
        let g = Graph::new(Shape::Dag, levels, seed).unwrap();
        assert_well_formed(&g);
        assert!(g.nodes >= levels && g.nodes <= levels * DAG_WIDTH, "{} nodes in {levels} levels", g.nodes);
        assert_eq!(g.levels.len(), levels);
        assert_eq!(g.levels.iter().sum::<usize>(), g.nodes);
        assert!(g.levels.iter().all(|&w| (1..=DAG_WIDTH).contains(&w)), "{:?}", g.levels);
        let level: Vec<usize> = g.levels.iter().enumerate().flat_map(|(l, &w)| std::iter::repeat_n(l, w)).collect();
        for &(p, s) in &g.edges {
            assert_eq!(level[s], level[p] + 1, "edge {p} -> {s} does not join consecutive levels");
        }
        let (out, _) = degrees(&g);
        for (i, &d) in out.iter().enumerate() {
            let most = if level[i] + 1 < levels { DAG_FAN_OUT.min(g.levels[level[i] + 1]) } else { 0 };
            assert!((most.min(1)..=most).contains(&d), "node {i} of level {} has {d} successors", level[i]);
        }
        assert_eq!(g, Graph::new(Shape::Dag, levels, seed).unwrap(), "the same seed, the same graph");
    }
    assert_ne!(Graph::new(Shape::Dag, 8, 1).unwrap(), Graph::new(Shape::Dag, 8, 2).unwrap());
}

#[test]
fn generated_graphs_draw_few_recent_predecessors() {
    for (nodes, seed) in [(1, 0), (2, 1), (300, 2), (4096, 3)] {
        let g = Graph::new(Shape::Rnd, nodes, seed).unwrap();
        assert_well_formed(&g);
        assert_eq!(g.nodes, nodes);
        for (i, p) in g.predecessors().iter().enumerate() {
            assert!(p.len() <= 2 * RND_DEGREE, "node {i} has {} predecessors", p.len());
            assert!(p.iter().all(|&q| q < i && i - q <= RND_WINDOW), "node {i}: {p:?}");
        }
        assert_eq!(g, Graph::new(Shape::Rnd, nodes, seed).unwrap(), "the same seed, the same graph");
    }
    // About RND_DEGREE a node on average.
    let g = Graph::new(Shape::Rnd, 4096, 5).unwrap();
    let mean = g.edges.len() as f64 / g.nodes as f64;
    assert!((mean - RND_DEGREE as f64).abs() < 0.2, "{mean} predecessors a node");
}

#[test]
fn chariot_honours_every_edge_of_each_shape() {
    with_timeout(DEADLINE_S, || {
        // chariot's defaults on a simulated H100 (its kernels take simulated time, so
        // an edge broken would show as overlapping records).
        let sched = Scheduler::builder().backend(Backend::SimWith(SimProfile::h100())).build().unwrap();
        let flow = ChariotFlow::new(&sched).unwrap();
        for (shape, size) in
            [(Shape::Lc, 24), (Shape::Ep, 24), (Shape::Dc, 5), (Shape::Mr, 3), (Shape::Dag, 5), (Shape::Rnd, 40)]
        {
            let g = Graph::new(shape, size, 7).unwrap();
            for iters in [0, 1000] {
                let run = flow.run(&sched, &g, iters).unwrap();
                let r = &run.report;
                assert!(run.wall_ns > 0);
                let tasks: HashSet<u64> = r.records.iter().map(|c| c.task.0).collect();
                assert_eq!(tasks.len(), g.nodes, "{shape:?}: every node ran");
                assert_eq!(r.records.len(), g.nodes, "{shape:?}: one launch per node, nothing else");
                let v = edge_violations(&g, r, false);
                assert!(v.is_empty(), "{shape:?} {size}: {v:?}");
                let listed: HashSet<(usize, usize)> =
                    r.dependencies.iter().map(|&(p, s)| (p.0 as usize, s.0 as usize)).collect();
                let wanted: HashSet<(usize, usize)> = g.edges.iter().copied().collect();
                assert_eq!(listed, wanted, "{shape:?}: the report's edges are the graph's");
            }
        }
    });
}

#[test]
fn the_check_sees_a_broken_edge() {
    // Run a chain's nodes as independent tasks: the chain's edges are then broken in
    // the timeline of a scheduler with several streams.
    with_timeout(DEADLINE_S, || {
        let sched = Scheduler::builder().backend(Backend::SimWith(SimProfile::h100())).streams(4).build().unwrap();
        let flow = ChariotFlow::new(&sched).unwrap();
        let ep = Graph::new(Shape::Ep, 16, 0).unwrap();
        let run = flow.run(&sched, &ep, 10_000).unwrap();
        let chain = Graph::new(Shape::Lc, 16, 0).unwrap();
        assert!(!edge_violations(&chain, &run.report, false).is_empty());
    });
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_chariot_and_the_hand_written_graph_run_each_shape() {
    let sched = Scheduler::builder().backend(Backend::Cuda).gpu_list([0]).build().unwrap();
    let flow = ChariotFlow::new(&sched).unwrap();
    for (shape, size) in [(Shape::Lc, 64), (Shape::Ep, 64), (Shape::Dc, 6), (Shape::Mr, 4), (Shape::Dag, 8)] {
        let g = Graph::new(shape, size, 3).unwrap();
        let run = flow.run(&sched, &g, 1000).unwrap();
        assert!(edge_violations(&g, &run.report, false).is_empty());
        let mut hand = HandGraph::build(0, &g, 1000, 1).unwrap();
        assert!(hand.build_ns() > 0);
        assert!(hand.run().unwrap().wall_ns > 0);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_the_hand_written_graph_writes_chariots_sink_when_asked() {
    let sched = Scheduler::builder().backend(Backend::Cuda).gpu_list([0]).build().unwrap();
    let flow = ChariotFlow::new(&sched).unwrap();
    let g = Graph::new(Shape::Lc, 8, 1).unwrap();
    let mut hand = HandGraph::build_into(0, &g, 77, &flow, &sched).unwrap();
    hand.run().unwrap();
    // A batch of one readback runs on stream slot 0, as the sink's probe did.
    let host = sched.alloc_host::<f32>(1).unwrap();
    sched.task(0, 1).readback(&host, .., flow.sink(), 0).submit().unwrap();
    sched.synchronize().unwrap();
    assert_eq!(host.read()[0], spin_value(77));
}

/// Small instances of every shape, for the device-side runs.
fn small_shapes() -> Vec<Graph> {
    [(Shape::Lc, 64), (Shape::Ep, 64), (Shape::Dc, 6), (Shape::Mr, 4), (Shape::Dag, 8)]
        .into_iter()
        .map(|(shape, size)| Graph::new(shape, size, 3).unwrap())
        .collect()
}

#[test]
fn the_device_csr_lists_each_nodes_successors_and_predecessor_count() {
    for (shape, size) in
        [(Shape::Lc, 9), (Shape::Ep, 7), (Shape::Dc, 5), (Shape::Mr, 3), (Shape::Dag, 6), (Shape::Rnd, 30)]
    {
        for seed in 0..3 {
            let g = Graph::new(shape, size, seed).unwrap();
            let csr = DeviceCsr::new(&g).unwrap();
            let preds = g.predecessors();
            assert_eq!(csr.nodes(), g.nodes);
            assert_eq!(csr.offsets.len(), g.nodes + 1);
            assert_eq!(csr.offsets[0], 0);
            assert_eq!(*csr.offsets.last().unwrap() as usize, g.edges.len());
            assert!(csr.offsets.windows(2).all(|w| w[0] <= w[1]), "{shape:?}: offsets ascend");
            assert_eq!(csr.successors.len(), g.edges.len());
            for i in 0..g.nodes {
                assert_eq!(csr.indegree[i] as usize, preds[i].len(), "{shape:?}: in-degree of {i}");
                let succ: Vec<usize> = csr.successors_of(i).iter().map(|&s| s as usize).collect();
                assert!(succ.windows(2).all(|w| w[0] < w[1]), "{shape:?}: successors of {i} ascend");
                // The successors of i are exactly the nodes that list i as a predecessor.
                let wanted: Vec<usize> = (0..g.nodes).filter(|&j| preds[j].contains(&i)).collect();
                assert_eq!(succ, wanted, "{shape:?}: successors of {i}");
            }
            let roots: Vec<usize> = csr.roots.iter().map(|&r| r as usize).collect();
            let wanted: Vec<usize> = (0..g.nodes).filter(|&i| preds[i].is_empty()).collect();
            assert_eq!(roots, wanted, "{shape:?}: roots");
        }
    }
    // Edges in any order come out sorted per node.
    let mut g = Graph::new(Shape::Dc, 4, 0).unwrap();
    g.edges.reverse();
    assert_eq!(DeviceCsr::new(&g).unwrap().successors_of(0), &[1, 2]);
    g.edges.push((3, 99));
    assert!(DeviceCsr::new(&g).is_err(), "an edge to a node the graph lacks");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_the_device_graph_runs_each_shape() {
    for g in small_shapes() {
        for iters in [0, 1000] {
            let mut dev = DeviceGraph::build(&[0], &g, iters).unwrap();
            assert!(dev.blocks()[0] >= 1);
            for _ in 0..3 {
                let t = dev.run().unwrap();
                assert!(t.wall_ns > 0);
                assert_eq!(t.per_gpu, vec![g.nodes], "{:?}: every node ran once", g.shape);
                assert_eq!(t.sinks, vec![spin_value(iters)], "{:?}, {iters} iterations", g.shape);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_a_failing_node_ends_the_run_with_its_name() {
    for g in small_shapes() {
        let node = g.nodes / 2;
        let mut dev = DeviceGraph::build(&[0], &g, 1000).unwrap();
        dev.set_fail_node(Some(node)).unwrap();
        let t0 = Instant::now();
        let err = dev.run().unwrap_err().to_string();
        assert!(t0.elapsed() < Duration::from_secs(5), "{:?}: the failure took {:?}", g.shape, t0.elapsed());
        assert!(err.contains(&format!("node {node} failed")), "{:?}: {err}", g.shape);
        // The kernel exited cleanly, so the context is usable: the next run is whole.
        dev.set_fail_node(None).unwrap();
        let t = dev.run().unwrap();
        assert_eq!(t.per_gpu, vec![g.nodes]);
        assert_eq!(t.sinks, vec![spin_value(1000)]);
    }
    let g = Graph::new(Shape::Lc, 4, 0).unwrap();
    assert!(DeviceGraph::build(&[0], &g, 0).unwrap().set_fail_node(Some(4)).is_err());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_the_watchdog_stops_a_run_past_its_time() {
    // A chain of nodes of 2·10^7 iterations (a dependent FMA each, some 50 ms a node
    // on an H100, about 3 s in all): the watchdog's 20 ms end it at the next node
    // boundary, well before the chain would.
    let g = Graph::new(Shape::Lc, 64, 0).unwrap();
    let mut dev = DeviceGraph::build(&[0], &g, 20_000_000).unwrap();
    dev.set_timeout(Duration::from_millis(20));
    let t0 = Instant::now();
    let err = dev.run().unwrap_err().to_string();
    assert!(err.contains("timed out"), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(3), "the abort took {:?}", t0.elapsed());
    // The kernel exited, so the graph runs again (with room for the whole chain).
    dev.set_timeout(Duration::from_secs(60));
    assert_eq!(dev.run().unwrap().per_gpu, vec![64]);
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn cuda_two_gpus_share_the_device_graph() {
    let gpus = chariot::Backend::cuda_devices().unwrap();
    if gpus < 2 {
        println!("skipped: the device graph across GPUs needs 2, this machine has {gpus}");
        return;
    }
    for g in small_shapes() {
        let mut dev = DeviceGraph::build(&[0, 1], &g, 1000).unwrap();
        for _ in 0..3 {
            let t = dev.run().unwrap();
            assert_eq!(t.per_gpu.iter().sum::<usize>(), g.nodes, "{:?}: every node ran once", g.shape);
            for (k, (&ran, &sink)) in t.per_gpu.iter().zip(&t.sinks).enumerate() {
                let wanted = if ran > 0 { spin_value(1000) } else { 0.0 };
                assert_eq!(sink, wanted, "{:?}: GPU {k} ran {ran} nodes", g.shape);
            }
        }
        dev.set_fail_node(Some(g.nodes - 1)).unwrap();
        let err = dev.run().unwrap_err().to_string();
        assert!(err.contains(&format!("node {} failed", g.nodes - 1)), "{err}");
    }
    // Wide and long enough (4096 nodes of some 2 ms) that both GPUs take nodes.
    let ep = Graph::new(Shape::Ep, 4096, 0).unwrap();
    let t = DeviceGraph::build(&[0, 1], &ep, 1_000_000).unwrap().run().unwrap();
    assert!(t.per_gpu.iter().all(|&r| r > 0), "both GPUs ran nodes: {:?}", t.per_gpu);
}
