//! Write-time guard (in progress).
