//! [`HttpClient`]: an OpenAI-compatible chat-completions client (`POST {base}/chat/completions`)
//! over `ureq`, with a global timeout and typed errors. It maps the providers' "request too
//! large" answers to [`Error::ContextOverflow`] so callers can shrink and retry; it never
//! retries by itself.

use std::time::Duration;

use acms_core::LlmConfig;
use serde::Serialize;
use serde_json::Value;

use crate::{ChatMessage, Error, LlmClient, Result};

/// An OpenAI-compatible chat-completions endpoint.
#[derive(Debug, Clone)]
pub struct HttpClient {
    url: String,
    model: String,
    api_key: Option<String>,
    agent: ureq::Agent,
}

#[derive(Serialize)]
struct Request<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    temperature: f32,
}

impl HttpClient {
    /// A client for `base_url` (e.g. `https://api.openai.com/v1`; a URL already ending in
    /// `/chat/completions` is used as is). `api_key`, when given, is sent as a bearer token.
    pub fn new(
        base_url: &str,
        model: &str,
        api_key: Option<String>,
        timeout: Duration,
    ) -> HttpClient {
        let base = base_url.trim_end_matches('/');
        let url = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let config = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            // Statuses are mapped to typed errors below; ureq's own status errors drop the body.
            .http_status_as_error(false)
            .build();
        HttpClient {
            url,
            model: model.to_string(),
            api_key,
            agent: ureq::Agent::new_with_config(config),
        }
    }

    /// A client from `context.llm.*`: base URL and model are required, the key is read from
    /// the environment variable the config names (absent is allowed: local servers need none).
    pub fn from_config(config: &LlmConfig) -> Result<HttpClient> {
        let base = config
            .base_url
            .as_deref()
            .ok_or_else(|| Error::NotConfigured {
                what: "set context.llm.base-url".into(),
            })?;
        let model = config
            .model
            .as_deref()
            .ok_or_else(|| Error::NotConfigured {
                what: "set context.llm.model".into(),
            })?;
        if !(config.timeout_seconds.is_finite() && config.timeout_seconds > 0.0) {
            return Err(Error::NotConfigured {
                what: "context.llm.timeout-seconds must be a positive number".into(),
            });
        }
        let key = std::env::var(&config.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        Ok(HttpClient::new(
            base,
            model,
            key,
            Duration::from_secs_f64(config.timeout_seconds),
        ))
    }

    /// Posts `body` and returns the answer's text: a transport failure is
    /// [`Error::Transport`], a non-2xx status its [`status_error`].
    fn send(&self, body: &impl Serialize) -> Result<String> {
        let mut req = self.agent.post(&self.url);
        if let Some(key) = &self.api_key {
            req = req.header("Authorization", format!("Bearer {key}"));
        }
        let mut resp = req
            .send_json(body)
            .map_err(|e| Error::Transport(e.to_string()))?;
        let status = resp.status().as_u16();
        let text = resp
            .body_mut()
            .read_to_string()
            .map_err(|e| Error::Transport(e.to_string()))?;
        if !(200..300).contains(&status) {
            return Err(status_error(status, &text));
        }
        Ok(text)
    }

    /// The endpoint this client posts to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The model requests name.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Posts a complete chat-completions request body (messages with tool calls, `tools`,
    /// any provider option) and returns the response body. `model` is added when the body
    /// has none. Errors are mapped as for [`LlmClient::chat`].
    pub fn post_json(&self, body: &Value) -> Result<Value> {
        let mut body = body.clone();
        if let Value::Object(o) = &mut body {
            o.entry("model")
                .or_insert_with(|| Value::String(self.model.clone()));
        }
        let text = self.send(&body)?;
        serde_json::from_str(&text)
            .map_err(|e| Error::BadResponse(format!("body is not JSON: {e}")))
    }
}

impl LlmClient for HttpClient {
    fn chat(&self, messages: &[ChatMessage], max_tokens: Option<u32>) -> Result<String> {
        let body = Request {
            model: &self.model,
            messages,
            max_tokens,
            temperature: 0.0,
        };
        let text = self.send(&body)?;
        parse_reply(&text)
    }
}

/// Maps a non-2xx answer to an error. Only the provider's short error code is kept, never its
/// message, which may quote the request.
fn status_error(status: u16, body: &str) -> Error {
    let lower = body.to_ascii_lowercase();
    let overflow = status == 413
        || (status == 400
            && (lower.contains("context_length_exceeded")
                || lower.contains("maximum context length")
                || lower.contains("prompt is too long")));
    if overflow {
        return Error::ContextOverflow { status };
    }
    let code = serde_json::from_str::<Value>(body).ok().and_then(|v| {
        let err = v.get("error")?;
        err.get("code")
            .or_else(|| err.get("type"))
            .and_then(Value::as_str)
            .filter(|c| c.len() <= 64)
            .map(str::to_string)
    });
    Error::Status { status, code }
}

fn parse_reply(body: &str) -> Result<String> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| Error::BadResponse(format!("body is not JSON: {e}")))?;
    let content = v
        .pointer("/choices/0/message/content")
        .ok_or_else(|| Error::BadResponse("no choices[0].message.content".into()))?;
    match content {
        Value::String(s) => Ok(s.clone()),
        // Some servers return content parts; join their text.
        Value::Array(parts) => Ok(parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("")),
        _ => Err(Error::BadResponse(
            "choices[0].message.content is not text".into(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(status: u16, body: &str, overflow: bool) {
        assert_eq!(
            status_error(status, body).is_context_overflow(),
            overflow,
            "{status} {body}"
        );
    }

    #[test]
    fn maps_overflow_statuses() {
        check(413, "", true);
        check(
            400,
            r#"{"error":{"code":"context_length_exceeded","message":"x"}}"#,
            true,
        );
        check(
            400,
            r#"{"error":{"message":"This model's maximum context length is 8192 tokens"}}"#,
            true,
        );
        check(400, r#"{"error":{"code":"invalid_request_error"}}"#, false);
        check(500, "context_length_exceeded", false);
        check(429, "", false);
    }

    #[test]
    fn status_error_keeps_code_not_message() {
        let e = status_error(
            401,
            r#"{"error":{"code":"invalid_api_key","message":"secret sk-123"}}"#,
        );
        let shown = e.to_string();
        assert!(shown.contains("invalid_api_key"), "{shown}");
        assert!(!shown.contains("sk-123"), "{shown}");
    }

    #[test]
    fn parses_replies() {
        assert_eq!(
            parse_reply(r#"{"choices":[{"message":{"content":"hi"}}]}"#).unwrap(),
            "hi"
        );
        assert_eq!(
            parse_reply(r#"{"choices":[{"message":{"content":[{"text":"a"},{"text":"b"}]}}]}"#)
                .unwrap(),
            "ab"
        );
        assert!(parse_reply("nope").is_err());
        assert!(parse_reply("{}").is_err());
    }

    #[test]
    fn url_and_config() {
        let c = HttpClient::new("http://x/v1/", "m", None, Duration::from_secs(1));
        assert_eq!(c.url(), "http://x/v1/chat/completions");
        let c = HttpClient::new(
            "http://x/chat/completions",
            "m",
            None,
            Duration::from_secs(1),
        );
        assert_eq!(c.url(), "http://x/chat/completions");
        assert!(matches!(
            HttpClient::from_config(&LlmConfig::default()),
            Err(Error::NotConfigured { .. })
        ));
    }
}
