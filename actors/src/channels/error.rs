//! The channels' errors that many of its modules name: a leaf module.

/// What is wrong with a channel's config section, naming its key (a start
/// error, `config validate`'s and `doctor`'s line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

impl From<&str> for ConfigError {
    fn from(why: &str) -> Self {
        ConfigError(why.to_string())
    }
}

impl From<String> for ConfigError {
    fn from(why: String) -> Self {
        ConfigError(why)
    }
}

/// Why an attachment could not be had from its platform (the note the
/// model and the sender get says it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DownloadError(String);

impl From<&str> for DownloadError {
    fn from(why: &str) -> Self {
        DownloadError(why.to_string())
    }
}

impl From<String> for DownloadError {
    fn from(why: String) -> Self {
        DownloadError(why)
    }
}
