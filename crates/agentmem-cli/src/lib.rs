//! `agentmem`: the command-line face of the agentmem engine.
//!
//! A thin layer: each subcommand parses its arguments, calls the library, and
//! prints the result for people (tables) or scripts (`--json`). [`run`] is
//! the whole command line, for the `agentmem` binary and for programs that
//! run it in their own process (the Python package's `agentmem` command).

mod cli;
mod commands;
mod eval;
mod hints;
mod measure;
mod output;
mod plot;
mod progress;
mod storage;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Runs the command line `args` (the program's name first, as
/// `std::env::args_os` gives it) and says how it ended (see [`status`]).
/// Errors are written to stderr, results to stdout; it never exits the
/// process.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    ExitCode::from(status(args))
}

/// Runs the command line `args` as [`run`] does and returns its exit
/// status: 0 when it did what it was asked, 65 (`EX_DATAERR`) when `ingest`
/// or `import` stored some of their input and rejected the rest, 2 for
/// arguments that do not parse, 1 for any other failure.
pub fn status<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match cli::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version are "errors" that print to stdout and end well.
            let _ = error.print();
            return u8::try_from(error.exit_code()).unwrap_or(2);
        }
    };
    match commands::run(cli) {
        Ok(()) => 0,
        Err(error) => {
            eprintln!("agentmem: {error:#}");
            if let Some(hint) = hints::for_chain(&error) {
                eprintln!("agentmem: hint: {hint}");
            }
            match error.downcast_ref::<commands::InputRejected>() {
                Some(_) => commands::INPUT_REJECTED_EXIT,
                None => 1,
            }
        }
    }
}
