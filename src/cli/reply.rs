//! A run's reply on the terminal: streamed as it comes (each message on a
//! line of its own), a spinner until the first token, Ctrl-C as an abort,
//! and exec approvals asked at the terminal when the run waits for one.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use serde_json::{json, Value};

use super::{print_json, Connection, Failure, Target};

/// Prints what `text` (a message's text so far) adds to what is shown; a
/// text that does not continue it is the next message, on a line of its own.
fn show(out: &mut impl Write, shown: &mut String, text: &str) {
    if let Some(rest) = text.strip_prefix(shown.as_str()) {
        let _ = write!(out, "{rest}");
    } else if !text.is_empty() {
        let _ = write!(out, "\n{text}");
    }
    if !text.is_empty() {
        shown.clear();
        shown.push_str(text);
    }
}

/// Lines typed by the operator, one when asked: a thread reads each (the
/// chat's line editor, or plain stdin), so a line is never read that no
/// one asked for. `None`: stdin is not a terminal (nobody to ask).
pub(crate) struct Prompt {
    pub(super) want: std::sync::mpsc::Sender<String>,
    pub(super) lines: tokio::sync::mpsc::Receiver<Option<String>>,
}

impl Prompt {
    /// Plain stdin, when it is a terminal.
    pub(super) fn stdin() -> Option<Prompt> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        let (want, asked) = std::sync::mpsc::channel::<String>();
        let (tx, lines) = tokio::sync::mpsc::channel(1);
        std::thread::spawn(move || {
            while let Ok(prompt) = asked.recv() {
                eprint!("{prompt}");
                let mut line = String::new();
                let got = match std::io::stdin().read_line(&mut line) {
                    Ok(0) | Err(_) => None,
                    Ok(_) => Some(line),
                };
                if tx.blocking_send(got).is_err() {
                    return;
                }
            }
        });
        Some(Prompt { want, lines })
    }

    /// The next line after `prompt` (None: stdin ended).
    async fn line(&mut self, prompt: &str) -> Option<String> {
        self.want.send(prompt.to_string()).ok()?;
        self.lines.recv().await.flatten()
    }
}

/// An exec approval this run is waiting for: shown, and answered by the
/// operator at the terminal when there is one (allow once, always, deny).
async fn approval(
    c: &mut Connection,
    p: &Value,
    prompt: Option<&mut Prompt>,
) -> Result<(), Failure> {
    let r = &p["request"];
    let id = p["id"].as_str().unwrap_or("");
    let left = p["expiresAtMs"]
        .as_u64()
        .map(|e| e.saturating_sub(ferroclaw_actors::now_ms()) / 1000)
        .unwrap_or(0);
    eprintln!(
        "\nexec needs your approval: {}\n  in {} (exec security: {}); expires in {left} s",
        r["command"].as_str().unwrap_or("?"),
        r["cwd"].as_str().unwrap_or("?"),
        r["security"].as_str().unwrap_or("?"),
    );
    let Some(prompt) = prompt else {
        eprintln!(
            "  no terminal to ask: approve it from an operator client (exec.approval.resolve {id})"
        );
        return Ok(());
    };
    // A terminal that closed is no answer: the request stays for the
    // next client (an operator, or the next call to this session).
    let Some(answer) = prompt
        .line("  [o] allow once  [a] allow always  [d] deny > ")
        .await
    else {
        eprintln!("  stdin ended: left for an operator client (exec.approval.resolve {id})");
        return Ok(());
    };
    let decision = match answer.trim().to_ascii_lowercase().as_str() {
        "o" | "once" | "y" | "yes" => "allow-once",
        "a" | "always" => "allow-always",
        _ => "deny",
    };
    match c
        .call(
            "exec.approval.resolve",
            json!({ "id": id, "decision": decision }),
        )
        .await
    {
        Ok(_) => eprintln!("  {decision}"),
        // Answered elsewhere first, or expired: the run has its answer.
        Err(f) => eprintln!("  not recorded: {}", f.message),
    }
    Ok(())
}

/// A question this run asks (`ask_user`): shown, and answered at the
/// terminal when there is one (a number, an option, or free text; one
/// line per question when it asks several; an empty line skips it).
async fn question(
    c: &mut Connection,
    p: &Value,
    prompt: Option<&mut Prompt>,
) -> Result<(), Failure> {
    use ferroclaw_actors::questions::{answers_from_text, prompt_text, Question};
    let id = p["id"].as_str().unwrap_or("");
    let asked: Vec<Question> = serde_json::from_value(p["questions"].clone()).unwrap_or_default();
    let text = prompt_text(&asked);
    eprintln!("\n{}", text.replace('\n', "\n  "));
    let Some(prompt) = prompt else {
        eprintln!(
            "  no terminal to ask: answer it from an operator client (question.resolve {id})"
        );
        return Ok(());
    };
    let mut lines = Vec::new();
    for (i, q) in asked.iter().enumerate() {
        let ask = match asked.len() {
            1 => "  answer (empty line: skip) > ".to_string(),
            _ => format!("  {}. {} > ", i + 1, q.header),
        };
        let Some(line) = prompt.line(&ask).await else {
            eprintln!("  stdin ended: left for an operator client (question.resolve {id})");
            return Ok(());
        };
        lines.push(line.trim().to_string());
    }
    let params = match lines.iter().all(String::is_empty) {
        true => json!({ "id": id, "cancel": true }),
        false => {
            json!({ "id": id, "answers": { "answers": answers_from_text(&asked, &lines.join("\n")) } })
        }
    };
    match c.call("question.resolve", params).await {
        Ok(r) => eprintln!("  {}", r["status"].as_str().unwrap_or("sent")),
        // Answered elsewhere first, or expired: the run has its answer.
        Err(f) => eprintln!("  not recorded: {}", f.message),
    }
    Ok(())
}

/// The session's full key (`agent:<id>:<key>`), when the gateway knows it.
async fn full_key(c: &mut Connection, session: &str) -> Option<String> {
    let d = c
        .call("sessions.describe", json!({ "key": session }))
        .await
        .ok()?;
    d["session"]["key"].as_str().map(str::to_string)
}

/// Before a message is sent to `session`: its full key, and the exec
/// approvals it already waits for (an earlier turn's, its client gone:
/// they hold this message too) shown and asked at the terminal.
pub(super) async fn before_send(
    c: &mut Connection,
    t: &Target,
    session: &str,
    mut prompt: Option<&mut Prompt>,
) -> Result<Option<String>, Failure> {
    let key = full_key(c, session).await;
    if !t.json {
        for p in waiting_in(c, key.as_deref()).await {
            approval(c, &p, prompt.as_deref_mut()).await?;
        }
    }
    Ok(key)
}

/// The exec approvals session `key` waits for now, oldest first.
async fn waiting_in(c: &mut Connection, key: Option<&str>) -> Vec<Value> {
    let Some(key) = key else { return Vec::new() };
    let list = c
        .call("exec.approval.list", json!({}))
        .await
        .unwrap_or_default();
    let list = list.as_array().cloned().unwrap_or_default();
    let here: Vec<Value> = list
        .into_iter()
        .filter(|p| p["request"]["sessionKey"].as_str() == Some(key))
        .collect();
    if !here.is_empty() {
        eprintln!(
            "session {key} is waiting for an exec approval; your message runs after it is answered"
        );
    }
    here
}

/// Prints a run's reply as it streams. With `interrupt`, a signal aborts
/// the run (`chat.abort`) and the command goes on; with `prompt`, an exec
/// approval the run waits for is asked at the terminal.
pub(super) async fn stream_reply(
    c: &mut Connection,
    t: &Target,
    run_id: &str,
    (session, known_key): (&str, Option<String>),
    mut interrupt: Option<&mut tokio::signal::unix::Signal>,
    mut prompt: Option<&mut Prompt>,
) -> Result<(), Failure> {
    // The session's full key (`before_send`'s, else from the run's first
    // event): approvals name it.
    let mut key = known_key;
    let mut screen = Screen::new(t.json);
    let mut abort_sent = false;
    loop {
        let ev = tokio::select! {
            e = c.event() => e?,
            _ = tokio::time::sleep(screen.tick()) => {
                screen.spin();
                continue;
            }
            Some(()) = async {
                match interrupt.as_mut() {
                    Some(sig) if !abort_sent => sig.recv().await,
                    _ => std::future::pending().await,
                }
            } => {
                abort_sent = true;
                c.call("chat.abort", json!({ "sessionKey": session, "runId": run_id })).await?;
                continue;
            }
        };
        let name = ev.get("event").and_then(Value::as_str).unwrap_or("");
        let p = &ev["payload"];
        if matches!(name, "chat" | "agent") && p["runId"] == run_id && key.is_none() {
            key = p["sessionKey"].as_str().map(String::from);
        }
        let ours = key.is_some() && p["request"]["sessionKey"].as_str() == key.as_deref();
        if name == "exec.approval.requested" && !t.json && ours {
            screen.clear();
            approval(c, p, prompt.as_deref_mut()).await?;
        } else if name == "question.requested" && !t.json && p["runId"] == run_id {
            screen.clear();
            question(c, p, prompt.as_deref_mut()).await?;
        } else if name == "chat" && p["runId"] == run_id {
            if let Some(end) = screen.chat(p, abort_sent) {
                return end;
            }
        }
    }
}

/// The terminal while a reply streams: the spinner until text comes, the
/// text of the message being streamed (a reply of several messages: text,
/// a tool call, more text, restarts it).
struct Screen {
    json: bool,
    spinner: bool,
    spun: usize,
    shown: String,
    out: std::io::Stdout,
}

impl Screen {
    fn new(json: bool) -> Screen {
        Screen {
            json,
            spinner: !json && std::io::stderr().is_terminal(),
            spun: 0,
            shown: String::new(),
            out: std::io::stdout(),
        }
    }

    /// How long to wait for an event before the spinner turns.
    fn tick(&self) -> Duration {
        Duration::from_millis(if self.spinner && self.shown.is_empty() {
            120
        } else {
            3_600_000
        })
    }

    fn spin(&mut self) {
        eprint!("\r{} thinking...", ['|', '/', '-', '\\'][self.spun % 4]);
        self.spun += 1;
    }

    fn clear(&mut self) {
        if self.spun > 0 {
            eprint!("\r              \r");
            self.spun = 0;
        }
    }

    /// A `chat` event of the run shown; Some once the run ended (how).
    fn chat(&mut self, p: &Value, abort_sent: bool) -> Option<Result<(), Failure>> {
        if p["state"] == "status" {
            // A startup phase: the spinner says it already.
            return None;
        }
        let text = p["message"]["content"][0]["text"].as_str().unwrap_or("");
        if p["state"] != "delta" || !text.is_empty() {
            self.clear();
        }
        match p["state"].as_str() {
            Some("delta") if !self.json => {
                show(&mut self.out, &mut self.shown, text);
                let _ = self.out.flush();
                None
            }
            Some("final") => {
                if self.json {
                    print_json(p);
                } else {
                    show(&mut self.out, &mut self.shown, text);
                    let _ = writeln!(self.out);
                }
                Some(Ok(()))
            }
            Some("error") => Some(Err(Failure::new(
                1,
                format!(
                    "the run failed: {}",
                    p["errorMessage"].as_str().unwrap_or("unknown error")
                ),
            ))),
            Some("aborted") if abort_sent => {
                let _ = writeln!(self.out, "\n[aborted]");
                Some(Ok(()))
            }
            Some("aborted") => Some(Err(Failure::new(1, "the run was aborted"))),
            _ => None,
        }
    }
}
