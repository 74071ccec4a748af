//! agentmem-import: real agent transcripts in, agentmem events out.
//!
//! Each transcript format has its own module under `formats/` with one entry
//! point, `parse(text: &str) -> Result<Imported, String>`. Importers never
//! assign turns or seqs (the session does, with the same rules as live
//! ingest) but they do give every event a *stable* id derived from the
//! source, so importing a file that grew appends only the events that are new.
//!
//! ```
//! use agentmem_import::{parse, Format};
//! let text = r#"[{"role": "user", "content": "hello"}]"#;
//! let imported = parse(Format::OpenAiMessages, std::path::Path::new("chat.json"), text).unwrap();
//! assert_eq!(imported.events[0].content, "hello");
//! assert_eq!(imported.events[0].source_event, "import:openai-messages");
//! ```
//!
//! The layers, each using only those above it: [`utf8`] (input text decoded
//! a line at a time), the provider shapes ([`native::Shape`]) and
//! [`ImportError`]; [`Format`] and [`Imported`]; the
//! helpers the formats share (`record`); the formats (`formats/`);
//! [`detect_format`]; then [`read()`] and [`parse()`]; [`native`], what an
//! agent sends and gets back in those shapes, handed over live; and
//! [`session_id_for`], which finds the session an import goes to in a
//! [`Store`](agentmem::Store). The crate uses the engine (`agentmem`)
//! and the engine never uses it.

#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod destination;
mod detect;
mod error;
mod format;
mod formats;
mod imported;
pub mod native;
mod read;
mod record;
mod shape;
pub mod utf8;

pub use destination::session_id_for;
pub use detect::detect_format;
pub use error::ImportError;
pub use format::Format;
pub use imported::{Imported, SkipKind, Skipped};
pub use read::{parse, read};
