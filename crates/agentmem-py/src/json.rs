//! Values between Python and the engine. Dicts, lists and scalars are read
//! straight into JSON values; anything else (an SDK object, an integer
//! beyond 64 bits, a dict with keys that are not strings) goes through the
//! package's `json.dumps` as JSON text and serde on the engine's side, so
//! both paths give the same value, and the dicts Python code sees are the
//! HTTP API's JSON (one vocabulary).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

use crate::errors::BindingError;

/// The package's `json.dumps` (SDK objects as their dicts), looked up once.
static DUMPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The deepest nesting read straight; a deeper value takes the JSON text
/// path, where serde's own recursion limit refuses it.
const DEEPEST_NESTING: usize = 128;

/// `value` as a Python object (dicts, lists, str, int, float, bool, None).
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).expect("a JSON value writes as text");
    py.import("json")?.call_method1("loads", (text,))
}

/// The Python object `object` as a JSON value: read straight when it is
/// made of JSON's own types, else written by the package's `json.dumps`
/// (which raises `TypeError` for what it cannot write) and read back;
/// `what` names it when that text is not JSON serde reads (a NaN, say).
pub(crate) fn from_python(
    py: Python<'_>,
    object: &Bound<'_, PyAny>,
    what: &str,
) -> PyResult<Value> {
    match plain(object) {
        Some(value) => Ok(value),
        None => read(what, &dumps(py, object)?).map_err(|error| error.into_pyerr(py)),
    }
}

/// `object` written as JSON text by the package's `json.dumps`.
pub(crate) fn dumps(py: Python<'_>, object: &Bound<'_, PyAny>) -> PyResult<String> {
    let text = DUMPS
        .import(py, "agentmem._sync", "_dumps")?
        .call1((object,))?;
    Ok(text.cast::<PyString>()?.to_str()?.to_owned())
}

/// `object` as a JSON value when it and everything in it are JSON's own
/// types: a dict with str keys, a list or tuple, a str, an int within 64
/// bits, a finite float, a bool or None. `None` for anything else, which
/// the JSON text path then writes, or refuses, as it always has.
pub(crate) fn plain(object: &Bound<'_, PyAny>) -> Option<Value> {
    plain_value(object, 0)
}

/// [`plain`] at nesting `depth`.
fn plain_value(object: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
    if depth > DEEPEST_NESTING {
        return None;
    }
    if object.is_none() {
        return Some(Value::Null);
    }
    if let Ok(text) = object.cast::<PyString>() {
        return text
            .to_str()
            .ok()
            .map(|text| Value::String(text.to_owned()));
    }
    if let Ok(dict) = object.cast::<PyDict>() {
        let mut map = Map::new();
        for (key, item) in dict.iter() {
            let key = key.cast::<PyString>().ok()?.to_str().ok()?.to_owned();
            map.insert(key, plain_value(&item, depth + 1)?);
        }
        return Some(Value::Object(map));
    }
    if object.cast::<PyList>().is_ok() || object.cast::<PyTuple>().is_ok() {
        return object
            .try_iter()
            .ok()?
            .map(|item| plain_value(&item.ok()?, depth + 1))
            .collect::<Option<_>>()
            .map(Value::Array);
    }
    if let Ok(flag) = object.cast::<PyBool>() {
        return Some(Value::Bool(flag.is_true()));
    }
    if object.cast::<PyInt>().is_ok() {
        return match object.extract::<i64>() {
            Ok(number) => Some(Value::from(number)),
            Err(_) => object.extract::<u64>().ok().map(Value::from),
        };
    }
    if let Ok(float) = object.cast::<PyFloat>() {
        return Number::from_f64(float.value()).map(Value::Number);
    }
    None
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
