//! What an import can fail at: every variant says what went wrong and what
//! to do.

use std::path::PathBuf;

/// A transcript that could not be read or imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The text is not what its format says, as a whole (a damaged record
    /// costs only itself: see [`Imported::skipped`](crate::Imported::skipped)).
    #[error("cannot read {path} as {format}: {message}")]
    BadInput {
        path: String,
        format: String,
        message: String,
    },

    /// Messages or a response handed over live are not of the shape named.
    #[error("cannot read {at} as {shape} input: {reason}")]
    BadShape {
        shape: crate::shape::Shape,
        at: String,
        reason: String,
    },

    /// Neither the file's name nor its contents tell its format.
    #[error("cannot tell the format of {path} from its name or its contents; name the format: one of {known}")]
    UnknownFormat { path: String, known: String },

    /// The file could not be read.
    #[error("{action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}
