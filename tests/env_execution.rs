//! The builder reads `CHARIOT_EXECUTION` (replay). Environment variables are
//! process-global and every `build` reads this one, so this binary holds this single
//! test.

use chariot::{Backend, Error, Scheduler};

#[test]
fn chariot_execution_variable_is_validated() {
    use chariot::Execution;
    std::env::set_var("CHARIOT_EXECUTION", "sometimes");
    let e = Scheduler::builder().backend(Backend::Sim).build().unwrap_err();
    match e {
        Error::InvalidConfig { name, value, allowed } => {
            assert_eq!(name, "CHARIOT_EXECUTION");
            assert!(value.contains("sometimes"), "{value}");
            // Every mode, from the one list of names.
            assert_eq!(allowed, "auto, host, replay or device (or unset)");
        }
        other => panic!("expected InvalidConfig for CHARIOT_EXECUTION, got {other:?}"),
    }
    // The builder's choice wins over the variable.
    let s = Scheduler::builder().backend(Backend::Sim).execution(Execution::Host).build().unwrap();
    assert_eq!(s.execution(), Execution::Host);
    drop(s);
    for (v, e) in
        [("replay", Execution::Replay), ("host", Execution::Host), ("device", Execution::Device), ("", Execution::Auto)]
    {
        std::env::set_var("CHARIOT_EXECUTION", v);
        assert_eq!(Scheduler::builder().backend(Backend::Sim).build().unwrap().execution(), e, "{v:?}");
    }
    std::env::remove_var("CHARIOT_EXECUTION");
    assert_eq!(Scheduler::builder().backend(Backend::Sim).build().unwrap().execution(), Execution::Auto);
    assert!("Replay".parse::<Execution>().is_err(), "names are lower case");
    for e in Execution::ALL {
        assert_eq!(e.name().parse::<Execution>().unwrap(), e, "every mode is named by its name");
    }
}
