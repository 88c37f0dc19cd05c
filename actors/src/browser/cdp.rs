//! What the browser tool does to a page over the DevTools protocol, on
//! chromiumoxide's `Page` (its typed commands and events). Elements are
//! named by their backend DOM node id (what a snapshot's refs stand for).
//! The accessibility tree is read as JSON (`Raw`): its role and property
//! names grow with every Chromium, and one name the generated types do not
//! know would fail the whole tree.

use std::borrow::Cow;

use chromiumoxide::cdp::browser_protocol::dom::{
    BackendNodeId, FocusParams, GetContentQuadsParams, ScrollIntoViewIfNeededParams,
    SetFileInputFilesParams,
};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use chromiumoxide::cdp::js_protocol::runtime::{CallFunctionOnParams, EvaluateParams};
use chromiumoxide::Page;
use serde_json::{json, Value};

/// What went wrong on the page.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CdpError {
    #[error("the browser did not answer: {0}")]
    Protocol(String),
    #[error("the element is not visible (it has no box on the page)")]
    NotVisible,
    #[error("unknown key {0:?}")]
    UnknownKey(String),
    #[error("the page's script failed: {0}")]
    Script(String),
}

impl From<chromiumoxide::error::CdpError> for CdpError {
    fn from(e: chromiumoxide::error::CdpError) -> CdpError {
        CdpError::Protocol(e.to_string())
    }
}

/// A command sent as written, answered as JSON.
#[derive(Debug, Clone)]
pub struct Raw {
    method: &'static str,
    params: Value,
}

impl serde::Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.params.serialize(s)
    }
}

impl chromiumoxide::types::Method for Raw {
    fn identifier(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.method)
    }
}

impl chromiumoxide::types::Command for Raw {
    type Response = Value;
}

/// The page's accessibility tree (every frame's nodes in document order;
/// `frame`: that frame's only), and the loader id of the main document it
/// was read from (read first: a document that replaces it meanwhile has a
/// newer one).
pub async fn ax_tree(page: &Page, frame: Option<&str>) -> Result<(String, Vec<Value>), CdpError> {
    let frames = Raw {
        method: "Page.getFrameTree",
        params: json!({}),
    };
    let tree = page.execute(frames).await?.result;
    let loader = tree["frameTree"]["frame"]["loaderId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let raw = Raw {
        method: "Accessibility.getFullAXTree",
        params: match frame {
            Some(f) => json!({ "frameId": f }),
            None => json!({}),
        },
    };
    let got = page.execute(raw).await?.result;
    Ok((loader, got["nodes"].as_array().cloned().unwrap_or_default()))
}

/// The element's centre in the viewport, scrolled into view first.
pub async fn center(page: &Page, node: i64) -> Result<(f64, f64), CdpError> {
    let id = BackendNodeId::new(node);
    let scroll = ScrollIntoViewIfNeededParams {
        backend_node_id: Some(id),
        ..Default::default()
    };
    page.execute(scroll).await?;
    let quads = GetContentQuadsParams {
        backend_node_id: Some(id),
        ..Default::default()
    };
    let got = page.execute(quads).await?.result;
    let q = got.quads.first().ok_or(CdpError::NotVisible)?.inner();
    if q.len() < 8 {
        return Err(CdpError::NotVisible);
    }
    let x = (q[0] + q[2] + q[4] + q[6]) / 4.0;
    let y = (q[1] + q[3] + q[5] + q[7]) / 4.0;
    Ok((x, y))
}

fn mouse(kind: DispatchMouseEventType, x: f64, y: f64) -> DispatchMouseEventParams {
    DispatchMouseEventParams::new(kind, x, y)
}

/// A click (or a double click) at a point.
pub async fn click_at(
    page: &Page,
    x: f64,
    y: f64,
    button: &str,
    count: i64,
) -> Result<(), CdpError> {
    let button = match button {
        "right" => MouseButton::Right,
        "middle" => MouseButton::Middle,
        _ => MouseButton::Left,
    };
    page.execute(mouse(DispatchMouseEventType::MouseMoved, x, y))
        .await?;
    for n in 1..=count {
        for kind in [
            DispatchMouseEventType::MousePressed,
            DispatchMouseEventType::MouseReleased,
        ] {
            let mut e = mouse(kind, x, y);
            e.button = Some(button.clone());
            e.click_count = Some(n);
            page.execute(e).await?;
        }
    }
    Ok(())
}

/// The pointer moved to a point (hover).
pub async fn move_to(page: &Page, x: f64, y: f64) -> Result<(), CdpError> {
    page.execute(mouse(DispatchMouseEventType::MouseMoved, x, y))
        .await?;
    Ok(())
}

/// A drag from one point to another with the left button.
pub async fn drag(page: &Page, from: (f64, f64), to: (f64, f64)) -> Result<(), CdpError> {
    move_to(page, from.0, from.1).await?;
    let mut down = mouse(DispatchMouseEventType::MousePressed, from.0, from.1);
    down.button = Some(MouseButton::Left);
    down.click_count = Some(1);
    page.execute(down).await?;
    for step in 1..=5 {
        let t = f64::from(step) / 5.0;
        let mut m = mouse(
            DispatchMouseEventType::MouseMoved,
            from.0 + (to.0 - from.0) * t,
            from.1 + (to.1 - from.1) * t,
        );
        m.button = Some(MouseButton::Left);
        page.execute(m).await?;
    }
    let mut up = mouse(DispatchMouseEventType::MouseReleased, to.0, to.1);
    up.button = Some(MouseButton::Left);
    up.click_count = Some(1);
    page.execute(up).await?;
    Ok(())
}

pub async fn focus(page: &Page, node: i64) -> Result<(), CdpError> {
    let f = FocusParams {
        backend_node_id: Some(BackendNodeId::new(node)),
        ..Default::default()
    };
    page.execute(f).await?;
    Ok(())
}

/// Text typed where the focus is (as an input method commits it).
pub async fn insert_text(page: &Page, text: &str) -> Result<(), CdpError> {
    page.execute(InsertTextParams::new(text)).await?;
    Ok(())
}

/// The modifier bit CDP uses for a modifier's name.
fn modifier(name: &str) -> Option<i64> {
    Some(match name.to_ascii_lowercase().as_str() {
        "alt" | "option" => 1,
        "control" | "ctrl" => 2,
        "meta" | "cmd" | "command" => 4,
        "shift" => 8,
        _ => return None,
    })
}

/// OpenClaw's key aliases.
fn key_name(key: &str) -> &str {
    match key {
        "Esc" => "Escape",
        "Return" => "Enter",
        "Del" => "Delete",
        "Space" => " ",
        k => k,
    }
}

/// A key press: `Enter`, `a`, `Control+Shift+T`.
pub async fn press(page: &Page, combo: &str) -> Result<(), CdpError> {
    let parts: Vec<&str> = combo.split('+').collect();
    let (key, mods) = parts
        .split_last()
        .ok_or_else(|| CdpError::UnknownKey(combo.into()))?;
    let mut bits = 0;
    for m in mods {
        bits |= modifier(m).ok_or_else(|| CdpError::UnknownKey(combo.into()))?;
    }
    let key = key_name(if key.is_empty() { "+" } else { key });
    let def = chromiumoxide::keys::get_key_definition(key)
        .ok_or_else(|| CdpError::UnknownKey(combo.into()))?;
    let text = def.text.or((def.key.len() == 1).then_some(def.key));
    let mut down = DispatchKeyEventParams::new(if text.is_some() && bits & 6 == 0 {
        DispatchKeyEventType::KeyDown
    } else {
        DispatchKeyEventType::RawKeyDown
    });
    down.key = Some(def.key.to_string());
    down.code = Some(def.code.to_string());
    down.windows_virtual_key_code = Some(def.key_code);
    down.native_virtual_key_code = Some(def.key_code);
    down.modifiers = Some(bits);
    if bits & 6 == 0 {
        down.text = text.map(str::to_string);
    }
    let mut up = down.clone();
    up.r#type = DispatchKeyEventType::KeyUp;
    up.text = None;
    page.execute(down).await?;
    page.execute(up).await?;
    Ok(())
}

/// Calls `function` (a JavaScript function's source) with the element as
/// `this` and `args`, and returns its value.
pub async fn call_on(
    page: &Page,
    node: i64,
    function: &str,
    args: Vec<Value>,
) -> Result<Value, CdpError> {
    let raw = Raw {
        method: "DOM.resolveNode",
        params: json!({ "backendNodeId": node }),
    };
    let object = page.execute(raw).await?.result;
    let id = object["object"]["objectId"]
        .as_str()
        .ok_or(CdpError::NotVisible)?
        .to_string();
    let mut call = CallFunctionOnParams::new(function);
    call.object_id = Some(id.into());
    call.arguments = Some(
        args.into_iter()
            .map(|v| chromiumoxide::cdp::js_protocol::runtime::CallArgument {
                value: Some(v),
                ..Default::default()
            })
            .collect(),
    );
    call.return_by_value = Some(true);
    call.await_promise = Some(true);
    let got = page.execute(call).await?.result;
    if let Some(e) = got.exception_details {
        return Err(CdpError::Script(e.text));
    }
    Ok(got.result.value.unwrap_or(Value::Null))
}

/// Evaluates an expression in the page and returns its value.
pub async fn evaluate(page: &Page, expression: &str) -> Result<Value, CdpError> {
    let mut e = EvaluateParams::new(expression);
    e.return_by_value = Some(true);
    e.await_promise = Some(true);
    let got = page.execute(e).await?.result;
    if let Some(e) = got.exception_details {
        let detail = e.exception.and_then(|x| x.description).unwrap_or(e.text);
        return Err(CdpError::Script(detail));
    }
    Ok(got.result.value.unwrap_or(Value::Null))
}

/// Files given to a file input.
pub async fn set_files(page: &Page, node: i64, files: Vec<String>) -> Result<(), CdpError> {
    let mut p = SetFileInputFilesParams::new(files);
    p.backend_node_id = Some(BackendNodeId::new(node));
    page.execute(p).await?;
    Ok(())
}

/// Sends the tab's main frame to `url` and waits until the new document
/// fired its load event, or a same-document navigation happened (the
/// caller bounds it; a navigation that turns into a download never loads:
/// the caller races it with the download). Not chromiumoxide's `goto`:
/// its navigation watcher waits out its whole deadline when a navigation
/// becomes a download, and holds every later navigation of the tab behind
/// it.
pub async fn go(page: &Page, url: &str) -> Result<(), CdpError> {
    use chromiumoxide::cdp::browser_protocol::page::{
        EventFrameNavigated, EventLifecycleEvent, EventNavigatedWithinDocument,
    };
    use futures_util::StreamExt;
    let mut navigated = page.event_listener::<EventFrameNavigated>().await?;
    let mut lifecycle = page.event_listener::<EventLifecycleEvent>().await?;
    let mut within = page
        .event_listener::<EventNavigatedWithinDocument>()
        .await?;
    let main = page.mainframe().await?;
    let target = serde_json::to_string(url).map_err(|e| CdpError::Protocol(e.to_string()))?;
    evaluate(page, &format!("window.location.href = {target}")).await?;
    let mut loader = None;
    loop {
        tokio::select! {
            Some(ev) = navigated.next() => if ev.frame.parent_id.is_none() {
                loader = Some(ev.frame.loader_id.clone());
            },
            Some(ev) = lifecycle.next() => if ev.name == "load" && Some(&ev.loader_id) == loader.as_ref() {
                return Ok(());
            },
            Some(ev) = within.next() => if Some(&ev.frame_id) == main.as_ref() {
                return Ok(());
            },
            else => return Err(CdpError::Protocol("the tab closed during the navigation".into())),
        }
    }
}
