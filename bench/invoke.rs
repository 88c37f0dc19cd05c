//! What the tool benches (`mcp.rs`, `tools.rs`) share: the gateway they
//! start, `POST /tools/invoke` on a kept-alive connection, and percentiles
//! of the times it took.

use std::io::{BufRead, BufReader, Read, Write};
use std::time::Duration;

use serde_json::Value;

/// One call; the answer's body. The request goes out in one write (a
/// head and body in separate small segments would wait on delayed ACKs).
pub fn invoke(conn: &mut std::net::TcpStream, addr: &str, token: &str, body: &Value) -> Value {
    post(conn, addr, token, "/tools/invoke", body)
}

/// A JSON `POST` to `path` on the kept-alive `conn`; the answer's body.
pub fn post(
    conn: &mut std::net::TcpStream,
    addr: &str,
    token: &str,
    path: &str,
    body: &Value,
) -> Value {
    let body = body.to_string();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut buf = vec![0; len];
    reader.read_exact(&mut buf).unwrap();
    serde_json::from_slice(&buf).unwrap()
}

/// The `p` quantile (0 to 1) of `v` (sorted in place).
pub fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// `<bin> gateway --port 0` on `state` with the config file `cfg`, in its
/// own process group, its log echoed as `gw: ...`; it and its address.
pub fn spawn_gateway(
    bin: &str,
    state: &std::path::Path,
    cfg: &std::path::Path,
) -> (super::proc_stats::Gateway, String) {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(bin)
        .env("HOME", state)
        .env_remove("OPENCLAW_GATEWAY_TOKEN")
        .arg("--state-dir")
        .arg(state)
        .arg("--config")
        .arg(cfg)
        .args(["gateway", "--port", "0"])
        .process_group(0)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().expect("gateway printed its address").unwrap();
        if let Some(rest) = line.split("listening on ws://").nth(1) {
            break rest.trim().trim_end_matches('/').to_string();
        }
    };
    std::thread::spawn(move || {
        lines
            .map_while(Result::ok)
            .for_each(|l| eprintln!("gw: {l}"))
    });
    (super::proc_stats::Gateway(child), addr)
}
