//! `ferroclaw cron list|add|rm|run|runs`: cron jobs through the running
//! gateway (`cron.*`), with OpenClaw's CLI flags where they overlap.

use ferroclaw_actors::settings::parse_duration;
use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

/// `cron add`'s flags: one schedule (--at, --every, --cron) and one
/// payload (--message: an agent turn in the job's session; --system-event:
/// a line for the main session).
#[derive(Debug, Default, clap::Args)]
pub struct AddArgs {
    #[arg(long)]
    pub name: String,
    /// An ISO time, or a duration from now (20m).
    #[arg(long)]
    pub at: Option<String>,
    /// An interval (10m, 1h).
    #[arg(long)]
    pub every: Option<String>,
    /// A cron expression (5 or 6 fields).
    #[arg(long)]
    pub cron: Option<String>,
    /// The IANA timezone of --cron (default: this machine's).
    #[arg(long)]
    pub tz: Option<String>,
    #[arg(long)]
    pub message: Option<String>,
    #[arg(long)]
    pub system_event: Option<String>,
    /// main, isolated or session:<key>.
    #[arg(long)]
    pub session: Option<String>,
    /// Send the reply to a chat (--channel, --to; default: the last chat).
    #[arg(long)]
    pub announce: bool,
    #[arg(long)]
    pub channel: Option<String>,
    #[arg(long)]
    pub to: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub disabled: bool,
}

/// What to do.
pub enum Action {
    List { all: bool },
    Add(Box<AddArgs>),
    Remove { id: String },
    Run { id: String },
    Runs { id: String, limit: u32 },
}

fn bad(msg: impl Into<String>) -> Failure {
    Failure::new(2, msg.into())
}

/// `--at`: an ISO time, or a duration from now (`20m`, `+2h`).
fn at_of(raw: &str) -> Result<String, Failure> {
    let raw = raw.trim();
    if chrono::DateTime::parse_from_rfc3339(raw).is_ok() {
        return Ok(raw.to_string());
    }
    let d = parse_duration(raw.trim_start_matches('+'))
        .filter(|d| !d.is_zero())
        .ok_or_else(|| bad(format!("--at {raw:?}: an ISO time or a duration like 20m")))?;
    let at = chrono::Utc::now() + chrono::Duration::milliseconds(d.as_millis() as i64);
    Ok(at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
}

/// `cron.add` params from the flags (the checks the gateway makes again).
pub fn add_params(a: &AddArgs) -> Result<Value, Failure> {
    let schedule = match (&a.at, &a.every, &a.cron) {
        (Some(at), None, None) => json!({"kind": "at", "at": at_of(at)?}),
        (None, Some(every), None) => {
            let d = parse_duration(every)
                .filter(|d| !d.is_zero())
                .ok_or_else(|| bad(format!("--every {every:?}: a duration like 10m")))?;
            json!({"kind": "every", "everyMs": d.as_millis() as u64})
        }
        (None, None, Some(expr)) => {
            let mut s = json!({"kind": "cron", "expr": expr});
            if let Some(tz) = &a.tz {
                s["tz"] = json!(tz);
            }
            s
        }
        _ => return Err(bad("choose exactly one schedule: --at, --every or --cron")),
    };
    let (payload, target) = match (&a.message, &a.system_event) {
        (Some(m), None) => (json!({"kind": "agentTurn", "message": m}), "isolated"),
        (None, Some(t)) => (json!({"kind": "systemEvent", "text": t}), "main"),
        _ => {
            return Err(bad(
                "choose exactly one payload: --message or --system-event",
            ))
        }
    };
    let mut payload = payload;
    if let Some(m) = &a.model {
        payload["model"] = json!(m);
    }
    let mut p = json!({
        "name": a.name, "enabled": !a.disabled, "schedule": schedule,
        "sessionTarget": a.session.clone().unwrap_or_else(|| target.to_string()),
        "wakeMode": "now", "payload": payload,
    });
    if a.announce || a.channel.is_some() || a.to.is_some() {
        p["delivery"] =
            json!({"mode": "announce", "channel": a.channel.as_deref().unwrap_or("last")});
        if let Some(to) = &a.to {
            p["delivery"]["to"] = json!(to);
        }
    }
    Ok(p)
}

/// A span as a person writes it: `90s` is `1m30s`, then `10m`, `1h30m`,
/// `2d`, `1d6h` (the largest unit and the next one when it is not zero;
/// milliseconds only under a second).
pub(crate) fn span(ms: u64) -> String {
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let units = [("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)];
    let secs = ms / 1000;
    let Some(top) = units.iter().position(|(_, u)| secs >= *u) else {
        return format!("{ms}ms");
    };
    let (name, unit) = units[top];
    let mut out = format!("{}{name}", secs / unit);
    if let Some((next, small)) = units.get(top + 1) {
        let rest = (secs % unit) / small;
        if rest > 0 {
            out.push_str(&format!("{rest}{next}"));
        }
    }
    out
}

pub(crate) fn ago(ms: Option<u64>) -> String {
    let Some(ms) = ms else {
        return "-".into();
    };
    let now = ferroclaw_actors::now_ms();
    let (d, word) = match ms >= now {
        true => (ms - now, "in "),
        false => (now - ms, ""),
    };
    let span = match d / 1000 {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    };
    match word {
        "" => format!("{span} ago"),
        w => format!("{w}{span}"),
    }
}

fn schedule_line(s: &Value) -> String {
    match s["kind"].as_str() {
        Some("at") => format!("at {}", s["at"].as_str().unwrap_or("?")),
        Some("every") => match s["everyMs"].as_u64() {
            Some(ms) => format!("every {}", span(ms)),
            None => "every ?".into(),
        },
        Some("cron") => match s["tz"].as_str() {
            Some(tz) => format!("cron {} @ {tz}", s["expr"].as_str().unwrap_or("?")),
            None => format!("cron {}", s["expr"].as_str().unwrap_or("?")),
        },
        _ => "-".into(),
    }
}

/// What `cron <action>` answered, for a person.
fn print_human(action: Action, out: &Value) {
    match action {
        Action::List { .. } => {
            let jobs = out["jobs"].as_array().cloned().unwrap_or_default();
            if jobs.is_empty() {
                println!("no cron jobs");
            }
            for j in jobs {
                let st = &j["state"];
                println!(
                    "{}  {}  {}  next {}  last {} {}",
                    j["id"].as_str().unwrap_or(""),
                    j["name"].as_str().unwrap_or(""),
                    schedule_line(&j["schedule"]),
                    ago(st["nextRunAtMs"].as_u64()),
                    ago(st["lastRunAtMs"].as_u64()),
                    st["lastRunStatus"].as_str().unwrap_or(""),
                );
            }
        }
        Action::Add(_) => {
            let id = out["id"].as_str().unwrap_or("");
            println!(
                "added {id} ({}), next run {}",
                schedule_line(&out["schedule"]),
                ago(out["state"]["nextRunAtMs"].as_u64())
            );
            if out["schedule"]["kind"] == "at" && out["deleteAfterRun"] != false {
                println!(
                    "a one-shot job leaves `cron list` once it ran; its run stays in `ferroclaw cron runs {id}`"
                );
            }
        }
        Action::Remove { id } => println!("removed {id}"),
        Action::Run { id } => println!(
            "run {} of {id} started",
            out["runId"].as_str().unwrap_or("")
        ),
        Action::Runs { .. } => {
            for e in out["entries"].as_array().cloned().unwrap_or_default() {
                println!(
                    "{}  {}  {}  delivery {}  {}",
                    e["runId"].as_str().unwrap_or(""),
                    ago(e["runAtMs"].as_u64()),
                    e["status"].as_str().unwrap_or(""),
                    e["deliveryStatus"].as_str().unwrap_or(""),
                    e["error"].as_str().or(e["summary"].as_str()).unwrap_or(""),
                );
            }
        }
    }
}

pub async fn cron(t: &Target, action: Action) -> Result<(), Failure> {
    let mut c = Connection::open(t).await?;
    let out = match &action {
        Action::List { all } => c.call("cron.list", json!({"includeDisabled": all})).await?,
        Action::Add(a) => c.call("cron.add", add_params(a)?).await?,
        Action::Remove { id } => c.call("cron.remove", json!({"id": id})).await?,
        Action::Run { id } => {
            c.call("cron.run", json!({"id": id, "mode": "force"}))
                .await?
        }
        Action::Runs { id, limit } => {
            c.call("cron.runs", json!({"id": id, "limit": limit}))
                .await?
        }
    };
    if t.json {
        print_json(&out);
        return Ok(());
    }
    print_human(action, &out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_as_people_write_them() {
        let cases = [
            (500, "500ms"),
            (90_000, "1m30s"),
            (600_000, "10m"),
            (3_600_000, "1h"),
            (5_400_000, "1h30m"),
            (172_800_000, "2d"),
            (108_000_000, "1d6h"),
        ];
        for (ms, want) in cases {
            assert_eq!(span(ms), want, "{ms}");
        }
        assert_eq!(
            schedule_line(&json!({"kind": "every", "everyMs": 3_600_000})),
            "every 1h"
        );
    }

    #[test]
    fn flags_become_openclaws_job_shape() {
        let p = add_params(&AddArgs {
            name: "remind".into(),
            at: Some("20m".into()),
            message: Some("stretch".into()),
            announce: true,
            channel: Some("telegram".into()),
            to: Some("42".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(p["schedule"]["kind"], "at");
        assert_eq!(p["sessionTarget"], "isolated");
        assert_eq!(
            p["delivery"],
            json!({"mode": "announce", "channel": "telegram", "to": "42"})
        );
        let e = add_params(&AddArgs {
            name: "ping".into(),
            every: Some("1h".into()),
            system_event: Some("check".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            e["schedule"],
            json!({"kind": "every", "everyMs": 3_600_000})
        );
        assert_eq!(e["sessionTarget"], "main");
        assert!(add_params(&AddArgs {
            name: "x".into(),
            ..Default::default()
        })
        .is_err());
        assert!(add_params(&AddArgs {
            name: "x".into(),
            at: Some("whenever".into()),
            message: Some("m".into()),
            ..Default::default()
        })
        .is_err());
    }
}
