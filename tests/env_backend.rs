//! `Backend::Auto` reads `CHARIOT_BACKEND`. Environment variables are process-global,
//! so this binary holds a single test that sets them in sequence (no other test here
//! can observe a half-set environment).

use chariot::{Backend, Error, Scheduler};

#[test]
fn chariot_backend_variable_is_validated() {
    // An unknown value is refused before anything is opened.
    std::env::set_var("CHARIOT_BACKEND", "bogus");
    let e = Scheduler::builder().backend(Backend::Auto).build().unwrap_err();
    let text = e.to_string();
    match e {
        Error::InvalidConfig { name, value, allowed } => {
            assert_eq!(name, "CHARIOT_BACKEND");
            assert!(value.contains("bogus"), "{value}");
            assert_eq!(allowed, "auto, cuda or sim (or unset)");
            assert!(text.contains("CHARIOT_BACKEND") && text.contains("bogus"), "{text}");
        }
        other => panic!("expected InvalidConfig for CHARIOT_BACKEND, got {other:?}"),
    }

    // `sim` forces the simulator.
    std::env::set_var("CHARIOT_BACKEND", "sim");
    let s = Scheduler::builder().backend(Backend::Auto).build().unwrap();
    assert_eq!(s.backend_name(), "sim");
    drop(s);

    // An explicit backend ignores the variable.
    std::env::set_var("CHARIOT_BACKEND", "bogus");
    let s = Scheduler::builder().backend(Backend::Sim).build().unwrap();
    assert_eq!(s.backend_name(), "sim");
    drop(s);

    // `cuda` forces CUDA: an error without a driver, a CUDA scheduler with one.
    std::env::set_var("CHARIOT_BACKEND", "cuda");
    match Scheduler::builder().backend(Backend::Auto).build() {
        Ok(s) => assert_eq!(s.backend_name(), "cuda"),
        Err(e) => assert!(matches!(e, Error::CudaUnavailable { .. }), "{e:?}"),
    }

    // Empty or unset: whichever backend is available.
    for value in [Some(""), Some("auto"), None] {
        match value {
            Some(v) => std::env::set_var("CHARIOT_BACKEND", v),
            None => std::env::remove_var("CHARIOT_BACKEND"),
        }
        let s = Scheduler::builder().backend(Backend::Auto).build().unwrap();
        assert!(["sim", "cuda"].contains(&s.backend_name()), "{}", s.backend_name());
    }
}
