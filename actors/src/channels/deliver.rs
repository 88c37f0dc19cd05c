//! The outbound half of the delivery contract, shared by every adapter
//! (an `Outlet` is the platform's send, edit and typing calls).
//!
//! A `Delivery` (one run whose reply goes to one chat) is followed from the
//! run's stream to its end:
//! - `partial`: a preview message is sent with the first text and edited as
//!   the text grows (at most once per `edit_interval_ms`); the final text
//!   replaces it by an edit, overflow goes out as new messages;
//! - `block`: 800-1200 character blocks go out as they are complete;
//! - `off`: the whole reply once the run ended.
//!
//! Every message that is sent (not edits: editing twice duplicates
//! nothing) is an outbox chunk first: `pending`, then `sending` (flushed
//! before the request leaves), then `sent` with the platform's id, `failed`,
//! or `unknown` (no answer: not sent again, at most once). A chunk found
//! `sending` after a restart is `unknown`, unless it is an edit (the final
//! text replacing a preview), which is done again; `pending` ones are sent. The
//! run's last chunks are enqueued with the delivery marked final in one
//! transaction; the delivery record goes when all are settled.

use std::future::Future;
use std::time::Duration;

use actix::prelude::*;
use tokio::sync::mpsc;

use super::chunker::BlockChunker;
use super::health::AccountHealth;
use super::ledger::{self, Delivery, OutState, OutboxItem, Resolution};
use crate::hooks::event::Sent;
use crate::hooks::{HookCtx, HookEvent, HookPoint};
use crate::router::{GetSession, RouterActor};
use crate::run::Outcome;
use crate::runs::{RunRegistry, RunResult, RunUpdate, WatchRun};
use crate::session::GetReply;
use crate::store::{Store, StoreError};

/// Where a message goes: a chat and a thread (topic) in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub chat_id: String,
    pub thread_id: Option<String>,
    /// The message this answers, when it answers one (what WhatsApp's
    /// typing indicator names).
    pub answering: Option<String>,
}

pub use super::sender::SendFailure;

/// The platform's calls, behind the account's limiter.
pub trait Outlet: Clone + Unpin + 'static {
    /// A new message; `formatted`: the final text (the platform's rich
    /// format, falling back to plain). Reply: the platform's message id.
    fn send(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        reply_to: Option<&str>,
    ) -> impl Future<Output = Result<String, SendFailure>>;
    /// `send` of an outbox chunk, with its key: a platform that makes a
    /// send idempotent by a key (Matrix's txnId) uses it, so a repeat after
    /// an unknown outcome is the same message.
    fn send_keyed(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        reply_to: Option<&str>,
        key: &str,
    ) -> impl Future<Output = Result<String, SendFailure>> {
        let _ = key;
        self.send(to, text, formatted, reply_to)
    }
    /// `send_keyed` with buttons under the text (a question's options).
    /// Channels without native buttons send the text alone: it numbers
    /// the options, and a reply answers.
    fn send_buttons(
        &self,
        to: &Target,
        text: &str,
        formatted: bool,
        key: &str,
        buttons: &[Vec<crate::questions::Button>],
    ) -> impl Future<Output = Result<String, SendFailure>> {
        let _ = buttons;
        self.send_keyed(to, text, formatted, None, key)
    }
    /// `send_keyed` cannot duplicate: a chunk left `sending` by a stop is
    /// sent again with its key instead of being marked `not_resent`.
    fn idempotent_sends(&self) -> bool {
        false
    }
    fn edit(
        &self,
        to: &Target,
        id: &str,
        text: &str,
        formatted: bool,
    ) -> impl Future<Output = Result<(), SendFailure>>;
    fn typing(&self, to: &Target) -> impl Future<Output = ()>;
    /// Tells the sender their message `id` was read (a read receipt or
    /// marker), once, when the desk takes it. Channels without one do
    /// nothing.
    fn mark_read(&self, to: &Target, id: &str) -> impl Future<Output = ()> {
        let _ = (to, id);
        std::future::ready(())
    }
    /// The bot's reaction `emoji` on message `id`, added or taken away
    /// (`message.action` react).
    fn react(
        &self,
        to: &Target,
        id: &str,
        emoji: &str,
        remove: bool,
    ) -> impl Future<Output = Result<(), SendFailure>>;
    /// Deletes message `id` (`message.action` delete).
    fn delete(&self, to: &Target, id: &str) -> impl Future<Output = Result<(), SendFailure>>;
    /// A photo or document from an http(s) URL, with a caption.
    fn send_media(
        &self,
        to: &Target,
        url: &str,
        caption: &str,
    ) -> impl Future<Output = Result<String, SendFailure>>;
    /// A stored file uploaded (an item's `media:<id>`), with a caption.
    /// Channels that cannot upload say so (a permanent failure).
    fn send_file(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> impl Future<Output = Result<String, SendFailure>> {
        let _ = (to, file, caption);
        async {
            Err(SendFailure {
                unknown: false,
                error: "this channel does not upload files yet".into(),
                retry_after_ms: None,
            })
        }
    }
    /// Speech sent as the platform's voice note (Ogg/Opus) when
    /// `voice_notes`, else as an audio file; with a caption.
    fn send_voice(
        &self,
        to: &Target,
        file: &crate::media::MediaRef,
        caption: &str,
    ) -> impl Future<Output = Result<String, SendFailure>> {
        self.send_file(to, file, caption)
    }
    /// Whether the platform has native voice notes (OpenClaw's list).
    fn voice_notes(&self) -> bool {
        false
    }
    /// The reply cut into messages the platform takes.
    fn split(&self, text: &str) -> Vec<String>;
    /// The longest preview kept up to date by edits (characters); a
    /// longer one stops being edited and the final text follows.
    fn preview_limit(&self) -> usize;
    /// An attachment's bytes, at most `max` (`media_in.rs` keeps and
    /// understands them). Channels that do not download yet say so.
    fn download(
        &self,
        file: &super::dispatch::MediaRef,
        max: u64,
    ) -> impl Future<Output = Result<Vec<u8>, crate::channels::error::DownloadError>> {
        let _ = (file, max);
        async { Err("this channel does not download attachments yet".into()) }
    }
    /// The account's attachment size limit (`mediaMaxMb`).
    fn media_limit(&self) -> u64 {
        20 << 20
    }
}

/// How a reply is streamed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Partial,
    Block,
    Off,
}

/// When typing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Typing {
    Never,
    /// From the first text of the reply.
    Message,
    /// From the start.
    Start,
}

/// What a delivery needs.
#[derive(Clone)]
pub struct Deliverer<O: Outlet> {
    pub store: Store,
    pub runs: Addr<RunRegistry>,
    pub sessions: Addr<RouterActor>,
    pub outlet: O,
    pub stream: Stream,
    pub edit_interval_ms: u64,
    pub typing: Typing,
    pub typing_every: Duration,
    pub health: std::sync::Arc<AccountHealth>,
    pub channel: &'static str,
    pub audit: crate::audit::AuditLog,
    /// Where `media:<id>` items' files are.
    pub media: Option<Addr<crate::media::MediaStore>>,
    /// `message_sending` (may rewrite or cancel a reply) and `message_sent`.
    pub hooks: crate::hooks::HookClient,
    /// Spoken replies (`voice_out.rs`).
    pub speech: Option<Addr<crate::tts::Speaker>>,
}

const PREVIEW: &str = "preview";

fn preview_key(d: &Delivery) -> String {
    format!("{}/{}/{PREVIEW}", d.session_key.as_str(), d.run_id)
}

fn target(d: &Delivery) -> Target {
    Target {
        chat_id: d.target.clone(),
        thread_id: d.thread_id.clone(),
        answering: d.answers.clone(),
    }
}

/// The text after the part already sent as blocks (compared without
/// whitespace, which block cuts trim, and without `MEDIA:` lines, which
/// blocks leave out).
pub fn remainder<'a>(full: &'a str, sent: &[&str]) -> &'a str {
    let mut n: usize = sent
        .iter()
        .map(|s| s.chars().filter(|c| !c.is_whitespace()).count())
        .sum();
    let mut offset = 0;
    for line in full.split_inclusive('\n') {
        if n == 0 {
            return full[offset..].trim();
        }
        if !super::media_out::is_media_line(line) {
            for (i, c) in line.char_indices() {
                if n == 0 {
                    return full[offset + i..].trim();
                }
                if !c.is_whitespace() {
                    n -= 1;
                }
            }
        }
        offset += line.len();
    }
    ""
}

impl<O: Outlet> Deliverer<O> {
    /// How the reply streams: not at all while a `message_sending` hook
    /// may rewrite it (nothing leaves before the hook saw the whole text).
    fn stream(&self) -> Stream {
        match self.hooks.has(HookPoint::MessageSending) {
            true => Stream::Off,
            false => self.stream,
        }
    }

    fn hook_ctx(&self, d: &Delivery) -> HookCtx {
        HookCtx {
            agent_id: crate::ids::key::agent(d.session_key.as_str()).to_string(),
            session_key: d.session_key.as_str().to_string(),
            run_id: Some(d.run_id.to_string()),
            untrusted: d.untrusted,
            workspace: Default::default(),
        }
    }

    /// The reply after the `message_sending` hooks: rewritten, or None
    /// when one cancelled it. Runs again after a restart that came before
    /// the final chunks were stored (nothing was sent then).
    async fn sending(&self, d: &Delivery, text: Option<String>) -> Option<String> {
        let text = text?;
        if !self.hooks.has(HookPoint::MessageSending) {
            return Some(text);
        }
        let event = HookEvent::Message {
            channel: self.channel.to_string(),
            to: d.target.clone(),
            content: text.clone(),
            sent: None,
        };
        let reply = self
            .hooks
            .decide(HookPoint::MessageSending, event, self.hook_ctx(d))
            .await;
        if reply.cancel {
            tracing::info!(account = %d.account, run_id = %d.run_id, "a message_sending hook cancelled the reply");
            return None;
        }
        Some(reply.content.unwrap_or(text))
    }

    /// `message_sent`: how the reply's chunks went.
    fn sent(&self, d: &Delivery, items: &[OutboxItem]) {
        let chunks: Vec<&OutboxItem> = items.iter().filter(|i| !i.key.ends_with(PREVIEW)).collect();
        if chunks.is_empty() {
            return;
        }
        let failed = chunks.iter().find_map(|i| match &i.state {
            OutState::Failed { error, .. } => Some(error.clone()),
            OutState::Unknown { .. } => Some("outcome unknown".to_string()),
            _ => None,
        });
        let text: Vec<&str> = chunks
            .iter()
            .map(|i| i.text.as_str())
            .filter(|t| !t.is_empty())
            .collect();
        let event = HookEvent::Message {
            channel: self.channel.to_string(),
            to: d.target.clone(),
            content: text.join("\n"),
            sent: Some(failed.map_or(Sent::Delivered, Sent::Failed)),
        };
        self.hooks
            .notify(HookPoint::MessageSent, event, self.hook_ctx(d));
    }

    /// Follows `d` to the end (after a restart too).
    pub async fn run(self, d: Delivery) {
        if let Err(e) = self.follow(&d).await {
            tracing::error!(account = %d.account, run_id = %d.run_id, error = %e, "channel delivery stopped");
        }
    }

    async fn follow(&self, d: &Delivery) -> Result<(), StoreError> {
        // The run's chunks are read once here; what streams adds to them.
        let mut sent = self.settle_interrupted(d).await?;
        if !d.finalized {
            let Some(result) = self.watch(d, &mut sent).await? else {
                return Ok(()); // the registry is gone: the next start resumes
            };
            // Only the agent's words are spoken, never a gateway notice.
            let words = matches!(
                result.outcome,
                Outcome::Text(_) | Outcome::Alert(_) | Outcome::Recorded
            );
            let text = match result.outcome {
                // The run answered this chat with the `message` tool.
                _ if ledger::answered_by_tool(&self.store, d)? => None,
                Outcome::Recorded => self.stored_reply(d).await,
                o => o.for_chat(),
            };
            let text = self.sending(d, text).await;
            let (text, speech) = match words {
                true => super::voice_out::plan(self.speech.as_ref(), d, text).await,
                false => (text, None),
            };
            let text = super::late::noted(d, text, crate::now_ms());
            self.enqueue_final(d, text.as_deref(), &sent, speech)?;
            self.store.flush().await?;
            super::voice_out::forget(self.speech.as_ref(), d);
        }
        for item in ledger::run_items(&self.store, &d.account, d.session_key.as_str(), &d.run_id)? {
            if item.state == OutState::Pending {
                self.send_item(d, item).await?;
            }
        }
        if self.audit.wants_messages() || self.hooks.has(HookPoint::MessageSent) {
            let items =
                ledger::run_items(&self.store, &d.account, d.session_key.as_str(), &d.run_id)?;
            if self.audit.wants_messages() {
                self.audit.record(outbound_record(self.channel, d, &items));
            }
            self.sent(d, &items);
        }
        ledger::delivered(&self.store, &d.account, &d.run_id)?;
        self.store.flush().await
    }

    /// Chunks left `sending` by a stop: their outcome is unknown and they
    /// are not sent again. Returns what the run has in the outbox.
    async fn settle_interrupted(&self, d: &Delivery) -> Result<Chunks, StoreError> {
        let mut any = false;
        let items = ledger::run_items(&self.store, &d.account, d.session_key.as_str(), &d.run_id)?;
        let chunks = Chunks::of(&items);
        for item in items {
            if !matches!(item.state, OutState::Sending { .. }) {
                continue;
            }
            let keyed = item.media.is_none() && self.outlet.idempotent_sends();
            let state = if keyed {
                // The platform dedupes the chunk by its key: sent again.
                tracing::info!(account = %d.account, key = %item.key, resolution = "resent",
                    "reply chunk outcome unknown after a stop: sent again with its key");
                OutState::Pending
            } else if item.edit_of.is_some() {
                // An edit done twice duplicates nothing: it is sent again.
                tracing::info!(account = %d.account, key = %item.key, resolution = "resent",
                    "reply edit outcome unknown after a stop: edited again");
                OutState::Pending
            } else {
                tracing::warn!(account = %d.account, key = %item.key, resolution = "not_resent",
                    "reply chunk outcome unknown after a stop: not sent again");
                OutState::Unknown {
                    resolution: Resolution::NotResent,
                    at_ms: crate::now_ms(),
                }
            };
            ledger::settle(&self.store, &d.account, &item.key, state)?;
            any = true;
        }
        if any {
            self.store.flush().await?;
        }
        Ok(chunks)
    }

    /// Streams the run (previews or blocks, typing) until its end; the
    /// blocks it sends are added to `sent`, and the preview's id.
    async fn watch(
        &self,
        d: &Delivery,
        sent: &mut Chunks,
    ) -> Result<Option<RunResult>, StoreError> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        if self
            .runs
            .send(WatchRun {
                run_id: d.run_id.clone(),
                tx,
            })
            .await
            .is_err()
        {
            return Ok(None);
        }
        let to = target(d);
        let mut preview = Preview::load(self, d)?;
        let mut blocks = BlockChunker::new(800, 1200);
        let mut text = String::new();
        let mut typing = self.typing == Typing::Start;
        let mut tick = actix::clock::interval(self.typing_every);
        loop {
            tokio::select! {
                update = rx.recv() => match update {
                    None => return Ok(None),
                    // The final text replaces the preview (enqueue_final).
                    Some(RunUpdate::End(r)) => {
                        sent.preview = sent.preview.take().or(preview.id.clone());
                        return Ok(Some(r));
                    }
                    Some(RunUpdate::Delta { text: delta, fresh }) => {
                        typing |= self.typing == Typing::Message;
                        if fresh {
                            text.clear();
                        }
                        text.push_str(&delta);
                        match self.stream() {
                            Stream::Partial => {
                                let shown = super::media_out::without_media_lines(&text);
                                preview.update(self, d, &shown).await?
                            }
                            Stream::Block => {
                                for b in blocks.push(&delta) {
                                    self.block(d, &b, sent).await?;
                                }
                            }
                            Stream::Off => {}
                        }
                    }
                },
                _ = tick.tick(), if typing => {
                    let (o, to) = (self.outlet.clone(), to.clone());
                    actix::spawn(async move { o.typing(&to).await });
                }
            }
        }
    }

    /// One block of a `block` stream: a chunk of its own, sent now
    /// (without its `MEDIA:` lines: the final sends their media).
    async fn block(&self, d: &Delivery, text: &str, sent: &mut Chunks) -> Result<(), StoreError> {
        let text = super::media_out::without_media_lines(text);
        if text.trim().is_empty() {
            return Ok(());
        }
        let n = sent.texts.len();
        sent.texts.push(text.clone());
        let item = self.item(
            d,
            ledger::chunk_key(d.session_key.as_str(), &d.run_id, n),
            &text,
            None,
        );
        let writes = ledger::enqueue(&self.store, std::slice::from_ref(&item))?;
        self.store.commit(&writes)?;
        self.send_item(d, item).await.map(|_| ())
    }

    fn item(&self, d: &Delivery, key: String, text: &str, edit_of: Option<String>) -> OutboxItem {
        OutboxItem {
            account: d.account.clone(),
            key,
            target: d.target.clone(),
            thread_id: d.thread_id.clone(),
            edit_of,
            media: None,
            text: text.to_string(),
            buttons: Vec::new(),
            voice: false,
            speech: None,
            state: OutState::Pending,
            created_ms: crate::now_ms(),
            receipt: None,
        }
    }

    /// The reply's remaining chunks (after what `sent` holds), with the
    /// delivery marked final.
    fn enqueue_final(
        &self,
        d: &Delivery,
        text: Option<&str>,
        sent: &Chunks,
        speech: Option<crate::tts::SpeechJob>,
    ) -> Result<(), StoreError> {
        let preview_id = sent.preview.clone();
        let sent: Vec<&str> = sent.texts.iter().map(String::as_str).collect();
        let first = sent.len();
        // `MEDIA:` lines become items of their own, after the text (what
        // blocks already sent is counted on the text as the model wrote it).
        let mut media = text.map_or_else(Vec::new, |t| super::media_out::media_lines(t).1);
        if d.untrusted {
            // A stranger's reply sends no stored file of the gateway.
            media.retain(|m| !m.starts_with(super::media_out::STORED));
        }
        let rest = text.map(|t| remainder(t, &sent)).unwrap_or_default();
        let (rest, _) = super::media_out::media_lines(rest);
        let rest = rest.as_str();
        let chunks = if rest.is_empty() {
            Vec::new()
        } else {
            self.outlet.split(rest)
        };
        let mut out: Vec<OutboxItem> = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let edit_of = if i == 0 && first == 0 {
                    preview_id.clone()
                } else {
                    None
                };
                self.item(
                    d,
                    ledger::chunk_key(d.session_key.as_str(), &d.run_id, first + i),
                    c,
                    edit_of,
                )
            })
            .collect();
        let next = first + out.len();
        out.extend(media.into_iter().enumerate().map(|(j, m)| {
            let key = ledger::chunk_key(d.session_key.as_str(), &d.run_id, next + j);
            let mut item = self.item(d, key, "", None);
            item.media = Some(m);
            item
        }));
        // The voice after everything else (synthesised when it is sent).
        if let Some(job) = speech {
            let key = ledger::chunk_key(d.session_key.as_str(), &d.run_id, out.len() + first);
            let mut item = self.item(d, key, "", None);
            (item.voice, item.speech) = (true, Some(job));
            out.push(item);
        }
        let writes = ledger::enqueue(&self.store, &out)?;
        ledger::finalize(&self.store, d, writes)
    }

    /// A run that ended before this process saw it: its stored reply,
    /// asked of its session.
    async fn stored_reply(&self, d: &Delivery) -> Option<String> {
        let key = d.session_key.session()?.clone();
        let (session, _) = self.sessions.send(GetSession { key }).await.ok()?.ok()?;
        let asked = GetReply {
            run_id: Some(d.run_id.clone()),
        };
        let text = session.send(asked).await.ok()?.ok()??;
        Outcome::of_final(d.kind, &text).for_chat()
    }

    /// The platform call an outbox item is: an edit, a stored file or a
    /// URL's media, buttons, or a text.
    async fn call(&self, d: &Delivery, item: &OutboxItem) -> Result<String, SendFailure> {
        let to = target(d);
        let formatted = !item.key.ends_with(PREVIEW);
        match (&item.edit_of, &item.media) {
            (Some(id), _) => self
                .outlet
                .edit(&to, id, &item.text, formatted)
                .await
                .map(|_| id.clone()),
            (None, Some(m)) => match m.strip_prefix(super::media_out::STORED) {
                Some(id) => match super::media_out::stored(self.media.as_ref(), id).await {
                    Ok(file) if item.voice => self.outlet.send_voice(&to, &file, &item.text).await,
                    Ok(file) => self.outlet.send_file(&to, &file, &item.text).await,
                    Err(e) => Err(SendFailure {
                        unknown: false,
                        error: e.to_string(),
                        retry_after_ms: None,
                    }),
                },
                None => self.outlet.send_media(&to, m, &item.text).await,
            },
            (None, None) if !item.buttons.is_empty() => {
                self.outlet
                    .send_buttons(&to, &item.text, formatted, &item.key, &item.buttons)
                    .await
            }
            (None, None) => {
                self.outlet
                    .send_keyed(&to, &item.text, formatted, d.reply_to.as_deref(), &item.key)
                    .await
            }
        }
    }

    /// Sends one chunk by the contract: `sending` flushed first, then the
    /// outcome.
    async fn send_item(
        &self,
        d: &Delivery,
        mut item: OutboxItem,
    ) -> Result<Option<String>, StoreError> {
        let voice_notes = self.outlet.voice_notes();
        let speech = self.speech.as_ref();
        if !super::voice_out::ready(&self.store, speech, voice_notes, d, &mut item).await? {
            return Ok(None);
        }
        let now = crate::now_ms();
        ledger::settle(
            &self.store,
            &d.account,
            &item.key,
            OutState::Sending { at_ms: now },
        )?;
        self.store.flush().await?;
        let outcome = self.call_held(d, &item).await?;
        let now = crate::now_ms();
        let (state, id) = match outcome {
            Ok(id) => {
                self.health.outbound(now);
                (
                    OutState::Sent {
                        message_id: id.clone(),
                        at_ms: now,
                    },
                    Some(id),
                )
            }
            Err(f) if f.unknown => {
                tracing::warn!(account = %d.account, key = %item.key, resolution = "not_resent", error = %f.error,
                    "reply chunk outcome unknown: not sent again");
                (
                    OutState::Unknown {
                        resolution: Resolution::NotResent,
                        at_ms: now,
                    },
                    None,
                )
            }
            Err(f) => {
                tracing::warn!(account = %d.account, key = %item.key, error = %f.error, "reply chunk refused");
                self.health.error(Some(f.error.clone()));
                (
                    OutState::Failed {
                        error: f.error,
                        at_ms: now,
                    },
                    None,
                )
            }
        };
        ledger::settle(&self.store, &d.account, &item.key, state)?;
        self.store.flush().await?;
        Ok(id)
    }
}

/// The audit record of a finished delivery: how its chunks ended.
fn outbound_record(channel: &str, d: &Delivery, items: &[OutboxItem]) -> crate::audit::Activity {
    use crate::audit::{Activity, Flow, MessageActivity, Outbound};
    let chunks: Vec<&OutboxItem> = items.iter().filter(|i| !i.key.ends_with(PREVIEW)).collect();
    let sent: Vec<&str> = chunks
        .iter()
        .filter_map(|i| match &i.state {
            OutState::Sent { message_id, .. } => Some(message_id.as_str()),
            _ => None,
        })
        .collect();
    let failed = chunks
        .iter()
        .any(|i| matches!(i.state, OutState::Failed { .. }));
    let unknown = chunks
        .iter()
        .any(|i| matches!(i.state, OutState::Unknown { .. }));
    let outcome = if failed {
        Outbound::Failed {
            partial: !sent.is_empty(),
        }
    } else if unknown {
        Outbound::Unknown
    } else if chunks.is_empty() {
        Outbound::Suppressed
    } else {
        Outbound::Sent
    };
    // A run's reply is the agent's; a `send` or a notice is the gateway's.
    let agent = d.session_key.agent().map(str::to_string);
    Activity::Message(MessageActivity {
        channel: channel.to_string(),
        conversation: super::dispatch::conversation(d.chat_type.as_deref()),
        account: Some(d.account.clone()),
        chat: None,
        message: sent.first().map(|s| s.to_string()),
        target: Some(d.target.clone()),
        agent_id: agent.clone(),
        run_id: agent.is_some().then(|| d.run_id.to_string()),
        result_count: Some(sent.len() as u64),
        duration_ms: Some(crate::now_ms().saturating_sub(d.created_ms)),
        flow: Flow::Outbound {
            agent,
            outcome,
            media: chunks.iter().any(|i| i.media.is_some()),
        },
    })
}

#[path = "held.rs"]
mod held;
#[path = "preview.rs"]
mod preview;
use preview::{Chunks, Preview};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remainder_skips_what_blocks_already_sent() {
        assert_eq!(
            remainder("one two\n\nthree four", &["one two"]),
            "three four"
        );
        assert_eq!(remainder("abc", &[]), "abc");
        assert_eq!(remainder("abc", &["abc"]), "");
        assert_eq!(remainder("a b c d", &["a b", "c"]), "d");
        // Blocks leave `MEDIA:` lines out; they are not counted.
        let full = "one\nMEDIA: https://x.test/a.png\ntwo\nthree";
        assert_eq!(remainder(full, &["one", "two"]), "three");
        assert_eq!(
            remainder(full, &["one"]),
            "MEDIA: https://x.test/a.png\ntwo\nthree"
        );
        assert_eq!(remainder(full, &["one", "two three"]), "");
    }

    fn reply_text(o: Outcome) -> Option<String> {
        o.for_chat()
    }

    fn ok(text: &str) -> Outcome {
        Outcome::of_final(crate::run::RunKind::Chat, text)
    }

    #[test]
    fn silent_empty_and_aborted_replies_are_never_delivered() {
        assert_eq!(reply_text(ok("hello")).as_deref(), Some("hello"));
        assert_eq!(reply_text(ok(" NO_REPLY ")), None);
        assert_eq!(reply_text(ok("")), None);
        assert_eq!(reply_text(ok("HEARTBEAT_OK")), None);
        assert_eq!(reply_text(Outcome::Aborted("partial".into())), None);
        assert_eq!(
            reply_text(Outcome::Error("model unavailable".into())).as_deref(),
            Some("⚠️ model unavailable")
        );
    }
}
