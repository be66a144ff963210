//! What bad input must get: the typed error naming the parameter or the command, with
//! a message that names the offending value. Shared by the runtime's tests and, through
//! `#[path]`, the studies'.

use chariot::{Error, Stage, TaskId};

/// Asserts `e` is `InvalidConfig` for parameter `name` with a value containing `value`,
/// and that its message names both.
pub fn assert_invalid_config(e: Error, name: &str, value: &str) {
    let text = e.to_string();
    match e {
        Error::InvalidConfig { name: n, value: v, allowed } => {
            assert_eq!(n, name, "{text}");
            assert!(v.contains(value), "value {v:?} should name {value:?}");
            assert!(!allowed.is_empty());
            assert!(text.contains(name) && text.contains(value), "message {text:?} should name {name} and {value}");
        }
        other => panic!("expected InvalidConfig for {name}, got {other:?}"),
    }
}

/// Asserts `e` is `InvalidCommand` for `task`'s command `command` at `stage`, with a
/// message containing every one of `needles`.
pub fn assert_invalid_command(e: Error, task: u64, command: usize, stage: Stage, needles: &[&str]) {
    let text = e.to_string();
    match e {
        Error::InvalidCommand { task: t, command: c, stage: s, message } => {
            assert_eq!((t, c, s), (TaskId(task), command, stage), "{text}");
            for n in needles {
                assert!(message.contains(n), "message {message:?} should contain {n:?}");
            }
            assert!(text.contains(&format!("#{task}")), "{text}");
        }
        other => panic!("expected InvalidCommand, got {other:?}"),
    }
}
