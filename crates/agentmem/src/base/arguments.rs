//! The arguments of a tool call or a service request, read into the type
//! the operation declares: a missing, misspelt or mistyped field is an
//! error naming it, never a default taken in silence.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::base::error::{Error, Result};

/// `arguments` read as `T`; a failure is [`Error::InvalidArguments`] for
/// `operation`, naming the field at fault.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct Note { content: String }
/// let note: Note = agentmem::base::arguments::parse("note", &serde_json::json!({"content": "x"})).unwrap();
/// assert_eq!(note.content, "x");
/// let error = agentmem::base::arguments::parse::<Note>("note", &serde_json::json!({"contnet": "x"}));
/// assert!(error.unwrap_err().to_string().contains("unknown field `contnet`"));
/// ```
pub fn parse<T: DeserializeOwned>(operation: &str, arguments: &Value) -> Result<T> {
    serde_path_to_error::deserialize(arguments).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        Error::InvalidArguments {
            operation: operation.to_owned(),
            message: match path.as_str() {
                "." => inner.to_string(),
                field => format!("\"{field}\": {inner}"),
            },
        }
    })
}
