mod openai_provider;
