//! A barrier on the channels' delivery ledger
//! (`actors/src/channels/ledger.rs`), for asserting that nothing (more) is
//! sent: once an update was taken and everything it started has settled,
//! nothing more will be sent for it, so an absence checked after that is
//! proven, not hoped for after a sleep.

use std::time::Duration;

use ferroclaw_actors::channels::ledger::{OutState, OutboxItem};
use ferroclaw_actors::store::{Store, Tree};
use serde_json::Value;

/// Whether the update with dedupe key `inbound`
/// (`<channel>/<account>/<peer>/<message id>`) was taken, and the gateway's
/// channels are quiet: no update waits to be handed to its session, no run
/// owes a chat a reply, no chunk waits in the outbox.
pub fn settled(store: &Store, inbound: &str) -> bool {
    let taken = store
        .get::<Value>(Tree::ChannelInbound, inbound)
        .unwrap()
        .is_some();
    taken
        && store
            .scan::<Value>(Tree::ChannelDispatch, "")
            .unwrap()
            .is_empty()
        && store
            .scan::<Value>(Tree::ChannelDeliveries, "")
            .unwrap()
            .is_empty()
        && store
            .scan::<OutboxItem>(Tree::Outbox, "")
            .unwrap()
            .iter()
            .all(|(_, item)| item.state != OutState::Pending)
}

/// Waits (at most 20 s) until [`settled`]; fails the test otherwise.
pub async fn until_settled(store: &Store, inbound: &str) {
    let done = super::wait_for(Duration::from_secs(20), || async {
        settled(store, inbound)
    })
    .await;
    assert!(done, "the update {inbound} never settled");
}

/// Whether some run owes a chat a reply (a channel message's run was
/// acknowledged by its session and has not finished sending).
pub fn owed(store: &Store) -> bool {
    !store
        .scan::<Value>(Tree::ChannelDeliveries, "")
        .unwrap()
        .is_empty()
}

/// Waits (at most 20 s) until a run owes a chat a reply: the channel
/// message just sent is under way in its session.
pub async fn until_owed(store: &Store) {
    let owed = super::wait_for(Duration::from_secs(20), || async { owed(store) }).await;
    assert!(owed, "no run took the message");
}

/// Waits (at most 20 s) until the channels are quiet (see [`settled`]),
/// for updates a platform was already told were taken (a webhook's 200
/// comes after the update is recorded).
pub async fn until_quiet(store: &Store) {
    let quiet = super::wait_for(Duration::from_secs(20), || async {
        store
            .scan::<Value>(Tree::ChannelDispatch, "")
            .unwrap()
            .is_empty()
            && !owed(store)
            && store
                .scan::<OutboxItem>(Tree::Outbox, "")
                .unwrap()
                .iter()
                .all(|(_, item)| item.state != OutState::Pending)
    })
    .await;
    assert!(quiet, "the channels never went quiet");
}

/// [`until_settled`] for an update whose key the test knows only in part:
/// the first taken key `is_it` accepts.
pub async fn until_settled_by(store: &Store, is_it: impl Fn(&str) -> bool) {
    let taken = super::wait_for(Duration::from_secs(20), || async {
        store
            .scan::<Value>(Tree::ChannelInbound, "")
            .unwrap()
            .iter()
            .any(|(k, _)| is_it(k))
    })
    .await;
    assert!(taken, "no such update was taken");
    until_quiet(store).await;
}
