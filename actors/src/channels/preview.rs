//! A run's reply as the outbox holds it before its end (`Chunks`), and a
//! `partial` stream's preview message (`Preview`), edited as it grows.

use super::*;

/// What of a run's reply the outbox holds before its end: the text of
/// each chunk in order, and the preview's message id once it was sent.
#[derive(Debug, Default)]
pub(super) struct Chunks {
    pub(super) texts: Vec<String>,
    pub(super) preview: Option<String>,
}

impl Chunks {
    pub(super) fn of(items: &[OutboxItem]) -> Chunks {
        let preview = items
            .iter()
            .find(|i| i.key.ends_with(PREVIEW))
            .and_then(|i| match &i.state {
                OutState::Sent { message_id, .. } => Some(message_id.clone()),
                _ => None,
            });
        let texts = items
            .iter()
            .filter(|i| !i.key.ends_with(PREVIEW))
            .map(|i| i.text.clone())
            .collect();
        Chunks { texts, preview }
    }
}

/// A `partial` stream's preview message: sent once, then edited as the
/// reply grows (at most every `editIntervalMs`), until it is over the
/// platform's limit or could not be sent.
pub(super) struct Preview {
    pub(super) id: Option<String>,
    /// Could not be sent or is over the limit: no more edits.
    stopped: bool,
    shown: String,
    latest: String,
    last_edit_ms: u64,
}

impl Preview {
    pub(super) fn load<O: Outlet>(del: &Deliverer<O>, d: &Delivery) -> Result<Preview, StoreError> {
        let item = ledger::get(&del.store, &d.account, &preview_key(d))?;
        let id = item.as_ref().and_then(|i| match &i.state {
            OutState::Sent { message_id, .. } => Some(message_id.clone()),
            _ => None,
        });
        Ok(Preview {
            stopped: item.is_some() && id.is_none(),
            id,
            shown: String::new(),
            latest: String::new(),
            last_edit_ms: 0,
        })
    }

    pub(super) async fn update<O: Outlet>(
        &mut self,
        del: &Deliverer<O>,
        d: &Delivery,
        text: &str,
    ) -> Result<(), StoreError> {
        self.latest = text.trim().to_string();
        if self.stopped || self.latest.is_empty() {
            return Ok(());
        }
        if self.latest.chars().count() > del.outlet.preview_limit() {
            self.stopped = true;
            return Ok(());
        }
        let now = crate::now_ms();
        match &self.id {
            None => {
                let item = del.item(d, preview_key(d), &self.latest, None);
                let writes = ledger::enqueue(&del.store, std::slice::from_ref(&item))?;
                del.store.commit(&writes)?;
                self.id = del.send_item(d, item).await?;
                self.stopped = self.id.is_none();
                self.shown = self.latest.clone();
                self.last_edit_ms = now;
            }
            Some(id)
                if now.saturating_sub(self.last_edit_ms) >= del.edit_interval_ms
                    && self.shown != self.latest =>
            {
                let _ = del.outlet.edit(&target(d), id, &self.latest, false).await;
                self.shown = self.latest.clone();
                self.last_edit_ms = crate::now_ms();
            }
            Some(_) => {}
        }
        Ok(())
    }
}
