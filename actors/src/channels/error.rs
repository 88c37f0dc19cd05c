//! The channels' errors that many of its modules name: a leaf module.

crate::reason_error! {
    /// What is wrong with a channel's config section, naming its key (a start
    /// error, `config validate`'s and `doctor`'s line).
    pub struct ConfigError;
}

crate::reason_error! {
    /// Why an attachment could not be had from its platform (the note the
    /// model and the sender get says it).
    pub struct DownloadError;
}
