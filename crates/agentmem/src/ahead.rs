//! The tables a process builds once, on first use — the model table, an
//! encoding's split pattern, the redaction patterns — built ahead of need.
//!
//! Together they cost a query command about 10 ms of compiling. A
//! short-lived process (a CLI command, a hook) can build them on a spare
//! core while it opens its store and reads its logs; whatever asks for a
//! table before it is built waits for that one build, never for a second.
//! A long-lived process gains nothing from this: it builds each table once.

use crate::tokens::Encoding;

/// What the caller is about to do, and so which tables it will need.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// Recall memories, counting tokens in an encoding: the redaction
    /// patterns and the encoding's split pattern (not its tables: kept
    /// token counts may spare the process loading them).
    Recall(Encoding),
    /// Build a model's context, counting tokens in an encoding: the model
    /// table, then what [`Work::Recall`] needs.
    BuildContext(Encoding),
}

/// Builds the tables `work` needs that are not built yet, the one needed
/// soonest first.
///
/// ```
/// use agentmem::ahead::{build_tables, Work};
/// use agentmem::Encoding;
/// let model = "gpt-4o";
/// let builder = std::thread::spawn(move || build_tables(Work::BuildContext(Encoding::for_model(model))));
/// // … open the store meanwhile …
/// builder.join().unwrap();
/// ```
pub fn build_tables(work: Work) {
    match work {
        Work::Recall(encoding) => {
            crate::redact::compile_patterns();
            encoding.compile_split_pattern();
        }
        Work::BuildContext(encoding) => {
            crate::tokens::registry::build_table();
            build_tables(Work::Recall(encoding));
        }
    }
}
