//! What to type next: the engine's errors say what is wrong and what to do
//! in terms of an operation's inputs, for any caller (a library user, an
//! HTTP client, a model calling a tool). Here, and only here, the command
//! line adds the flag or command that does it.

use agentmem::files::jsonl::Recovery;
use agentmem::Error;
use agentmem_import::ImportError;

/// The command-line way to act on `error`, when there is one.
pub fn for_error(error: &Error) -> Option<&'static str> {
    match error {
        Error::SessionNotFound { .. } => Some("`agentmem sessions list` shows the sessions"),
        Error::WorkingMemoryConflict { .. } => Some("`agentmem state ID` shows the current state"),
        Error::EvictedNotFound { .. } => {
            Some("`agentmem tools SESSION` lists the session's tool calls and their ids")
        }
        Error::Embedder { .. } => Some(
            "--embedder-model (or `model` in [embedder] of config.toml) names the embedder's model",
        ),
        _ => None,
    }
}

/// The command-line way to act on an import's `error`, when there is one.
pub fn for_import_error(error: &ImportError) -> Option<&'static str> {
    match error {
        ImportError::UnknownFormat { .. } => Some("pass --format to name the format"),
        ImportError::BadInput { .. } | ImportError::BadShape { .. } | ImportError::Io { .. } => {
            None
        }
    }
}

/// The command-line way to look into a recovery a session reported.
pub fn for_recovery(recovery: &Recovery) -> Option<&'static str> {
    match recovery {
        Recovery::WorkingMemoryUpdate { .. } => {
            Some("`agentmem state ID --history` shows the versions that remain")
        }
        _ => None,
    }
}

/// The hint for the first engine error in `error`'s chain, if any.
pub fn for_chain(error: &anyhow::Error) -> Option<&'static str> {
    error
        .chain()
        .find_map(|cause| match cause.downcast_ref::<Error>() {
            Some(error) => for_error(error),
            None => cause
                .downcast_ref::<ImportError>()
                .and_then(for_import_error),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_error_wrapped_in_context_still_gets_its_hint() {
        let error = anyhow::Error::new(ImportError::UnknownFormat {
            path: "x.jsonl".into(),
            known: "claude-code, codex".into(),
        })
        .context("cannot import x.jsonl");
        let hint = for_chain(&error).unwrap();
        assert!(hint.contains("--format"), "{hint}");
        assert!(
            !error.root_cause().to_string().contains("--"),
            "the engine's own words name no flag"
        );
    }
}
