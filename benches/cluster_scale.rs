//! Placeholder: the cluster scaling study (issue 19) is being written.
fn main() {}
