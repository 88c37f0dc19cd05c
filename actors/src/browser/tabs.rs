//! A profile's tabs, the actor's state: each page the tool knows under a
//! short handle (`t1`, `t2` ...: OpenClaw's `tabId` handles), its refs,
//! its last console lines, page errors and requests (bounded), a dialog
//! waiting for
//! an answer, and which tab a call without `targetId` means (the last one
//! opened or focused).

use std::collections::{BTreeMap, VecDeque};

use chromiumoxide::Page;

use super::snapshot::Refs;

/// Console lines, errors and requests kept per tab.
const KEEP: usize = 200;

/// A tab's logs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Log {
    Console,
    Errors,
    /// The network log: each request's method, status (or why it failed),
    /// resource type and URL.
    Requests,
}

/// A JavaScript dialog the page opened (`alert`, `confirm`, `prompt`,
/// `beforeunload`), waiting for `dialog`.
#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    pub kind: String,
    pub message: String,
}

pub struct Tab {
    pub page: Page,
    pub refs: Refs,
    pub console: VecDeque<String>,
    pub errors: VecDeque<String>,
    pub requests: VecDeque<String>,
    pub dialog: Option<Dialog>,
    /// The loader id of the document `refs` were read from.
    pub loader: Option<String>,
}

impl Tab {
    pub fn target(&self) -> String {
        self.page.target_id().inner().clone()
    }

    pub fn list(&mut self, log: Log) -> &mut VecDeque<String> {
        match log {
            Log::Console => &mut self.console,
            Log::Errors => &mut self.errors,
            Log::Requests => &mut self.requests,
        }
    }

    pub fn log(&mut self, log: Log, line: String) {
        let list = self.list(log);
        if list.len() == KEEP {
            list.pop_front();
        }
        list.push_back(line);
    }
}

#[derive(Default)]
pub struct Tabs {
    tabs: BTreeMap<u32, Tab>,
    next: u32,
    pub current: Option<u32>,
}

impl Tabs {
    /// Adds a page (or finds it, when known) and returns its handle.
    pub fn add(&mut self, page: Page) -> (u32, bool) {
        let target = page.target_id().inner().clone();
        if let Some((h, _)) = self.tabs.iter().find(|(_, t)| t.target() == target) {
            return (*h, false);
        }
        self.next += 1;
        self.tabs.insert(
            self.next,
            Tab {
                page,
                refs: Refs::default(),
                console: VecDeque::new(),
                requests: VecDeque::new(),
                errors: VecDeque::new(),
                dialog: None,
                loader: None,
            },
        );
        (self.next, true)
    }

    /// The tab a `targetId` names: a handle (`t2`), or a raw target id.
    /// None: the current tab.
    pub fn find(&self, id: Option<&str>) -> Option<u32> {
        let Some(id) = id.map(str::trim).filter(|s| !s.is_empty()) else {
            return self.current.filter(|c| self.tabs.contains_key(c));
        };
        if let Some(n) = id.strip_prefix('t').and_then(|n| n.parse().ok()) {
            if self.tabs.contains_key(&n) {
                return Some(n);
            }
        }
        self.tabs
            .iter()
            .find(|(_, t)| t.target() == id)
            .map(|(h, _)| *h)
    }

    pub fn get(&self, h: u32) -> Option<&Tab> {
        self.tabs.get(&h)
    }

    pub fn get_mut(&mut self, h: u32) -> Option<&mut Tab> {
        self.tabs.get_mut(&h)
    }

    pub fn remove(&mut self, h: u32) -> Option<Tab> {
        if self.current == Some(h) {
            self.current = None;
        }
        self.tabs.remove(&h)
    }

    /// Every tab by handle, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = (&u32, &Tab)> {
        self.tabs.iter()
    }

    pub fn len(&self) -> usize {
        self.tabs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tabs.is_empty()
    }

    /// The browser went away: its pages with it.
    pub fn clear(&mut self) {
        self.tabs.clear();
        self.current = None;
    }
}
