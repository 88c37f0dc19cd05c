mod anthropic_provider;
mod openai_provider;
