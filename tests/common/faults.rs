//! Helpers of the fault and lifecycle suites: the process's thread count, and the
//! failures of a batch that must have failed.

use chariot::report::Report;

/// Threads of this process now (Linux, /proc/self/status).
pub fn threads_now() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").expect("reading /proc/self/status");
    status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse().ok()).expect("a Threads line")
}

/// The failures and report of a batch that must have failed with `TasksFailed`.
pub fn expect_failed(result: chariot::Result<Report>) -> (Vec<chariot::report::TaskFailure>, Report) {
    match result {
        Err(chariot::Error::TasksFailed { failures, report }) => (failures, *report),
        Ok(_) => panic!("the batch should have failed"),
        Err(e) => panic!("expected TasksFailed, got {e}"),
    }
}
