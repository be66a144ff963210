//! `Backend::from_name` on arbitrary text: `cuda`, `sim` and `auto` are backends, and
//! any other name is `Error::InvalidConfig` for `backend` naming the value, never a panic.

#![no_main]

use chariot::{Backend, Error};
use chariot::sim::SimProfile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|name: &str| {
    match Backend::from_name(name, SimProfile::instant()) {
        Ok(Backend::Cuda) => assert!(name == "cuda" || name == "auto", "{name:?} gave Cuda"),
        Ok(Backend::SimWith(p)) => {
            assert!(name == "sim" || name == "auto", "{name:?} gave the simulator");
            assert_eq!(p, SimProfile::instant(), "the profile given is the profile used");
        }
        Ok(other) => panic!("{name:?} gave {other:?}"),
        Err(e) => {
            assert!(!["cuda", "sim", "auto"].contains(&name), "{name:?} was refused: {e}");
            let text = e.to_string();
            match e {
                Error::InvalidConfig { name: "backend", value, allowed } => {
                    assert_eq!(value, format!("{name:?}"));
                    assert!(allowed.contains("cuda") && allowed.contains("sim") && allowed.contains("auto"));
                    assert!(text.contains(&value), "{text}");
                }
                other => panic!("{name:?}: expected InvalidConfig for backend, got {other:?}"),
            }
        }
    }
});
