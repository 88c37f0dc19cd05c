//! Stored media after the turn (issue 32): an image reaches a model that
//! sees images by reference (the transcript and the session keep its media
//! id, the run loads the bytes from the store, every later turn and a
//! restart too; a file swept from the store becomes a note), and
//! `chat.history` gives each stored file a signed `/media/<id>` link that
//! opens without the token (an `<img>` sends none) and nothing else, which
//! OpenClaw's own Control UI uses to show the image and offer the PDF.

use base64::Engine;
use serde_json::{json, Value};

use super::attachments::{pdf, png};
use crate::support::fake_provider::{FakeProvider, Script};
use crate::support::{admin, chat_until_done, TestGateway, TOKEN};

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The fake provider as `fake/see`, a reply model that takes images.
fn vision_config(provider: &FakeProvider) -> Value {
    provider.set_default(Script::text(&["seen"]));
    json!({
        "models": { "providers": { "fake": {
            "baseUrl": provider.base_url(), "api": "openai-completions", "apiKey": "k0",
            "models": [{ "id": "see", "input": ["text", "image"] }],
        } } },
        "agents": { "defaults": { "model": { "primary": "fake/see", "fallbacks": [] } } },
    })
}

/// A real PNG, `w` x `h`, all one colour (a browser decodes it).
pub(crate) fn real_png(w: u32, h: u32, rgb: [u8; 3]) -> Vec<u8> {
    use std::io::Write;
    let chunk = |out: &mut Vec<u8>, kind: &[u8], data: &[u8]| {
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(kind);
        crc.update(data);
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&crc.finalize().to_be_bytes());
    };
    let mut header = Vec::new();
    header.extend_from_slice(&w.to_be_bytes());
    header.extend_from_slice(&h.to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    // Each row: filter type 0, then the pixels.
    let row: Vec<u8> = std::iter::once(0).chain((0..w).flat_map(|_| rgb)).collect();
    let raw = row.repeat(h as usize);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(&raw).unwrap();
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &header);
    chunk(&mut out, b"IDAT", &z.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}

/// An image of some size (a PNG signature, then filler).
fn picture(size: usize) -> Vec<u8> {
    let mut v = png();
    v.resize(size, 9);
    v
}

async fn send(c: &mut crate::support::client::Client, text: &str, key: &str, files: Value) {
    let r = c
        .call(
            "chat.send",
            json!({"sessionKey": "main", "message": text, "idempotencyKey": key, "attachments": files}),
        )
        .await;
    assert_eq!(r["payload"]["status"], "started", "{r}");
    chat_until_done(c, key).await;
}

/// The `image_url` data URLs of the last request's messages.
fn sent_images(provider: &FakeProvider) -> Vec<String> {
    let requests = provider.requests.lock().unwrap();
    let (body, _) = requests.last().expect("a request");
    let mut out = Vec::new();
    for m in body["messages"].as_array().unwrap() {
        for part in m["content"].as_array().into_iter().flatten() {
            if let Some(u) = part["image_url"]["url"].as_str() {
                out.push(u.to_string());
            }
        }
    }
    out
}

fn last_request_text(provider: &FakeProvider) -> String {
    let requests = provider.requests.lock().unwrap();
    requests.last().unwrap().0["messages"].to_string()
}

#[tokio::test]
async fn a_stored_image_is_kept_by_reference_and_sent_from_the_store_on_every_turn() {
    let provider = FakeProvider::start().await;
    let mut gw = TestGateway::with_config(vision_config(&provider));
    let mut c = admin(&gw).await;
    let image = picture(300_000);
    let data_url = format!("data:image/png;base64,{}", b64(&image));
    let files = json!([{"type": "image", "mimeType": "image/png", "fileName": "big.png", "content": b64(&image)}]);
    send(&mut c, "look at this", "r1", files).await;
    assert_eq!(sent_images(&provider), std::slice::from_ref(&data_url));

    // The transcript keeps the id, not the 400 KB of base64.
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let session_id = h["sessionId"].as_str().unwrap().to_string();
    let media_id = h["messages"][0]["media"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let entries = ferroclaw_actors::transcript::entries(gw.store(), &session_id).unwrap();
    let user = entries
        .iter()
        .find(|e| e["message"]["role"] == "user")
        .unwrap();
    let block = &user["message"]["content"][1];
    assert_eq!(
        (&block["type"], &block["mediaId"]),
        (&json!("image"), &json!(media_id))
    );
    assert!(block.get("data").is_none(), "{block}");
    assert!(
        user.to_string().len() < 4_000,
        "{} bytes",
        user.to_string().len()
    );

    // Later turns send it again, loaded from the store: before and after a
    // restart, for the turn itself and the three after it.
    send(&mut c, "and now?", "r2", json!([])).await;
    assert_eq!(sent_images(&provider), std::slice::from_ref(&data_url));
    drop(c);
    gw.restart();
    let mut c = admin(&gw).await;
    send(&mut c, "still there?", "r3", json!([])).await;
    send(&mut c, "and there?", "r4", json!([])).await;
    assert_eq!(sent_images(&provider), std::slice::from_ref(&data_url));
    // Four turns on, it is not sent again (OpenClaw's replay view).
    let second = png();
    let files = json!([{"type": "image", "mimeType": "image/png", "content": b64(&second)}]);
    send(&mut c, "another", "r5", files).await;
    assert_eq!(
        sent_images(&provider),
        [format!("data:image/png;base64,{}", b64(&second))]
    );
    assert!(
        last_request_text(&provider).contains("[image data removed - already processed by model]")
    );

    // Swept from the store: the model is told it is gone, the turn runs.
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let fifth = h["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user" && m["content"][0]["text"] == "another")
        .unwrap();
    let gone_id = fifth["media"][0]["id"].as_str().unwrap();
    std::fs::remove_file(fifth["MediaPaths"][0].as_str().unwrap()).unwrap();
    send(&mut c, "and now?", "r6", json!([])).await;
    assert!(sent_images(&provider).is_empty());
    let gone = format!("[image {} is no longer stored]", &gone_id[..12]);
    assert!(last_request_text(&provider).contains(&gone));
}

/// `chat.history`'s signed links, and what they open.
#[tokio::test]
async fn history_links_open_each_stored_file_without_the_token_and_nothing_else() {
    let provider = FakeProvider::start().await;
    let gw = TestGateway::with_config(vision_config(&provider));
    let mut c = admin(&gw).await;
    let invoice = pdf(&["Invoice 7"]);
    let files = json!([
        {"type": "image", "mimeType": "image/png", "fileName": "sq.png", "content": b64(&png())},
        {"mimeType": "application/pdf", "fileName": "inv.pdf", "content": b64(&invoice)},
    ]);
    send(&mut c, "two files", "l1", files).await;
    let h = c.call("chat.history", json!({"sessionKey": "main"})).await["payload"].clone();
    let m = &h["messages"][0];
    // People see what was typed; the model got the document's text too.
    assert_eq!(m["content"][0]["text"], "two files", "{m}");
    assert!(last_request_text(&provider).contains("Invoice 7"));
    let image = &m["content"][1];
    assert_eq!(image["omitted"], true, "{m}");
    assert_eq!(image["bytes"], png().len(), "{image}");
    let image_url = image["url"].as_str().unwrap().to_string();
    assert!(
        image_url.starts_with(&format!(
            "/media/{}?exp=",
            image["mediaId"].as_str().unwrap()
        )),
        "{image_url}"
    );
    // The PDF: one of OpenClaw's media facts (the image is shown by its block).
    let facts = m["__openclaw"]["media"].as_array().unwrap();
    assert_eq!(facts.len(), 1, "{m}");
    assert_eq!(
        (
            &facts[0]["contentType"],
            &facts[0]["fileName"],
            &facts[0]["sizeBytes"]
        ),
        (
            &json!("application/pdf"),
            &json!("inv.pdf"),
            &json!(invoice.len())
        )
    );
    let pdf_url = facts[0]["url"].as_str().unwrap().to_string();

    let get = |path: String| {
        reqwest::Client::new()
            .get(format!("http://{}{path}", gw.addr))
            .send()
    };
    let r = get(image_url.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().to_vec(), png());
    let r = get(pdf_url.clone()).await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap().to_vec(), invoice);
    // A link opens its own file only, unaltered, and nothing without one.
    let pdf_id = &pdf_url["/media/".len()..pdf_url.find('?').unwrap()];
    let (path, query) = image_url.split_once('?').unwrap();
    let sig_at = query.find("sig=").unwrap() + 4;
    let mut flipped = query.to_string();
    let c0 = if &query[sig_at..sig_at + 1] == "0" {
        "1"
    } else {
        "0"
    };
    flipped.replace_range(sig_at..sig_at + 1, c0);
    for bad in [
        format!("/media/{pdf_id}?{query}"),
        format!("{path}?{flipped}"),
        format!("{path}?{}", query.replace("exp=", "exp=1")),
        path.to_string(),
        format!("{path}?exp=&sig="),
    ] {
        assert_eq!(get(bad.clone()).await.unwrap().status(), 401, "{bad}");
    }
}

/// OpenClaw's Control UI, in Chromium, shows the stored image of a
/// message in the history and offers its PDF, by those links.
#[tokio::test]
async fn openclaws_control_ui_shows_the_stored_image_and_offers_the_pdf() {
    let provider = FakeProvider::start().await;
    let mut cfg = vision_config(&provider);
    let root = super::control_ui::installed_ui().display().to_string();
    ferroclaw::config::merge_patch(&mut cfg, &json!({"gateway": {"controlUi": {"root": root}}}));
    // A workspace icon (without one the UI's icon request is a 404, as OpenClaw's).
    let icon = r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7"/></svg>"#;
    let gw = TestGateway::with_files(cfg, &[("workspace/favicon.svg", icon)]);
    let mut c = admin(&gw).await;
    let square = b64(&real_png(96, 64, [200, 30, 30]));
    let files = json!([
        {"type": "image", "mimeType": "image/png", "fileName": "square.png", "content": square},
        {"mimeType": "application/pdf", "fileName": "inv.pdf", "content": b64(&pdf(&["Invoice 7"]))},
    ]);
    send(&mut c, "here is the picture and the invoice", "u1", files).await;
    drop(c);
    let shots =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("control-ui-media-screenshots");
    let base = format!("http://{}", gw.addr);
    let report = crate::support::browser::browser_script(
        "control_ui_media.test.mjs",
        &[base.as_ref(), TOKEN.as_ref()],
        &shots,
    )
    .await;
    // The image, drawn from the store by its signed link (the only request
    // for it, answered 200).
    let images = report["images"].as_array().unwrap();
    let drawn: Vec<&Value> = images
        .iter()
        .filter(|i| i["src"].as_str().unwrap().starts_with("/media/"))
        .collect();
    assert_eq!(drawn.len(), 1, "{report}");
    assert_eq!(
        (&drawn[0]["width"], &drawn[0]["height"]),
        (&json!(96), &json!(64))
    );
    let fetched = report["mediaResponses"].as_array().unwrap();
    assert!(
        !fetched.is_empty()
            && fetched
                .iter()
                .all(|r| r["status"] == 200 && r["signed"] == true),
        "{report}"
    );
    // The PDF, offered by its own link, with its name and size.
    let text = report["threadText"].as_str().unwrap();
    assert!(text.contains("inv.pdf\nPDF"), "{text}");
    assert!(
        !text.contains("[Document]"),
        "only the model reads it: {text}"
    );
    let links: Vec<&str> = report["links"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l["href"].as_str())
        .filter(|h| h.starts_with("/media/") && h.contains("&sig="))
        .collect();
    assert_eq!(links.len(), 1, "{report}");
    assert_ne!(links[0], drawn[0]["src"].as_str().unwrap());
    for list in ["httpErrors", "consoleErrors", "pageErrors"] {
        assert_eq!(report[list], json!([]), "{list}: {report}");
    }
}
