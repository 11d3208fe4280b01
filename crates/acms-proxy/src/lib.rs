//! `acms-proxy`: an OpenAI-compatible chat-completions proxy that applies the provider seam
//! of `acms-compact` to every request before forwarding it, so any agent gets bounded
//! context without code changes (point its base URL at the proxy).
//!
//! - `POST /v1/chat/completions` (and `/chat/completions`): the body's messages are read
//!   (unknown fields and unchanged messages kept as they were), bounded by one
//!   [`acms_compact::Seam`] assembly, and forwarded to the upstream. A request that needs no
//!   change is forwarded byte for byte. The upstream's answer is relayed as it arrives, so
//!   `"stream": true` (server-sent events) works unchanged.
//! - A terminated assembly is **never forwarded**: the client gets the provider-style
//!   `400 context_length_exceeded` error, whose message carries only the outcome, the final
//!   size and the hard limit with their unit.
//! - Every other path is passed through to the upstream untouched (`/v1/models`, ...).
//! - CPU work (reading the body, the assembly, writing the bounded body) runs on tokio's
//!   blocking pool behind a semaphore of one permit per core, so the async runtime that
//!   accepts connections and relays answers is never starved, and requests beyond the cores
//!   wait in a queue instead of all competing for them at once.
//! - Each response carries `x-acms-outcome`, `x-acms-assembly-us` (time in the bounded
//!   assembly), `x-acms-queue-us` (time waiting for a CPU permit) and `x-acms-overhead-us`
//!   (the rest of the proxy's own time before forwarding: body read and write, hand-offs).
//!
//! It listens on loopback unless told otherwise ([`ProxyConfig::allow_remote`]). It holds
//! no conversation state between requests and logs no content.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use acms_compact::format::{self, Format};
use acms_compact::{CompactionProfile, Conversation, Error as CompactError, Seam, Terminated};
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::TryStreamExt;

/// The largest request body accepted (long conversations are large).
pub const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// Errors of `acms-proxy`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A non-loopback listen address without `allow_remote`.
    #[error(
        "refusing to listen on {0}: it is not a loopback address (the proxy forwards your API key); pass --allow-remote to do it anyway"
    )]
    NotLoopback(SocketAddr),
    /// The upstream URL is not http(s).
    #[error("the upstream must be an http:// or https:// URL (e.g. https://api.openai.com/v1)")]
    Upstream,
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    #[error(transparent)]
    Compact(#[from] CompactError),
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
}

/// What the proxy does.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    /// Where to listen (default 127.0.0.1:8787).
    pub listen: SocketAddr,
    /// The upstream base URL that replaces the proxy's own `/v1` (e.g.
    /// `https://api.openai.com/v1`).
    pub upstream: String,
    /// The seam's policy, unit and reducer.
    pub profile: CompactionProfile,
    /// Allow a non-loopback listen address.
    pub allow_remote: bool,
}

/// Counters since start (numbers only).
#[derive(Debug, Default)]
pub struct Stats {
    pub requests: AtomicU64,
    pub forwarded: AtomicU64,
    pub forwarded_unchanged: AtomicU64,
    pub terminated: AtomicU64,
    pub bad_requests: AtomicU64,
    pub upstream_errors: AtomicU64,
}

/// Shared state of a running proxy.
#[derive(Debug)]
pub struct ProxyState {
    seam: Seam,
    client: reqwest::Client,
    upstream: String,
    /// One permit per core for the CPU-bound part of a request.
    cpu: tokio::sync::Semaphore,
    pub stats: Stats,
}

impl ProxyState {
    /// State for `config` (the HTTP client, the seam).
    pub fn new(config: &ProxyConfig) -> Result<Arc<ProxyState>, Error> {
        if !(config.upstream.starts_with("http://") || config.upstream.starts_with("https://")) {
            return Err(Error::Upstream);
        }
        // One process-wide TLS provider; a second install is a no-op error we can ignore.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .build()
            .map_err(|e| Error::Client(e.to_string()))?;
        Ok(Arc::new(ProxyState {
            seam: Seam::new(config.profile.clone(), None)?,
            client,
            upstream: config.upstream.trim_end_matches('/').to_string(),
            cpu: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            ),
            stats: Stats::default(),
        }))
    }

    /// The upstream URL for a request to `path` on the proxy.
    fn target(&self, uri: &Uri) -> String {
        let path = uri.path();
        let path = path
            .strip_prefix("/v1")
            .filter(|p| p.starts_with('/'))
            .unwrap_or(path);
        match uri.query() {
            Some(q) => format!("{}{path}?{q}", self.upstream),
            None => format!("{}{path}", self.upstream),
        }
    }
}

/// Checks the listen address and binds it.
pub async fn bind(config: &ProxyConfig) -> Result<tokio::net::TcpListener, Error> {
    if !config.listen.ip().is_loopback() && !config.allow_remote {
        return Err(Error::NotLoopback(config.listen));
    }
    Ok(tokio::net::TcpListener::bind(config.listen).await?)
}

/// The proxy's routes over `state`.
pub fn router(state: Arc<ProxyState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", axum::routing::post(chat))
        .route("/chat/completions", axum::routing::post(chat))
        .fallback(passthrough)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Serves `state` on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<ProxyState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// An OpenAI-style error body.
fn openai_error(status: StatusCode, message: &str, kind: &str, code: Option<&str>) -> Response {
    let body = serde_json::json!({
        "error": {"message": message, "type": kind, "param": code.map(|_| "messages"), "code": code}
    });
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The provider-style context-length error for a terminated assembly. It states sizes and
/// the outcome only.
pub fn context_length_error(t: &Terminated) -> Response {
    let message = format!(
        "This model's maximum context length is {} {}. However, your messages resulted in {} {} after acms could not bound them (outcome: {}). Please reduce the length of the messages.",
        t.hard_limit, t.unit, t.final_size, t.unit, t.outcome
    );
    let mut r = openai_error(
        StatusCode::BAD_REQUEST,
        &message,
        "invalid_request_error",
        Some("context_length_exceeded"),
    );
    set(&mut r, "x-acms-outcome", t.outcome.name());
    r
}

fn set(r: &mut Response, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(HeaderName::from_static(name), v);
    }
}

/// What the blocking part of a chat request produced.
enum Prepared {
    Forward {
        body: Bytes,
        changed: bool,
        outcome: &'static str,
        assembly_us: u64,
    },
    Terminated(Terminated, u64),
    Bad(String),
}

/// Reads and bounds one request body (CPU work: runs on the blocking pool).
fn prepare(state: &ProxyState, body: Bytes) -> Prepared {
    let Ok(text) = std::str::from_utf8(&body) else {
        return Prepared::Bad("the request body is not UTF-8 JSON".into());
    };
    let mut doc = match format::read(text, Some(Format::OpenAi)) {
        Ok(d) => d,
        // Our errors name positions and kinds, never content.
        Err(e) => return Prepared::Bad(format!("acms could not read the request's messages: {e}")),
    };
    let start = Instant::now();
    // The writer needs the document's sources, not its conversation: move the messages out.
    let messages = std::mem::take(&mut doc.conversation.messages);
    let result = state.seam.prepare(None, messages);
    let assembly_us = start.elapsed().as_micros() as u64;
    match result {
        Ok(p) if !p.changed => Prepared::Forward {
            body,
            changed: false,
            outcome: p.diagnostics.outcome.name(),
            assembly_us,
        },
        Ok(p) => {
            let outcome = p.diagnostics.outcome.name();
            let body = format::write_compact(&doc, &Conversation::new(p.messages));
            Prepared::Forward {
                body: Bytes::from(body),
                changed: true,
                outcome,
                assembly_us,
            }
        }
        Err(CompactError::Terminated(t)) => Prepared::Terminated(t, assembly_us),
        Err(e) => Prepared::Bad(format!("acms could not bound the request: {e}")),
    }
}

/// Headers that belong to one connection, not to the message.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "host"
            | "content-length"
            | "connection"
            | "keep-alive"
            | "proxy-connection"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "accept-encoding"
    )
}

async fn forward(
    state: &ProxyState,
    method: Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let mut req = state.client.request(method, state.target(uri));
    for (name, value) in headers {
        if !hop_by_hop(name) {
            req = req.header(name, value);
        }
    }
    let resp = match req.body(body).send().await {
        Ok(r) => r,
        Err(_) => {
            state.stats.upstream_errors.fetch_add(1, Ordering::Relaxed);
            return openai_error(
                StatusCode::BAD_GATEWAY,
                "acms proxy: the upstream could not be reached",
                "upstream_error",
                None,
            );
        }
    };
    let mut out = Response::builder().status(resp.status().as_u16());
    for (name, value) in resp.headers() {
        if !hop_by_hop(name) {
            out = out.header(name.as_str(), value.as_bytes());
        }
    }
    // Relayed chunk by chunk: server-sent events reach the client as they arrive.
    let stream = resp.bytes_stream().map_err(std::io::Error::other);
    out.body(Body::from_stream(stream)).unwrap_or_else(|_| {
        openai_error(
            StatusCode::BAD_GATEWAY,
            "acms proxy: the upstream answer could not be relayed",
            "upstream_error",
            None,
        )
    })
}

async fn chat(
    State(state): State<Arc<ProxyState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Instant::now();
    state.stats.requests.fetch_add(1, Ordering::Relaxed);
    let s = Arc::clone(&state);
    // Wait for a core before handing the work to the blocking pool: at most one request per
    // core is being read, bounded and written at a time; the rest queue here, in order.
    let permit = state.cpu.acquire().await;
    let queue_us = received.elapsed().as_micros() as u64;
    let prepared = match tokio::task::spawn_blocking(move || prepare(&s, body)).await {
        Ok(p) => p,
        Err(_) => Prepared::Bad("acms could not bound the request".into()),
    };
    drop(permit);
    match prepared {
        Prepared::Bad(message) => {
            state.stats.bad_requests.fetch_add(1, Ordering::Relaxed);
            openai_error(
                StatusCode::BAD_REQUEST,
                &message,
                "invalid_request_error",
                None,
            )
        }
        Prepared::Terminated(t, assembly_us) => {
            state.stats.terminated.fetch_add(1, Ordering::Relaxed);
            let mut r = context_length_error(&t);
            set(&mut r, "x-acms-assembly-us", &assembly_us.to_string());
            set(&mut r, "x-acms-queue-us", &queue_us.to_string());
            r
        }
        Prepared::Forward {
            body,
            changed,
            outcome,
            assembly_us,
        } => {
            state.stats.forwarded.fetch_add(1, Ordering::Relaxed);
            if !changed {
                state
                    .stats
                    .forwarded_unchanged
                    .fetch_add(1, Ordering::Relaxed);
            }
            let overhead_us = (received.elapsed().as_micros() as u64)
                .saturating_sub(assembly_us)
                .saturating_sub(queue_us);
            let mut r = forward(&state, Method::POST, &uri, &headers, body).await;
            set(&mut r, "x-acms-outcome", outcome);
            set(&mut r, "x-acms-assembly-us", &assembly_us.to_string());
            set(&mut r, "x-acms-queue-us", &queue_us.to_string());
            set(&mut r, "x-acms-overhead-us", &overhead_us.to_string());
            r
        }
    }
}

async fn passthrough(
    State(state): State<Arc<ProxyState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    forward(&state, method, &uri, &headers, body).await
}
