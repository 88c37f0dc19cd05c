//! What the benchmarks read of a gateway process: `/proc/<pid>/status`
//! fields and samples of its `/metrics`, the child process that stops
//! with the bench, and the knobs' reader. Included by the bench binaries.

/// A numeric field of `/proc/<pid>/status` (`VmRSS:`, `VmHWM:` in KB, `Threads:`); 0 when absent.
pub fn status_kb(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// One sample of the gateway's `/metrics` (plain HTTP/1.0 on loopback).
pub fn metric(addr: &str, name: &str) -> Option<i64> {
    metric_in(&metrics(addr)?, name)
}

/// The gateway's whole `/metrics` answer, for several values of one sample.
pub fn metrics(addr: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.write_all(format!("GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .ok()?;
    let mut body = String::new();
    s.read_to_string(&mut body).ok()?;
    Some(body)
}

/// One value of a `/metrics` answer.
pub fn metric_in(body: &str, name: &str) -> Option<i64> {
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The gateway child process, killed when the bench is done with it.
pub struct Gateway(pub std::process::Child);

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A numeric knob from the environment.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
