//! `uvfs-bench`: the lab's command line (see `uvfs-bench --help`).

use clap::Parser;

fn main() -> std::process::ExitCode {
    uvfs_bench::cli::main(uvfs_bench::cli::Cli::parse())
}
