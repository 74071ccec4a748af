//! Pair integrity (in progress).
