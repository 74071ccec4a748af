//! `agentmem`: the command-line face of the agentmem engine.
//!
//! A thin layer: each subcommand parses its arguments, calls the library, and
//! prints the result for people (tables) or scripts (`--json`).

mod cli;
mod commands;
mod eval;
mod hints;
mod measure;
mod output;
mod plot;
mod progress;
mod storage;

use std::process::ExitCode;

use clap::Parser;

/// The engine allocates a little for every event, message and rendered
/// entry; mimalloc serves such small, short-lived blocks faster than the
/// system allocator. It is built without transparent huge pages: with them,
/// the first large allocations (the tokenizer's tables) could wait on the
/// kernel for huge pages, 110 ms instead of 45.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("agentmem: {error:#}");
            if let Some(hint) = hints::for_chain(&error) {
                eprintln!("agentmem: hint: {hint}");
            }
            match error.downcast_ref::<commands::InputRejected>() {
                Some(_) => ExitCode::from(commands::INPUT_REJECTED_EXIT),
                None => ExitCode::FAILURE,
            }
        }
    }
}

/// `agentmem … | head` should end quietly when `head` stops reading, as other
/// command-line tools do, not panic on the broken pipe.
#[allow(unsafe_code)]
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: resetting a signal disposition to its default at start-up, before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
