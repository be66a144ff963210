//! chariot-align: Smith-Waterman protein database search (issue 6): work in progress.

fn main() {
    eprintln!("chariot-align: not built yet");
    std::process::exit(2);
}
