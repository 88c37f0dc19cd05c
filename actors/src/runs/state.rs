//! The registry's pure state: a bounded map that forgets its oldest keys
//! (recent results, message -> run links) and the waiter book (bounded in
//! all and per owner, each waiter a oneshot that answers once).

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

use tokio::sync::oneshot;

/// A map that keeps at most `cap` keys, forgetting the oldest inserted.
pub(super) struct Recent<V> {
    map: HashMap<String, V>,
    order: VecDeque<String>,
    cap: usize,
}

impl<V> Recent<V> {
    pub(super) fn new(cap: usize) -> Recent<V> {
        Recent {
            map: HashMap::new(),
            order: VecDeque::new(),
            cap,
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&V> {
        self.map.get(key)
    }

    /// Inserts (a key already present keeps its place in the order).
    pub(super) fn insert(&mut self, key: String, value: V) {
        if self.map.insert(key.clone(), value).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > self.cap {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }
}

/// One waiter: answered once through `tx`.
pub(super) struct Waiter<O, R> {
    pub(super) id: u64,
    pub(super) owner: Option<O>,
    pub(super) tx: oneshot::Sender<R>,
}

/// Waiters by run id, bounded in all (`max`) and per owner (`per_owner`).
pub(super) struct Waiters<O, R> {
    by_run: HashMap<String, Vec<Waiter<O, R>>>,
    count: usize,
    per_owner: HashMap<O, usize>,
    next: u64,
    max: usize,
    max_per_owner: usize,
}

impl<O: Clone + Eq + Hash, R: Clone> Waiters<O, R> {
    pub(super) fn new(max: usize, max_per_owner: usize) -> Waiters<O, R> {
        Waiters {
            by_run: HashMap::new(),
            count: 0,
            per_owner: HashMap::new(),
            next: 0,
            max,
            max_per_owner,
        }
    }

    pub(super) fn count(&self) -> usize {
        self.count
    }

    /// Registers a waiter for `run_id`: its id and receiver, or None when
    /// the book is full in all or for `owner` (waiters whose receivers were
    /// dropped are cleared first).
    pub(super) fn add(
        &mut self,
        run_id: &str,
        owner: Option<O>,
    ) -> Option<(u64, oneshot::Receiver<R>)> {
        if self.count >= self.max {
            self.clear_abandoned();
        }
        let mine = owner
            .as_ref()
            .map_or(0, |o| self.per_owner.get(o).copied().unwrap_or(0));
        if self.count >= self.max || mine >= self.max_per_owner {
            return None;
        }
        self.next += 1;
        let id = self.next;
        let (tx, rx) = oneshot::channel();
        if let Some(o) = &owner {
            *self.per_owner.entry(o.clone()).or_default() += 1;
        }
        self.count += 1;
        self.by_run
            .entry(run_id.to_string())
            .or_default()
            .push(Waiter { id, owner, tx });
        Some((id, rx))
    }

    /// Answers every waiter of `run_id` with `result`.
    pub(super) fn settle(&mut self, run_id: &str, result: &R) {
        for w in self.by_run.remove(run_id).unwrap_or_default() {
            self.forget(w.owner.as_ref());
            let _ = w.tx.send(result.clone());
        }
    }

    /// Removes one waiter (its caller gave up).
    pub(super) fn cancel(&mut self, run_id: &str, id: u64) {
        let Some(ws) = self.by_run.get_mut(run_id) else {
            return;
        };
        let Some(i) = ws.iter().position(|w| w.id == id) else {
            return;
        };
        let w = ws.swap_remove(i);
        if ws.is_empty() {
            self.by_run.remove(run_id);
        }
        self.forget(w.owner.as_ref());
    }

    /// Drops the waiters whose callers went away without a word.
    fn clear_abandoned(&mut self) {
        let mut gone = Vec::new();
        for ws in self.by_run.values_mut() {
            ws.retain(|w| {
                let open = !w.tx.is_closed();
                if !open {
                    gone.push(w.owner.clone());
                }
                open
            });
        }
        self.by_run.retain(|_, ws| !ws.is_empty());
        for owner in gone {
            self.forget(owner.as_ref());
        }
    }

    fn forget(&mut self, owner: Option<&O>) {
        self.count = self.count.saturating_sub(1);
        if let Some(o) = owner {
            if let Some(n) = self.per_owner.get_mut(o) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_owner.remove(o);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recent_forgets_the_oldest_and_keeps_a_reinserted_key_in_place() {
        let mut r = Recent::new(2);
        r.insert("a".into(), 1);
        r.insert("b".into(), 2);
        r.insert("a".into(), 3);
        assert_eq!(r.get("a"), Some(&3));
        r.insert("c".into(), 4);
        assert_eq!(
            (r.get("a"), r.get("b"), r.get("c")),
            (None, Some(&2), Some(&4))
        );
    }

    #[test]
    fn waiters_are_bounded_per_owner_and_in_all_and_free_their_place_when_done() {
        let mut w: Waiters<&str, u32> = Waiters::new(3, 2);
        let (_, a1) = w.add("r1", Some("a")).unwrap();
        let (id2, _a2) = w.add("r1", Some("a")).unwrap();
        assert!(w.add("r2", Some("a")).is_none(), "owner a is full");
        let (_, b1) = w.add("r2", Some("b")).unwrap();
        assert!(w.add("r3", None).is_none(), "the book is full");
        w.cancel("r1", id2);
        assert_eq!(w.count(), 2);
        w.settle("r1", &7);
        assert_eq!(a1.blocking_recv().ok(), Some(7));
        w.settle("r1", &8);
        assert_eq!(w.count(), 1, "settled waiters are gone");
        drop(b1);
        let (_, _c) = w.add("r3", Some("a")).unwrap();
        let (_, _d) = w.add("r3", Some("a")).unwrap();
        // Full again: the waiter whose receiver was dropped is cleared.
        assert!(w.add("r4", None).is_some());
        assert_eq!(w.count(), 3);
    }
}
