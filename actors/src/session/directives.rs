//! Directives: slash commands handled by the gateway before the model, never
//! sent to it. A message made only of directives changes the session (and
//! gets a confirmation); `/think`, `/verbose`, `/reasoning` and `/model` in
//! front of other text apply to that one message, and the rest of the text
//! goes to the model. Parsing is pure; the session applies the result.

pub const THINKING_LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

crate::reason_error! {
    /// Why a directive was not applied: the answer its sender gets.
    pub struct DirectiveError;
}
pub const VERBOSE_LEVELS: &[&str] = &["off", "on", "full"];
pub const REASONING_LEVELS: &[&str] = &["off", "on", "stream"];
pub const SEND_LEVELS: &[&str] = &["on", "off", "inherit"];
pub const USAGE_LEVELS: &[&str] = &["off", "tokens", "full"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Directive {
    Think(Option<String>),
    Verbose(Option<String>),
    Reasoning(Option<String>),
    Model(Option<String>),
    New(Option<String>),
    Reset,
    Compact(Option<String>),
    Queue(String),
    Status,
    Context(Option<String>),
    Usage(Option<String>),
    Send(Option<String>),
    Agent(Option<String>),
    Stop,
    /// `/btw <question>`: a side question (`btw.rs`).
    Btw(String),
    /// `/tts ...` (`/voice` on Discord): the speaker's command (`btw.rs`).
    Tts(String),
    /// `/help`, `/commands`: what a session accepts.
    Help,
}

impl Directive {
    /// Whether its answer reads the workspace files (skills, bootstrap).
    pub fn reads_files(&self) -> bool {
        matches!(self, Directive::Status | Directive::Context(_))
    }

    /// Whether it can prefix a message and apply to that message only.
    fn inline(&self) -> bool {
        matches!(
            self,
            Directive::Think(Some(_))
                | Directive::Verbose(Some(_))
                | Directive::Reasoning(Some(_))
                | Directive::Model(Some(_))
        )
    }
}

/// What a message holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// No directive: the whole text is for the model.
    Plain,
    /// Only directives: apply them to the session and confirm.
    Commands(Vec<Directive>),
    /// Inline directives for this message, then `rest` for the model.
    Inline {
        directives: Vec<Directive>,
        rest: String,
    },
}

fn level(name: &str, value: &str, allowed: &[&str]) -> Result<String, DirectiveError> {
    let v = value.trim().to_ascii_lowercase();
    let v = match (name, v.as_str()) {
        ("thinking", "max") => "xhigh".to_string(),
        ("thinking", "none") => "off".to_string(),
        (_, "true" | "yes") if allowed.contains(&"on") => "on".to_string(),
        (_, "false" | "no") => "off".to_string(),
        _ => v,
    };
    if allowed.contains(&v.as_str()) {
        Ok(v)
    } else {
        Err(DirectiveError::from(format!(
            "Unrecognized {name} level {:?}. Valid levels: {}.",
            value.trim(),
            allowed.join(", ")
        )))
    }
}

/// The command word and its `:value` if written `/think:high`.
fn split_word(token: &str) -> (&str, Option<&str>) {
    match token.split_once(':') {
        Some((w, v)) => (w, Some(v)),
        None => (token, None),
    }
}

/// Takes the next whitespace-delimited word off `s`.
fn next_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    }
}

/// `/btw <question>`: the rest of the message is the question.
fn btw(after: &str) -> Result<(Directive, &str), DirectiveError> {
    match after.trim() {
        "" => Err("Usage: /btw <question>".into()),
        q => Ok((Directive::Btw(q.to_string()), "")),
    }
}

/// Parses one directive at the start of `text` (which starts with `/`).
/// Returns the directive and the text after it, None when the word is not a
/// directive, or an error for a directive with a bad value.
fn parse_one(text: &str) -> Option<Result<(Directive, &str), DirectiveError>> {
    let (token, after) = next_word(text);
    let (word, colon) = split_word(token.strip_prefix('/')?);
    let word = word.to_ascii_lowercase();
    // The value: `/x:value`, else the next word when it is one of the levels.
    // None: not a directive after all (`/think about this` is prose).
    let leveled =
        |name: &str, allowed: &[&str]| -> Option<Result<(Option<String>, &str), DirectiveError>> {
            if let Some(v) = colon {
                return Some(level(name, v, allowed).map(|v| (Some(v), after)));
            }
            let (w, rest) = next_word(after);
            if w.is_empty() {
                return Some(Ok((None, after)));
            }
            match level(name, w, allowed) {
                Ok(v) => Some(Ok((Some(v), rest))),
                // A bare `/think foo` (nothing else): a bad level.
                Err(e) if rest.trim().is_empty() => Some(Err(e)),
                Err(_) => None,
            }
        };
    let rest_arg = |s: &str| -> Option<String> {
        let t = s.trim();
        (!t.is_empty()).then(|| t.to_string())
    };
    let out = match word.as_str() {
        "t" | "think" | "thinking" => {
            leveled("thinking", THINKING_LEVELS)?.map(|(v, r)| (Directive::Think(v), r))
        }
        "v" | "verbose" => {
            leveled("verbose", VERBOSE_LEVELS)?.map(|(v, r)| (Directive::Verbose(v), r))
        }
        "reasoning" | "reason" => {
            leveled("reasoning", REASONING_LEVELS)?.map(|(v, r)| (Directive::Reasoning(v), r))
        }
        "model" => {
            let (m, r) = match colon {
                Some(v) => (v, after),
                None => next_word(after),
            };
            Ok((Directive::Model((!m.is_empty()).then(|| m.to_string())), r))
        }
        "send" => leveled("send", SEND_LEVELS)?.map(|(v, r)| (Directive::Send(v), r)),
        "usage" => leveled("usage", USAGE_LEVELS)?.map(|(v, r)| (Directive::Usage(v), r)),
        "new" => Ok((Directive::New(rest_arg(after)), "")),
        "reset" => Ok((Directive::Reset, after)),
        "compact" => Ok((Directive::Compact(rest_arg(after)), "")),
        "queue" => Ok((Directive::Queue(after.trim().to_string()), "")),
        "status" => Ok((Directive::Status, after)),
        "context" => Ok((Directive::Context(rest_arg(after)), "")),
        "agent" => Ok((Directive::Agent(rest_arg(after)), "")),
        "stop" | "abort" => Ok((Directive::Stop, after)),
        "btw" => btw(after),
        "tts" | "voice" => Ok((Directive::Tts(after.trim().to_string()), "")),
        "help" | "commands" => Ok((Directive::Help, "")),
        _ => return None,
    };
    Some(out)
}

/// Parses a message's command body. Err: a directive with a bad value (the
/// error text is the reply).
pub fn parse(body: &str) -> Result<Parsed, DirectiveError> {
    let mut directives = Vec::new();
    let mut rest = body.trim_start();
    while rest.starts_with('/') {
        match parse_one(rest) {
            None => break,
            Some(Err(e)) => return Err(e),
            Some(Ok((d, after))) => {
                let inline = d.inline();
                directives.push(d);
                rest = after.trim_start();
                if !inline {
                    // A command takes the whole message.
                    break;
                }
            }
        }
    }
    if directives.is_empty() {
        return Ok(Parsed::Plain);
    }
    if rest.trim().is_empty() {
        return Ok(Parsed::Commands(directives));
    }
    if directives.iter().all(Directive::inline) {
        return Ok(Parsed::Inline {
            directives,
            rest: rest.trim_end().to_string(),
        });
    }
    // A command with trailing text (`/status please`): still the command.
    Ok(Parsed::Commands(directives))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Directive::*;

    fn cmds(text: &str) -> Vec<Directive> {
        match parse(text).unwrap() {
            Parsed::Commands(d) => d,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn think_forms_and_levels() {
        for text in [
            "/t high",
            "/think:high",
            "/thinking high",
            "/think high",
            "/THINK High",
            "/think max",
        ] {
            let want = if text.ends_with("max") {
                "xhigh"
            } else {
                "high"
            };
            assert_eq!(cmds(text), vec![Think(Some(want.into()))], "{text}");
        }
        assert_eq!(cmds("/think"), vec![Think(None)]);
        assert_eq!(
            parse("/think:loud").unwrap_err().to_string(),
            "Unrecognized thinking level \"loud\". Valid levels: off, minimal, low, medium, high, xhigh."
        );
        assert!(parse("/t loud").is_err());
        assert_eq!(
            parse("/t medium what is 2+2?").unwrap(),
            Parsed::Inline {
                directives: vec![Think(Some("medium".into()))],
                rest: "what is 2+2?".into()
            }
        );
        assert_eq!(
            parse("/think:low /verbose full explain").unwrap(),
            Parsed::Inline {
                directives: vec![Think(Some("low".into())), Verbose(Some("full".into()))],
                rest: "explain".into()
            }
        );
    }

    #[test]
    fn every_command_parses() {
        assert_eq!(
            cmds("/model openai/gpt-5"),
            vec![Model(Some("openai/gpt-5".into()))]
        );
        assert_eq!(cmds("/model"), vec![Model(None)]);
        assert_eq!(cmds("/new"), vec![New(None)]);
        assert_eq!(
            cmds("/new offline/echo"),
            vec![New(Some("offline/echo".into()))]
        );
        assert_eq!(cmds("/reset"), vec![Reset]);
        assert_eq!(
            cmds("/compact keep the decisions"),
            vec![Compact(Some("keep the decisions".into()))]
        );
        assert_eq!(
            cmds("/queue collect debounce:2s"),
            vec![Queue("collect debounce:2s".into())]
        );
        assert_eq!(cmds("/status"), vec![Status]);
        assert_eq!(
            cmds("/context detail"),
            vec![Context(Some("detail".into()))]
        );
        assert_eq!(cmds("/usage tokens"), vec![Usage(Some("tokens".into()))]);
        assert_eq!(cmds("/usage"), vec![Usage(None)]);
        assert_eq!(cmds("/verbose on"), vec![Verbose(Some("on".into()))]);
        assert_eq!(
            cmds("/reasoning stream"),
            vec![Reasoning(Some("stream".into()))]
        );
        assert_eq!(cmds("/send inherit"), vec![Send(Some("inherit".into()))]);
        assert_eq!(cmds("/agent ops"), vec![Agent(Some("ops".into()))]);
        assert_eq!(cmds("/stop"), vec![Stop]);
        assert!(parse("/verbose loud").is_err());
        assert!(parse("/send maybe").is_err());
        assert!(parse("/reasoning x").is_err());
    }

    #[test]
    fn plain_text_and_unknown_commands_go_to_the_model() {
        assert_eq!(parse("hello /think high").unwrap(), Parsed::Plain);
        assert_eq!(parse("/etc/hosts is a file").unwrap(), Parsed::Plain);
        assert_eq!(parse("/unknown thing").unwrap(), Parsed::Plain);
        assert_eq!(parse("").unwrap(), Parsed::Plain);
        // Not a level and more text follows: prose, not a directive.
        assert_eq!(parse("/think about this").unwrap(), Parsed::Plain);
    }
}
