//! Pipelines: D x S x every ordering rule, 48 tasks of every recipe, checked against the
//! invariants and the CPU reference.

use super::*;

fn order_seed(order: Order) -> u64 {
    match order {
        Order::Fcfs => 1,
        Order::LargestFirst => 2,
        Order::SmallestFirst => 3,
    }
}

/// D x S x order: 48 tasks of every recipe with random chunk sizes.
fn pipeline(d: usize, s: usize, order: Order) {
    with_timeout(DEADLINE_S, move || {
        let sched =
            Scheduler::builder().backend(timed(8)).gpus(d).streams(s).order(order).cpu_cores(4).build().unwrap();
        assert_eq!((sched.gpu_count(), sched.streams(), sched.backend_name()), (d, s, "sim"));
        let seed = (d * 100 + s * 10) as u64 + order_seed(order);
        run_workload(&sched, plan(seed, 1000, 48, 2500, SIM_RECIPES), Clocks::SIM);
    });
}

macro_rules! pipeline_tests {
    ($($name:ident: $d:expr, $s:expr, $order:expr;)*) => {
        $(
            #[test]
            fn $name() {
                pipeline($d, $s, $order);
            }
        )*
    };
}

pipeline_tests! {
    d1_s1_fcfs: 1, 1, Order::Fcfs;
    d1_s1_lf: 1, 1, Order::LargestFirst;
    d1_s1_sf: 1, 1, Order::SmallestFirst;
    d1_s2_fcfs: 1, 2, Order::Fcfs;
    d1_s2_lf: 1, 2, Order::LargestFirst;
    d1_s2_sf: 1, 2, Order::SmallestFirst;
    d1_s4_fcfs: 1, 4, Order::Fcfs;
    d1_s4_lf: 1, 4, Order::LargestFirst;
    d1_s4_sf: 1, 4, Order::SmallestFirst;
    d2_s1_fcfs: 2, 1, Order::Fcfs;
    d2_s1_lf: 2, 1, Order::LargestFirst;
    d2_s1_sf: 2, 1, Order::SmallestFirst;
    d2_s2_fcfs: 2, 2, Order::Fcfs;
    d2_s2_lf: 2, 2, Order::LargestFirst;
    d2_s2_sf: 2, 2, Order::SmallestFirst;
    d2_s4_fcfs: 2, 4, Order::Fcfs;
    d2_s4_lf: 2, 4, Order::LargestFirst;
    d2_s4_sf: 2, 4, Order::SmallestFirst;
    d4_s1_fcfs: 4, 1, Order::Fcfs;
    d4_s1_lf: 4, 1, Order::LargestFirst;
    d4_s1_sf: 4, 1, Order::SmallestFirst;
    d4_s2_fcfs: 4, 2, Order::Fcfs;
    d4_s2_lf: 4, 2, Order::LargestFirst;
    d4_s2_sf: 4, 2, Order::SmallestFirst;
    d4_s4_fcfs: 4, 4, Order::Fcfs;
    d4_s4_lf: 4, 4, Order::LargestFirst;
    d4_s4_sf: 4, 4, Order::SmallestFirst;
}
