//! Fidelity check (in progress).
