//! Prints the default kernel configuration table (`sw::config::choose`): for each query
//! length (CUDASW++'s 20 benchmark queries, and 63) and mean subject length (its peak
//! benchmark's 128 … 2,048, and the paper-shaped database's mean, 756), the strip
//! height and lane group chosen for the DPX kernel over chunks of 8,192 subjects (the
//! default `--chunk`), the passes, and the modelled cost a cell ([`cost`]).
//!
//! `cargo run -p chariot-align --example kernel_table`

use chariot_align::sw::config::{choose, cost, Forced};
use chariot_align::sw::KernelKind;

fn main() {
    let qlens = [
        63, 144, 189, 222, 375, 464, 567, 657, 729, 850, 1000, 1500, 2005, 2504, 3005, 3564, 4061, 4548, 4743, 5147,
        5478,
    ];
    let subjects = [128u64, 256, 512, 756, 1024, 2048];
    print!("query");
    for n in subjects {
        print!("\tn={n}");
    }
    println!();
    for m in qlens {
        print!("{m}");
        for n in subjects {
            let s = choose(KernelKind::Dpx, m, 8192, n * 8192, Forced::default());
            print!("\t{} p{} {:.2}", s.name(), s.passes(m), cost(s, m, n as f64));
        }
        println!();
    }
}
