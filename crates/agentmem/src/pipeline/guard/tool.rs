//! The `read_evicted_output` tool: its name, its default page and its schema.

use crate::render::ToolSchema;

/// The name of the tool that pages through evicted outputs.
///
/// ```
/// use agentmem::pipeline::guard::{read_evicted_output_schema, READ_EVICTED_OUTPUT_TOOL};
/// assert_eq!(read_evicted_output_schema().name, READ_EVICTED_OUTPUT_TOOL);
/// ```
pub const READ_EVICTED_OUTPUT_TOOL: &str = "read_evicted_output";

/// Lines per page when the `read_evicted_output` tool is called without a limit.
///
/// ```
/// assert_eq!(agentmem::pipeline::guard::DEFAULT_READ_LIMIT_LINES, 200);
/// ```
pub const DEFAULT_READ_LIMIT_LINES: usize = 200;

/// The schema of the `read_evicted_output` tool, for agents to page through
/// evicted outputs: `call_id` (required), `offset` (first line, 0-based,
/// default 0) and `limit` (lines, default 200). Its handler calls
/// [`read_evicted`](crate::files::evicted::read_evicted).
///
/// ```
/// use agentmem::pipeline::guard::read_evicted_output_schema;
/// let schema = read_evicted_output_schema();
/// assert_eq!(schema.name, "read_evicted_output");
/// assert_eq!(schema.parameters["required"], serde_json::json!(["call_id"]));
/// assert_eq!(schema.parameters["properties"]["limit"]["default"], 200);
/// ```
pub fn read_evicted_output_schema() -> ToolSchema {
    ToolSchema {
        name: READ_EVICTED_OUTPUT_TOOL.to_owned(),
        description: "Read a tool output that was too large for the context and was saved in \
                      full. Its preview names the call id and the number of lines; read it in \
                      pages of lines."
            .to_owned(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "call_id": {
                    "type": "string",
                    "description": "The id of the tool call whose output was evicted, as shown in the preview."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 0,
                    "default": 0,
                    "description": "The first line to read, counting from 0."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_READ_LIMIT_LINES,
                    "description": "How many lines to read."
                }
            },
            "required": ["call_id"],
            "additionalProperties": false
        }),
    }
}
