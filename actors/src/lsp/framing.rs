//! LSP's base protocol: `Content-Length` headers, then a JSON body.
//! Headers are bounded (8 KiB), bodies too (64 MiB); a frame that breaks
//! the rules ends the stream (the server is restarted on its next use).

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

use super::LspError;

const MAX_HEADER: usize = 8 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One message as bytes on the wire.
pub fn encode(body: &Value) -> Vec<u8> {
    let json = serde_json::to_vec(body).unwrap_or_default();
    let mut out = format!("Content-Length: {}\r\n\r\n", json.len()).into_bytes();
    out.extend_from_slice(&json);
    out
}

/// Reads the next message (None: the stream ended between messages).
pub async fn read<R: tokio::io::AsyncRead + Unpin>(
    r: &mut BufReader<R>,
) -> Result<Option<Value>, LspError> {
    let mut length: Option<usize> = None;
    let mut header_bytes = 0;
    loop {
        let mut line = String::new();
        let n = r
            .read_line(&mut line)
            .await
            .map_err(|e| LspError::Framing(e.to_string()))?;
        if n == 0 {
            return match header_bytes {
                0 => Ok(None),
                _ => Err(LspError::Framing("the stream ended inside a header".into())),
            };
        }
        header_bytes += n;
        if header_bytes > MAX_HEADER {
            return Err(LspError::Framing(format!("header over {MAX_HEADER} bytes")));
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            break;
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(LspError::Framing("a header line without a colon".into()));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let n: usize = value
                .trim()
                .parse()
                .map_err(|_| LspError::Framing("Content-Length is not a number".into()))?;
            length = Some(n);
        }
    }
    let length = length.ok_or_else(|| LspError::Framing("no Content-Length".into()))?;
    if length > MAX_BODY {
        return Err(LspError::Framing(format!("a body over {MAX_BODY} bytes")));
    }
    let mut body = vec![0u8; length];
    r.read_exact(&mut body)
        .await
        .map_err(|e| LspError::Framing(e.to_string()))?;
    serde_json::from_slice(&body)
        .map(Some)
        .map_err(|e| LspError::Framing(format!("the body is not JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix::test]
    async fn frames_round_trip_and_bad_headers_end_the_stream() {
        let mut bytes = encode(&serde_json::json!({"id": 1}));
        bytes.extend(encode(&serde_json::json!({"id": 2})));
        let mut r = BufReader::new(bytes.as_slice());
        assert_eq!(read(&mut r).await.unwrap().unwrap()["id"], 1);
        assert_eq!(read(&mut r).await.unwrap().unwrap()["id"], 2);
        assert_eq!(read(&mut r).await.unwrap(), None);
        let mut bad = BufReader::new(&b"Content-Length: x\r\n\r\n{}"[..]);
        assert!(read(&mut bad).await.is_err());
        let mut none = BufReader::new(&b"X: 1\r\n\r\n{}"[..]);
        assert!(read(&mut none).await.is_err());
    }
}
