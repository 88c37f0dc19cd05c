//! Giving freed heap memory back to the operating system. A burst of
//! sessions (a thousand chats at once) grows the heap; when those sessions
//! idle out their memory is free but glibc keeps it mapped, scattered
//! between long-lived allocations where it can never shrink the heap top.
//! `malloc_trim(0)` returns every free page of every arena. The gateway
//! calls it when live sessions went down since its last look, so an idle
//! gateway's RSS follows what it holds, not the peak it once had.

/// Returns free heap pages to the OS: one walk of the allocator's free
/// lists, at most once per check and only after sessions stopped. No-op off
/// glibc.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only inspects and madvises the allocator's own
    // free chunks; it takes the arena locks itself and is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The allocator's own view of the heap: bytes handed out and bytes it
/// holds free (mapped, maybe resident). `None` off glibc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapStats {
    pub in_use: u64,
    pub free: u64,
}

pub fn stats() -> Option<HeapStats> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 takes the arena locks and returns a plain struct.
        let m = unsafe { libc::mallinfo2() };
        Some(HeapStats {
            in_use: (m.uordblks + m.hblkhd) as u64,
            free: m.fordblks as u64,
        })
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// Decides when to trim: after the number of live sessions went down.
#[derive(Debug, Default)]
pub struct TrimPolicy {
    last_live: i64,
}

impl TrimPolicy {
    /// Called on a timer with the current live-session count; true when
    /// sessions stopped since the last call.
    pub fn should_trim(&mut self, live: i64) -> bool {
        let fell = live < self.last_live;
        self.last_live = live;
        fell
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_only_after_sessions_stopped() {
        let mut p = TrimPolicy::default();
        let seen: Vec<bool> = [0, 5, 5, 3, 3, 0, 2]
            .into_iter()
            .map(|live| p.should_trim(live))
            .collect();
        assert_eq!(seen, [false, false, false, true, false, true, false]);
    }
}
