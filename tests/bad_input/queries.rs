//! Queries: GPUs past the scheduler's are `None`.

use super::*;

#[test]
fn out_of_range_gpu_queries_are_none() {
    let s = sched(2, 1);
    assert!(s.overlap_matrix(1).is_some() && s.overlap_matrix(2).is_none());
    assert!(s.device_memory_in_use(1).is_some() && s.device_memory_in_use(2).is_none());
    assert!(s.device_memory_in_use(usize::MAX).is_none());
}
