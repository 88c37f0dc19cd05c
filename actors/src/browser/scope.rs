//! What part of a page a snapshot reads, and its labelled picture
//! (OpenClaw's `selector`, `frame` and `labels`). `frame` is a CSS
//! selector of an `<iframe>` on the page: the snapshot reads that frame's
//! tree (a same-origin or same-site frame: Chromium keeps a cross-site
//! frame in another process, which is refused by name). `selector` keeps
//! the first matching element and what is inside it (inside the frame
//! when both are given). `labels` adds a screenshot of the viewport with
//! each ref shown over its element, for a model that sees images. The
//! frame's content came through the profile's SSRF proxy like the page's.

use chromiumoxide::cdp::browser_protocol::dom::{
    BackendNodeId, DescribeNodeParams, GetBoxModelParams,
};
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::Page;
use serde_json::{json, Value};

use super::cdp::{self, CdpError};
use super::BrowserError;

/// At most this many labels on one picture.
const MAX_LABELS: usize = 150;

/// Where a snapshot looks.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub frame: Option<String>,
    pub selector: Option<String>,
    pub labels: bool,
}

impl Scope {
    pub fn from_args(args: &Value) -> Scope {
        let text = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
                .map(str::to_string)
        };
        Scope {
            frame: text("frame"),
            selector: text("selector"),
            labels: args.get("labels").and_then(Value::as_bool) == Some(true),
        }
    }
}

/// The element an expression gives (its backend node, and the frame an
/// `<iframe>` holds), None when it gives `null`.
async fn element(
    page: &Page,
    expression: &str,
) -> Result<Option<(i64, Option<String>)>, BrowserError> {
    let got = page.execute(EvaluateParams::new(expression)).await?.result;
    if let Some(e) = got.exception_details {
        let why = e.exception.and_then(|x| x.description).unwrap_or(e.text);
        return Err(BrowserError::Args(format!("bad selector: {why}")));
    }
    let Some(object) = got.result.object_id else {
        return Ok(None);
    };
    let describe = DescribeNodeParams {
        object_id: Some(object),
        ..Default::default()
    };
    let node = page.execute(describe).await?.result.node;
    let frame = node.frame_id.map(|f| f.inner().clone());
    Ok(Some((*node.backend_node_id.inner(), frame)))
}

/// The accessibility tree the scope names (the tab's loader id with it,
/// for the refs).
pub async fn tree(page: &Page, scope: &Scope) -> Result<(String, Vec<Value>), BrowserError> {
    let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
    let frame = match &scope.frame {
        None => None,
        Some(f) => {
            let found = element(page, &format!("document.querySelector({})", q(f))).await?;
            match found {
                Some((_, Some(id))) => Some(id),
                Some((_, None)) => {
                    return Err(BrowserError::Args(format!("frame {f:?} is not an iframe")))
                }
                None => {
                    return Err(BrowserError::Args(format!(
                        "frame {f:?}: no element matches"
                    )))
                }
            }
        }
    };
    let (loader, nodes) =
        cdp::ax_tree(page, frame.as_deref())
            .await
            .map_err(|e| match (&scope.frame, e) {
                (Some(f), CdpError::Protocol(why)) => BrowserError::Args(format!(
            "frame {f:?} cannot be read (a cross-site frame runs in another process): {why}"
        )),
                (_, e) => e.into(),
            })?;
    let Some(sel) = &scope.selector else {
        return Ok((loader, nodes));
    };
    let root = match &scope.frame {
        None => format!("document.querySelector({})", q(sel)),
        Some(f) => format!(
            "(document.querySelector({})?.contentDocument?.querySelector({})) ?? null",
            q(f),
            q(sel)
        ),
    };
    let Some((node, _)) = element(page, &root).await? else {
        return Err(BrowserError::Args(format!(
            "selector {sel:?}: no element matches"
        )));
    };
    Ok((loader, super::snapshot::subtree(&nodes, node)))
}

/// The viewport with `refs` (ref number, backend node) drawn over their
/// elements; the labels are taken away again after the picture.
pub async fn labelled(
    page: &Page,
    refs: &[(u32, i64)],
) -> Result<(Vec<u8>, &'static str), BrowserError> {
    let mut boxes = Vec::new();
    for (r, node) in refs.iter().take(MAX_LABELS) {
        let p = GetBoxModelParams {
            backend_node_id: Some(BackendNodeId::new(*node)),
            ..Default::default()
        };
        // An element without a box (hidden, detached) gets no label.
        if let Ok(m) = page.execute(p).await {
            let q = m.result.model.border.inner();
            if q.len() >= 8 {
                boxes.push(json!({ "ref": format!("e{r}"), "x": q[0], "y": q[1], "w": q[4] - q[0], "h": q[5] - q[1] }));
            }
        }
    }
    let draw = format!(
        "(() => {{ const root = document.createElement('div'); root.id = '__ferroclaw_labels';
        root.style.cssText = 'position:fixed;inset:0;pointer-events:none;z-index:2147483647';
        for (const b of {}) {{
          const o = document.createElement('div');
          o.style.cssText = `position:fixed;left:${{b.x}}px;top:${{b.y}}px;width:${{b.w}}px;height:${{b.h}}px;outline:2px solid #e11d48`;
          const t = document.createElement('span'); t.textContent = b.ref;
          t.style.cssText = 'position:absolute;left:0;top:-14px;font:bold 11px monospace;background:#e11d48;color:#fff;padding:0 2px';
          o.appendChild(t); root.appendChild(o);
        }}
        document.documentElement.appendChild(root); return true; }})()",
        Value::Array(boxes)
    );
    cdp::evaluate(page, &draw).await?;
    let png = chromiumoxide::page::ScreenshotParams::builder()
        .format(chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat::Png)
        .build();
    let shot = page.screenshot(png).await;
    let remove = "document.getElementById('__ferroclaw_labels')?.remove()";
    let _ = cdp::evaluate(page, remove).await;
    Ok((shot?, "image/png"))
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
