//! A long-lived child process ferroclaw owns (the Signal daemon, the
//! managed browser): it leads its own process group, gets SIGTERM when the
//! gateway dies, even by SIGKILL, so it is never orphaned, and is stopped
//! as a group: SIGTERM, then SIGKILL once a grace period has passed.

use std::time::Duration;

/// Sets `cmd` up as an owned child: its own process group (it leads it),
/// and SIGTERM when the thread that forked it dies (an arbiter's thread,
/// which lives as long as the gateway).
pub fn owned(cmd: &mut tokio::process::Command) {
    cmd.process_group(0);
    // SAFETY: only async-signal-safe calls between fork and exec.
    let parent = std::process::id() as libc::pid_t;
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died before the signal was armed: go with it.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// SIGTERM to the group `pid` leads now, SIGKILL after `grace` if any of
/// it lingers (from a thread of its own: nothing waits for it).
pub fn stop_group(pid: u32, grace: Duration) {
    let group = -(pid as i32);
    // SAFETY: kill(2) with a negative pid signals that process group (the
    // child leads it: spawned by `owned`).
    unsafe {
        libc::kill(group, libc::SIGTERM);
    }
    std::thread::spawn(move || {
        std::thread::sleep(grace);
        // SAFETY: as above; a group already gone makes this a no-op.
        unsafe {
            if libc::kill(group, 0) == 0 {
                libc::kill(group, libc::SIGKILL);
            }
        }
    });
}

/// Whether any process of the group `pid` led is still alive (zombies
/// waiting for their parent's `wait` count as gone).
pub fn group_alive(pid: u32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // After the command's closing parenthesis: state, ppid, pgrp.
        let mut rest = stat.rsplit_once(") ").map_or("", |(_, r)| r).split(' ');
        let state = rest.next().unwrap_or("Z");
        let pgrp = rest.nth(1).and_then(|g| g.parse::<u32>().ok());
        pgrp == Some(pid) && state != "Z"
    })
}
