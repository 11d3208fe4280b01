//! `acms-proxy`: an OpenAI-compatible chat-completions proxy that applies the provider seam
//! of `acms-compact` to every request before forwarding it, so any agent gets bounded
//! context without code changes (point its base URL at the proxy).
//!
//! - The request path is normalised once ([`path::normalize`]: escapes decoded, `.` and
//!   `..` resolved, slashes collapsed); the proxy routes on that path and forwards it. A path
//!   that climbs above the root is refused (400), so the upstream's base path cannot be left.
//! - A `POST` whose normalised path ends in `chat/completions` or `messages` (Anthropic) is
//!   bounded: its messages are read (unknown fields and unchanged messages kept as they
//!   were) and bounded by one [`acms_compact::Seam`] assembly to the hard limit less
//!   everything else the provider counts ([`count`]: tools, `response_format`, names, a
//!   top-level `system`...). The forwarded body is counted whole before it is sent. A
//!   request that needs no change is forwarded byte for byte. The upstream's answer is
//!   relayed as it arrives, so `"stream": true` (server-sent events) works unchanged.
//! - A `POST` ending in `responses` (Responses API) or `completions` (legacy) is counted and
//!   forwarded unchanged when within the limit, refused otherwise (acms does not reduce
//!   them); a Responses request that refers to server-side state is refused.
//! - A request over the limit is **never forwarded**: the client gets the provider-style
//!   `400 context_length_exceeded` error, whose message carries only sizes, field names, the
//!   outcome and the hard limit with their unit.
//! - Every other path is passed through to the upstream (`/v1/models`, ...). Upstream
//!   redirects are never followed (a 3xx reaches the client as it is), so the client's
//!   credentials go to the configured upstream only.
//! - Connections: a header-read timeout and a cap on open connections ([`ServeLimits`]);
//!   a connection over the cap is answered 503.
//! - CPU work (reading the body, the assembly, writing the bounded body) runs on tokio's
//!   blocking pool behind a semaphore of one permit per core, so the async runtime that
//!   accepts connections and relays answers is never starved, and requests beyond the cores
//!   wait in a queue instead of all competing for them at once.
//! - Each response carries `x-acms-outcome`, `x-acms-assembly-us` (time in the bounded
//!   assembly), `x-acms-queue-us` (time waiting for a CPU permit) and `x-acms-overhead-us`
//!   (the rest of the proxy's own time before forwarding: body read and write, hand-offs).
//!
//! - One privacy-safe line per request goes to the [`RequestLog`] (off unless set, text or
//!   JSON): method, path, status, outcome, sizes before and after, assemblies, attempts,
//!   milliseconds, and the seam's event stream for that request with its assembly ids.
//!
//! It listens on loopback unless told otherwise ([`ProxyConfig::allow_remote`]). It holds
//! no conversation state between requests and logs no content.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use acms_compact::format::{self, Format};
use acms_compact::{
    AssemblyPolicy, CompactionProfile, Conversation, Error as CompactError, Seam, Terminated,
};
use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::TryStreamExt;
use serde_json::Value;

pub mod count;
pub mod log;
pub mod path;

use count::Counter;
use log::EventLog;
pub use log::{LogFormat, RequestLog, RequestRecord};
use path::Endpoint;

/// The largest request body accepted (long conversations are large).
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

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
#[derive(Clone)]
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

impl ProxyConfig {
    /// The upstream URL to print: any `user:pass@` replaced by `***@`.
    pub fn upstream_for_display(&self) -> String {
        redact_url(&self.upstream)
    }
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("listen", &self.listen)
            .field("upstream", &redact_url(&self.upstream))
            .field("profile", &self.profile)
            .field("allow_remote", &self.allow_remote)
            .finish()
    }
}

/// `url` with its userinfo (`user:pass@`) replaced by `***@`, for banners and logs.
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Connection limits of [`serve_with`].
#[derive(Debug, Clone, Copy)]
pub struct ServeLimits {
    /// A client must send a request's whole head within this, or the connection is closed.
    pub header_read_timeout: Duration,
    /// Open connections at most; one more is answered 503 and closed.
    pub max_connections: usize,
}

/// Default header-read timeout: 10 s.
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Default connection cap: 1024.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
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
    pub refused_connections: AtomicU64,
}

/// Shared state of a running proxy.
pub struct ProxyState {
    profile: CompactionProfile,
    /// Seams for a smaller budget (the limit less a request's other fields), by budget.
    budgets: Mutex<HashMap<usize, Arc<Seam>>>,
    client: reqwest::Client,
    upstream: String,
    /// One permit per core for the CPU-bound part of a request.
    cpu: tokio::sync::Semaphore,
    log: RequestLog,
    pub stats: Stats,
}

impl std::fmt::Debug for ProxyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyState")
            .field("upstream", &redact_url(&self.upstream))
            .field("profile", &self.profile)
            .field("stats", &self.stats)
            .finish()
    }
}

/// Budgets are rounded down to a multiple of the limit / this, so few seams are built.
const BUDGET_STEPS: usize = 64;
/// Reassemblies with a smaller budget when the whole body is still over the limit.
const BUDGET_RETRIES: usize = 3;

impl ProxyState {
    /// State for `config` (the HTTP client, the seam), logging nothing.
    pub fn new(config: &ProxyConfig) -> Result<Arc<ProxyState>, Error> {
        ProxyState::with_log(config, RequestLog::off())
    }

    /// State for `config` that writes one line per request to `log`.
    pub fn with_log(config: &ProxyConfig, log: RequestLog) -> Result<Arc<ProxyState>, Error> {
        if !(config.upstream.starts_with("http://") || config.upstream.starts_with("https://")) {
            return Err(Error::Upstream);
        }
        // One process-wide TLS provider; a second install is a no-op error we can ignore.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            // A redirect would carry the client's credentials to another host: the 3xx goes
            // back to the client instead.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| Error::Client(e.to_string()))?;
        // Fails early on invalid settings.
        Seam::new(config.profile.clone(), None)?;
        Ok(Arc::new(ProxyState {
            profile: config.profile.clone(),
            budgets: Mutex::default(),
            client,
            upstream: config.upstream.trim_end_matches('/').to_string(),
            cpu: tokio::sync::Semaphore::new(
                std::thread::available_parallelism().map_or(2, std::num::NonZero::get),
            ),
            log,
            stats: Stats::default(),
        }))
    }

    fn limit(&self) -> usize {
        self.profile.policy.hard_limit
    }

    /// The upstream URL for the normalised `path` (its `/v1` replaced by the upstream).
    fn target(&self, path: &str, query: Option<&str>) -> String {
        let path = match path.strip_prefix("/v1") {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
            _ => path,
        };
        match query {
            Some(q) => format!("{}{path}?{q}", self.upstream),
            None => format!("{}{path}", self.upstream),
        }
    }

    /// A seam bounding messages to at most `budget` (rounded down to a step); `None` when
    /// that leaves nothing.
    fn seam_for(&self, budget: usize) -> Option<Arc<Seam>> {
        let limit = self.limit();
        let step = (limit / BUDGET_STEPS).max(1);
        let budget = budget.min(limit) / step * step;
        if budget == 0 {
            return None;
        }
        let mut cache = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = cache.get(&budget) {
            return Some(Arc::clone(s));
        }
        let base = self.profile.policy;
        let policy = AssemblyPolicy {
            hard_limit: budget,
            trigger_margin: (base.trigger_margin as u128 * budget as u128 / limit as u128) as usize,
            ..base
        };
        let mut profile = self.profile.clone();
        profile.policy = policy;
        let seam = Arc::new(Seam::new(profile, None).ok()?);
        if cache.len() >= 2 * BUDGET_STEPS {
            cache.clear();
        }
        cache.insert(budget, Arc::clone(&seam));
        Some(seam)
    }
}

/// Checks the listen address and binds it.
pub async fn bind(config: &ProxyConfig) -> Result<tokio::net::TcpListener, Error> {
    if !config.listen.ip().is_loopback() && !config.allow_remote {
        return Err(Error::NotLoopback(config.listen));
    }
    Ok(tokio::net::TcpListener::bind(config.listen).await?)
}

/// The proxy's routes over `state`: one handler, which routes on the normalised path.
pub fn router(state: Arc<ProxyState>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}

/// Serves `state` on `listener` with the default [`ServeLimits`] until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<ProxyState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    serve_with(listener, state, ServeLimits::default(), shutdown).await
}

/// Serves `state` on `listener` within `limits` until `shutdown` resolves, then lets open
/// connections finish.
pub async fn serve_with(
    listener: tokio::net::TcpListener,
    state: Arc<ProxyState>,
    limits: ServeLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), Error> {
    let app = router(Arc::clone(&state));
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // Out of descriptors and the like: wait, do not spin.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let Ok(permit) = Arc::clone(&open).try_acquire_owned() else {
            state
                .stats
                .refused_connections
                .fetch_add(1, Ordering::Relaxed);
            tokio::spawn(busy(stream, limits.max_connections));
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    graceful.shutdown().await;
    Ok(())
}

/// Answers a connection over the cap with a 503 and closes it.
async fn busy(mut stream: tokio::net::TcpStream, cap: usize) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let body = serde_json::json!({"error": {
        "message": format!("acms proxy: too many open connections (the cap is {cap}); retry shortly"),
        "type": "server_overloaded", "param": null, "code": "too_many_connections"}})
    .to_string();
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent, so closing does not reset the answer away.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
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
fn context_length_error(t: &Terminated) -> Response {
    let message = format!(
        "This model's maximum context length is {} {}. However, your messages resulted in {} {} after acms could not bound them (outcome: {}). Please reduce the length of the messages.",
        t.hard_limit, t.unit, t.final_size, t.unit, t.outcome
    );
    let mut r = too_long(&message);
    set(&mut r, "x-acms-outcome", t.outcome.name());
    r
}

fn too_long(message: &str) -> Response {
    openai_error(
        StatusCode::BAD_REQUEST,
        message,
        "invalid_request_error",
        Some("context_length_exceeded"),
    )
}

fn set(r: &mut Response, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers_mut().insert(HeaderName::from_static(name), v);
    }
}

/// What the blocking part of a completion request produced.
#[derive(Debug)]
pub enum Prepared {
    /// Forward `body` (within the limit as [`count`] counts it).
    Forward {
        body: Bytes,
        changed: bool,
        outcome: &'static str,
        assembly_us: u64,
    },
    /// The assembly could not bound the messages.
    Terminated(Terminated, u64),
    /// Over the limit, or not countable: a 400 `context_length_exceeded` with this message.
    TooLong(String),
    /// Not a request acms can read: a 400 with this message.
    Bad(String),
}

/// Reads, counts and bounds one request body for `endpoint` (CPU work: runs on the
/// blocking pool). The fuzz target's entry point.
pub fn prepare(state: &ProxyState, endpoint: Endpoint, body: Bytes) -> Prepared {
    prepare_traced(state, endpoint, body, &mut Trace::default())
}

/// What a request's preparation measured, for its log line.
#[derive(Debug, Default)]
struct Trace {
    /// Counted outside the messages: fields, names, the reply priming.
    reserved: usize,
    /// Sizes counted whole (requests acms does not reduce); bounded requests take theirs
    /// from the seam's events, measured as the seam measures messages, plus `reserved`:
    /// counting the whole request once more only for the log would triple the proxy's
    /// overhead.
    size_before: Option<usize>,
    size_after: Option<usize>,
    /// The request's seam events (collected only when the log is on).
    events: Option<EventLog>,
}

impl Trace {
    fn observer(&self) -> Option<&dyn acms_compact::ProgressSink> {
        self.events
            .as_ref()
            .map(|e| e as &dyn acms_compact::ProgressSink)
    }

    /// Fills `record` with the sizes, assemblies and events.
    fn fill(self, record: &mut RequestRecord) {
        let (events, lines): (Vec<_>, Vec<_>) = self
            .events
            .map(|e| e.take())
            .unwrap_or_default()
            .into_iter()
            .unzip();
        let terminal = events
            .iter()
            .filter(|e| matches!(e.event, "completed" | "terminated"));
        record.assemblies = events.iter().filter(|e| e.event == "started").count();
        record.attempts = terminal.clone().filter_map(|e| e.attempts).sum();
        let mut terminal = terminal.peekable();
        let first = terminal.peek().and_then(|e| e.size_before);
        let last = terminal.last().and_then(|e| e.size_after);
        record.size_before = self.size_before.or(first.map(|n| n + self.reserved));
        record.size_after = self.size_after.or(last.map(|n| n + self.reserved));
        record.events = events;
        record.event_lines = lines;
    }
}

fn prepare_traced(
    state: &ProxyState,
    endpoint: Endpoint,
    body: Bytes,
    trace: &mut Trace,
) -> Prepared {
    let Ok(text) = std::str::from_utf8(&body) else {
        return Prepared::Bad("the request body is not UTF-8 JSON".into());
    };
    match endpoint {
        Endpoint::Chat => bound(state, text, &body, Format::OpenAi, trace),
        Endpoint::Messages => bound(state, text, &body, Format::Anthropic, trace),
        Endpoint::Responses | Endpoint::Legacy => count_only(state, text, &body, endpoint, trace),
        Endpoint::Other => Prepared::Bad("not a completion endpoint".into()),
    }
}

fn unit(state: &ProxyState) -> &'static str {
    state.profile.meter.unit().label()
}

/// Counts a request acms does not reduce: forwarded unchanged when within the limit.
fn count_only(
    state: &ProxyState,
    text: &str,
    body: &Bytes,
    endpoint: Endpoint,
    trace: &mut Trace,
) -> Prepared {
    let (name, needs) = match endpoint {
        Endpoint::Responses => ("/responses", "input"),
        _ => ("/completions", "prompt"),
    };
    let v: Value = match serde_json::from_str(text) {
        Ok(v @ Value::Object(_)) => v,
        _ => return Prepared::Bad(format!("a {name} request must be a JSON object")),
    };
    if v[needs].is_null() {
        return Prepared::Bad(format!("a {name} request needs `{needs}`"));
    }
    for key in ["previous_response_id", "conversation"] {
        if endpoint == Endpoint::Responses && !v[key].is_null() {
            return Prepared::TooLong(format!(
                "acms proxy: a /responses request with `{key}` refers to server-side state acms cannot count against the hard limit of {} {}; send the whole input instead",
                state.limit(),
                unit(state)
            ));
        }
    }
    let n = Counter::new(&state.profile.meter).request(&v);
    trace.size_before = Some(n);
    if n > state.limit() {
        return Prepared::TooLong(format!(
            "acms proxy: this {name} request is {n} {u}, over the hard limit of {l} {u}; acms bounds /chat/completions and /messages but does not reduce {name} input: shorten it or use /chat/completions",
            u = unit(state),
            l = state.limit()
        ));
    }
    trace.size_after = Some(n);
    Prepared::Forward {
        body: body.clone(),
        changed: false,
        outcome: "within_limit",
        assembly_us: 0,
    }
}

/// Bounds a chat (`format`) request: its messages get the limit less the other fields.
fn bound(
    state: &ProxyState,
    text: &str,
    body: &Bytes,
    format: Format,
    trace: &mut Trace,
) -> Prepared {
    let read = |text: &str| format::read(text, Some(format));
    let mut doc = match read(text) {
        Ok(d) => d,
        // Our errors name positions and kinds, never content; a client has no `--format`
        // to pass, so a body that is not JSON is said in its own words.
        Err(acms_compact::Error::Json { line, column }) => {
            return Prepared::Bad(format!(
                "the request body is not valid JSON (line {line}, column {column})"
            ));
        }
        Err(e) => return Prepared::Bad(format!("acms could not read the request's messages: {e}")),
    };
    // The same document as a value, for counting (a body with lone surrogates parses only
    // as the reader repaired it).
    let v: Value =
        serde_json::from_str(text).unwrap_or_else(|_| format::to_value(&doc, &doc.conversation));
    let counter = Counter::new(&state.profile.meter);
    let limit = state.limit();
    let u = unit(state);
    // Everything but the messages the seam measures: fields, names, the reply priming.
    let mut fixed: Vec<(&'static str, usize)> = counter
        .fields(&v)
        .into_iter()
        // Anthropic's `system` is read as messages: the seam measures it.
        .filter(|(k, _)| !(format == Format::Anthropic && *k == "system"))
        .collect();
    let names: usize = v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| counter.name(m))
        .sum();
    if names > 0 {
        fixed.push(("name", names));
    }
    let reserved: usize = fixed.iter().map(|(_, n)| n).sum::<usize>() + count::REPLY_PRIMING;
    trace.reserved = reserved;
    if reserved >= limit {
        let list: Vec<String> = fixed
            .iter()
            .map(|(k, n)| format!("{k} ({n} {u})"))
            .collect();
        return Prepared::TooLong(format!(
            "acms proxy: the request's {} alone come to {reserved} {u}, leaving no room for messages under the hard limit of {limit} {u}; shorten them",
            list.join(", ")
        ));
    }
    let mut budget = limit - reserved;
    let mut assembly_us = 0;
    for attempt in 0..=BUDGET_RETRIES {
        if attempt > 0 {
            doc = match read(text) {
                Ok(d) => d,
                Err(e) => return Prepared::Bad(format!("acms could not read the request: {e}")),
            };
        }
        let Some(seam) = state.seam_for(budget) else {
            break;
        };
        let start = Instant::now();
        // The writer needs the document's sources, not its conversation: move the messages.
        let messages = std::mem::take(&mut doc.conversation.messages);
        let result = seam.prepare_observed(None, messages, trace.observer());
        assembly_us += start.elapsed().as_micros() as u64;
        let (out, changed, outcome) = match result {
            Ok(p) if !p.changed => (body.clone(), false, p.diagnostics.outcome.name()),
            Ok(p) => {
                let outcome = p.diagnostics.outcome.name();
                let out = format::write_compact(&doc, &Conversation::new(p.messages));
                (Bytes::from(out), true, outcome)
            }
            Err(CompactError::Terminated(mut t)) => {
                // Report against the configured limit, everything counted.
                t.hard_limit = limit;
                t.final_size = t.final_size.saturating_add(reserved);
                return Prepared::Terminated(t, assembly_us);
            }
            Err(e) => return Prepared::Bad(format!("acms could not bound the request: {e}")),
        };
        // The whole body as the provider counts it, before it may leave.
        let total = if changed {
            serde_json::from_slice::<Value>(&out).map_or(usize::MAX, |w| counter.request(&w))
        } else {
            counter.request(&v)
        };
        if total <= limit {
            return Prepared::Forward {
                body: out,
                changed,
                outcome,
                assembly_us,
            };
        }
        budget = budget
            .saturating_sub(total - limit)
            .saturating_sub(budget / 20);
    }
    Prepared::TooLong(format!(
        "acms proxy: the request could not be bounded under the hard limit of {limit} {u} with its other fields ({reserved} {u}); shorten the messages"
    ))
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
    target: String,
    headers: &HeaderMap,
    body: Bytes,
    record: &mut RequestRecord,
) -> Response {
    record.bytes_out = Some(body.len());
    let mut req = state.client.request(method, target);
    for (name, value) in headers {
        if !hop_by_hop(name) {
            req = req.header(name, value);
        }
    }
    let resp = match req.body(body).send().await {
        Ok(r) => r,
        Err(_) => {
            state.stats.upstream_errors.fetch_add(1, Ordering::Relaxed);
            record.outcome = "upstream_error".into();
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
        record.outcome = "upstream_error".into();
        openai_error(
            StatusCode::BAD_GATEWAY,
            "acms proxy: the upstream answer could not be relayed",
            "upstream_error",
            None,
        )
    })
}

fn bad_request(state: &ProxyState, message: &str, record: &mut RequestRecord) -> Response {
    state.stats.bad_requests.fetch_add(1, Ordering::Relaxed);
    record.outcome = "bad_request".into();
    openai_error(
        StatusCode::BAD_REQUEST,
        message,
        "invalid_request_error",
        None,
    )
}

async fn handle(
    State(state): State<Arc<ProxyState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let received = Instant::now();
    let mut record = RequestRecord {
        method: method.to_string(),
        bytes_in: body.len(),
        ..RequestRecord::default()
    };
    let response = route(&state, method, &uri, headers, body, &mut record).await;
    if state.log.enabled() {
        record.status = response.status().as_u16();
        record.ms = received.elapsed().as_secs_f64() * 1e3;
        state.log.write(&record);
    }
    response
}

async fn route(
    state: &Arc<ProxyState>,
    method: Method,
    uri: &Uri,
    headers: HeaderMap,
    body: Bytes,
    record: &mut RequestRecord,
) -> Response {
    let path = match path::normalize(uri.path()) {
        Ok(p) => p,
        Err(e) => {
            // The raw path is what an attacker chose: it is not logged.
            record.path = "(invalid)".into();
            return bad_request(state, &format!("acms proxy: {e}"), record);
        }
    };
    record.path.clone_from(&path);
    let target = state.target(&path, uri.query());
    record.outcome = "passed_through".into();
    match path::endpoint(&path) {
        Endpoint::Other => forward(state, method, target, &headers, body, record).await,
        endpoint if method == Method::POST => {
            complete(Arc::clone(state), endpoint, target, headers, body, record).await
        }
        // Reading stored completions and the like carries no prompt.
        _ if body.is_empty() => forward(state, method, target, &headers, body, record).await,
        _ => bad_request(
            state,
            &format!(
                "acms proxy: a {method} with a body to a completion endpoint is not forwarded"
            ),
            record,
        ),
    }
}

async fn complete(
    state: Arc<ProxyState>,
    endpoint: Endpoint,
    target: String,
    headers: HeaderMap,
    body: Bytes,
    record: &mut RequestRecord,
) -> Response {
    let received = Instant::now();
    state.stats.requests.fetch_add(1, Ordering::Relaxed);
    let s = Arc::clone(&state);
    let logging = state.log.enabled();
    // Wait for a core before handing the work to the blocking pool: at most one request per
    // core is being read, bounded and written at a time; the rest queue here, in order.
    let permit = state.cpu.acquire().await;
    let queue_us = received.elapsed().as_micros() as u64;
    let work = move || {
        let mut trace = Trace {
            events: logging.then(EventLog::default),
            ..Trace::default()
        };
        let prepared = prepare_traced(&s, endpoint, body, &mut trace);
        (prepared, trace)
    };
    let (prepared, trace) = match tokio::task::spawn_blocking(work).await {
        Ok(p) => p,
        Err(_) => (
            Prepared::Bad("acms could not bound the request".into()),
            Trace::default(),
        ),
    };
    drop(permit);
    trace.fill(record);
    record.unit = Some(unit(&state));
    record.hard_limit = Some(state.limit());
    match prepared {
        Prepared::Bad(message) => bad_request(&state, &message, record),
        Prepared::TooLong(message) => {
            state.stats.terminated.fetch_add(1, Ordering::Relaxed);
            record.outcome = "context_length_exceeded".into();
            let mut r = too_long(&message);
            set(&mut r, "x-acms-queue-us", &queue_us.to_string());
            r
        }
        Prepared::Terminated(t, assembly_us) => {
            state.stats.terminated.fetch_add(1, Ordering::Relaxed);
            record.outcome = t.outcome.name().into();
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
            record.outcome = outcome.into();
            let overhead_us = (received.elapsed().as_micros() as u64)
                .saturating_sub(assembly_us)
                .saturating_sub(queue_us);
            let mut r = forward(&state, Method::POST, target, &headers, body, record).await;
            set(&mut r, "x-acms-outcome", outcome);
            set(&mut r, "x-acms-assembly-us", &assembly_us.to_string());
            set(&mut r, "x-acms-queue-us", &queue_us.to_string());
            set(&mut r, "x-acms-overhead-us", &overhead_us.to_string());
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn userinfo_is_redacted() {
        assert_eq!(
            redact_url("https://user:secret@api.example.com/v1"),
            "https://***@api.example.com/v1"
        );
        assert_eq!(redact_url("http://k@h:8080"), "http://***@h:8080");
        assert_eq!(
            redact_url("https://api.openai.com/v1"),
            "https://api.openai.com/v1"
        );
        assert_eq!(redact_url("https://h/v1/a@b"), "https://h/v1/a@b");
    }
}
