//! Giving freed heap memory back to the operating system. A burst of
//! sessions (a thousand chats at once) grows the heap; when those sessions
//! idle out their memory is free but glibc keeps it mapped, scattered
//! between long-lived allocations where it can never shrink the heap top.
//! `malloc_trim(0)` returns every free page of every arena. The gateway
//! calls it when live sessions went down since its last look, or when the
//! allocator's free memory grew by `FREE_GROWTH_TRIM` since the last trim
//! (a transcript export, a big tool output), or the resident set grew by
//! as much with that much free (freed pages used again), so an idle
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

/// Free heap growth since the last trim that makes a trim worth a walk of
/// the free lists.
pub const FREE_GROWTH_TRIM: u64 = 32 * 1024 * 1024;

/// Decides when to trim: after the number of live sessions went down, when
/// the allocator's free memory grew by `FREE_GROWTH_TRIM` over what a trim
/// last left (pages a trim cannot return do not make it run again), or when
/// the resident set grew by as much while that much is free. The last: a
/// trim leaves its pages counted as free, so free chunks used and freed
/// again (a browser's big answers, one after another) make the process
/// resident again without growing the free count.
#[derive(Debug, Default)]
pub struct TrimPolicy {
    last_live: i64,
    free_after_trim: u64,
    rss_after_trim: u64,
}

impl TrimPolicy {
    /// Called on a timer with the live-session count, the free heap bytes
    /// and the resident bytes; true when a trim should run now.
    pub fn should_trim(&mut self, live: i64, free: u64, rss: u64) -> bool {
        let fell = live < self.last_live;
        self.last_live = live;
        self.free_after_trim = self.free_after_trim.min(free);
        self.rss_after_trim = self.rss_after_trim.min(rss);
        let redirtied = rss > self.rss_after_trim + FREE_GROWTH_TRIM && free >= FREE_GROWTH_TRIM;
        fell || free > self.free_after_trim + FREE_GROWTH_TRIM || redirtied
    }

    /// What the trim left free and resident (the baselines for the next
    /// growth).
    pub fn trimmed(&mut self, free_now: u64, rss_now: u64) {
        self.free_after_trim = free_now;
        self.rss_after_trim = rss_now;
    }
}

/// The resident set, in bytes (0 where /proc cannot tell).
pub fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page_size())
}

/// The process's memory as the stability record shows it: resident set
/// (from /proc) and the heap the allocator handed out.
pub fn memory() -> serde_json::Value {
    let rss = Some(rss()).filter(|r| *r > 0);
    let heap = stats().map(|h| h.in_use);
    let mut m = serde_json::json!({});
    if let Some(r) = rss {
        m["rssBytes"] = serde_json::json!(r);
    }
    if let Some(h) = heap {
        m["heapUsedBytes"] = serde_json::json!(h);
    }
    m
}

fn page_size() -> u64 {
    // SAFETY: sysconf reads a constant of the running system.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as u64
    } else {
        4096
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn memory_reads_the_resident_set() {
        assert!(super::memory()["rssBytes"].as_u64().unwrap() > 1 << 20);
    }

    use super::*;

    #[test]
    fn trims_after_sessions_stopped() {
        let mut p = TrimPolicy::default();
        let seen: Vec<bool> = [0, 5, 5, 3, 3, 0, 2]
            .into_iter()
            .map(|live| p.should_trim(live, 0, 0))
            .collect();
        assert_eq!(seen, [false, false, false, true, false, true, false]);
    }

    #[test]
    fn trims_when_free_memory_grew_and_not_again_for_what_it_cannot_return() {
        const MB: u64 = 1024 * 1024;
        let mut p = TrimPolicy::default();
        assert!(!p.should_trim(0, 10 * MB, 0));
        assert!(p.should_trim(0, 60 * MB, 0), "grew by 50 MB");
        // The trim could only give back part of it.
        p.trimmed(40 * MB, 0);
        assert!(!p.should_trim(0, 40 * MB, 0), "no new growth");
        assert!(!p.should_trim(0, 70 * MB, 0), "30 MB over the baseline");
        assert!(p.should_trim(0, 73 * MB, 0));
        p.trimmed(5 * MB, 0);
        // Free memory used again lowers the baseline.
        assert!(!p.should_trim(0, 2 * MB, 0));
        assert!(p.should_trim(0, 35 * MB, 0));
    }

    #[test]
    fn trims_when_freed_pages_became_resident_again() {
        const MB: u64 = 1024 * 1024;
        let mut p = TrimPolicy::default();
        p.trimmed(57 * MB, 43 * MB);
        // The same free chunks used and freed again: free does not grow,
        // the resident set does.
        assert!(!p.should_trim(0, 57 * MB, 70 * MB), "27 MB more resident");
        assert!(p.should_trim(0, 57 * MB, 99 * MB));
        p.trimmed(57 * MB, 43 * MB);
        // Resident because it is in use, not free: nothing to give back.
        assert!(!p.should_trim(0, 10 * MB, 99 * MB));
    }
}
