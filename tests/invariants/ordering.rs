//! Ordering rules: the order in which waiting tasks start.

use super::*;

/// D = 1, S = 1: the order in which waiting tasks start is the rule's pop order (see
/// `pop_order_scenario`).
fn pop_order(order: Order) {
    with_timeout(DEADLINE_S, move || {
        let sched = Scheduler::builder().backend(instant(1)).gpus(1).streams(1).order(order).build().unwrap();
        pop_order_scenario(&sched, order, Clocks::SIM);
    });
}

#[test]
fn fcfs_pops_the_oldest_task() {
    pop_order(Order::Fcfs);
}

#[test]
fn largest_first_pops_the_largest_task() {
    pop_order(Order::LargestFirst);
}

#[test]
fn smallest_first_pops_the_smallest_task() {
    pop_order(Order::SmallestFirst);
}
