mod anthropic_provider;
mod cron;
pub mod memory_recall;
mod openai_provider;
