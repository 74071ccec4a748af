//! One model call of an agent loop: the session prepares its context, the
//! client sends it, the answer is recorded as events. A context-overflow
//! error is recovered from (reactive compaction, then trimming) and the call
//! retried, up to the session's three recoveries, so an agent never sees it
//! unless recovery fails.

use agentmem::pipeline::overflow::ProviderError;
use agentmem::{PrepareRequest, Session};

use crate::client::Client;
use crate::error::LlmError;
use crate::response::Completion;

/// How the answer is received.
pub enum Delivery<'a> {
    /// Whole, when the model is done.
    Whole,
    /// Streamed; each piece of visible text goes to the callback as it arrives.
    Streamed(&'a mut dyn FnMut(&str)),
}

/// Prepares `session`'s context for `request`, calls the model and ingests
/// its answer (with the usage the provider reported on its first event).
pub fn call_model(
    session: &mut Session,
    client: &Client,
    request: &PrepareRequest,
    mut delivery: Delivery<'_>,
) -> Result<Completion, LlmError> {
    let mut payload = session.prepare(request)?.payload.to_value();
    // The session gives up (a typed error) after its third recovery.
    let completion = loop {
        match send(client, &payload, &mut delivery) {
            Err(LlmError::Overflow { status, message }) => {
                let error = ProviderError::ContextOverflow {
                    message: format!("{status}: {message}"),
                };
                payload = session
                    .recover_from_overflow(&error, request)?
                    .payload
                    .to_value();
            }
            other => break other?,
        }
    };
    let mut events = completion.events.clone();
    if let (Some(first), Some(usage)) = (events.first_mut(), &completion.usage) {
        first.usage = Some(usage.clone());
    }
    session.ingest(events)?;
    Ok(completion)
}

fn send(
    client: &Client,
    payload: &serde_json::Value,
    delivery: &mut Delivery<'_>,
) -> Result<Completion, LlmError> {
    match delivery {
        Delivery::Whole => client.complete(payload),
        Delivery::Streamed(on_text) => client.stream(payload, *on_text),
    }
}
