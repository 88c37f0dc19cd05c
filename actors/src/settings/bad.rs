//! A setting the code cannot use, named by its key: a start error, and
//! `config validate`'s and `doctor`'s line.

use std::fmt::Display;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {problem}")]
pub struct BadSetting {
    /// The dotted key (`session.maintenance.mode`).
    pub key: String,
    pub problem: String,
}

impl BadSetting {
    pub fn new(key: impl Into<String>, problem: impl Display) -> BadSetting {
        BadSetting {
            key: key.into(),
            problem: problem.to_string(),
        }
    }
}
