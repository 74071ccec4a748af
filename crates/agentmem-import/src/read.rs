//! A transcript read from a file or parsed from its text, in a format named
//! or detected.

use std::path::Path;

use crate::detect::detect_format;
use crate::error::ImportError;
use crate::format::{Format, Layout};
use crate::formats;
use crate::imported::{Imported, SkipKind, Skipped};
use crate::record::keep_too_deep_values_as_text;
use crate::utf8::Decoded;

/// Reads the transcript at `path` and imports it as `format`, or as the
/// format detected from it. A line that is not UTF-8 costs that line, never
/// the file: in a transcript of one record a line it is left out, in a JSON
/// document its bad bytes are read as U+FFFD; either way it is listed in
/// `skipped` with its line number ([`SkipKind::is_damage`]).
pub fn read(path: &Path, format: Option<Format>) -> Result<(Format, Imported), ImportError> {
    let bytes = std::fs::read(path).map_err(|source| ImportError::Io {
        action: "read the transcript",
        path: path.to_path_buf(),
        source,
    })?;
    let decoded = Decoded::new(bytes);
    let format = match format {
        Some(format) => format,
        None => detect_format(path, &decoded.text)?,
    };
    if decoded.not_utf8.is_empty() {
        return Ok((format, parse(format, path, &decoded.text)?));
    }
    let layout = format.layout(&decoded.text);
    let text = match layout {
        Layout::Lines => decoded.without_bad_lines(),
        Layout::Document => std::borrow::Cow::Borrowed(decoded.text.as_str()),
    };
    let mut imported = parse(format, path, &text)?;
    for bad in &decoded.not_utf8 {
        let reason = format!("not UTF-8 text ({})", bad.where_bad());
        imported.skipped.push(match layout {
            Layout::Lines => {
                imported.records += 1;
                Skipped::malformed(bad.line, reason)
            }
            Layout::Document => Skipped {
                line: bad.line,
                kind: SkipKind::Repaired,
                reason: format!("{reason}; read with U+FFFD for the bytes that are not"),
            },
        });
    }
    imported.skipped.sort_by_key(|skipped| skipped.line);
    Ok((format, imported))
}

/// Parses `text` (the contents of `path`) as `format`.
pub fn parse(format: Format, path: &Path, text: &str) -> Result<Imported, ImportError> {
    let mut imported = formats::parse(format, text).map_err(|message| ImportError::BadInput {
        path: path.display().to_string(),
        format: format.name().to_owned(),
        message,
    })?;
    let source = format.source_event();
    for event in &mut imported.events {
        if event.source_event.is_empty() {
            event.source_event.clone_from(&source);
        }
        keep_too_deep_values_as_text(event);
    }
    Ok(imported)
}
