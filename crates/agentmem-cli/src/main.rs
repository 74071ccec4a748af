//! `agentmem`: the command-line face of the agentmem engine.
//!
//! A thin layer: each subcommand parses its arguments, calls the library, and
//! prints the result for people (tables) or scripts (`--json`).

mod cli;
mod commands;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agentmem: {error:#}");
            ExitCode::FAILURE
        }
    }
}
