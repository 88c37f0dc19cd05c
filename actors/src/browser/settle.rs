//! After an action: the navigation it started, waited for. A click on a
//! link, a submit, a key that submits, `history.go` in an evaluate: each
//! starts loading the tab's main frame a moment after the page answered
//! the action. Playwright's clicks wait for such a navigation; so does
//! `act` here, so the next snapshot, screenshot or read sees the new page
//! and not the old one. Watched from before the action; after it, the page
//! is given two animation frames for a navigation to begin, and one that
//! began is followed to the `load` of its new document, to a same-document
//! navigation, or to its end without a document (a download, a 204).

use chromiumoxide::cdp::browser_protocol::page::{
    EventFrameNavigated, EventFrameStartedLoading, EventFrameStoppedLoading, EventLifecycleEvent,
    EventNavigatedWithinDocument, FrameId,
};
use chromiumoxide::listeners::EventStream;
use chromiumoxide::Page;
use futures_util::{FutureExt, StreamExt};

use super::cdp::{self, CdpError};

/// Two frames of the page: time for a navigation an action scheduled to
/// begin (`history.go` and `location` changes start on a later task).
const TWO_FRAMES: &str =
    "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))";

/// The tab's main-frame navigation events, from before an action.
pub struct Watch {
    main: Option<FrameId>,
    started: EventStream<EventFrameStartedLoading>,
    stopped: EventStream<EventFrameStoppedLoading>,
    navigated: EventStream<EventFrameNavigated>,
    lifecycle: EventStream<EventLifecycleEvent>,
    within: EventStream<EventNavigatedWithinDocument>,
}

impl Watch {
    pub async fn new(page: &Page) -> Result<Watch, CdpError> {
        Ok(Watch {
            main: page.mainframe().await?,
            started: page.event_listener().await?,
            stopped: page.event_listener().await?,
            navigated: page.event_listener().await?,
            lifecycle: page.event_listener().await?,
            within: page.event_listener().await?,
        })
    }

    /// Returns once what the action started is over (at once when it
    /// started nothing). The caller bounds it: a page that never loads
    /// is not the action's failure.
    pub async fn settled(mut self, page: &Page) {
        // The old document may go away meanwhile: its answer is not needed.
        let _ = cdp::evaluate(page, TWO_FRAMES).await;
        let main = self.main.clone();
        let is_main = |f: &FrameId| Some(f) == main.as_ref();
        let mut begun = false;
        while let Some(Some(ev)) = self.started.next().now_or_never() {
            begun |= is_main(&ev.frame_id);
        }
        if !begun {
            return;
        }
        let mut loader = None;
        loop {
            // In the order Chromium sends them: a commit before its stop.
            tokio::select! {
                biased;
                Some(ev) = self.navigated.next() => if ev.frame.parent_id.is_none() {
                    loader = Some(ev.frame.loader_id.clone());
                },
                Some(ev) = self.lifecycle.next() => if ev.name == "load" && Some(&ev.loader_id) == loader.as_ref() {
                    return;
                },
                Some(ev) = self.within.next() => if is_main(&ev.frame_id) {
                    return;
                },
                Some(ev) = self.stopped.next() => if is_main(&ev.frame_id) && loader.is_none() {
                    return;
                },
                else => return,
            }
        }
    }
}
