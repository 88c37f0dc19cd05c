//! Channels (issue 15): the adapters that connect ferroclaw to chat
//! platforms, built in steps. What is here so far is the platform-neutral
//! part of sending: `limits.rs`, the per-token send gate that honours a
//! platform's `retry_after` for every method, and the retry policy of
//! seed 002. Time is passed in (milliseconds), never read, so every rule is
//! tested without sleeping.

pub mod limits;
