//! The `uvfs` command: `uvfs mount [OPTIONS] DIR` (see the library docs).

use clap::{Parser, Subcommand};
use uvfs_fuse::mount::{MountArgs, run};

#[derive(Parser)]
#[command(name = "uvfs", about = "uvfs front ends", version)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Serve one uvfs VFS at DIR through FUSE, to every process on the
    /// machine, until DIR is unmounted or SIGINT/SIGTERM arrives.
    Mount(MountArgs),
}

fn main() {
    let cli = Cli::parse();
    let status = match cli.cmd {
        Cmd::Mount(a) => run(a),
    };
    std::process::exit(status);
}
