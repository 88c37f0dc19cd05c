//! `channels`: one section per channel (`channels.telegram`, `.slack`,
//! `.discord`; a channel ferroclaw has no adapter for is kept as written)
//! and `channels.defaults`: OpenClaw's shared `groupPolicy` and
//! `heartbeat`, and what an account of each channel has unless its section
//! says otherwise (`channels.defaults.telegram` ..., shipped in
//! `config/default.json5`). A channel starts when its own section exists.
//!
//! An account's keys are read from layers (`channels::keys`): the
//! channel's defaults, OpenClaw's `channels.defaults.groupPolicy`, the
//! section, the account. The keys every channel's accounts share are
//! declared once ([`channel_keys!`]) and written into each channel's keys:
//! serde's `flatten` would lose the key path an error names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who may send direct messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DmPolicy {
    /// An unknown sender gets a one-time code an operator approves.
    Pairing,
    /// Only `allowFrom`.
    Allowlist,
    /// Anyone (`allowFrom` must say `"*"`).
    Open,
    Disabled,
}

/// Which group chats the agent answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupPolicy {
    Open,
    /// Only the chats the section lists (`"*"`: all).
    Allowlist,
    Disabled,
}

/// How a reply reaches the chat while it is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StreamMode {
    /// One message, edited as the text grows (rate-limited).
    Partial,
    /// 800-1200 character blocks, each its own message.
    Block,
    /// The whole reply once it is done.
    Off,
}

/// Where replies to a channel message go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReplyToMode {
    /// In the channel (a message in a thread is answered in its thread).
    Off,
    /// In a thread under the message.
    First,
    All,
}

/// When a Telegram chat shows "typing".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TypingMode {
    Never,
    /// From the first reply text on.
    Message,
    /// From the start of the run (the model thinking) on.
    Thinking,
    /// As soon as the message is accepted.
    Instant,
}

/// How a Slack app receives events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    /// Socket Mode (an app token; no public URL).
    Socket,
    /// The Events API on `webhookPath` (a signing secret).
    Http,
}

/// How a WhatsApp account connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WhatsAppMode {
    /// Meta's WhatsApp Business Cloud API: webhooks in, the Graph API out.
    Cloud,
    /// OpenClaw's linked device (WhatsApp Web); ferroclaw has no adapter
    /// for it and leaves such a section alone, saying so at start.
    Web,
}

/// How a Signal account reaches signal-cli (OpenClaw's `transport.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SignalTransportKind {
    /// ferroclaw starts and supervises `signal-cli daemon --http`.
    ManagedNative,
    /// A signal-cli daemon someone else runs, at `url`.
    ExternalNative,
    /// bbernhard/signal-cli-rest-api: refused by ferroclaw (not supported).
    Container,
}

/// OpenClaw's `channels.signal.transport`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SignalTransport {
    #[serde(default)]
    pub kind: Option<SignalTransportKind>,
    /// The daemon's URL (required for external-native).
    #[serde(default)]
    pub url: Option<String>,
    /// managed-native: the signal-cli binary (default `signal-cli` on PATH).
    #[serde(default)]
    pub cli_path: Option<String>,
    /// managed-native: signal-cli's `--config` data directory.
    #[serde(default)]
    pub config_path: Option<String>,
    /// managed-native: where the daemon binds (default 127.0.0.1:8080).
    #[serde(default)]
    pub http_host: Option<String>,
    #[serde(default)]
    pub http_port: Option<u16>,
    /// managed-native: how long the daemon may take to answer its check (ms).
    #[serde(default)]
    pub startup_timeout_ms: Option<u64>,
    /// managed-native: `on-start` | `manual` (passed to the daemon).
    #[serde(default)]
    pub receive_mode: Option<String>,
    #[serde(default)]
    pub ignore_stories: Option<bool>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Which Matrix invites the bot joins (OpenClaw's `autoJoin`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MatrixAutoJoin {
    Always,
    /// Rooms in `autoJoinAllowlist` or `groups`, and invites from the
    /// senders `allowFrom`/`groupAllowFrom` name (ferroclaw's default).
    Allowlist,
    Off,
}

/// Where Matrix replies go (OpenClaw's `threadReplies`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MatrixThreadReplies {
    Off,
    /// In the thread the message was in.
    Inbound,
    Always,
}

/// OpenClaw's `channels.matrix.dm`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatrixDm {
    /// false: direct messages are ignored.
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Over `dmPolicy`.
    #[serde(default)]
    pub policy: Option<DmPolicy>,
    /// Over `allowFrom`.
    #[serde(default)]
    pub allow_from: Option<Vec<IdValue>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A message template sent when WhatsApp's 24-hour window is closed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WindowTemplate {
    /// The approved template's name.
    pub name: String,
    /// Its language code (`en_US`).
    pub language: String,
}

/// A sender or chat id as the config writes it: a number or a string.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum IdValue {
    Num(serde_json::Number),
    Text(String),
}

impl IdValue {
    /// The id without the channel's `prefixes` (`telegram:`, `slack:`...).
    pub fn text(&self, prefixes: &[&str]) -> String {
        match self {
            IdValue::Num(n) => n.to_string(),
            IdValue::Text(s) => {
                let mut t = s.trim();
                for p in prefixes {
                    t = t.strip_prefix(p).unwrap_or(t);
                }
                t.to_string()
            }
        }
    }
}

/// A group chat's rule (Telegram's `groups.<chat id>`; what Slack's and
/// Discord's rules become).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GroupRule {
    #[serde(default)]
    pub enabled: Option<bool>,
    /// Unset: true (the agent answers only when mentioned).
    #[serde(default)]
    pub require_mention: Option<bool>,
    /// Senders allowed in this chat (unset: the account's `groupAllowFrom`).
    #[serde(default)]
    #[schemars(with = "Option<Vec<IdValue>>")]
    pub allow_from: Option<Vec<Value>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A Matrix room's rule: a group rule and OpenClaw's Matrix keys for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatrixRoomRule {
    /// True: answered without a mention (`requireMention: false`).
    #[serde(default)]
    pub auto_reply: Option<bool>,
    /// Senders allowed in the room (OpenClaw's name for `allowFrom`).
    #[serde(default)]
    #[schemars(with = "Option<Vec<IdValue>>")]
    pub users: Option<Vec<Value>>,
    #[serde(flatten)]
    pub rule: GroupRule,
}

/// A conversation's rule as Slack's `channels.<id>` and Discord's
/// `guilds.<id>.channels.<id>` write it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelRule {
    #[serde(default)]
    pub allow: Option<bool>,
    #[serde(default)]
    pub enabled: Option<bool>,
    #[serde(default)]
    pub require_mention: Option<bool>,
    #[serde(default)]
    #[schemars(with = "Option<Vec<IdValue>>")]
    pub users: Option<Vec<Value>>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Discord's `guilds.<id>`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuildRule {
    #[serde(default)]
    pub require_mention: Option<bool>,
    #[serde(default)]
    #[schemars(with = "Option<Vec<IdValue>>")]
    pub users: Option<Vec<Value>>,
    #[serde(default)]
    pub channels: BTreeMap<String, ChannelRule>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// The keys an account of any channel has, and what reads them.
pub trait AccountKeys {
    fn dm_policy(&self) -> DmPolicy;
    fn group_policy(&self) -> GroupPolicy;
    fn allow_from(&self) -> &[IdValue];
}

/// One channel's account keys: the shared keys, then `$own`. Every field
/// is required: `channels.defaults.<channel>` gives each a value.
/// `channels.<id>.catchUp`: messages that arrived while the gateway was
/// stopped (or its connection down) are answered after the restart when
/// at most `maxAgeMinutes` old, at most the newest `maxMessages` of one
/// chat; older ones are recorded as skipped, with one note to the chat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatchUp {
    pub max_age_minutes: u64,
    pub max_messages: usize,
}

macro_rules! channel_keys {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            /// false: the account (or the whole section) does not start.
            pub enabled: bool,
            /// Direct messages: pairing | allowlist | open | disabled.
            pub dm_policy: DmPolicy,
            /// Senders allowed to write directly (ids; `"*"`: anyone).
            pub allow_from: Vec<IdValue>,
            /// Group chats: open | allowlist | disabled.
            pub group_policy: GroupPolicy,
            /// partial (one message edited as it grows) | block | off.
            pub stream_mode: StreamMode,
            /// The longest message sent; longer replies are split.
            pub text_chunk_limit: usize,
            /// The shortest spacing between edits of one preview (ms).
            pub edit_interval_ms: u64,
            /// A platform call without an answer by then (s) has an unknown outcome.
            pub request_timeout_seconds: u64,
            /// The shortest spacing of two sends with one token (ms).
            pub send_interval_ms: u64,
            /// The agent for this account's messages when no binding says otherwise.
            pub model_override: Option<String>,
            /// Where the platform's API lives (tests point it at a fake).
            pub api_base_url: String,
            /// What arrived while the gateway was down is answered back to
            /// this age and count (ferroclaw's keys).
            pub catch_up: CatchUp,
            $($(#[$fm])* pub $f: $t,)*
            /// OpenClaw's keys ferroclaw does not read, kept as written.
            #[serde(flatten)]
            pub other: Map<String, Value>,
        }

        impl AccountKeys for $name {
            fn dm_policy(&self) -> DmPolicy {
                self.dm_policy
            }
            fn group_policy(&self) -> GroupPolicy {
                self.group_policy
            }
            fn allow_from(&self) -> &[IdValue] {
                &self.allow_from
            }
        }
    };
}

channel_keys! {
    /// `channels.telegram` (and each of its `accounts`).
    TelegramKeys {
        /// From @BotFather (else `TELEGRAM_BOT_TOKEN` for the default account).
        #[schemars(extend("writeOnly" = true))]
        bot_token: Option<String>,
        /// OpenClaw's name for `apiBaseUrl`.
        api_root: Option<String>,
        /// Senders allowed in groups whose rule names none.
        group_allow_from: Vec<IdValue>,
        /// Per chat id (`"*"`: every group).
        groups: BTreeMap<String, GroupRule>,
        /// never | message | thinking | instant.
        typing_mode: TypingMode,
        typing_interval_seconds: u64,
        /// Photos and documents larger than this are not downloaded.
        media_max_mb: f64,
        /// `getUpdates`' long-poll hold (at most 50).
        poll_timeout_seconds: u64,
    }
}

channel_keys! {
    /// `channels.slack` (and each of its `accounts`).
    SlackKeys {
        /// socket | http.
        mode: SlackMode,
        /// xoxb-... (else `SLACK_BOT_TOKEN` for the default account).
        #[schemars(extend("writeOnly" = true))]
        bot_token: Option<String>,
        /// xapp-..., for Socket Mode (else `SLACK_APP_TOKEN`).
        #[schemars(extend("writeOnly" = true))]
        app_token: Option<String>,
        /// For HTTP mode: requests are verified with it.
        #[schemars(extend("writeOnly" = true))]
        signing_secret: Option<String>,
        /// Where HTTP mode's Events API requests arrive.
        webhook_path: String,
        group_allow_from: Vec<IdValue>,
        /// Per channel id.
        channels: BTreeMap<String, ChannelRule>,
        /// off | first | all.
        reply_to_mode: ReplyToMode,
        /// Socket Mode pings (s).
        ping_interval_seconds: f64,
        /// Files larger than this are not downloaded.
        media_max_mb: f64,
    }
}

channel_keys! {
    /// `channels.discord` (and each of its `accounts`).
    DiscordKeys {
        /// The bot's token (else `DISCORD_BOT_TOKEN` for the default account).
        #[schemars(extend("writeOnly" = true))]
        token: Option<String>,
        /// A fixed Gateway URL (unset: asked of `/gateway/bot`).
        gateway_url: Option<String>,
        /// The Gateway intents asked for.
        intents: u64,
        /// Per guild id, with its channels' rules.
        guilds: BTreeMap<String, GuildRule>,
        /// off | first | all.
        reply_to_mode: ReplyToMode,
        typing_interval_seconds: u64,
        /// Attachments larger than this are not downloaded.
        media_max_mb: f64,
    }
}

channel_keys! {
    /// `channels.whatsapp` (and each of its `accounts`), in Cloud API mode.
    WhatsAppKeys {
        /// cloud (the Business Cloud API) | web (OpenClaw's linked device: not run).
        mode: WhatsAppMode,
        /// The business number's id in the Graph API.
        phone_number_id: Option<String>,
        /// A system user's token (else `WHATSAPP_ACCESS_TOKEN` for the default account).
        #[schemars(extend("writeOnly" = true))]
        access_token: Option<String>,
        /// The app secret: webhook bodies are verified with it (`X-Hub-Signature-256`).
        #[schemars(extend("writeOnly" = true))]
        app_secret: Option<String>,
        /// What Meta's webhook verification must present (`hub.verify_token`).
        #[schemars(extend("writeOnly" = true))]
        verify_token: Option<String>,
        /// Where Meta's webhook requests arrive.
        webhook_path: String,
        /// The Graph API version in request paths.
        api_version: String,
        /// Senders allowed in groups (Cloud API numbers have no groups: unused).
        group_allow_from: Vec<IdValue>,
        /// Mark each admitted message read (blue ticks) and show typing.
        send_read_receipts: bool,
        /// Sent instead of text when the 24-hour window is closed (unset: a notice only).
        window_template: Option<WindowTemplate>,
        /// Media larger than this are not downloaded.
        media_max_mb: f64,
    }
}

channel_keys! {
    /// `channels.signal` (and each of its `accounts`), through signal-cli's
    /// HTTP daemon. The daemon's place comes from `transport` (or OpenClaw's
    /// older `httpUrl`, `httpHost`, `httpPort`, `autoStart`, `cliPath`);
    /// `apiBaseUrl` is not read.
    SignalKeys {
        /// The bot's number (E.164, `+15551234567`).
        account: Option<String>,
        /// The bot's ACI (native @mentions of it, loop protection).
        account_uuid: Option<String>,
        transport: Option<SignalTransport>,
        /// OpenClaw's older transport keys (read when `transport` is unset;
        /// what `transport` leaves unset is taken from them).
        http_url: Option<String>,
        http_host: String,
        http_port: u16,
        cli_path: String,
        auto_start: Option<bool>,
        config_path: Option<String>,
        startup_timeout_ms: u64,
        receive_mode: Option<String>,
        ignore_stories: bool,
        /// Groups (`group:<id>`) or senders allowed in groups.
        group_allow_from: Vec<IdValue>,
        /// Per group id (`"*"`: every group).
        groups: BTreeMap<String, GroupRule>,
        /// Read receipts for admitted direct messages.
        send_read_receipts: bool,
        /// Inbound attachments are not downloaded.
        ignore_attachments: bool,
        typing_interval_seconds: u64,
        /// Attachments larger than this are not downloaded or sent.
        media_max_mb: f64,
    }
}

channel_keys! {
    /// `channels.matrix` (and each of its `accounts`), on the Client-Server
    /// API; `apiBaseUrl` is not read (`homeserver` is).
    MatrixKeys {
        /// The homeserver's URL.
        homeserver: Option<String>,
        /// The bot's full user id (`@bot:example.org`).
        user_id: Option<String>,
        #[schemars(extend("writeOnly" = true))]
        access_token: Option<String>,
        /// For a login at start when there is no token.
        #[schemars(extend("writeOnly" = true))]
        password: Option<String>,
        device_id: Option<String>,
        device_name: String,
        /// End-to-end encryption (not supported: true is refused).
        encryption: bool,
        dm: MatrixDm,
        group_allow_from: Vec<IdValue>,
        /// Per room id: requireMention, users, autoReply, enabled.
        groups: BTreeMap<String, MatrixRoomRule>,
        /// OpenClaw's older name for `groups`.
        rooms: BTreeMap<String, MatrixRoomRule>,
        auto_join: MatrixAutoJoin,
        auto_join_allowlist: Vec<String>,
        thread_replies: MatrixThreadReplies,
        /// `/sync`'s long-poll hold (s).
        poll_timeout_seconds: u64,
        /// Move the read marker to the message being answered.
        read_markers: bool,
        media_max_mb: f64,
    }
}

/// `channels.defaults`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChannelDefaults {
    /// OpenClaw's: the `groupPolicy` of every channel whose section sets
    /// none (over the channel's own default below). Unset: theirs.
    pub group_policy: Option<GroupPolicy>,
    /// What a Telegram account has unless its section says otherwise.
    pub telegram: TelegramKeys,
    pub slack: SlackKeys,
    pub discord: DiscordKeys,
    pub whatsapp: WhatsAppKeys,
    pub signal: SignalKeys,
    pub matrix: MatrixKeys,
    /// OpenClaw's `heartbeat` display keys, kept as written.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl ChannelDefaults {
    /// `channel`'s defaults as the bottom layer of its accounts' keys,
    /// with `groupPolicy` over them when set.
    pub fn layer(&self, channel: &str) -> Map<String, Value> {
        let v = match channel {
            "telegram" => serde_json::to_value(&self.telegram),
            "slack" => serde_json::to_value(&self.slack),
            "discord" => serde_json::to_value(&self.discord),
            "whatsapp" => serde_json::to_value(&self.whatsapp),
            "signal" => serde_json::to_value(&self.signal),
            "matrix" => serde_json::to_value(&self.matrix),
            _ => Ok(Value::Null),
        };
        let mut layer = match v {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if let Some(p) = self.group_policy {
            if let Ok(v) = serde_json::to_value(p) {
                layer.insert("groupPolicy".into(), v);
            }
        }
        layer
    }
}

/// `channels.<id>`: the keys read here for every channel (the adapters
/// read the rest through `channels::keys`).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = super::secret_channel)]
pub struct ChannelSettings {
    /// Skills offered on this channel (unset: all).
    #[serde(default)]
    pub skill_filter: Option<Vec<String>>,
    /// Tool allow/deny for this channel (`tools` layer).
    #[serde(default)]
    pub tools: Option<super::ToolLayer>,
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// `channels`: `defaults` and the sections by channel id.
#[derive(Debug, Clone)]
pub struct ChannelsSettings {
    pub defaults: ChannelDefaults,
    pub sections: BTreeMap<String, ChannelSettings>,
}

impl ChannelsSettings {
    pub fn get(&self, channel: &str) -> Option<&ChannelSettings> {
        self.sections.get(channel)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &ChannelSettings)> {
        self.sections.iter()
    }

    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.sections.keys()
    }
}

impl<'a> IntoIterator for &'a ChannelsSettings {
    type Item = (&'a String, &'a ChannelSettings);
    type IntoIter = std::collections::btree_map::Iter<'a, String, ChannelSettings>;
    fn into_iter(self) -> Self::IntoIter {
        self.sections.iter()
    }
}

impl Serialize for ChannelsSettings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.sections.len() + 1))?;
        m.serialize_entry("defaults", &self.defaults)?;
        for (k, v) in &self.sections {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

// By hand, not `flatten`: each key is read by its own `next_value`, so an
// error keeps its path (`channels.telegram.skillFilter`).
impl<'de> Deserialize<'de> for ChannelsSettings {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = ChannelsSettings;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of channel sections")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<ChannelsSettings, A::Error> {
                let mut defaults = None;
                let mut sections = BTreeMap::new();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "defaults" {
                        defaults = Some(map.next_value::<ChannelDefaults>()?);
                    } else {
                        let section = map.next_value::<ChannelSettings>()?;
                        sections.insert(key, section);
                    }
                }
                let defaults =
                    defaults.ok_or_else(|| serde::de::Error::missing_field("defaults"))?;
                Ok(ChannelsSettings { defaults, sections })
            }
        }
        d.deserialize_map(Visit)
    }
}

impl schemars::JsonSchema for ChannelsSettings {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ChannelsSettings".into()
    }

    /// `defaults`, the four typed sections (their keys, none required,
    /// over what every section has) and any other channel's section.
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let section = g.subschema_for::<ChannelSettings>();
        let optional = |mut s: schemars::Schema| {
            if let Some(o) = s.as_object_mut() {
                o.remove("required");
                o.remove("title");
            }
            let mut accounts = s.clone();
            if let Some(o) = accounts.as_object_mut() {
                o.remove("description");
            }
            if let Some(props) = s
                .as_object_mut()
                .and_then(|o| o.get_mut("properties"))
                .and_then(Value::as_object_mut)
            {
                props.insert(
                    "accounts".into(),
                    serde_json::json!({
                        "type": "object",
                        "description": "More accounts by id; each inherits the section's keys.",
                        "additionalProperties": accounts,
                    }),
                );
            }
            serde_json::json!({ "allOf": [section, s] })
        };
        let telegram = optional(TelegramKeys::json_schema(g));
        let slack = optional(SlackKeys::json_schema(g));
        let discord = optional(DiscordKeys::json_schema(g));
        let whatsapp = optional(WhatsAppKeys::json_schema(g));
        let signal = optional(SignalKeys::json_schema(g));
        let matrix = optional(MatrixKeys::json_schema(g));
        let defaults = g.subschema_for::<ChannelDefaults>();
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "defaults": defaults,
                "telegram": telegram,
                "slack": slack,
                "discord": discord,
                "whatsapp": whatsapp,
                "signal": signal,
                "matrix": matrix,
            },
            "required": ["defaults"],
            "additionalProperties": section,
        })
    }
}
