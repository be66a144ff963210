//! Backends and profiles: bad sim profiles and faults, a missing or wrong CUDA driver, an unknown backend name.

use super::*;

#[test]
fn every_invalid_sim_profile_field_is_named() {
    let base = SimProfile::instant();
    let with = |set: fn(&mut SimProfile)| {
        let mut p = base.clone();
        set(&mut p);
        p
    };
    let cases: Vec<(&str, SimProfile)> = vec![
        ("h2d_bytes_per_s", with(|p| p.h2d_bytes_per_s = 0.0)),
        ("d2h_bytes_per_s", with(|p| p.d2h_bytes_per_s = f64::NAN)),
        ("duplex_bytes_per_s", with(|p| p.duplex_bytes_per_s = f64::INFINITY)),
        ("bus_bytes_per_s", with(|p| p.bus_bytes_per_s = -1.0)),
        ("bus_duplex_bytes_per_s", with(|p| p.bus_duplex_bytes_per_s = 0.0)),
        ("time_scale", base.clone().with_time_scale(f64::NAN)),
        ("time_scale", base.clone().with_time_scale(f64::INFINITY)),
        ("copy_engines", base.clone().with_copy_engines(0)),
        ("buses", base.clone().with_buses(0)),
        ("sm_count", with(|p| p.sm_count = 0)),
    ];
    for (field, profile) in cases {
        let e = Scheduler::builder().backend(Backend::SimWith(profile)).build().unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{field}: {e:?}");
        assert!(text.contains(field), "{field}: {text}");
    }
}

#[test]
fn an_invalid_sim_profile_is_invalid_config() {
    let bad = SimProfile::instant().with_time_scale(-1.0);
    let e = Scheduler::builder().backend(Backend::SimWith(bad)).build().unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e:?}");
    assert!(text.contains("time_scale"), "{text}");
    let bad = SimProfile::instant().with_copy_engines(0);
    assert!(matches!(
        Scheduler::builder().backend(Backend::SimWith(bad)).build().unwrap_err(),
        Error::InvalidConfig { name: "backend", .. }
    ));
}

/// Modeled time is real time times `time_scale`; a scale outside 0..=1e6
/// (`SimProfile::MAX_TIME_SCALE`) is refused when the profile is checked.
#[test]
fn an_unrepresentable_sim_time_scale_is_invalid_config() {
    with_timeout(HANG_S, || {
        let p = SimProfile::instant().with_time_scale(1e30);
        match Scheduler::builder().backend(Backend::SimWith(p)).build() {
            Err(e) => {
                let text = e.to_string();
                assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e:?}");
                assert!(text.contains("time_scale"), "{text}");
            }
            Ok(s) => {
                let host = s.alloc_host::<u32>(16).unwrap();
                let dev = s.alloc::<u32>(16).unwrap();
                s.task(1, 1).download(&dev, 0, &host, ..).submit().unwrap();
                panic!("time_scale 1e30 was accepted; synchronize gives {:?}", s.synchronize().map(|r| r.tasks));
            }
        }
    });
}

#[test]
fn invalid_sim_faults_are_invalid_config() {
    for k in [f64::NAN, -1.0, 0.5, f64::INFINITY] {
        let p = SimProfile::instant().with_faults(SimFaults::default().slow_gpu(0, k));
        let e = Scheduler::builder().backend(Backend::SimWith(p)).build().unwrap_err();
        let text = e.to_string();
        assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "slow_gpu(0, {k}): {e:?}");
        assert!(text.contains(&format!("slow_gpu(0, {k})")) && text.contains("at least 1"), "{text}");
    }
}

/// A GPU death later than the clock can count is a death that never comes.
#[test]
fn a_sim_death_past_the_clock_never_comes() {
    let p = SimProfile::h100().with_faults(SimFaults::default().gpu_dies_at(0, Duration::MAX));
    match Scheduler::builder().backend(Backend::SimWith(p)).build() {
        Ok(s) => {
            s.task(1, 1).callback(Resource::Cpu, |_| Ok(())).submit().unwrap();
            assert_eq!(s.synchronize().unwrap().tasks, 1);
            assert_eq!(s.live_gpus(), vec![0]);
        }
        Err(e) => assert!(matches!(e, Error::InvalidConfig { name: "backend", .. }), "{e:?}"),
    }
}

/// NVTX ranges on a machine without the NVTX library: a clear error at `build` naming
/// what was tried (the GPU machines here have none); ignored on the simulator.
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_nvtx_without_its_library_is_invalid_config() {
    if !is_child() {
        let out = in_child(
            module_path!(),
            "cuda_nvtx_without_its_library_is_invalid_config",
            &[("CHARIOT_NVTX_LIB", std::ffi::OsStr::new("/nonexistent/libnvToolsExt.so"))],
        );
        return assert_child_passed(&out, "nvtx without its library");
    }
    assert!(Scheduler::builder().backend(sim()).nvtx(true).build().is_ok(), "ignored on sim");
    match Scheduler::builder().backend(Backend::Cuda).nvtx(true).build() {
        // A machine with NVTX installed loads it from the system.
        Ok(s) => assert_eq!(s.backend_name(), "cuda"),
        Err(e) => {
            let text = e.to_string();
            assert!(matches!(e, Error::InvalidConfig { name: "nvtx", .. }), "{e:?}");
            assert!(text.contains("/nonexistent/libnvToolsExt.so"), "{text}");
        }
    }
}

#[test]
fn cuda_backend_without_a_driver_is_cuda_unavailable() {
    match Scheduler::builder().backend(Backend::Cuda).build() {
        // A GPU is present (e.g. on the GPU machine): nothing to check here.
        Ok(s) => eprintln!("skipped: the CUDA backend is available here ({:?})", s.gpu_info()),
        Err(Error::CudaUnavailable { reason }) => {
            assert!(!reason.is_empty());
            let e = Error::CudaUnavailable { reason: reason.clone() };
            assert!(e.to_string().contains(&reason));
        }
        Err(other) => panic!("expected CudaUnavailable, got {other:?}"),
    }
}

/// A library found under the driver's name that is not the CUDA driver (here: the C
/// library, reached through a `libcuda.so` link first on `LD_LIBRARY_PATH`). cudarc
/// has no variable naming the library's path, so the dynamic loader's path is the way
/// to point it at a wrong one. CUDA must be unavailable, and `Auto` must fall back.
#[cfg(target_os = "linux")]
#[test]
fn a_wrong_cuda_driver_library_is_cuda_unavailable() {
    let name = "a_wrong_cuda_driver_library_is_cuda_unavailable";
    if !is_child() {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let libc = maps
            .lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
            .expect("the C library is mapped");
        let dir = std::env::temp_dir().join(format!("chariot-wrong-driver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let link = dir.join("libcuda.so");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(libc, &link).unwrap();
        let out = in_child(module_path!(), name, &[("LD_LIBRARY_PATH", dir.as_os_str())]);
        std::fs::remove_dir_all(&dir).ok();
        return assert_child_passed(&out, "a libcuda.so without cuInit");
    }
    match Scheduler::builder().backend(Backend::Cuda).build() {
        Err(Error::CudaUnavailable { reason }) => assert!(reason.contains("cuInit"), "{reason}"),
        other => panic!("expected CudaUnavailable naming cuInit, got {:?}", other.map(|s| s.backend_name())),
    }
    assert_eq!(Backend::from_name("auto", SimProfile::instant()).unwrap(), Backend::SimWith(SimProfile::instant()));
    assert_eq!(Scheduler::builder().backend(Backend::Auto).build().unwrap().backend_name(), "sim");
}

#[test]
fn an_unknown_backend_name_is_invalid_config() {
    for name in ["gpu", "CUDA", "Sim", " sim", "sim ", "", "sim-instant", "cuda\0"] {
        let e = Backend::from_name(name, SimProfile::instant()).unwrap_err();
        assert_invalid_config(e, "backend", &format!("{name:?}"));
    }
    let e = Backend::from_name("gpu", SimProfile::h100()).unwrap_err();
    assert!(e.to_string().contains("auto, cuda or sim"), "{e}");
    assert_eq!(Backend::from_name("sim", SimProfile::instant()).unwrap(), Backend::SimWith(SimProfile::instant()));
    assert_eq!(Backend::from_name("cuda", SimProfile::instant()).unwrap(), Backend::Cuda);
    // `auto` resolves now: CUDA where a driver and a device are there, else the profile.
    match Backend::from_name("auto", SimProfile::instant()).unwrap() {
        Backend::Cuda | Backend::SimWith(_) => {}
        other => panic!("auto resolved to {other:?}"),
    }
}
