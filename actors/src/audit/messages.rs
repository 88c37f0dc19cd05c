//! What the audit ledger is told and asked (records, pages, settings), and
//! what the ledger asks of its database actor (`AuditDb`).

use actix::prelude::*;

use super::*;

/// One activity to record, as it happened (`at_ms`). Platform ids in it are
/// raw; the ledger replaces them with keyed references before storing.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct Record {
    pub at_ms: u64,
    pub activity: Activity,
}

/// One page of the ledger.
#[derive(Debug, Message)]
#[rtype(result = "Result<Page, DbError>")]
pub struct ListAudit {
    pub query: Query,
}

/// New `logging.audit` settings (they apply to the records that follow).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub struct SetAuditSettings {
    pub settings: AuditSettings,
}

/// Records to write (from the ledger, in order).
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Append {
    pub records: Vec<super::Record>,
}

/// A page to read (after every `Append` sent before it).
#[derive(Message)]
#[rtype(result = "Result<Page, DbError>")]
pub(super) struct Read {
    pub query: Query,
}

/// Drop what is past the limits.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Prune;
