//! Token usage and cost (not an actor). Every run's tokens (input, output,
//! cache read, cache write) are recorded twice, in the same store
//! transaction as the run's end: on the session entry, per model
//! (`usageByModel`), and in the `usage` tree as one row per run keyed by
//! day, which `usage.cost` and `usage.status` sum over a date range. Costs
//! are computed when read, from the price table in config
//! (`models.providers.<p>.models[].cost`: USD per million tokens of
//! `input`, `output`, `cacheRead`, `cacheWrite`, OpenClaw's format); a
//! model without a price counts as a missing cost entry, never as free.

pub mod activity;

pub use activity::Activity;

use crate::ids::SessionKey;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::provider::Usage;
use crate::settings::Settings;
use crate::store::{Store, StoreError, StoreWrite, Tree};

/// USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// Prices by `provider/model`.
#[derive(Debug, Clone, Default)]
pub struct Prices(HashMap<String, Price>);

impl Prices {
    pub fn from_settings(settings: &Settings) -> Prices {
        let mut map = HashMap::new();
        for (p, spec) in &settings.models.providers {
            for m in &spec.models {
                let Some(cost) = &m.cost else { continue };
                let f = |k: &str| cost.get(k).and_then(Value::as_f64).filter(|x| *x >= 0.0);
                if f("input").is_none() && f("output").is_none() {
                    continue;
                }
                let price = Price {
                    input: f("input").unwrap_or(0.0),
                    output: f("output").unwrap_or(0.0),
                    cache_read: f("cacheRead").unwrap_or(0.0),
                    cache_write: f("cacheWrite").unwrap_or(0.0),
                };
                map.insert(format!("{p}/{}", m.id), price);
            }
        }
        Prices(map)
    }

    pub fn of(&self, model: &str) -> Option<&Price> {
        self.0.get(model)
    }
}

/// Tokens summed over calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Totals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// Runs counted.
    pub runs: u64,
}

impl Totals {
    pub fn of(u: &Usage) -> Totals {
        Totals {
            input: u.input,
            output: u.output,
            cache_read: u.cache_read,
            cache_write: u.cache_write,
            runs: 1,
        }
    }

    pub fn add(&mut self, o: &Totals) {
        self.input += o.input;
        self.output += o.output;
        self.cache_read += o.cache_read;
        self.cache_write += o.cache_write;
        self.runs += o.runs;
    }

    pub fn tokens(&self) -> u64 {
        self.input + self.output + self.cache_read + self.cache_write
    }

    /// The cost at `price` (USD).
    pub fn cost(&self, p: &Price) -> f64 {
        (self.input as f64 * p.input
            + self.output as f64 * p.output
            + self.cache_read as f64 * p.cache_read
            + self.cache_write as f64 * p.cache_write)
            / 1_000_000.0
    }
}

/// Costed totals in OpenClaw's shape, summed over models.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Costed {
    pub tokens: Totals,
    pub input_cost: f64,
    pub output_cost: f64,
    pub cache_read_cost: f64,
    pub cache_write_cost: f64,
    /// Runs of models without a price.
    pub missing: u64,
    pub missing_by_model: BTreeMap<String, u64>,
}

impl Costed {
    pub fn add(&mut self, model: &str, t: &Totals, prices: &Prices) {
        self.tokens.add(t);
        match prices.of(model) {
            Some(p) => {
                self.input_cost += t.input as f64 * p.input / 1e6;
                self.output_cost += t.output as f64 * p.output / 1e6;
                self.cache_read_cost += t.cache_read as f64 * p.cache_read / 1e6;
                self.cache_write_cost += t.cache_write as f64 * p.cache_write / 1e6;
            }
            None => {
                self.missing += t.runs;
                *self.missing_by_model.entry(model.to_string()).or_default() += t.runs;
            }
        }
    }

    pub fn merge(&mut self, o: &Costed) {
        self.tokens.add(&o.tokens);
        self.input_cost += o.input_cost;
        self.output_cost += o.output_cost;
        self.cache_read_cost += o.cache_read_cost;
        self.cache_write_cost += o.cache_write_cost;
        self.missing += o.missing;
        for (m, n) in &o.missing_by_model {
            *self.missing_by_model.entry(m.clone()).or_default() += n;
        }
    }

    pub fn total_cost(&self) -> f64 {
        self.input_cost + self.output_cost + self.cache_read_cost + self.cache_write_cost
    }

    /// OpenClaw's cost-usage totals.
    pub fn to_json(&self) -> Value {
        let r = |x: f64| (x * 1e6).round() / 1e6;
        let mut v = json!({
            "input": self.tokens.input, "output": self.tokens.output,
            "cacheRead": self.tokens.cache_read, "cacheWrite": self.tokens.cache_write,
            "totalTokens": self.tokens.tokens(), "totalCost": r(self.total_cost()),
            "inputCost": r(self.input_cost), "outputCost": r(self.output_cost),
            "cacheReadCost": r(self.cache_read_cost), "cacheWriteCost": r(self.cache_write_cost),
            "missingCostEntries": self.missing,
        });
        if !self.missing_by_model.is_empty() {
            v["missingCostByModel"] = json!(self.missing_by_model);
        }
        v
    }
}

/// One run's row in the `usage` tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunUsage {
    pub agent_id: String,
    pub session_key: SessionKey,
    /// `provider/model`.
    pub model: String,
    pub at_ms: u64,
    pub tokens: Totals,
    /// What the run did (rows from before it was kept: nothing).
    #[serde(default)]
    pub activity: Activity,
}

impl RunUsage {
    /// The run spent tokens (a failed or aborted run's row may not have).
    pub fn has_tokens(&self) -> bool {
        self.tokens.runs > 0
    }
}

/// The gateway-local day of `ms`.
pub fn day_of(ms: u64) -> String {
    use chrono::TimeZone;
    chrono::Local
        .timestamp_millis_opt(ms as i64)
        .single()
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| "1970-01-01".into())
}

/// The write recording one run.
pub fn record(run_id: &str, row: &RunUsage) -> Result<StoreWrite, serde_json::Error> {
    let key = format!("{}\0{run_id}", day_of(row.at_ms));
    Ok((Tree::Usage, key, Some(serde_json::to_value(row)?)))
}

/// Every run recorded from day `from` to day `to` (inclusive, `YYYY-MM-DD`).
pub fn runs_between(store: &Store, from: &str, to: &str) -> Result<Vec<RunUsage>, StoreError> {
    let end = format!("{to}\u{1}");
    Ok(store
        .scan_range::<RunUsage>(Tree::Usage, from, &end)?
        .into_iter()
        .map(|(_, v)| v)
        .collect())
}

/// Removes the rows of days before `keep_from`; returns how many.
pub fn prune(store: &Store, keep_from: &str) -> Result<usize, StoreError> {
    let old = store.scan_range::<Value>(Tree::Usage, "", keep_from)?;
    for (k, _) in &old {
        store.remove(Tree::Usage, k)?;
    }
    Ok(old.len())
}

/// Per day, then per model, costed.
pub fn daily(rows: &[RunUsage], prices: &Prices) -> BTreeMap<String, Costed> {
    let mut out: BTreeMap<String, Costed> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.has_tokens()) {
        out.entry(day_of(r.at_ms))
            .or_default()
            .add(&r.model, &r.tokens, prices);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_come_from_the_price_table_and_unpriced_models_are_missing() {
        let prices = Prices(HashMap::from([(
            "openai/gpt-4o".to_string(),
            Price {
                input: 2.5,
                output: 10.0,
                cache_read: 1.25,
                cache_write: 0.0,
            },
        )]));
        let t = Totals {
            input: 1_000_000,
            output: 100_000,
            cache_read: 400_000,
            cache_write: 0,
            runs: 2,
        };
        let mut c = Costed::default();
        c.add("openai/gpt-4o", &t, &prices);
        c.add(
            "offline/echo",
            &Totals {
                input: 5,
                runs: 1,
                ..Default::default()
            },
            &prices,
        );
        let v = c.to_json();
        assert_eq!(v["totalCost"], 2.5 + 1.0 + 0.5);
        assert_eq!(v["inputCost"], 2.5);
        assert_eq!(v["totalTokens"], 1_500_005);
        assert_eq!(v["missingCostEntries"], 1);
        assert_eq!(v["missingCostByModel"]["offline/echo"], 1);
    }

    #[test]
    fn runs_are_kept_by_day_and_summed_over_a_range() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let day = 86_400_000u64;
        let base = 1_795_478_400_000u64 + day / 2; // 2026-11-24 around noon UTC
        let rows: Vec<RunUsage> = (0..5)
            .map(|i| RunUsage {
                agent_id: "main".into(),
                session_key: crate::ids::SessionKey::stored("agent:main:main"),
                model: "offline/echo".into(),
                at_ms: base + i * day,
                tokens: Totals {
                    input: 10,
                    output: 1,
                    runs: 1,
                    ..Default::default()
                },
                activity: Activity::default(),
            })
            .collect();
        let writes: Vec<StoreWrite> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| record(&format!("r{i}"), r).unwrap())
            .collect();
        store.commit(&writes).unwrap();
        let (d1, d3) = (day_of(base + day), day_of(base + 3 * day));
        let got = runs_between(&store, &d1, &d3).unwrap();
        assert_eq!(got, rows[1..4].to_vec());
        let by_day = daily(&got, &Prices::default());
        assert_eq!(by_day.len(), 3);
        assert_eq!(prune(&store, &d3).unwrap(), 3);
        assert_eq!(runs_between(&store, "0000", "9999").unwrap().len(), 2);
    }
}
