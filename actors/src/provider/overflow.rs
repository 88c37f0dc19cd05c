//! Recognising a context overflow in a provider's error text, whatever the
//! status it came with (OpenRouter and vLLM wrap them, Ollama answers 500,
//! streams report them in-band). The patterns of OpenAI, Anthropic,
//! OpenRouter, vLLM, Ollama, llama.cpp and LM Studio.

const PATTERNS: &[&str] = &[
    // OpenAI (and compatible servers copying its wording).
    "context_length_exceeded",
    "maximum context length",
    "reduce the length of the messages",
    // Anthropic.
    "prompt is too long",
    "exceed context limit",
    "input length and `max_tokens` exceed",
    // OpenRouter.
    "endpoint's maximum context length",
    // vLLM.
    "is longer than the model's context length",
    "longer than the maximum model length",
    "exceeds the model's maximum context",
    "too long and exceeds limit",
    // Ollama.
    "exceeds the context length",
    "input length exceeds",
    "prompt too long",
    "exceeded max context length",
    // llama.cpp / LM Studio.
    "exceeds the available context size",
    "context size has been exceeded",
    "n_ctx",
    // Generic.
    "context window",
    "too many tokens",
    "context length",
];

/// Whether `text` (an error body or message) says the prompt did not fit.
pub fn is_context_overflow(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    // A rate limit's "tokens per minute" is not an overflow.
    if lower.contains("per minute") || lower.contains("rate limit") || lower.contains("tpm") {
        return false;
    }
    PATTERNS.iter().any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_providers_overflow_is_recognised_and_rate_limits_are_not() {
        for text in [
            r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","code":"context_length_exceeded"}}"#,
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#,
            r#"{"error":{"message":"This endpoint's maximum context length is 32768 tokens. However, you requested about 40000 tokens","code":400}}"#,
            r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).","type":"BadRequestError"}"#,
            r#"{"error":"Input prompt (9000 tokens) is too long and exceeds limit of 8192"}"#,
            r#"{"error":"prompt too long; exceeded max context length by 512 tokens"}"#,
            r#"{"error":{"message":"the request exceeds the available context size, try increasing it"}}"#,
        ] {
            assert!(is_context_overflow(text), "{text}");
        }
        for text in [
            r#"{"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000"}}"#,
            r#"{"error":{"message":"Invalid API key"}}"#,
            "upstream connect error",
        ] {
            assert!(!is_context_overflow(text), "{text}");
        }
    }
}
