//! The scheduler's `cron.*` handlers. Reads answer from memory and change
//! nothing; writes are durable (flushed) before they are answered.

use actix::prelude::*;
use serde_json::{json, Value};

use super::actor::CronActor;
use super::job::{CronJob, Known};
use super::messages::*;
use super::record::{self, Phase, RunEntry};
use super::schedule::Schedule;

fn page<T>(items: Vec<T>, offset: Option<usize>, limit: Option<usize>) -> (Vec<T>, Value) {
    let total = items.len();
    let limit = limit.unwrap_or(50).clamp(1, 200);
    let offset = offset.unwrap_or(0).min(total);
    let rows: Vec<T> = items.into_iter().skip(offset).take(limit).collect();
    let next = offset + rows.len();
    let meta = json!({
        "total": total, "offset": offset, "limit": limit, "hasMore": next < total,
        "nextOffset": if next < total { json!(next) } else { Value::Null },
    });
    (rows, meta)
}

fn matches_query(job: &CronJob, q: &str) -> bool {
    let q = q.to_lowercase();
    [
        Some(&job.id),
        Some(&job.name),
        job.description.as_ref(),
        job.display_name.as_ref(),
    ]
    .into_iter()
    .flatten()
    .any(|s| s.to_lowercase().contains(&q))
}

impl CronActor {
    fn known<'a>(&'a self, channels: &'a [String], agents: &'a [String]) -> Known<'a> {
        Known {
            channels,
            agents,
            default_agent: &self.config.default_agent,
            now_ms: self.clock.now_ms(),
        }
    }

    /// Writes a changed job, flushes, and answers with its public view.
    fn commit_job(
        &mut self,
        job: CronJob,
        schedule: Schedule,
        action: &'static str,
        ctx: &mut Context<Self>,
    ) -> ResponseFuture<Result<Value, CronError>> {
        if let Err(e) = record::save_job(&self.store, &job) {
            return Box::pin(async move { Err(CronError::Store(e)) });
        }
        let id = job.id.clone();
        let now = self.clock.now_ms();
        self.place(job, schedule, now);
        self.bump_revision();
        self.arm(ctx);
        let view = self.public_of(&id);
        self.emit(CronEvent::Changed {
            job_id: id,
            added: action == "added",
            job: view.clone(),
        });
        let store = self.store.clone();
        Box::pin(async move {
            store.flush().await?;
            Ok(view)
        })
    }
}

impl Handler<ListJobs> for CronActor {
    type Result = MessageResult<ListJobs>;
    fn handle(&mut self, f: ListJobs, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let enabled = f.enabled.as_deref().unwrap_or(match f.include_disabled {
            true => "all",
            false => "enabled",
        });
        let default_agent = self.config.default_agent.clone();
        let mut rows: Vec<(&CronJob, Option<u64>)> = self
            .jobs
            .values()
            .filter(|s| match enabled {
                "enabled" => s.job.enabled,
                "disabled" => !s.job.enabled,
                _ => true,
            })
            .filter(|s| f.query.as_deref().is_none_or(|q| matches_query(&s.job, q)))
            .filter(|s| {
                f.agent_id
                    .as_deref()
                    .is_none_or(|a| s.job.agent(&default_agent).eq_ignore_ascii_case(a))
            })
            .filter(|s| {
                f.schedule_kind
                    .as_deref()
                    .is_none_or(|k| k == "all" || s.job.schedule()["kind"].as_str() == Some(k))
            })
            .map(|s| (&s.job, s.next))
            .collect();
        match f.sort_by.as_deref() {
            Some("name") => rows.sort_by(|a, b| a.0.name.cmp(&b.0.name).then(a.0.id.cmp(&b.0.id))),
            Some("updatedAtMs") => rows.sort_by_key(|r| (r.0.updated_at_ms, r.0.id.clone())),
            _ => rows.sort_by_key(|r| (r.1.unwrap_or(u64::MAX), r.0.id.clone())),
        }
        if f.sort_dir.as_deref() == Some("desc") {
            rows.reverse();
        }
        let (rows, mut meta) = page(rows, f.offset, f.limit);
        meta["jobs"] = rows
            .into_iter()
            .map(|(j, next)| {
                let mut v = j.public(next);
                v["effectiveAgentId"] = json!(j.agent(&default_agent));
                v
            })
            .collect();
        meta["snapshotRevision"] = json!(self.revision);
        MessageResult(meta)
    }
}

impl Handler<GetJob> for CronActor {
    type Result = Option<Value>;
    fn handle(&mut self, msg: GetJob, _: &mut Context<Self>) -> Option<Value> {
        let _span = self.span.clone().entered();
        self.jobs.get(&msg.id).map(|s| s.job.public(s.next))
    }
}

impl Handler<AddJob> for CronActor {
    type Result = ResponseFuture<Result<Value, CronError>>;
    fn handle(&mut self, msg: AddJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let declared = msg.params["declarationKey"].as_str().map(str::trim);
        let existing = declared.and_then(|key| {
            self.jobs
                .values()
                .find(|s| s.job.declaration_key.as_deref() == Some(key))
                .map(|s| s.job.clone())
        });
        let id = existing.as_ref().map_or_else(
            || ulid::Ulid::generate().to_string().to_lowercase(),
            |j| j.id.clone(),
        );
        let made = CronJob::create(&id, &msg.params, &self.known(&msg.channels, &msg.agents));
        let (mut job, schedule) = match made {
            Ok(made) => made,
            Err(e) => return Box::pin(async move { Err(CronError::Invalid(e)) }),
        };
        let Some(old) = existing else {
            tracing::info!(job = %id, schedule = %job.schedule, "cron: job added");
            let saved = self.commit_job(job, schedule, "added", ctx);
            return match declared {
                // A declared job answers in OpenClaw's declarative shape.
                Some(_) => {
                    Box::pin(async move { Ok(json!({"created": true, "job": saved.await?})) })
                }
                None => saved,
            };
        };
        // The same declaration again: the job converges to it, its history kept.
        let same = |j: &CronJob| {
            let mut v = serde_json::to_value(j).unwrap_or_default();
            for k in ["createdAtMs", "updatedAtMs", "state"] {
                v.as_object_mut().map(|o| o.remove(k));
            }
            v
        };
        let changed = same(&old) != same(&job);
        job.created_at_ms = old.created_at_ms;
        job.state = old.state.clone();
        if !changed {
            let view = self.public_of(&id);
            return Box::pin(async move {
                Ok(json!({"created": false, "updated": false, "job": view}))
            });
        }
        let saved = self.commit_job(job, schedule, "updated", ctx);
        Box::pin(async move { Ok(json!({"created": false, "updated": true, "job": saved.await?})) })
    }
}

impl Handler<UpdateJob> for CronActor {
    type Result = ResponseFuture<Result<Value, CronError>>;
    fn handle(&mut self, msg: UpdateJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let Some(slot) = self.jobs.get(&msg.id) else {
            return Box::pin(async move { Err(CronError::NotFound(msg.id)) });
        };
        match slot
            .job
            .patched(&msg.patch, &self.known(&msg.channels, &msg.agents))
        {
            Ok((job, schedule)) => self.commit_job(job, schedule, "updated", ctx),
            Err(e) => Box::pin(async move { Err(CronError::Invalid(e)) }),
        }
    }
}

impl Handler<RemoveJob> for CronActor {
    type Result = ResponseFuture<Result<Value, CronError>>;
    fn handle(&mut self, msg: RemoveJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        if !self.jobs.contains_key(&msg.id) {
            return Box::pin(async move { Err(CronError::NotFound(msg.id)) });
        }
        if let Err(e) = record::remove_job(&self.store, &msg.id) {
            return Box::pin(async move { Err(CronError::Store(e)) });
        }
        self.unplace(&msg.id);
        self.bump_revision();
        self.arm(ctx);
        self.emit(CronEvent::Removed {
            job_id: msg.id.clone(),
        });
        let store = self.store.clone();
        Box::pin(async move {
            store.flush().await?;
            Ok(json!({"ok": true, "removed": true}))
        })
    }
}

impl Handler<RunJob> for CronActor {
    type Result = Result<Value, CronError>;
    fn handle(&mut self, msg: RunJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let now = self.clock.now_ms();
        let slot = self
            .jobs
            .get(&msg.id)
            .ok_or_else(|| CronError::NotFound(msg.id.clone()))?;
        let not = |reason: &str| Ok(json!({"ok": true, "ran": false, "reason": reason}));
        match msg.mode.as_str() {
            "force" => {}
            "due" if slot.next.is_some_and(|n| n <= now) => {}
            "due" => return not("not-due"),
            "if-enabled" if slot.job.enabled => {}
            "if-enabled" => return not("disabled"),
            m => {
                return Err(CronError::Invalid(format!(
                    "invalid mode {m:?} (force, due or if-enabled)"
                )))
            }
        }
        if self.running.contains_key(&msg.id) {
            return not("already-running");
        }
        let mut job = slot.job.clone();
        job.state.running_at_ms = Some(now);
        let run_id = format!("cron:{}:manual-{}", msg.id, ulid::Ulid::generate());
        let entry = RunEntry::start(&msg.id, &run_id, now, now, true);
        let key = record::new_key(&msg.id);
        record::write(&self.store, &job, &key, &entry)?;
        if let Some(s) = self.jobs.get_mut(&msg.id) {
            s.job = job.clone();
        }
        self.launch(vec![Order { job, key, entry }], ctx);
        Ok(json!({"ok": true, "enqueued": true, "ran": true, "runId": run_id}))
    }
}

impl Handler<ListRuns> for CronActor {
    type Result = Result<Value, CronError>;
    fn handle(&mut self, f: ListRuns, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        if let Some(id) = &f.job_id {
            if id.contains(['/', '\\']) {
                return Err(CronError::Invalid("invalid id".into()));
            }
        }
        let runs = record::runs_of(&self.store, f.job_id.as_deref())?;
        if runs.is_empty()
            && f.job_id
                .as_ref()
                .is_some_and(|j| !self.jobs.contains_key(j))
        {
            return Err(CronError::NotFound(f.job_id.unwrap_or_default()));
        }
        let name_of = |id: &str| self.jobs.get(id).map(|s| s.job.name.clone());
        let mut rows: Vec<Value> = runs
            .into_iter()
            .map(|(_, r)| r)
            .filter(|r| r.phase == Phase::Finished)
            .filter(|r| f.run_id.as_deref().is_none_or(|id| r.run_id == id))
            .map(|r| r.public(name_of(&r.job_id).as_deref()))
            .filter(|v| {
                f.statuses.is_empty() || f.statuses.iter().any(|s| v["status"].as_str() == Some(s))
            })
            .filter(|v| {
                f.delivery_statuses.is_empty()
                    || f.delivery_statuses
                        .iter()
                        .any(|s| v["deliveryStatus"].as_str() == Some(s))
            })
            .filter(|v| {
                f.query.as_deref().is_none_or(|q| {
                    let q = q.to_lowercase();
                    ["summary", "error", "jobName"].iter().any(|k| {
                        v[*k]
                            .as_str()
                            .is_some_and(|t| t.to_lowercase().contains(&q))
                    })
                })
            })
            .collect();
        rows.sort_by_key(|v| {
            (
                v["ts"].as_u64().unwrap_or(0),
                v["runId"].as_str().map(str::to_string),
            )
        });
        if f.sort_dir.as_deref() != Some("asc") {
            rows.reverse();
        }
        let (rows, mut meta) = page(rows, f.offset, f.limit);
        meta["entries"] = Value::Array(rows);
        Ok(meta)
    }
}

impl Handler<CronStatus> for CronActor {
    type Result = MessageResult<CronStatus>;
    fn handle(&mut self, _: CronStatus, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult(json!({
            "enabled": self.config.enabled,
            "storage": "sled",
            "storePath": self.store.dir().join("store").display().to_string(),
            "jobs": self.jobs.len(),
            "running": self.running.len(),
            "nextWakeAtMs": match self.config.enabled {
                true => self.next_wake().map_or(Value::Null, |n| json!(n)),
                false => Value::Null,
            },
        }))
    }
}
