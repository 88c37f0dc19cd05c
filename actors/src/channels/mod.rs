//! Channels (issue 15): the adapters that connect ferroclaw to chat
//! platforms, built in steps. What is here so far is platform-neutral:
//! `ledger.rs`, the delivery contract's records in the store (inbound
//! dedupe keys with the platform cursor, the outbox of reply chunks), and
//! `limits.rs`, the per-token send gate that honours a platform's
//! `retry_after` for every method, and the retry policy of seed 002;
//! `chunker.rs`, block streaming in 800-1200 character blocks for channels
//! without edits; `debounce.rs`, rapid texts of a conversation as one turn.
//! Time is passed in (milliseconds), never read, so every rule is tested
//! without sleeping.

pub mod chunker;
pub mod debounce;
pub mod ledger;
pub mod limits;
