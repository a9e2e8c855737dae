//! The one request the probe asks: a system prompt, a user message, and one small tool.
//!
//! The same words as the research's captures of pi-ai 0.82.1 (`research/pi-requests.md`, section 0), so a request
//! the probe sends and one pi sends for the same model differ only where a test names the difference.

use serde_json::{Value, json};

/// The system prompt (a Turn sends the Agent's instructions; this is the probe's).
pub const SYSTEM: &str = "You check that this model can call tools.";

/// The user message.
pub const USER: &str = "Call the probe tool now with status \"ready\".";

/// The tool's name.
pub const TOOL_NAME: &str = "probe";

/// The tool's description.
pub const TOOL_DESCRIPTION: &str = "Report that this model can call tools. Call it once.";

/// The tool's parameters: one required enum argument.
pub fn tool_parameters() -> Value {
    json!({
        "type": "object",
        "required": ["status"],
        "properties": {
            "status": {"type": "string", "enum": ["ready"], "description": "Always \"ready\"."}
        }
    })
}

/// pi's estimate of the prompt's tokens, used by the context clamp (`estimateContextTokens` in pi-ai's
/// `utils/estimate.js`): four characters a token, rounded up separately for the system prompt, the user message's
/// text, and `JSON.stringify` of the tools (`[{name, description, parameters}]`).
pub fn estimated_tokens() -> u64 {
    let tools = serde_json::json!([{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "parameters": tool_parameters()}]);
    let quarter = |chars: usize| (chars as u64).div_ceil(4);
    quarter(SYSTEM.chars().count())
        + quarter(USER.chars().count())
        + quarter(tools.to_string().chars().count())
}

/// What pi's clamp keeps free of the cap in a known context window, for the Turn's prompt.
pub const PROMPT_RESERVE: u64 = 4096;

/// The token cap a Turn sends: the model's `maxTokens`, clamped to the context window (pi's
/// `clampMaxTokensToContext`): with no window, `max(1, maxTokens)`; otherwise
/// `min(maxTokens, max(1, contextWindow - estimate - 4096))`.
pub fn token_cap(max_tokens: u64, context_window: u64) -> u64 {
    if context_window == 0 {
        max_tokens.max(1)
    } else {
        max_tokens.min(
            context_window
                .saturating_sub(estimated_tokens())
                .saturating_sub(PROMPT_RESERVE)
                .max(1),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_pis() {
        // pi rounds each part up: ceil(41/4) + ceil(44/4) + ceil(233/4).
        assert_eq!(estimated_tokens(), 11 + 11 + 59);
    }

    #[test]
    fn token_cap_follows_pi() {
        // A custom model with nothing configured: pi sends 1.
        assert_eq!(token_cap(0, 0), 1);
        assert_eq!(token_cap(1024, 0), 1024);
        // Close to the window: cut down.
        assert_eq!(
            token_cap(256_000, 256_000),
            256_000 - estimated_tokens() - 4096
        );
        // A window smaller than the reserve: at least 1.
        assert_eq!(token_cap(1024, 2048), 1);
        assert_eq!(token_cap(1024, 1_000_000), 1024);
    }
}
