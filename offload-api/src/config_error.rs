//! The error of every configuration nicemu reads (its TOML, the proxy's section of it,
//! mTCP's files): the file, the key, and what is wrong with what form is expected, so that a
//! command can print all three. Defined here, in the crate both sides share, so that the NIC
//! side's configuration and the host applications' sections report alike.

/// A configuration error: where (file and key) and what.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct ConfigError {
    /// The file the configuration came from.
    pub file: String,
    /// The key path, e.g. `port[0].device`, or `(file)` for file-level problems.
    pub key: String,
    /// What is wrong and what form is expected.
    pub message: String,
}

impl ConfigError {
    /// An error about `key` of `file`.
    pub fn new(
        file: impl Into<String>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: file.into(),
            key: key.into(),
            message: message.into(),
        }
    }
}
