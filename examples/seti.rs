//! SETI-style two-phase 2-D FFT (issue 5): work in progress.

fn main() {
    eprintln!("seti: not built yet");
    std::process::exit(2);
}
