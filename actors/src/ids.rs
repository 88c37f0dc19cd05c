//! Identifier newtypes shared by the actor tree.

use std::fmt;

/// One WebSocket connection, as advertised in `hello-ok.server.connId`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(String);

impl ConnId {
    pub fn new(id: String) -> ConnId {
        ConnId(id)
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
