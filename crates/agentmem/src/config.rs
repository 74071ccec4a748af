//! Configuration, layered: defaults < `<data dir>/config.toml` < environment < command line.
//!
//! Later layers (agent, session, request) join as the features that need them land.
//!
//! ```toml
//! # <data dir>/config.toml
//! [storage]
//! durability = "always"   # always | batch | os
//! ```

use std::path::Path;
use std::str::FromStr;

use serde::Deserialize;

use crate::error::{Error, IoContext, Result};

/// The file name of the configuration inside the data directory.
pub const CONFIG_FILE: &str = "config.toml";

/// The environment variable that overrides the durability setting.
pub const DURABILITY_ENV: &str = "AGENTMEM_DURABILITY";

/// When appended events reach stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// fsync after every event: an append that returned Ok survives a crash or power loss.
    Always,
    /// fsync once per ingest call: a returned ingest survives; a crash mid-call
    /// may lose part of that call (never earlier calls).
    #[default]
    Batch,
    /// Leave flushing to the operating system: survives a process crash, not a power loss.
    Os,
}

impl FromStr for Durability {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "always" => Ok(Durability::Always),
            "batch" => Ok(Durability::Batch),
            "os" => Ok(Durability::Os),
            other => Err(format!(
                "unknown durability {other:?}; use always, batch or os"
            )),
        }
    }
}

/// Storage settings.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    #[serde(default)]
    pub durability: Durability,
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub storage: StorageConfig,
}

impl Config {
    /// Reads `<data_dir>/config.toml` (defaults when it is absent), then applies
    /// the environment ([`DURABILITY_ENV`]).
    pub fn load(data_dir: &Path) -> Result<Config> {
        let path = data_dir.join(CONFIG_FILE);
        let mut config = match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text).map_err(|e| Error::Config {
                path: path.display().to_string(),
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => return Err(e).io("read", &path),
        };
        if let Ok(value) = std::env::var(DURABILITY_ENV) {
            config.storage.durability = value.parse().map_err(|message| Error::Config {
                path: DURABILITY_ENV.to_owned(),
                message,
            })?;
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_durability_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[storage]\ndurability = \"os\"\n",
        )
        .unwrap();
        let config: Config =
            toml::from_str(&std::fs::read_to_string(dir.path().join(CONFIG_FILE)).unwrap())
                .unwrap();
        assert_eq!(config.storage.durability, Durability::Os);
    }

    #[test]
    fn an_unknown_key_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[storage]\ndurabilty = \"os\"\n",
        )
        .unwrap();
        let err = Config::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("durabilty"), "{err}");
    }
}
