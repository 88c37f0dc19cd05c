mod anthropic_provider;
pub mod memory_recall;
mod openai_provider;
