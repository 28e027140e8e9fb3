//! The `uvfs` command: `uvfs mount [OPTIONS] DIR` and `uvfs run [OPTIONS]
//! -- COMMAND` (see the library docs).

use clap::{Parser, Subcommand};
use uvfs_fuse::mount::MountArgs;
use uvfs_fuse::run::RunArgs;

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
    /// Run COMMAND, and every process it starts, in a mount namespace of
    /// its own with one uvfs VFS mounted at --at (default /uvfs); the mount
    /// ends with the command. Static and Go programs included.
    Run(RunArgs),
}

fn main() {
    let cli = Cli::parse();
    let status = match cli.cmd {
        Cmd::Mount(a) => uvfs_fuse::mount::run(a),
        Cmd::Run(a) => uvfs_fuse::run::run(a),
    };
    std::process::exit(status);
}
