//! A download with a size cap: refused before reading when the declared
//! length is over it, cut off as soon as the bytes read pass it.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;

use super::MediaError;

/// GETs `url` (with `headers`), at most `max` bytes, within `timeout`.
/// Returns the body and the `Content-Type` the server declared.
pub async fn fetch_capped(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    max: u64,
    timeout: Duration,
) -> Result<(Bytes, Option<String>), MediaError> {
    let mut req = client.get(url).timeout(timeout);
    for (k, v) in headers {
        req = req.header(k, v);
    }
    let resp = req
        .send()
        .await
        .map_err(|e| MediaError::Fetch(e.without_url().to_string()))?;
    if !resp.status().is_success() {
        return Err(MediaError::Http(resp.status().as_u16()));
    }
    if let Some(size) = resp.content_length().filter(|n| *n > max) {
        return Err(MediaError::TooLarge { size, max });
    }
    let declared = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body = BytesMut::new();
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| MediaError::Fetch(e.without_url().to_string()))?;
        let size = (body.len() + chunk.len()) as u64;
        if size > max {
            return Err(MediaError::TooLarge { size, max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body.freeze(), declared))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    /// A loopback server that answers one request with `head` and then
    /// `body_chunks` (each flushed); returns its URL and the bytes it sent.
    fn serve(head: String, body: Vec<u8>) -> (String, std::thread::JoinHandle<usize>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/f", l.local_addr().unwrap());
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = s.write_all(head.as_bytes());
            let mut sent = 0;
            for chunk in body.chunks(64 * 1024) {
                if s.write_all(chunk).is_err() {
                    break;
                }
                sent += chunk.len();
            }
            sent
        });
        (url, t)
    }

    #[tokio::test]
    async fn a_declared_size_over_the_cap_is_refused_before_the_download() {
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: audio/ogg\r\nContent-Length: 2147483648\r\n\r\n";
        let (url, t) = serve(head.into(), Vec::new());
        let c = reqwest::Client::new();
        let r = fetch_capped(&c, &url, &[], 20 << 20, Duration::from_secs(10)).await;
        assert_eq!(
            r.unwrap_err(),
            MediaError::TooLarge {
                size: 2147483648,
                max: 20 << 20
            }
        );
        t.join().unwrap();
    }

    #[tokio::test]
    async fn a_body_that_passes_the_cap_is_cut_off() {
        // Chunked: no declared length; 4 MB sent against a 1 MB cap.
        let body = vec![7u8; 4 << 20];
        let mut chunked = Vec::new();
        for c in body.chunks(32 * 1024) {
            chunked.extend_from_slice(format!("{:x}\r\n", c.len()).as_bytes());
            chunked.extend_from_slice(c);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\n\r\n");
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let (url, t) = serve(head.into(), chunked);
        let c = reqwest::Client::new();
        let r = fetch_capped(&c, &url, &[], 1 << 20, Duration::from_secs(10)).await;
        assert!(
            matches!(r, Err(MediaError::TooLarge { max, .. }) if max == 1 << 20),
            "{r:?}"
        );
        t.join().unwrap();
    }

    #[tokio::test]
    async fn a_small_file_comes_back_with_its_declared_type() {
        let head = "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 5\r\n\r\n";
        let (url, t) = serve(head.into(), b"hello".to_vec());
        let c = reqwest::Client::new();
        let (bytes, ty) = fetch_capped(&c, &url, &[], 100, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"hello");
        assert_eq!(ty.as_deref(), Some("image/png"));
        t.join().unwrap();
        let (url, t) = serve(
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".into(),
            vec![],
        );
        let r = fetch_capped(&c, &url, &[], 100, Duration::from_secs(10)).await;
        assert_eq!(r.unwrap_err(), MediaError::Http(404));
        t.join().unwrap();
    }
}
