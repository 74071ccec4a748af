//! The agentmem engine as a Python extension module, `agentmem._native`,
//! which the `agentmem-engine` distribution (python/) wraps in Python's
//! idiom: `agentmem.Store`, `agentmem.Session`, their asyncio twins and
//! the exception classes. Values cross as JSON text (the HTTP API's
//! shapes); every engine call runs with the interpreter released.

mod callables;
mod errors;
mod json;
mod payload;
mod session;
mod store;

use pyo3::prelude::*;

/// The engine's allocations in the module (its events, messages, rendered
/// entries, token counts): mimalloc keeps freed memory for the next call
/// instead of handing it back to the kernel and faulting it in again, which
/// the system allocator does when the host program (an agent framework
/// reading its whole history each turn) frees large blocks between two
/// calls. Python's own objects stay with Python's allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the `agentmem` command line in this process with `args` (without
/// the program's name); its exit status.
#[pyfunction]
fn run_cli(py: Python<'_>, args: Vec<String>) -> u8 {
    let argv: Vec<String> = std::iter::once("agentmem".to_owned()).chain(args).collect();
    py.detach(|| agentmem_cli::status(argv))
}

/// The module's contents.
#[pymodule]
#[pyo3(name = "_native")]
fn agentmem_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<store::NativeStore>()?;
    module.add_class::<session::NativeSession>()?;
    module.add_function(wrap_pyfunction!(run_cli, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(module)
}
