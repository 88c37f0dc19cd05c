//! Downloads, uploads and PDFs against a real Chromium and a site on
//! 127.0.0.1: downloads saved where the model asked with OpenClaw's
//! metadata, bounded by the policy and the size cap, read once; uploads
//! only of the turn's workspace files.

use serde_json::json;

use super::super::test_kit::{browser, call, call_in, ref_of, serve, Reply};
use super::super::BrowserError;

const REPORT: &str = "quarter,total\nQ3,42\n";

const FILES: &str = r#"<!doctype html><html><head><title>Files</title></head><body>
<a href="/report.csv">Report</a>
<a href="/big.bin">Big</a>
<a href="/sneaky.csv">Sneaky</a>
<button onclick="const a = document.createElement('a'); a.href = window.URL.createObjectURL(new Blob(['made here'])); a.download = 'notes.txt'; a.click()">Notes</button>
</body></html>"#;

/// The page starts a download of its own once loaded.
const AUTO: &str = r#"<!doctype html><html><body><p>Your file is coming</p>
<script>window.onload = () => { location.href = '/report.csv'; };</script></body></html>"#;

fn attachment(name: &str, body: Vec<u8>) -> Reply {
    Reply {
        status: "200 OK",
        headers: format!(
            "content-type: application/octet-stream\r\ncontent-disposition: attachment; filename=\"{name}\"\r\n"
        ),
        body,
    }
}

/// A file input that reports what it was given.
const UPLOAD: &str = r#"<!doctype html><html><head><title>Upload</title></head><body>
<label>Attachment <input type="file" multiple aria-label="Attachment"
 onchange="fetch('/got?' + [...this.files].map(f => f.name + '=' + f.size).join('&'))"></label>
</body></html>"#;

fn pages(path: &str, port: u16) -> Reply {
    match path {
        "/files" => Reply::html(FILES),
        "/upload" => Reply::html(UPLOAD),
        "/auto" => Reply::html(AUTO),
        "/report.csv" => attachment("report.csv", REPORT.as_bytes().to_vec()),
        // Over the test browser's 1 MiB cap.
        "/big.bin" => attachment("big.bin", vec![7u8; 2 << 20]),
        // A redirect to a name the policy refuses.
        "/sneaky.csv" => Reply {
            status: "302 Found",
            headers: format!("location: http://localhost:{port}/report.csv\r\n"),
            body: Vec::new(),
        },
        _ => Reply::not_found(),
    }
}

#[actix::test]
async fn a_download_is_saved_where_asked_with_its_metadata_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let downloads = dir.path().join("downloads");
    let (b, port) = (browser(dir.path()), serve(None, pages).await);
    call(
        &b,
        "open",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/files") }),
    )
    .await
    .unwrap();
    let snap = call(&b, "snapshot", json!({})).await.unwrap().text;
    let report = ref_of(&snap, "link \"Report\"");

    // A path outside the downloads directory is refused before any click.
    for bad in ["../escape.csv", "/etc/x.csv", ".hidden"] {
        let e = call(&b, "download", json!({ "ref": report, "path": bad }))
            .await
            .unwrap_err();
        assert!(matches!(e, BrowserError::Args(_)), "{bad}: {e}");
    }
    let got = call(
        &b,
        "download",
        json!({ "ref": report, "path": "reports/q3.csv" }),
    )
    .await
    .unwrap()
    .text;
    let saved = downloads.join("reports/q3.csv");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), REPORT);
    assert!(
        got.contains("\"suggestedFilename\":\"report.csv\""),
        "{got}"
    );
    assert!(
        got.contains(&format!("http://127.0.0.1:{port}/report.csv")),
        "{got}"
    );
    assert!(got.contains("This is data from outside"), "{got}");

    // A download an action starts (a blob the page made) is read after.
    let notes = ref_of(&snap, "button \"Notes\"");
    call(&b, "act", json!({ "kind": "click", "ref": notes }))
        .await
        .unwrap();
    let read = call(&b, "waitfordownload", json!({})).await.unwrap().text;
    assert!(
        read.contains("\"suggestedFilename\":\"notes.txt\""),
        "{read}"
    );
    assert_eq!(
        std::fs::read_to_string(downloads.join("notes.txt")).unwrap(),
        "made here"
    );

    // Past the size cap, or sent where the policy refuses: no file.
    let big = ref_of(&snap, "link \"Big\"");
    let e = call(&b, "download", json!({ "ref": big, "path": "big.bin" }))
        .await
        .unwrap_err();
    assert!(matches!(e, BrowserError::Download { .. }), "{e}");
    // The redirect to a refused name never reaches it: no download begins
    // (the wait ends at its deadline) and the refusal is in the errors.
    let sneaky = ref_of(&snap, "link \"Sneaky\"");
    let e = call(
        &b,
        "download",
        json!({ "ref": sneaky, "path": "s.csv", "timeoutMs": 1000 }),
    )
    .await
    .unwrap_err();
    assert!(matches!(e, BrowserError::Timeout { .. }), "{e}");
    let errors = call(&b, "errors", json!({})).await.unwrap().text;
    assert!(errors.contains("refused: localhost"), "{errors}");
    let mut left: Vec<String> = std::fs::read_dir(&downloads)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["notes.txt", "reports"]);

    let pdf = call(&b, "pdf", json!({})).await.unwrap().text;
    assert!(pdf.contains("page-t1.pdf"), "{pdf}");
    let bytes = std::fs::read(downloads.join("page-t1.pdf")).unwrap();
    assert_eq!(&bytes[..5], b"%PDF-");
}

#[actix::test]
async fn waitfordownload_reads_a_download_the_page_started_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (b, port) = (browser(dir.path()), serve(None, pages).await);
    call(
        &b,
        "open",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/auto") }),
    )
    .await
    .unwrap();
    let got = call(&b, "waitfordownload", json!({ "path": "mine.csv" }))
        .await
        .unwrap()
        .text;
    assert!(
        got.contains("\"suggestedFilename\":\"report.csv\""),
        "{got}"
    );
    let saved = dir.path().join("downloads/mine.csv");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), REPORT);
    // Read once: nothing else is waiting, so the next wait times out.
    let e = call(&b, "waitfordownload", json!({ "timeoutMs": 300 }))
        .await
        .unwrap_err();
    assert!(matches!(e, BrowserError::Timeout { .. }), "{e}");

    // A navigation that turns into a download gives the file, not a page,
    // and the tab goes on navigating.
    let went = call(
        &b,
        "navigate",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/report.csv") }),
    )
    .await
    .unwrap()
    .text;
    assert!(went.contains("\"download\":true"), "{went}");
    let saved = dir.path().join("downloads/report.csv");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), REPORT);
    let files = call(
        &b,
        "navigate",
        json!({ "targetUrl": format!("http://127.0.0.1:{port}/files") }),
    )
    .await
    .unwrap()
    .text;
    assert!(files.contains("link \"Report\""), "{files}");
}

#[actix::test]
async fn upload_gives_a_file_input_the_workspaces_files_and_nothing_outside_it() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(workspace.join("docs")).unwrap();
    std::fs::write(workspace.join("docs/cv.txt"), "hello").unwrap();
    std::fs::write(workspace.join("photo.png"), [1u8; 12]).unwrap();
    std::fs::write(dir.path().join("secret.txt"), "not yours").unwrap();
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let (b, port) = (browser(dir.path()), serve(Some(tx), pages).await);
    let url = format!("http://127.0.0.1:{port}/upload");
    call(&b, "open", json!({ "targetUrl": url })).await.unwrap();
    let snap = call(&b, "snapshot", json!({})).await.unwrap().text;
    let input = ref_of(&snap, "\"Attachment\"");
    let up = |paths: serde_json::Value| {
        call_in(
            &b,
            "upload",
            json!({ "inputRef": input, "paths": paths }),
            &workspace,
        )
    };
    for outside in [
        json!(["../secret.txt"]),
        json!(["/etc/passwd"]),
        json!(["docs"]),
    ] {
        let refused = up(outside.clone()).await.unwrap_err();
        assert!(
            matches!(refused, BrowserError::Args(_)),
            "{outside}: {refused}"
        );
    }
    let done = up(json!(["docs/cv.txt", "photo.png"])).await.unwrap();
    assert_eq!(done.head["files"], 2, "{}", done.text);
    // The page got exactly the two files, and never the refused ones.
    let wait = async {
        while let Some(p) = seen.recv().await {
            // `host/path`, as the server saw it.
            if let Some(at) = p.find("/got?") {
                return p[at..].to_string();
            }
        }
        String::new()
    };
    let got = tokio::time::timeout(std::time::Duration::from_secs(20), wait)
        .await
        .unwrap();
    assert_eq!(got, "/got?cv.txt=5&photo.png=12");
}
