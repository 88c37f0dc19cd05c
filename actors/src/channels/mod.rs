//! Channels (issue 15): the adapters that connect ferroclaw to chat
//! platforms, built in steps. What is here so far is platform-neutral:
//! `ledger.rs`, the delivery contract's records in the store (inbound
//! dedupe keys with the platform cursor, the outbox of reply chunks), and
//! `limits.rs`, the per-token send gate that honours a platform's
//! `retry_after` for every method, and the retry policy of seed 002. Time
//! is passed in (milliseconds), never read, so every rule is tested
//! without sleeping.

pub mod ledger;
pub mod limits;
