//! Values between Python and the engine: JSON text, read and written by
//! Python's `json` module on its side and by serde on the engine's, so the
//! dicts Python code sees are the HTTP API's JSON (one vocabulary), and an
//! integer beyond 64 bits or a float's every digit survives the trip.

use pyo3::prelude::*;
use pyo3::types::PyString;
use serde_json::Value;

use crate::errors::BindingError;

/// `value` as a Python object (dicts, lists, str, int, float, bool, None).
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).expect("a JSON value writes as text");
    py.import("json")?.call_method1("loads", (text,))
}

/// The Python object `object` as a JSON value; it must be what
/// `json.dumps` can write.
pub(crate) fn from_python(py: Python<'_>, object: &Bound<'_, PyAny>) -> PyResult<Value> {
    let text = py.import("json")?.call_method1("dumps", (object,))?;
    let text = text.cast::<PyString>()?.to_str()?.to_owned();
    serde_json::from_str(&text)
        .map_err(|error| pyo3::exceptions::PyValueError::new_err(format!("not JSON: {error}")))
}

/// JSON text the Python layer passed, read as `T`; `what` names it in the error.
pub(crate) fn read<T: serde::de::DeserializeOwned>(
    what: &str,
    text: &str,
) -> Result<T, BindingError> {
    serde_json::from_str(text)
        .map_err(|error| BindingError::Input(format!("{what} is not valid: {error}")))
}

/// A result as JSON text for the Python layer.
pub(crate) fn write(value: &impl serde::Serialize) -> Result<String, BindingError> {
    serde_json::to_string(value)
        .map_err(|error| BindingError::Input(format!("cannot write the result as JSON: {error}")))
}
