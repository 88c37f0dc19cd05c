//! A gateway's whole process group read from `/proc` (OpenClaw runs
//! helper processes): its members, CPU ticks and resident memory. Shared
//! by the benches that compare gateways (`#[path]`).

/// The fields of `/proc/<pid>/stat` after the command name (which may
/// hold spaces): index 0 is the state, 2 the process group.
pub fn stat_fields(pid: u32) -> Vec<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(") ").map_or("", |(_, r)| r);
    rest.split_whitespace()
        .map(|v| v.parse::<u64>().unwrap_or(0))
        .collect()
}

/// Every live process of the gateway's process group (it leads one: a
/// gateway with helper processes, OpenClaw's, is counted whole).
pub fn group(pid: u32) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return vec![pid];
    };
    let mut all: Vec<u32> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| stat_fields(*p).get(2) == Some(&(pid as u64)))
        .collect();
    if !all.contains(&pid) {
        all.push(pid);
    }
    all
}

/// utime + stime of the gateway's process group, in clock ticks.
pub fn cpu_ticks(pid: u32) -> u64 {
    group(pid)
        .into_iter()
        .map(|p| {
            let f = stat_fields(p);
            let n = |i: usize| f.get(i).copied().unwrap_or(0);
            n(11) + n(12)
        })
        .sum()
}

/// Resident memory of the whole process group, in KB.
pub fn rss_kb(pid: u32) -> u64 {
    group(pid)
        .into_iter()
        .map(|p| super::proc_stats::status_kb(p, "VmRSS"))
        .sum()
}
