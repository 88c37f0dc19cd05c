//! `emulate`: what a tab's pages are told about the reader (OpenClaw's
//! `device`, `colorScheme`, `timezoneId`, `locale`; its `/set/*` routes),
//! kept by the tab across its navigations. A device is one of a few named
//! ones (viewport, pixel ratio, touch, user agent); `Desktop Chrome` takes
//! the overrides away again; a locale sets `Intl`'s, `navigator.language`
//! and `Accept-Language`. Each setting is applied in turn and the answer
//! names those applied.

use actix::prelude::*;
use chromiumoxide::cdp::browser_protocol::emulation::{
    ClearDeviceMetricsOverrideParams, MediaFeature, SetDeviceMetricsOverrideParams,
    SetEmulatedMediaParams, SetLocaleOverrideParams, SetTimezoneOverrideParams,
    SetTouchEmulationEnabledParams, SetUserAgentOverrideParams,
};
use chromiumoxide::Page;
use serde_json::{json, Value};

use super::actor::BrowserActor;
use super::calls::{failed, str_arg, timed, Answer};
use super::cdp;
use super::messages::Done;
use super::BrowserError;

/// A device a page can be shown as.
struct Device {
    name: &'static str,
    width: i64,
    height: i64,
    scale: f64,
    mobile: bool,
    /// None: the browser's own.
    agent: Option<&'static str>,
}

const DEVICES: &[Device] = &[
    Device {
        name: "iPhone 15",
        width: 393,
        height: 659,
        scale: 3.0,
        mobile: true,
        agent: Some("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"),
    },
    Device {
        name: "Pixel 7",
        width: 412,
        height: 839,
        scale: 2.625,
        mobile: true,
        agent: Some("Mozilla/5.0 (Linux; Android 14; Pixel 7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36"),
    },
    Device {
        name: "iPad Pro 11",
        width: 834,
        height: 1194,
        scale: 2.0,
        mobile: true,
        agent: Some("Mozilla/5.0 (iPad; CPU OS 17_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1"),
    },
    Device {
        name: "Desktop Chrome",
        width: 0,
        height: 0,
        scale: 1.0,
        mobile: false,
        agent: None,
    },
];

/// What a call asks to emulate.
struct Wanted {
    device: Option<&'static Device>,
    color: Option<String>,
    timezone: Option<String>,
    locale: Option<String>,
}

impl Wanted {
    fn from_args(args: &Value) -> Result<Wanted, BrowserError> {
        let text = |k: &str| str_arg(args, k).map(str::trim).filter(|s| !s.is_empty());
        // `name`: OpenClaw's `/set/device` route's.
        let device = match text("device").or(text("name")) {
            None => None,
            Some(d) => Some(
                DEVICES
                    .iter()
                    .find(|x| x.name.eq_ignore_ascii_case(d))
                    .ok_or_else(|| {
                        let known: Vec<&str> = DEVICES.iter().map(|x| x.name).collect();
                        BrowserError::Args(format!(
                            "unknown device {d:?} (ferroclaw knows: {})",
                            known.join(", ")
                        ))
                    })?,
            ),
        };
        let color = text("colorScheme").map(str::to_string);
        if let Some(c) = &color {
            if !["dark", "light", "no-preference", "none"].contains(&c.as_str()) {
                return Err(BrowserError::Args(
                    "colorScheme must be dark|light|no-preference|none.".into(),
                ));
            }
        }
        let w = Wanted {
            device,
            color,
            timezone: text("timezoneId").map(str::to_string),
            locale: text("locale").map(str::to_string),
        };
        if w.device.is_none() && w.color.is_none() && w.timezone.is_none() && w.locale.is_none() {
            return Err(BrowserError::Args(
                "emulate requires at least one of device, colorScheme, timezoneId, or locale."
                    .into(),
            ));
        }
        Ok(w)
    }
}

/// Applies each setting; the names of those applied.
async fn apply(page: &Page, w: &Wanted) -> Result<Vec<&'static str>, BrowserError> {
    let mut applied = Vec::new();
    if let Some(d) = w.device {
        device(page, d).await?;
        applied.push("device");
    }
    if let Some(c) = &w.color {
        let value = if c == "none" { "" } else { c.as_str() };
        let media = SetEmulatedMediaParams::builder()
            .feature(MediaFeature::new("prefers-color-scheme", value))
            .build();
        page.execute(media).await?;
        applied.push("colorScheme");
    }
    if let Some(t) = &w.timezone {
        // Chromium takes any name; the page's own ICU knows the real ones.
        let q = serde_json::to_string(t).unwrap_or_default();
        let known = format!("(() => {{ try {{ new Intl.DateTimeFormat('en', {{ timeZone: {q} }}); return true; }} catch {{ return false; }} }})()");
        if cdp::evaluate(page, &known).await? != Value::Bool(true) {
            return Err(BrowserError::Args(format!(
                "timezoneId {t:?} is not a time zone (IANA names: Europe/Paris)"
            )));
        }
        page.execute(SetTimezoneOverrideParams::new(t.clone()))
            .await
            .map_err(|e| BrowserError::Args(format!("timezoneId {t:?}: {e}")))?;
        applied.push("timezoneId");
    }
    if let Some(l) = &w.locale {
        let locale = SetLocaleOverrideParams::builder().locale(l.clone()).build();
        page.execute(locale)
            .await
            .map_err(|e| BrowserError::Args(format!("locale {l:?}: {e}")))?;
        // `navigator.language` and `Accept-Language` follow it, with the
        // user agent the tab has now (a device's, if one was set).
        let agent = cdp::evaluate(page, "navigator.userAgent").await?;
        let mut ua = SetUserAgentOverrideParams::new(agent.as_str().unwrap_or_default());
        ua.accept_language = Some(l.clone());
        page.execute(ua).await?;
        applied.push("locale");
    }
    Ok(applied)
}

async fn device(page: &Page, d: &Device) -> Result<(), BrowserError> {
    let Some(agent) = d.agent else {
        page.execute(ClearDeviceMetricsOverrideParams::default())
            .await?;
        page.execute(SetTouchEmulationEnabledParams::new(false))
            .await?;
        let own = page
            .execute(chromiumoxide::cdp::browser_protocol::browser::GetVersionParams::default())
            .await?;
        page.execute(SetUserAgentOverrideParams::new(
            own.result.user_agent.clone(),
        ))
        .await?;
        return Ok(());
    };
    let metrics = SetDeviceMetricsOverrideParams::new(d.width, d.height, d.scale, d.mobile);
    page.execute(metrics).await?;
    page.execute(SetTouchEmulationEnabledParams::new(true))
        .await?;
    page.execute(SetUserAgentOverrideParams::new(agent)).await?;
    Ok(())
}

impl BrowserActor {
    pub(super) fn emulate(&mut self, args: &Value) -> Answer {
        let (h, page) = match self.tab(args) {
            Ok(t) => t,
            Err(e) => return failed(e),
        };
        let wanted = match Wanted::from_args(args) {
            Ok(w) => w,
            Err(e) => return failed(e),
        };
        let limit = self.guard();
        let fut = async move { timed(limit, "emulate", apply(&page, &wanted)).await };
        Box::pin(fut.into_actor(self).map(move |r, _, _| {
            let applied = r?;
            let head = json!({ "ok": true, "targetId": format!("t{h}"), "applied": applied });
            Ok(Done::new(head, None))
        }))
    }
}

#[cfg(test)]
#[path = "emulate_tests.rs"]
mod tests;
