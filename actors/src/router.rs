//! RouterActor: canonical session key -> the one `SessionActor` for it,
//! created on first use. The key's session entry (its `sessionId`) is kept in
//! the `sessions` tree, so a restarted gateway finds the same transcript.

use std::collections::HashMap;

use actix::prelude::*;
use serde::{Deserialize, Serialize};

use crate::inbound::SessionKey;
use crate::session::{SessionActor, SessionDeps};
use crate::store::{StoreError, Tree};

/// What the store keeps per session key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    pub session_id: String,
    pub created_at: u64,
    pub updated_at: u64,
}

/// The session for a key (created when new). Reply: its address and entry.
#[derive(Debug, Message)]
#[rtype(result = "Result<(Addr<SessionActor>, SessionEntry), StoreError>")]
pub struct GetSession {
    pub key: SessionKey,
}

/// The stored entry of a key, without creating anything.
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<SessionEntry>, StoreError>")]
pub struct LookupSession {
    pub key: SessionKey,
}

pub struct RouterActor {
    deps: SessionDeps,
    sessions: HashMap<SessionKey, Addr<SessionActor>>,
}

impl RouterActor {
    pub fn new(deps: SessionDeps) -> RouterActor {
        RouterActor {
            deps,
            sessions: HashMap::new(),
        }
    }
}

impl Actor for RouterActor {
    type Context = Context<Self>;
}

impl Handler<GetSession> for RouterActor {
    type Result = ResponseFuture<Result<(Addr<SessionActor>, SessionEntry), StoreError>>;
    fn handle(&mut self, msg: GetSession, _: &mut Context<Self>) -> Self::Result {
        let store = self.deps.store.clone();
        let result: Result<(Addr<SessionActor>, SessionEntry), StoreError> = (|| {
            let now = crate::now_ms();
            let entry = match store.get::<SessionEntry>(Tree::Sessions, msg.key.as_str())? {
                Some(e) => e,
                None => {
                    let e = SessionEntry {
                        session_id: ulid::Ulid::generate().to_string(),
                        created_at: now,
                        updated_at: now,
                    };
                    store.put(Tree::Sessions, msg.key.as_str(), &e)?;
                    e
                }
            };
            let addr = match self.sessions.get(&msg.key).filter(|a| a.connected()) {
                Some(a) => a.clone(),
                None => {
                    let a = SessionActor::new(
                        msg.key.to_string(),
                        entry.session_id.clone(),
                        self.deps.clone(),
                    )
                    .start();
                    self.sessions.insert(msg.key.clone(), a.clone());
                    a
                }
            };
            Ok((addr, entry))
        })();
        Box::pin(async move {
            let value = result?;
            store.flush().await?;
            Ok(value)
        })
    }
}

impl Handler<LookupSession> for RouterActor {
    type Result = Result<Option<SessionEntry>, StoreError>;
    fn handle(&mut self, msg: LookupSession, _: &mut Context<Self>) -> Self::Result {
        self.deps.store.get(Tree::Sessions, msg.key.as_str())
    }
}
