//! The scheduler's `cron.*` handlers. Reads answer from memory and change
//! nothing; writes are durable (flushed) before they are answered.

use super::actor::CronActor;
use super::job::{CronJob, JobView, Known};
use super::messages::*;
use super::record::{self, Phase, RunEntry};
use super::schedule::Schedule;
use actix::prelude::*;

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
    ) -> ResponseFuture<Result<JobView, CronError>> {
        if let Err(e) = record::save_job(&self.store, &job) {
            return Box::pin(async move { Err(CronError::Store(e)) });
        }
        let id = job.id.clone();
        let now = self.clock.now_ms();
        self.place(job, schedule, now);
        self.bump_revision();
        self.arm(ctx);
        let Some(view) = self.view_of(&id) else {
            return Box::pin(async move { Err(CronError::NotFound(id)) });
        };
        self.emit(CronEvent::Changed {
            job_id: id,
            added: action == "added",
            job: Box::new(view.clone()),
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
        let (rows, page) = Page::of(rows, f.offset, f.limit);
        let jobs = rows
            .into_iter()
            .map(|(j, next)| JobView {
                job: j.clone(),
                next_run_ms: next,
                effective_agent: Some(j.agent(&default_agent).to_string()),
            })
            .collect();
        MessageResult(JobPage {
            jobs,
            page,
            revision: self.revision.clone(),
        })
    }
}

impl Handler<GetJob> for CronActor {
    type Result = Option<JobView>;
    fn handle(&mut self, msg: GetJob, _: &mut Context<Self>) -> Option<JobView> {
        let _span = self.span.clone().entered();
        self.view_of(&msg.id)
    }
}

impl Handler<AddJob> for CronActor {
    type Result = ResponseFuture<Result<Added, CronError>>;
    fn handle(&mut self, msg: AddJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let declared = msg.job.declaration_key.clone();
        let existing = declared.as_deref().and_then(|key| {
            self.jobs
                .values()
                .find(|s| s.job.declaration_key.as_deref() == Some(key))
                .map(|s| s.job.clone())
        });
        let id = existing.as_ref().map_or_else(
            || ulid::Ulid::generate().to_string().to_lowercase(),
            |j| j.id.clone(),
        );
        let made = CronJob::create(&id, &msg.job, &self.known(&msg.channels, &msg.agents));
        let (mut job, schedule) = match made {
            Ok(made) => made,
            Err(e) => return Box::pin(async move { Err(CronError::Invalid(e)) }),
        };
        let answer = |created: bool, updated: bool| {
            let declared = declared.is_some().then_some(Declared { created, updated });
            move |job: JobView| Added { job, declared }
        };
        let Some(old) = existing else {
            tracing::info!(job = %id, schedule = %job.schedule, "cron: job added");
            let saved = self.commit_job(job, schedule, "added", ctx);
            let answer = answer(true, false);
            return Box::pin(async move { saved.await.map(answer) });
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
            let view = self.view_of(&id).ok_or(CronError::NotFound(id));
            let answer = answer(false, false);
            return Box::pin(async move { view.map(answer) });
        }
        let saved = self.commit_job(job, schedule, "updated", ctx);
        let answer = answer(false, true);
        Box::pin(async move { saved.await.map(answer) })
    }
}

impl Handler<UpdateJob> for CronActor {
    type Result = ResponseFuture<Result<JobView, CronError>>;
    fn handle(&mut self, msg: UpdateJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let Some(slot) = self.jobs.get(&msg.id) else {
            return Box::pin(async move { Err(CronError::NotFound(msg.id)) });
        };
        match slot
            .job
            .patched(msg.patch, &self.known(&msg.channels, &msg.agents))
        {
            Ok((job, schedule)) => self.commit_job(job, schedule, "updated", ctx),
            Err(e) => Box::pin(async move { Err(CronError::Invalid(e)) }),
        }
    }
}

impl Handler<RemoveJob> for CronActor {
    type Result = ResponseFuture<Result<(), CronError>>;
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
            Ok(())
        })
    }
}

impl Handler<RunJob> for CronActor {
    type Result = Result<RunStart, CronError>;
    fn handle(&mut self, msg: RunJob, ctx: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        let now = self.clock.now_ms();
        let slot = self
            .jobs
            .get(&msg.id)
            .ok_or_else(|| CronError::NotFound(msg.id.clone()))?;
        let not = |reason: &'static str| Ok(RunStart::NotRun { reason });
        match msg.mode.as_str() {
            "force" => {}
            "due" if slot.next.is_some_and(|n| n <= now) => {}
            "due" => return not("not-due"),
            "if-enabled" if slot.job.enabled => {}
            "if-enabled" => return not("disabled"),
            m => {
                let why = format!("invalid mode {m:?} (force, due or if-enabled)");
                return Err(CronError::Invalid(why.into()));
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
        Ok(RunStart::Started {
            run_id: run_id.into(),
        })
    }
}

impl Handler<ListRuns> for CronActor {
    type Result = Result<RunPage, CronError>;
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
        let any = |wanted: &[String], v: Option<&str>| {
            wanted.is_empty() || wanted.iter().any(|w| v == Some(w.as_str()))
        };
        let query = f.query.as_deref().map(str::to_lowercase);
        let mut rows: Vec<RunRow> = runs
            .into_iter()
            .map(|(_, r)| r)
            .filter(|r| r.phase == Phase::Finished)
            .filter(|r| f.run_id.as_deref().is_none_or(|id| r.run_id == id))
            .filter(|r| any(&f.statuses, r.status.as_deref()))
            .filter(|r| any(&f.delivery_statuses, Some(r.delivery_shown())))
            .map(|entry| RunRow {
                job_name: name_of(&entry.job_id),
                entry,
            })
            .filter(|row| {
                query.as_deref().is_none_or(|q| {
                    [&row.entry.summary, &row.entry.error, &row.job_name]
                        .into_iter()
                        .flatten()
                        .any(|t| t.to_lowercase().contains(q))
                })
            })
            .collect();
        rows.sort_by(|a, b| (a.entry.ts(), &a.entry.run_id).cmp(&(b.entry.ts(), &b.entry.run_id)));
        if f.sort_dir.as_deref() != Some("asc") {
            rows.reverse();
        }
        let (entries, page) = Page::of(rows, f.offset, f.limit);
        Ok(RunPage { entries, page })
    }
}

impl Handler<CronStatus> for CronActor {
    type Result = MessageResult<CronStatus>;
    fn handle(&mut self, _: CronStatus, _: &mut Context<Self>) -> Self::Result {
        let _span = self.span.clone().entered();
        MessageResult(SchedulerStatus {
            enabled: self.config.enabled,
            store_path: self.store.dir().join("store").display().to_string(),
            jobs: self.jobs.len(),
            running: self.running.len(),
            next_wake_at_ms: self.config.enabled.then(|| self.next_wake()).flatten(),
        })
    }
}
