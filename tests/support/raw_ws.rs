//! A WebSocket client at the byte level (loopback only): the upgrade by
//! hand, then arbitrary frame headers, so tests can declare lengths they
//! never send and read the server's frames (including its close) as they
//! come.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub struct RawWs {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

/// A frame from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerFrame {
    Text(String),
    Close(u16, String),
    Other(u8),
}

/// A masked client frame header declaring `len` payload bytes.
pub fn header(fin: bool, opcode: u8, len: u64) -> Vec<u8> {
    let mut h = vec![(if fin { 0x80 } else { 0 }) | opcode];
    match len {
        0..=125 => h.push(0x80 | len as u8),
        126..=65535 => {
            h.push(0x80 | 126);
            h.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            h.push(0x80 | 127);
            h.extend_from_slice(&len.to_be_bytes());
        }
    }
    h.extend_from_slice(&[0, 0, 0, 0]); // a zero mask: payload goes as is
    h
}

/// A whole masked text frame.
pub fn text_frame(text: &str) -> Vec<u8> {
    let mut f = header(true, 1, text.len() as u64);
    f.extend_from_slice(text.as_bytes());
    f
}

impl RawWs {
    /// Connects and upgrades; the server's `connect.challenge` is then the
    /// first frame to read.
    pub async fn connect(addr: SocketAddr) -> RawWs {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let req = format!(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
            addr.port()
        );
        stream.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let end = loop {
            let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut chunk))
                .await
                .expect("upgrade answered")
                .unwrap();
            assert!(n > 0, "closed during the upgrade");
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        assert!(head.starts_with("HTTP/1.1 101"), "{head}");
        RawWs {
            stream,
            buf: buf[end..].to_vec(),
        }
    }

    pub async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// The next server frame; None when the socket closed without one.
    pub async fn frame(&mut self) -> Option<ServerFrame> {
        loop {
            if let Some((f, used)) = parse(&self.buf) {
                self.buf.drain(..used);
                return Some(f);
            }
            let mut chunk = [0u8; 65536];
            let n = match self.stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => n,
            };
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Frames until a close (its code and reason) or the end of the socket.
    pub async fn until_close(&mut self) -> Option<(u16, String)> {
        while let Some(f) = self.frame().await {
            if let ServerFrame::Close(code, reason) = f {
                return Some((code, reason));
            }
        }
        None
    }
}

fn parse(b: &[u8]) -> Option<(ServerFrame, usize)> {
    if b.len() < 2 {
        return None;
    }
    let opcode = b[0] & 0x0f;
    let (len, mut at) = match b[1] & 0x7f {
        126 => {
            if b.len() < 4 {
                return None;
            }
            (u16::from_be_bytes([b[2], b[3]]) as usize, 4)
        }
        127 => {
            if b.len() < 10 {
                return None;
            }
            let mut l = [0u8; 8];
            l.copy_from_slice(&b[2..10]);
            (u64::from_be_bytes(l) as usize, 10)
        }
        n => (n as usize, 2),
    };
    if b[1] & 0x80 != 0 {
        at += 4;
    }
    if b.len() < at + len {
        return None;
    }
    let payload = &b[at..at + len];
    let frame = match opcode {
        1 => ServerFrame::Text(String::from_utf8_lossy(payload).into_owned()),
        8 => {
            let code = if payload.len() >= 2 {
                u16::from_be_bytes([payload[0], payload[1]])
            } else {
                1005
            };
            let reason = String::from_utf8_lossy(payload.get(2..).unwrap_or_default()).into_owned();
            ServerFrame::Close(code, reason)
        }
        other => ServerFrame::Other(other),
    };
    Some((frame, at + len))
}
