//! The send window between a connection actor and its socket: at most
//! [`WINDOW`] bytes of frames are handed to the WebSocket context at a
//! time; the rest wait in the actor as the strings they are. The context
//! encodes everything handed to it into one buffer as soon as the socket
//! writer asks, and the writer takes that buffer whole, so without a
//! window a stuck client's whole backlog was copied into a buffer the
//! backlog counter no longer saw. With it, what the counter sees (the
//! frames waiting, the window, the writer's share) is what the gateway
//! holds for the socket, and `maxBufferedBytes` bounds all of it.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Bytes handed to the WebSocket context and not yet taken by the socket.
pub(crate) const WINDOW: usize = 64 * 1024;

/// Shared by the connection actor (which fills the window) and the
/// response stream (which empties it and asks for more).
pub(crate) struct Window {
    in_flight: AtomicUsize,
    /// The actor holds frames back.
    waiting: AtomicBool,
    /// A `Drain` was sent and not yet handled.
    asked: AtomicBool,
    tx: UnboundedSender<Drain>,
}

/// The window has room again: hand over what waits.
pub(crate) struct Drain;

impl Window {
    pub(crate) fn new() -> (Window, UnboundedReceiver<Drain>) {
        let (tx, rx) = unbounded_channel();
        let w = Window {
            in_flight: AtomicUsize::new(0),
            waiting: AtomicBool::new(false),
            asked: AtomicBool::new(false),
            tx,
        };
        (w, rx)
    }

    /// Whether a frame of `n` bytes may go in now (some room is left).
    pub(crate) fn has_room(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) < WINDOW
    }

    /// `n` bytes were handed to the context.
    pub(crate) fn put(&self, n: usize) {
        self.in_flight.fetch_add(n, Ordering::Relaxed);
    }

    /// Whether the actor holds frames back (set by the actor).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        self.waiting.store(waiting, Ordering::Relaxed);
    }

    /// The actor took the `Drain` it was sent.
    pub(crate) fn drain_taken(&self) {
        self.asked.store(false, Ordering::Relaxed);
    }

    /// The socket took `n` bytes: once the window is half empty and frames
    /// wait, the actor is asked (once) to hand more over.
    pub(crate) fn taken(&self, n: usize) {
        let _ = self
            .in_flight
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                Some(b.saturating_sub(n))
            });
        if self.waiting.load(Ordering::Relaxed)
            && self.in_flight.load(Ordering::Relaxed) < WINDOW / 2
            && !self.asked.swap(true, Ordering::Relaxed)
        {
            let _ = self.tx.send(Drain);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_actor_is_asked_once_when_half_the_window_is_free() {
        let (w, mut rx) = Window::new();
        w.put(WINDOW);
        assert!(!w.has_room());
        w.taken(1000);
        assert!(rx.try_recv().is_err(), "nothing waits: nobody is asked");
        w.set_waiting(true);
        w.taken(1000);
        assert!(rx.try_recv().is_err(), "more than half still in flight");
        w.taken(WINDOW / 2);
        assert!(rx.try_recv().is_ok());
        w.taken(10);
        assert!(rx.try_recv().is_err(), "asked once until the actor took it");
        w.drain_taken();
        w.taken(10);
        assert!(rx.try_recv().is_ok());
        assert!(w.has_room());
    }
}
