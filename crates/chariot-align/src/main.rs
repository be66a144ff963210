//! chariot-align's command line: clap's [`Cli`], dispatched to the `chariot_align`
//! library, which holds the tool (see its documentation, `cargo doc -p chariot-align`).
//!
//! ```text
//! chariot-align generate --sequences 536000 --out db.fa --queries-out q.fa
//! chariot-align makedb -d db.fa -o db.cadb
//! chariot-align search -q q.fa -d db.cadb -o hits.tsv --top 10
//! chariot-align bench  -q q.fa -d db.fa --csv align.csv
//! ```
//!
//! See `chariot-align <command> --help` for every option.

use chariot_align::bench::{run_bench, BenchArgs};
use chariot_align::commands::{run_generate, run_makedb, run_search, GenerateArgs, MakedbArgs, SearchArgs};
use clap::{Parser, Subcommand};
use std::io::Write;
use std::process::ExitCode;

/// Smith-Waterman protein database search, pipelined over GPUs × CUDA streams by chariot.
///
/// Scores are local alignment scores (Gotoh's affine-gap Smith-Waterman) with a
/// substitution matrix (BLOSUM62 unless --matrix) and gap cost open + k·extend for a
/// gap of length k. Letters are case-insensitive; ASCII letters missing from the
/// matrix (U, O, J) score as X; any other character is an error naming its line.
#[derive(Parser, Debug)]
#[command(name = "chariot-align", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Search a database (FASTA, or prepared by makedb) with one or more FASTA queries.
    Search(SearchArgs),
    /// Prepare a FASTA database once: residues encoded, sequences sorted by length, an index.
    Makedb(MakedbArgs),
    /// Generate a random protein database (and queries) with the paper's length shape.
    Generate(GenerateArgs),
    /// Measure: serial / hand-pipelined / FCFS / LF per query, Table 1, GCUPS, CPU baseline.
    Bench(BenchArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Under mpirun (built with the `mpi` feature): `search` runs as one of the ranks.
    if let Err(e) = chariot_align::ranks::start() {
        eprintln!("chariot-align: error: {e}");
        return ExitCode::FAILURE;
    }
    let r = match cli.command {
        Command::Search(a) => run_search(a),
        _ if chariot_align::ranks::size() > 1 => Err("only `search` runs under mpirun; run the others alone".into()),
        Command::Makedb(a) => run_makedb(a),
        Command::Generate(a) => run_generate(a),
        Command::Bench(a) => run_bench(a),
    };
    let _ = std::io::stdout().flush();
    chariot_align::ranks::finish();
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("chariot-align: error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    /// `--configs` and `--order` take chariot's order names and nothing else: an unknown
    /// name is a usage error (exit code 2) naming the entry and the names allowed, never
    /// largest first.
    #[test]
    fn unknown_orders_are_usage_errors() {
        use super::{Cli, Command};
        use chariot::Order;
        use chariot_align::bench::{BenchConfig, Kind};
        use clap::Parser;
        let parse = |args: &[&str]| Cli::try_parse_from(["chariot-align"].iter().chain(args));
        let bench = |configs: &str| parse(&["bench", "-q", "q.fa", "-d", "db.fa", "--configs", configs]);
        for bad in ["xx:8", "LF", "largest-first:4", "", "auto,lfx"] {
            let e = bench(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
            let text = e.to_string();
            let entry = bad.rsplit(',').next().unwrap();
            assert!(text.contains(&format!("invalid value '{entry}' for '--configs")), "{bad:?}: {text}");
            assert!(text.contains("allowed: auto, serial, hand, or an order (fcfs, lf or sf)"), "{bad:?}: {text}");
        }
        for bad in ["xx", "LF", ""] {
            let e = parse(&["search", "-q", "q.fa", "-d", "db.fa", "--order", bad]).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
            let text = e.to_string();
            assert!(text.contains(&format!("invalid value '{bad}' for '--order")), "{text}");
            assert!(text.contains(&format!("order = {bad:?}; allowed: fcfs, lf or sf")), "{text}");
        }
        // Every order names a configuration; auto, serial and hand keep their meaning.
        let Command::Bench(a) = bench("auto,serial:all,hand:2:1,fcfs,lf:16:k8:d2,sf:4:f2").unwrap().command else {
            panic!("not bench")
        };
        let kinds: Vec<Kind> = a.configs.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                Kind::Auto,
                Kind::Serial,
                Kind::Hand,
                Kind::Chariot(Order::Fcfs),
                Kind::Chariot(Order::LargestFirst),
                Kind::Chariot(Order::SmallestFirst)
            ]
        );
        let lf = &a.configs[4];
        assert_eq!((lf.text.as_str(), lf.streams, lf.kernels, lf.depth), ("lf:16:k8:d2", Some(16), Some(8), Some(2)));
        assert_eq!((a.configs[2].streams, a.configs[2].readers), (Some(2), Some(1)));
        assert!(a.configs[1].all_slots);
        assert_eq!(a.configs[5].fills, Some(2.0));
        assert_eq!(BenchConfig::parse("auto:4").unwrap_err(), "auto takes no suffix (it is chariot's own choice)");
        let Command::Search(s) = parse(&["search", "-q", "q.fa", "-d", "db.fa"]).unwrap().command else {
            panic!("not search")
        };
        assert_eq!(s.order, Order::LargestFirst);
        assert_eq!(s.common.kernel, chariot_align::sw::KernelChoice::Auto);
        let Command::Search(s) =
            parse(&["search", "-q", "q.fa", "-d", "db.fa", "--kernel", "portable"]).unwrap().command
        else {
            panic!("not search")
        };
        assert_eq!(s.common.kernel, chariot_align::sw::KernelChoice::Portable);
        let e = parse(&["bench", "-q", "q.fa", "-d", "db.fa", "--kernel", "fast"]).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("allowed: auto, portable or dpx"), "{e}");
    }
}
