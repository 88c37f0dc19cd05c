//! A tab's network log (OpenClaw's `requests`): each request the page made,
//! with its method, its status or why it failed (a refusal of the profile's
//! SSRF proxy shows here as a failed request), its resource type and URL,
//! told to the actor as one line when it ends. Read from the DevTools
//! protocol's Network events of the tab; requests still waiting for an
//! answer are kept by id, at most `OPEN` of them.

use std::collections::HashMap;

use actix::prelude::*;
use chromiumoxide::cdp::browser_protocol::network::{
    EventLoadingFailed, EventRequestWillBeSent, EventResponseReceived,
};
use chromiumoxide::Page;
use futures_util::StreamExt;

use super::actor::BrowserActor;
use super::messages::TabEvent;
use super::tabs::Log;

/// Requests waiting for an answer that are remembered (the oldest is
/// forgotten past it: a page that opens requests it never ends).
const OPEN: usize = 500;

/// Follows the tab's requests until the page goes away.
pub fn listen(tab: u32, page: &Page, me: &Addr<BrowserActor>) {
    let (page, me) = (page.clone(), me.clone());
    actix::spawn(async move {
        let (Ok(mut sent), Ok(mut answered), Ok(mut failed)) = (
            page.event_listener::<EventRequestWillBeSent>().await,
            page.event_listener::<EventResponseReceived>().await,
            page.event_listener::<EventLoadingFailed>().await,
        ) else {
            return;
        };
        let mut open: HashMap<String, (u64, String, String)> = HashMap::new();
        let mut order = 0u64;
        let line = |log: String| TabEvent::Log {
            tab,
            log: Log::Requests,
            line: log,
        };
        loop {
            tokio::select! {
                Some(ev) = sent.next() => {
                    if open.len() >= OPEN {
                        let oldest = open.iter().min_by_key(|(_, v)| v.0).map(|(k, _)| k.clone());
                        open.retain(|k, _| Some(k) != oldest.as_ref());
                    }
                    order += 1;
                    let (method, url) = (ev.request.method.clone(), ev.request.url.clone());
                    open.insert(ev.request_id.inner().clone(), (order, method, url));
                }
                Some(ev) = answered.next() => {
                    let method = open.remove(ev.request_id.inner()).map_or_else(|| "GET".to_string(), |o| o.1);
                    let kind = format!("{:?}", ev.r#type).to_lowercase();
                    me.do_send(line(format!("{method} {} {kind} {}", ev.response.status, ev.response.url)));
                }
                Some(ev) = failed.next() => {
                    if let Some((_, method, url)) = open.remove(ev.request_id.inner()) {
                        let kind = format!("{:?}", ev.r#type).to_lowercase();
                        me.do_send(line(format!("{method} failed ({}) {kind} {url}", ev.error_text)));
                    }
                }
                else => return,
            }
        }
    });
}
