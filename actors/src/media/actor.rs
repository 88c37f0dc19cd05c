//! `MediaStore`: the only writer of `<state>/media/`. Its work (hashing,
//! writing, sweeping) runs on the blocking pool; downloads run beside it.
//! It sweeps at start and hourly.

use std::path::PathBuf;
use std::time::Duration;

use actix::prelude::*;

use super::messages::*;
use super::store::{self, MediaRef};
use super::{fetch_capped, MediaError};

/// How often the store sweeps.
const SWEEP_EVERY: Duration = Duration::from_secs(3600);
/// How long one download may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(120);

pub struct MediaStore {
    span: tracing::Span,
    pub(super) dir: PathBuf,
    ttl: Duration,
    max_total: u64,
    http: reqwest::Client,
}

impl MediaStore {
    /// `ttl`: `attachments.ttlHours`; `max_total`: `attachments.maxTotalMb` in bytes.
    pub fn new(dir: PathBuf, ttl: Duration, max_total: u64) -> MediaStore {
        MediaStore {
            span: tracing::info_span!("media_store"),
            dir,
            ttl,
            max_total,
            http: reqwest::Client::new(),
        }
    }
}

impl Actor for MediaStore {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.notify(SweepMedia);
        ctx.run_interval(SWEEP_EVERY, |_, ctx| ctx.notify(SweepMedia));
    }
}

pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, MediaError> + Send + 'static,
) -> Result<T, MediaError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| MediaError::Io(e.to_string()))?
}

impl Handler<PutMedia> for MediaStore {
    type Result = ResponseFuture<Result<MediaRef, MediaError>>;
    fn handle(&mut self, msg: PutMedia, _: &mut Context<Self>) -> Self::Result {
        let dir = self.dir.clone();
        Box::pin(blocking(move || {
            store::put(
                &dir,
                &msg.bytes,
                msg.content_type.as_deref(),
                msg.file_name,
                crate::now_ms(),
            )
        }))
    }
}

impl Handler<FetchMedia> for MediaStore {
    type Result = ResponseFuture<Result<MediaRef, MediaError>>;
    fn handle(&mut self, msg: FetchMedia, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let (dir, http) = (self.dir.clone(), self.http.clone());
        Box::pin(async move {
            let got =
                fetch_capped(&http, &msg.url, &msg.headers, msg.max_bytes, FETCH_TIMEOUT).await;
            let (bytes, served) = match got {
                Ok(x) => x,
                Err(e) => {
                    tracing::info!(error = %e, "media not fetched");
                    return Err(e);
                }
            };
            let declared = msg.content_type.or(served);
            blocking(move || {
                store::put(
                    &dir,
                    &bytes,
                    declared.as_deref(),
                    msg.file_name,
                    crate::now_ms(),
                )
            })
            .await
        })
    }
}

impl Handler<GetMedia> for MediaStore {
    type Result = ResponseFuture<Result<MediaRef, MediaError>>;
    fn handle(&mut self, msg: GetMedia, _: &mut Context<Self>) -> Self::Result {
        let dir = self.dir.clone();
        Box::pin(blocking(move || store::get(&dir, &msg.id, crate::now_ms())))
    }
}

impl Handler<Understand> for MediaStore {
    type Result = ResponseFuture<super::Understood>;
    fn handle(&mut self, msg: Understand, _: &mut Context<Self>) -> Self::Result {
        let dir = self.dir.clone();
        let span = self.span.clone();
        Box::pin(async move {
            let id = msg.media.id.clone();
            let kind = msg.media.kind;
            let Some(what) = kind.capability() else {
                return super::Understood::default();
            };
            let (d, i) = (dir.clone(), id.clone());
            let cached = blocking(move || Ok(store::understood(&d, &i, what))).await;
            if let Ok(Some(u)) = cached {
                return u;
            }
            let u = super::understand(&msg.config, kind, &msg.media).await;
            span.in_scope(|| match &u.by {
                Some(by) => tracing::info!(media = %id, kind = what, by = %by, "media understood"),
                None => {
                    tracing::info!(media = %id, kind = what, attempts = ?u.attempts, "media not understood")
                }
            });
            if u.text.is_some() {
                let keep = u.clone();
                let _ = blocking(move || {
                    store::remember(&dir, &id, what, &keep);
                    Ok(())
                })
                .await;
            }
            u
        })
    }
}

impl Handler<SweepMedia> for MediaStore {
    type Result = ResponseActFuture<Self, Result<SweepReport, MediaError>>;
    fn handle(&mut self, _: SweepMedia, _: &mut Context<Self>) -> Self::Result {
        let (dir, ttl, cap) = (self.dir.clone(), self.ttl, self.max_total);
        let sweep = blocking(move || Ok(sweep(&dir, ttl, cap, crate::now_ms())));
        // Spawned beside the writes in flight: a sweep leaves young temp
        // files alone (`store::entries`).
        Box::pin(sweep.into_actor(self).map(|r, act, _| {
            if let Ok(rep) = &r {
                if rep.removed > 0 {
                    act.span.in_scope(|| {
                        tracing::info!(
                            removed = rep.removed,
                            kept = rep.kept,
                            bytes = rep.total_bytes,
                            "media swept"
                        )
                    });
                }
            }
            r
        }))
    }
}

fn sweep(dir: &std::path::Path, ttl: Duration, cap: u64, now: u64) -> SweepReport {
    let mut files = store::entries(dir);
    let cutoff = now.saturating_sub(ttl.as_millis() as u64);
    let mut removed = 0;
    files.retain(|(path, _, used)| {
        let keep = *used >= cutoff;
        if !keep {
            store::remove(path);
            removed += 1;
        }
        keep
    });
    // Oldest use first: over the cap, those go.
    files.sort_by_key(|(_, _, used)| *used);
    let mut total: u64 = files.iter().map(|(_, size, _)| size).sum();
    let mut kept = files.len();
    for (path, size, _) in &files {
        if total <= cap {
            break;
        }
        store::remove(path);
        total -= size;
        removed += 1;
        kept -= 1;
    }
    SweepReport {
        removed,
        kept,
        total_bytes: total,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn png() -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
        v.extend_from_slice(&[0u8; 64]);
        v
    }

    #[actix::test]
    async fn the_same_bytes_are_stored_once_and_typed_by_their_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let s = MediaStore::new(dir.path().into(), Duration::from_secs(3600), u64::MAX).start();
        let put = |ct: &str| PutMedia {
            bytes: Bytes::from(png()),
            content_type: Some(ct.into()),
            file_name: Some("a.png".into()),
        };
        let a = s.send(put("image/png")).await.unwrap().unwrap();
        let b = s.send(put("audio/ogg")).await.unwrap().unwrap();
        assert_eq!(a.id, b.id);
        assert_eq!(a.kind, super::super::MediaKind::Image);
        assert_eq!(b.content_type, "image/png", "the bytes say PNG");
        assert_eq!(b.declared_type.as_deref(), Some("audio/ogg"));
        assert_eq!(std::fs::read(&a.path).unwrap(), png());
        assert_eq!(store::entries(dir.path()).len(), 1);
        let got = s
            .send(GetMedia { id: a.id.clone() })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got.path, a.path);
        let bad = s
            .send(GetMedia {
                id: "../../etc/passwd".into(),
            })
            .await
            .unwrap();
        assert!(matches!(bad, Err(MediaError::Unknown(_))));
    }

    #[test]
    fn a_sweep_keeps_a_write_in_flight_and_drops_one_that_never_finished() {
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("ab");
        std::fs::create_dir_all(&shard).unwrap();
        let young = shard.join(".abcd.01.tmp");
        let old = shard.join(".abcd.02.tmp");
        std::fs::write(&young, b"half").unwrap();
        std::fs::write(&old, b"half").unwrap();
        let two_hours = std::time::SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(two_hours)
            .unwrap();
        sweep(
            dir.path(),
            Duration::from_secs(3600),
            u64::MAX,
            crate::now_ms(),
        );
        assert!(young.exists(), "a write in flight is left alone");
        assert!(!old.exists(), "a write that never finished is dropped");
    }

    #[test]
    fn a_sweep_drops_what_is_past_its_ttl_then_the_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let day = 86_400_000;
        for (i, at) in [(1u8, 0u64), (2, 5 * day), (3, 6 * day), (4, 7 * day)] {
            store::put(dir.path(), &vec![i; 1000], None, None, at).unwrap();
        }
        // TTL 3 days at day 7: the first goes; a 2,500-byte cap: the next
        // oldest too.
        let rep = sweep(dir.path(), Duration::from_millis(3 * day), 2500, 7 * day);
        assert_eq!(rep.removed, 2, "{rep:?}");
        assert_eq!(rep.kept, 2);
        assert_eq!(rep.total_bytes, 2000);
        let left: Vec<u64> = store::entries(dir.path()).iter().map(|e| e.2).collect();
        let mut left = left;
        left.sort();
        assert_eq!(left, [6 * day, 7 * day]);
    }
}
