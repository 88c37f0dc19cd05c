//! Memory settings (`agents.defaults.memorySearch`) and the embedding
//! providers. The default is the built-in local embedder (`embed.rs`, no
//! download, no network). `provider: "openai"` (or any name with a
//! `remote.baseUrl`) uses an OpenAI-compatible `POST {baseUrl}/embeddings`;
//! its vectors are cached by chunk hash in the index. A provider that fails
//! or answers with the wrong shape makes the search fall back to keywords
//! (the memory actor flags it); it is never an error for the user.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::provider::hub::EnvReader;

/// `agents.defaults.memorySearch`, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct MemorySettings {
    pub enabled: bool,
    /// Extra files or folders (relative to the workspace, or absolute).
    pub extra_paths: Vec<String>,
    pub max_results: usize,
    pub min_score: f64,
    /// None: the built-in local embedder.
    pub remote: Option<RemoteSettings>,
}

/// An OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSettings {
    pub provider: String,
    pub model: String,
    pub base_url: String,
    pub api_key: Option<String>,
    pub headers: Vec<(String, String)>,
}

pub const DEFAULT_OPENAI_MODEL: &str = "text-embedding-3-small";
const OPENAI_BASE: &str = "https://api.openai.com/v1";

impl MemorySettings {
    /// From the typed section; `env` supplies `<PROVIDER>_API_KEY` when no
    /// key is configured, after `models.providers.<provider>.apiKey`.
    pub fn from_settings(
        c: &crate::settings::MemorySearchConfig,
        providers: &Value,
        env: &EnvReader,
    ) -> MemorySettings {
        let remote_cfg = c.remote.clone().unwrap_or_default();
        let base = (remote_cfg.base_url.as_deref()).map(|u| u.trim_end_matches('/').to_string());
        let provider = c.provider.clone().unwrap_or_else(|| match base {
            Some(_) => "openai".into(),
            None => "local".into(),
        });
        let remote = (provider != "local" && provider != "auto").then(|| {
            let from_models = providers
                .get(&provider)
                .and_then(|p| p.get("apiKey"))
                .and_then(Value::as_str)
                .map(str::to_string);
            let api_key = (remote_cfg.api_key.clone())
                .or(from_models)
                .or_else(|| env(&format!("{}_API_KEY", provider.to_uppercase())));
            RemoteSettings {
                model: c
                    .model
                    .clone()
                    .unwrap_or_else(|| DEFAULT_OPENAI_MODEL.into()),
                base_url: base.clone().unwrap_or_else(|| OPENAI_BASE.into()),
                provider: provider.clone(),
                api_key,
                headers: remote_cfg.headers.clone().into_iter().collect(),
            }
        });
        MemorySettings {
            enabled: c.enabled,
            extra_paths: c.extra_paths.clone(),
            max_results: c.query.max_results.clamp(1, 50) as usize,
            min_score: c.query.min_score.clamp(0.0, 1.0),
            remote,
        }
    }

    /// The shipped section with `patch`'s keys over it (tests).
    #[cfg(test)]
    pub fn patched(patch: Value, env: &EnvReader) -> MemorySettings {
        let mut v =
            serde_json::to_value(crate::settings::shipped().agents.defaults.memory_search).unwrap();
        fn merge(into: &mut Value, patch: Value) {
            match (into, patch) {
                (Value::Object(a), Value::Object(b)) => {
                    for (k, x) in b {
                        merge(a.entry(k).or_insert(Value::Null), x);
                    }
                }
                (slot, x) => *slot = x,
            }
        }
        if patch.is_object() {
            merge(&mut v, patch);
        }
        let c = serde_json::from_value(v).unwrap();
        MemorySettings::from_settings(&c, &Value::Null, env)
    }

    /// `provider` and `model` as status reports them.
    pub fn names(&self) -> (String, String) {
        match &self.remote {
            Some(r) => (r.provider.clone(), r.model.clone()),
            None => (
                "local".into(),
                format!("ferroclaw-hashed-{}", super::embed::DIMS),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding provider unreachable: {0}")]
    Unreachable(String),
    #[error("embedding provider answered HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("embedding provider answered with the wrong shape: {0}")]
    Shape(String),
}

/// Something that turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// The model, the key the index caches vectors under.
    fn model(&self) -> &str;
    fn embed(&self, texts: Vec<String>) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>>;
}

/// Texts per request.
pub const BATCH: usize = 64;

/// An OpenAI-compatible `/embeddings` endpoint.
pub struct OpenAiEmbedder {
    http: reqwest::Client,
    settings: RemoteSettings,
}

impl OpenAiEmbedder {
    pub fn new(settings: RemoteSettings) -> OpenAiEmbedder {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .unwrap_or_default();
        OpenAiEmbedder { http, settings }
    }
}

/// The vectors of an `/embeddings` answer, in input order.
pub fn parse_embeddings(body: &Value, want: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    let data = body
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| EmbedError::Shape("no `data` array".into()))?;
    if data.len() != want {
        return Err(EmbedError::Shape(format!(
            "{} vectors for {want} texts",
            data.len()
        )));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; want];
    for (i, item) in data.iter().enumerate() {
        let at = item
            .get("index")
            .and_then(Value::as_u64)
            .map_or(i, |n| n as usize);
        let v: Option<Vec<f32>> = item
            .get("embedding")
            .and_then(Value::as_array)
            .and_then(|a| a.iter().map(|x| x.as_f64().map(|f| f as f32)).collect());
        let v = v.filter(|v| !v.is_empty() && v.iter().all(|x| x.is_finite()));
        match (out.get_mut(at), v) {
            (Some(slot @ None), Some(v)) => *slot = Some(v),
            _ => return Err(EmbedError::Shape(format!("bad or repeated vector {at}"))),
        }
    }
    let out: Vec<Vec<f32>> = out.into_iter().flatten().collect();
    if out.iter().any(|v| v.len() != out[0].len()) {
        return Err(EmbedError::Shape("vectors of different sizes".into()));
    }
    Ok(out)
}

impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.settings.model
    }

    fn embed(&self, texts: Vec<String>) -> BoxFuture<'static, Result<Vec<Vec<f32>>, EmbedError>> {
        let s = &self.settings;
        let mut req = self
            .http
            .post(format!("{}/embeddings", s.base_url))
            .json(&json!({ "model": s.model, "input": texts }));
        if let Some(k) = &s.api_key {
            req = req.bearer_auth(k);
        }
        for (k, v) in &s.headers {
            req = req.header(k, v);
        }
        let want = texts.len();
        Box::pin(async move {
            let resp = req
                .send()
                .await
                .map_err(|e| EmbedError::Unreachable(e.to_string()))?;
            let status = resp.status().as_u16();
            let bytes = resp
                .bytes()
                .await
                .map_err(|e| EmbedError::Unreachable(e.to_string()))?;
            if !(200..300).contains(&status) {
                let body: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
                return Err(EmbedError::Http { status, body });
            }
            let body: Value = serde_json::from_slice(&bytes)
                .map_err(|e| EmbedError::Shape(format!("not JSON: {e}")))?;
            parse_embeddings(&body, want)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn settings_default_to_local_and_find_the_remote_key() {
        let env: EnvReader = Arc::new(|k| (k == "OPENAI_API_KEY").then(|| "sk-env".to_string()));
        let local = MemorySettings::patched(Value::Null, &env);
        assert!(local.enabled && local.remote.is_none());
        assert_eq!((local.max_results, local.min_score), (6, 0.35));
        let cfg =
            json!({"provider": "openai", "extraPaths": ["notes"], "query": {"maxResults": 3}});
        let s = MemorySettings::patched(cfg, &env);
        let r = s.remote.clone().unwrap();
        assert_eq!(r.api_key.as_deref(), Some("sk-env"));
        assert_eq!(
            (r.model.as_str(), r.base_url.as_str()),
            (DEFAULT_OPENAI_MODEL, OPENAI_BASE)
        );
        assert_eq!(
            (s.extra_paths, s.max_results),
            (vec!["notes".to_string()], 3)
        );
        let cfg =
            json!({"remote": {"baseUrl": "http://127.0.0.1:9/v1/", "apiKey": "k"}, "model": "m"});
        let r = MemorySettings::patched(cfg, &env).remote.unwrap();
        assert_eq!(
            (r.base_url.as_str(), r.api_key.as_deref()),
            ("http://127.0.0.1:9/v1", Some("k"))
        );
    }

    #[test]
    fn answers_are_put_in_input_order_and_wrong_shapes_refused() {
        let body = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}]});
        assert_eq!(
            parse_embeddings(&body, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
        assert!(parse_embeddings(&body, 3).is_err(), "count");
        let ragged = json!({"data": [{"embedding": [1.0]}, {"embedding": [1.0, 2.0]}]});
        assert!(parse_embeddings(&ragged, 2).is_err(), "sizes");
        assert!(parse_embeddings(&json!({"error": "x"}), 1).is_err());
        let twice =
            json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [1.0]}]});
        assert!(parse_embeddings(&twice, 2).is_err());
    }
}
