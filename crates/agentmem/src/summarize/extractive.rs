//! Extractive summarizer (in progress).
