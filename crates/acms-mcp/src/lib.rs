//! acms as a Model Context Protocol server, on the official Rust SDK (`rmcp`): the
//! [`AcmsServer`] exposes one MCP tool per call of the [`acms::Workspace`] API — `context`,
//! `search`, `expand`, `plan_start`, `plan_phase`, `plan_child`, `plan_decide`,
//! `plan_close`, `plan_history` — plus `compact` ([`acms::compact`]). [`serve_stdio_opening`]
//! runs it over stdin/stdout until the client closes stdin.
//!
//! What a host can rely on:
//! - **Start-up.** `initialize` is answered at once; the workspace opens (and a repository
//!   without an index is indexed) on its own thread ([`open`]). A tool call that needs it waits
//!   for the symbol pass, sending MCP progress notifications when the call carries a
//!   `progressToken`; the server also logs each step (`notifications/message`). Until the
//!   vectors are computed, results come from keyword and graph retrieval and say so.
//! - **Strict arguments.** Every argument is checked before anything runs ([`args`]): one
//!   error line per mistake naming the field and what it accepts; a value the server lowers
//!   (a budget above the maximum, a search limit) is reported in the result's `caps`.
//! - **Bounded results.** Each tool's result has a size bound in tokens, documented in its
//!   description and kept by cutting lists, with what was left out counted ([`reply`]).
//! - **Ids in the text.** Every block of a context starts with `# path:start-end · names ·
//!   depth d`; `expand` and `plan_decide` take that `path:start-end` (or the header line, a
//!   name shown in it, or a node id).
//! - **Declared shapes.** Each tool has an input schema, an output schema (its result's
//!   structured content) and annotations telling read-only tools from those that record plans.
//!
//! Protocol problems (unknown tool, malformed request) are JSON-RPC errors; a failed call is
//! an MCP tool error whose text tells the model what to do next; the server keeps serving.
//! Frames are read by [`frame::FrameTransport`], not by rmcp's stdio transport: every request
//! gets exactly one answer, malformed and oversized frames (over [`frame::MAX_FRAME_BYTES`])
//! included. Nothing but protocol messages is written to stdout.
//!
//! This crate owns no retrieval logic: arguments in, one workspace call, results out.

pub mod args;
pub mod frame;
mod history;
mod log;
pub mod open;
pub mod params;
pub mod reply;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use acms::{ContextConfig, PhaseRequest, Query, TokenCounter, Tokenizer, Workspace};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ProgressNotificationParam,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::Value;

pub use open::{OpenSpec, Opener, Opening, Stage, Status};

use args::{Args, Limits};
use open::{Shared, Slot};
use reply::{
    ContextOut, DEFAULT_MAX_TOKENS, DecideOut, DecisionOut, ExpandOut, HistoryOut, HitOut,
    MIN_MAX_TOKENS, MemoryOut, PhaseOut, PlanOut, PlanResult, SMALL_RESULT, STATUS_BLOCK,
    SearchOut, error_text,
};

/// Errors of running the server (not of its tools: those are MCP tool errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("cannot start the MCP server runtime: {0}")]
    Runtime(#[from] std::io::Error),
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// The default and largest number of `search` hits.
const SEARCH_LIMIT: usize = 20;
const SEARCH_LIMIT_MAX: usize = 100;
/// The default `expand` budget.
const EXPAND_BUDGET: usize = 4_000;
/// Progress notifications of a waiting call are at most this frequent.
const PROGRESS_EVERY: Duration = Duration::from_millis(200);

/// The acms MCP server.
#[derive(Clone)]
pub struct AcmsServer {
    shared: Arc<Shared>,
    limits: Limits,
    tokenizer: Tokenizer,
    /// The configured strategies, the names `search` accepts.
    strategies: Arc<Vec<String>>,
    /// The least severe log level the client wants (`logging/setLevel`), as [`log::Level::rank`].
    log_level: Arc<AtomicU8>,
    tool_router: ToolRouter<AcmsServer>,
}

/// What a tool call on the workspace knows besides its arguments.
struct Env {
    tokenizer: Tokenizer,
    /// Notes every result carries now (vectors still being computed, or failed).
    notes: Vec<String>,
    /// Whether the engine's own semantic note is superseded by one of `notes`.
    embedding: bool,
}

impl Env {
    /// The engine's notes, with the semantic one replaced while the vectors are computed.
    fn notes(&self, engine: &[String]) -> Vec<String> {
        let mut out: Vec<String> = engine
            .iter()
            .filter(|n| !(self.embedding && n.starts_with("semantic-embedding:")))
            .map(|n| reply::for_user(n.clone()))
            .collect();
        out.extend(self.notes.iter().cloned());
        out
    }
}

impl AcmsServer {
    /// A server on an opened workspace.
    pub fn new(ws: Workspace) -> AcmsServer {
        let config = ws.config().clone();
        Self::with_shared(&config, Shared::new(Slot::Ready(Box::new(ws))))
    }

    /// A server whose workspace `open` opens on its own thread, started now; a call that needs
    /// it waits until `open` hands it over ([`Opening::install`]) and an error there is every
    /// call's tool error. `config` is the configuration the workspace will have (arguments are
    /// checked against it before the call waits).
    pub fn opening(config: &ContextConfig, open: Opener) -> Result<AcmsServer, Error> {
        let shared = Shared::new(Slot::Waiting);
        let server = Self::with_shared(config, Arc::clone(&shared));
        let opener = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("acms-open".into())
            .spawn(move || {
                let shared = opener;
                let opening = Opening::new(shared);
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| open(&opening)));
                // A waiting call must never wait forever.
                match ran {
                    Err(_) => opening.fail("internal error: opening the workspace panicked".into()),
                    Ok(()) if !opening.installed() && !opening.failed() => {
                        opening.fail("internal error: the workspace was never opened".into())
                    }
                    Ok(()) => {}
                }
            })?;
        *server
            .shared
            .opener
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(handle);
        Ok(server)
    }

    fn with_shared(config: &ContextConfig, shared: Arc<Shared>) -> AcmsServer {
        AcmsServer {
            shared,
            limits: Limits::from_config(config),
            tokenizer: config.tokenizer,
            strategies: Arc::new(config.strategies.enabled.clone()),
            log_level: Arc::new(AtomicU8::new(log::Level::Info.rank())),
            tool_router: Self::tool_router(),
        }
    }

    /// The current opening status.
    pub fn status(&self) -> Status {
        self.shared.status.borrow().clone()
    }

    /// Waits until the workspace can serve a call, sending progress to the call's token.
    async fn ready(&self, ctx: &RequestContext<RoleServer>) -> Result<Status, String> {
        let mut rx = self.shared.status.subscribe();
        let token = ctx.meta.get_progress_token();
        let mut last = -1.0;
        loop {
            let status = rx.borrow_and_update().clone();
            if let Stage::Failed(why) = &status.stage {
                return Err(why.clone());
            }
            if status.servable() {
                return Ok(status);
            }
            if let Some(token) = &token {
                // Progress must increase from one notification to the next.
                let p = status.percent();
                if p > last {
                    last = p;
                    let note = ProgressNotificationParam::new(token.clone(), p)
                        .with_total(100.0)
                        .with_message(status.message());
                    let _ = ctx.peer.notify_progress(note).await;
                }
            }
            tokio::select! {
                changed = rx.changed() => {
                    if changed.is_err() {
                        return Err("internal error: the workspace opener went away".into());
                    }
                }
                () = ctx.ct.cancelled() => return Err("the call was cancelled".into()),
            }
            tokio::time::sleep(PROGRESS_EVERY).await;
        }
    }

    /// Waits for the workspace, then runs `f` on it on a blocking thread; its error becomes a
    /// tool error.
    async fn call(
        &self,
        ctx: &RequestContext<RoleServer>,
        f: impl FnOnce(&mut Workspace, &Env) -> Result<CallToolResult, String> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let status = match self.ready(ctx).await {
            Ok(s) => s,
            Err(why) => return Ok(tool_error(why)),
        };
        let mut notes: Vec<String> = status.semantic_note().into_iter().collect();
        let embedding = !notes.is_empty();
        if let Some(n) = self
            .shared
            .note
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            notes.push(n);
        }
        let env = Env {
            tokenizer: self.tokenizer,
            notes,
            embedding,
        };
        let shared = Arc::clone(&self.shared);
        Ok(blocking(move || {
            let mut slot = shared.slot();
            match &mut *slot {
                Slot::Ready(ws) => f(ws, &env),
                Slot::Failed(why) => Err(why.clone()),
                Slot::Waiting => Err("internal error: the workspace is not open".into()),
            }
        })
        .await)
    }

    /// The shape of every workspace tool: with the arguments `parse_args` read, runs `work` on
    /// the workspace ([`AcmsServer::call`]); with mistakes in them, answers those.
    async fn run<T: Send + 'static>(
        &self,
        ctx: &RequestContext<RoleServer>,
        parsed: Result<T, Box<CallToolResult>>,
        work: impl FnOnce(&mut Workspace, &Env, T) -> Result<CallToolResult, String> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        match parsed {
            Ok(args) => self.call(ctx, move |ws, env| work(ws, env, args)).await,
            Err(mistakes) => Ok(*mistakes),
        }
    }

    /// Sends the opening steps to the client as log messages until the workspace is ready.
    async fn log_opening(self, peer: rmcp::Peer<RoleServer>) {
        let mut rx = self.shared.status.subscribe();
        let first = rx.borrow_and_update().clone();
        if first.stage == Stage::Ready {
            return;
        }
        let mut last: Option<(std::mem::Discriminant<Stage>, Instant)> = None;
        let mut status = first;
        loop {
            let stage = std::mem::discriminant(&status.stage);
            let due = match last {
                None => true,
                Some((s, at)) => s != stage || at.elapsed() >= Duration::from_secs(2),
            };
            if due {
                let level = match status.stage {
                    Stage::Failed(_) => log::Level::Error,
                    _ => log::Level::Info,
                };
                if level.rank() >= self.log_level.load(Ordering::Relaxed) {
                    log::send(&peer, level, status.message()).await;
                }
                last = Some((stage, Instant::now()));
            }
            if matches!(status.stage, Stage::Ready | Stage::Failed(_)) {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
            status = rx.borrow_and_update().clone();
        }
    }
}

/// A tool error: the message the model reads.
fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// Runs `f` on a blocking thread; its error (or panic) becomes a tool error.
async fn blocking(
    f: impl FnOnce() -> Result<CallToolResult, String> + Send + 'static,
) -> CallToolResult {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => r,
        Ok(Err(message)) => tool_error(message),
        Err(e) => tool_error(format!("internal error: {e}")),
    }
}

/// The `max_tokens` argument of the tools that bound a JSON result (`search`, `plan_history`).
fn max_tokens(a: &mut Args<'_>, limits: &Limits, caps: &mut Vec<String>) -> usize {
    args::bounded(
        a,
        "max_tokens",
        DEFAULT_MAX_TOKENS,
        MIN_MAX_TOKENS,
        limits.max,
        caps,
    )
}

/// A tool's arguments: `parse` reads them from `arguments`, then every mistake it or
/// [`Args`] found is the tool error ([`Args::finish`]), all at once.
fn parse_args<'a, T>(
    tool: &'static str,
    arguments: &'a JsonObject,
    known: &[&str],
    parse: impl FnOnce(&mut Args<'a>) -> Option<T>,
) -> Result<T, Box<CallToolResult>> {
    let mut a = Args::new(tool, arguments, known);
    let parsed = parse(&mut a);
    a.finish().map_err(|e| Box::new(tool_error(e)))?;
    // Without mistakes every required argument was read.
    parsed.ok_or_else(|| Box::new(tool_error("internal error: arguments".into())))
}

/// The result of the tools that start, branch or close a plan.
fn plan_result(plan: &acms::Plan, memory: &acms::TierReport) -> CallToolResult {
    json_result(&PlanResult {
        plan: PlanOut::from(plan),
        memory: MemoryOut::from(memory),
    })
}

/// A JSON result: the structured content, and the same JSON as its text.
fn json_result<T: serde::Serialize>(out: &T) -> CallToolResult {
    let text = reply::json(out);
    let value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(value);
    r
}

/// A text result (the context or expanded text first, then `status`) with `out` as its
/// structured content.
fn text_result<T: serde::Serialize>(
    text: String,
    status: Option<String>,
    out: &T,
) -> CallToolResult {
    let mut content = vec![ContentBlock::text(text)];
    if let Some(s) = status {
        content.push(ContentBlock::text(s));
    }
    let mut r = CallToolResult::success(content);
    r.structured_content = serde_json::to_value(out).ok();
    r
}

fn input<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    schema_for_input::<T>().unwrap_or_else(|_| Arc::new(JsonObject::new()))
}

fn parse_plan(a: &mut Args<'_>, key: &str) -> Option<acms::PlanId> {
    let raw = a.text(key, true)?;
    match raw.parse::<acms::PlanId>() {
        Ok(id) => Some(id),
        Err(_) => {
            a.error(format!(
                "{key}: `{}` is not a plan id: pass the id `plan_start` or `plan_child` returned (p1, p2, ...)",
                reply::preview(&raw, 40)
            ));
            None
        }
    }
}

fn parse_phase(a: &mut Args<'_>) -> Option<String> {
    let raw = a.text("phase", true)?;
    match acms::plan::check_phase_name(&raw) {
        Ok(name) => Some(name.to_string()),
        Err(_) => {
            a.error(
                "phase: one word or short phrase of at most 64 characters on one line (explore, design, implement, verify, ...)"
                    .into(),
            );
            None
        }
    }
}

/// Checks `files` and `symbols` against the index: a file named by a unique suffix is read
/// as that file (with a note), anything else not in the index is a mistake. When something is
/// missing the index is refreshed once first: the file may be new.
fn check_mentions(
    tool: &str,
    ws: &mut Workspace,
    files: &[String],
    symbols: &[String],
    notes: &mut Vec<String>,
) -> Result<Vec<String>, String> {
    let missing = |ws: &Workspace| {
        let corpus = ws.engine().retriever().corpus();
        files.iter().any(|f| corpus.module(f).is_none())
            || symbols.iter().any(|s| corpus.find_symbol(s).is_empty())
    };
    if missing(ws) {
        ws.refresh().map_err(|e| error_text(&e))?;
    }
    let corpus = ws.engine().retriever().corpus();
    let mut errors = Vec::new();
    let mut out = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        if corpus.module(f).is_some() {
            out.push(f.clone());
            continue;
        }
        match corpus.files_named(f).as_slice() {
            [one] => {
                notes.push(format!("files[{i}] `{f}` read as `{one}`"));
                out.push(one.to_string());
            }
            [] => errors.push(format!(
                "files[{i}]: `{f}` is not a file of the index: give a repository-relative path (e.g. src/app.py); `search` finds files by name"
            )),
            many => errors.push(format!(
                "files[{i}]: `{f}` names {} files: pass one of {}",
                many.len(),
                many.iter()
                    .take(5)
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    for (i, s) in symbols.iter().enumerate() {
        if corpus.find_symbol(s).is_empty() {
            errors.push(format!(
                "symbols[{i}]: no symbol named `{s}` in the index: give a simple or qualified name (e.g. `Client.send`); `search` finds symbols"
            ));
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(args::mistakes(tool, &errors))
    }
}

/// The status block after a context text: its size, how to expand a block, the caps and the
/// notes that matter; at most [`STATUS_BLOCK`] tokens.
fn status_block(out: &ContextOut, counter: &dyn TokenCounter) -> String {
    let mut s = format!(
        "[acms] {} of {} tokens, {} fragments{}. Each block starts with `# path:start-end · names · depth d`: pass that `path:start-end` to `expand` for the full text.",
        out.tokens,
        out.budget,
        out.manifest.len() + out.manifest_omitted,
        if out.dropped > 0 {
            format!(", {} more left out for the budget", out.dropped)
        } else {
            String::new()
        }
    );
    let lines = out.caps.iter().map(|c| format!("cap: {c}")).chain(
        out.notes
            .iter()
            .filter(|n| worth_saying(n))
            .map(|n| format!("note: {n}")),
    );
    for line in lines {
        let candidate = format!("{s}\n{}", reply::preview(&line, 400));
        if counter.count(&candidate) > STATUS_BLOCK {
            s.push_str("\n(more notes in the structured result)");
            break;
        }
        s = candidate;
    }
    s
}

/// Whether a note tells the model something: not the embedder in use, not an empty refresh.
fn worth_saying(note: &str) -> bool {
    if note.starts_with("refreshed 0 files") {
        return false;
    }
    if let Some(rest) = note.strip_prefix("semantic-embedding:") {
        return rest.contains("incomplete")
            || rest.contains("unavailable")
            || rest.contains("could not");
    }
    true
}

/// `expand` and `plan_decide` accept a location as the text shows it: strips a header line
/// (`# path:start-end · names · depth d`) to its location.
fn shown(target: &str) -> &str {
    let t = target.trim();
    let t = t.strip_prefix('#').map_or(t, str::trim);
    t.split(" · ").next().unwrap_or(t).trim()
}

/// `path:start-end` → (path, start, end).
fn split_location(t: &str) -> Option<(&str, u32, u32)> {
    let (path, range) = t.rsplit_once(':')?;
    let (a, b) = range.split_once('-')?;
    let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    (a >= 1 && a <= b && !path.is_empty()).then_some((path, a, b))
}

fn node_id(t: &str) -> Option<acms::NodeId> {
    (t.len() == 16)
        .then(|| acms::plan::hex_id::parse(t))
        .flatten()
}

/// Resolves an `expand` target to what the workspace takes: a line range, a node id.
fn expand_target(ws: &Workspace, raw: &str) -> Result<String, String> {
    let t = shown(raw);
    let corpus = ws.engine().retriever().corpus();
    if let Some(id) = node_id(t) {
        return match corpus.node(id) {
            Some(_) => Ok(id.to_string()),
            None => Err(format!(
                "target: no fragment with node id {t} in the index (it may have changed since): pass a `path:start-end` from a block header"
            )),
        };
    }
    if let Some((path, a, b)) = split_location(t) {
        return match corpus.file(path) {
            Some(_) => Ok(format!("{path}:{a}-{b}")),
            None => Err(format!(
                "target: `{path}` is not a file of the index: pass a `path:start-end` as a block header shows it"
            )),
        };
    }
    let found = if t.is_empty() {
        Vec::new()
    } else {
        corpus.find_symbol(t)
    };
    match found.as_slice() {
        [one] => Ok(one.id.to_string()),
        [] => Err(format!(
            "target: `{}` is not a location or symbol of the index: pass a `path:start-end` from a block header of a context, or a name shown in one",
            reply::preview(t, 80)
        )),
        many => Err(format!(
            "target: `{t}` names {} symbols: pass one of {}",
            many.len(),
            many.iter()
                .take(8)
                .map(|n| format!(
                    "`{}` ({})",
                    reply::location(&n.path, n.start_line, n.end_line),
                    n.qualified_name
                ))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// Resolves `plan_decide`'s fragments, as the phase's text shows them, to node ids of the
/// manifest of the phase's latest run.
fn decide_fragments(
    manifest: &[acms::FragmentRef],
    phase: &str,
    fragments: &[String],
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, f) in fragments.iter().enumerate() {
        let t = shown(f);
        if let Some(id) = node_id(t) {
            out.push(id.to_string());
            continue;
        }
        let found: Vec<&acms::FragmentRef> = match split_location(t) {
            Some((path, a, b)) => {
                let inside: Vec<_> = manifest
                    .iter()
                    .filter(|m| m.path == path && m.start_line >= a && m.end_line <= b)
                    .collect();
                if inside.is_empty() {
                    manifest
                        .iter()
                        .filter(|m| m.path == path && m.start_line <= b && m.end_line >= a)
                        .collect()
                } else {
                    inside
                }
            }
            None => {
                // A name as a header shows it: simple or qualified, `.` or `::`.
                let want = t.replace("::", ".");
                manifest
                    .iter()
                    .filter(|m| {
                        let have = m.name.replace("::", ".");
                        have == want || have.ends_with(&format!(".{want}"))
                    })
                    .collect()
            }
        };
        if found.is_empty() {
            errors.push(format!(
                "fragments[{i}]: `{}` is not in the context of phase `{phase}`: pass a `path:start-end` from one of its block headers (`plan_history` with `phase` lists them)",
                reply::preview(t, 80)
            ));
        }
        out.extend(found.iter().map(|m| m.node.to_string()));
    }
    if errors.is_empty() {
        out.dedup();
        Ok(out)
    } else {
        Err(args::mistakes("plan_decide", &errors))
    }
}

#[tool_router]
impl AcmsServer {
    #[tool(
        title = "Context for a task",
        description = "Assemble the code most relevant to a task within a token budget (changed files are re-indexed first). Returns the context text (at most `budget` tokens; each block starts with `# path:start-end · names · depth d`), a status block (at most 400 tokens: size, caps applied, notes), and a manifest (structured content, at most a quarter of the budget or 1000 tokens).",
        input_schema = input::<params::ContextParams>(),
        output_schema = schema_for_output::<ContextOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn context(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args(
            "context",
            &arguments,
            &[
                "task",
                "budget",
                "window",
                "tool_definitions",
                "files",
                "symbols",
            ],
            |a| {
                let task = a.text("task", true);
                let budget = args::budget(a, self.limits);
                let files = a.list("files");
                let symbols = a.list("symbols");
                Some((task?, budget?, files, symbols))
            },
        );
        self.run(&ctx, parsed, |ws, env, (task, budget, files, symbols)| {
            let t = Instant::now();
            let mut notes = Vec::new();
            let files = check_mentions("context", ws, &files, &symbols, &mut notes)?;
            let query = Query {
                text: task,
                mentioned_files: files,
                mentioned_symbols: symbols,
                previous: Vec::new(),
            };
            let c = ws
                .context(query, acms::BudgetSpec::tokens(budget.tokens))
                .map_err(|e| error_text(&e))?;
            notes.extend(env.notes(&c.context.diagnostics.notes));
            let mut out = ContextOut::new(&c.context, budget.caps, notes);
            out.refreshed = c.refresh.refreshed;
            out.millis = t.elapsed().as_secs_f64() * 1000.0;
            let counter = env.tokenizer.counter();
            let bound = reply::manifest_bound(out.budget);
            reply::bound_context(&mut out, bound, &counter);
            let status = status_block(&out, &counter);
            Ok(text_result(c.context.text, Some(status), &out))
        })
        .await
    }

    #[tool(
        title = "Search the index",
        description = "Raw retrieval hits for a query, best first, each with its strategy and the reason it was found (matched terms, similarity, graph path): to see what `context` draws from. The result holds at most `max_tokens` tokens (default 4000).",
        input_schema = input::<params::SearchParams>(),
        output_schema = schema_for_output::<SearchOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args(
            "search",
            &arguments,
            &["query", "strategies", "limit", "max_tokens"],
            |a| {
                let query = a.text("query", true);
                let strategies = a.list("strategies");
                for (i, s) in strategies.iter().enumerate() {
                    if !self.strategies.contains(s) {
                        a.error(format!(
                            "strategies[{i}]: `{s}` is not a strategy of this server (known: {})",
                            self.strategies.join(", ")
                        ));
                    }
                }
                let mut caps = Vec::new();
                let limit = args::bounded(a, "limit", SEARCH_LIMIT, 1, SEARCH_LIMIT_MAX, &mut caps);
                let max_tokens = max_tokens(a, &self.limits, &mut caps);
                Some((query?, strategies, caps, limit, max_tokens))
            },
        );
        self.run(&ctx, parsed, |ws, env, args| {
            let (query, strategies, caps, limit, max_tokens) = args;
            let r = ws
                .search(&Query::new(query), &strategies, limit)
                .map_err(|e| error_text(&e))?;
            let hits: Vec<HitOut> = r
                .hits
                .iter()
                .map(|h| HitOut {
                    place: reply::Place::new(&h.path, h.start_line, h.end_line),
                    node: h.node.to_string(),
                    name: h.name.clone(),
                    kind: h.kind.clone(),
                    relevance: (h.relevance * 1000.0).round() / 1000.0,
                    strategy: h.strategy.clone(),
                    reason: serde_json::to_value(&h.reason).unwrap_or(Value::Null),
                })
                .collect();
            let mut out = SearchOut {
                hits: Vec::new(),
                hits_omitted: 0,
                strategies: r
                    .runs
                    .iter()
                    .map(|run| serde_json::to_value(run).unwrap_or(Value::Null))
                    .collect(),
                caps,
                notes: env.notes(&[]),
                refreshed: r.refresh.refreshed,
            };
            let counter = env.tokenizer.counter();
            let n = hits.len();
            let kept = reply::keep_within(n, |k| {
                out.hits = hits[..k].to_vec();
                out.hits_omitted = n - k;
                reply::tokens(&out, &counter) <= max_tokens
            });
            out.hits = hits[..kept].to_vec();
            out.hits_omitted = n - kept;
            Ok(json_result(&out))
        })
        .await
    }

    #[tool(
        title = "Expand a fragment",
        description = "The full text of what a context shows: a `path:start-end` from a block header (or the header line itself), a symbol name shown in one, or a node id; at most `budget` tokens (default 4000; a symbol falls back to its skeleton or signature to fit, a line range is cut at a line end).",
        input_schema = input::<params::ExpandParams>(),
        output_schema = schema_for_output::<ExpandOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn expand(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args("expand", &arguments, &["target", "budget"], |a| {
            let target = a.text("target", true);
            let mut caps = Vec::new();
            let budget = args::bounded(a, "budget", EXPAND_BUDGET, 1, self.limits.max, &mut caps);
            Some((target?, caps, budget))
        });
        self.run(&ctx, parsed, |ws, env, (target, caps, budget)| {
            let resolved =
                expand_target(ws, &target).map_err(|e| args::mistakes("expand", &[e]))?;
            let e = ws.expand(&resolved, budget).map_err(|e| {
                let text = error_text(&e);
                if text.contains("too small") {
                    format!("{text}: call `expand` again with a larger `budget`")
                } else {
                    text
                }
            })?;
            let out = ExpandOut {
                place: reply::Place::new(&e.path, e.start_line, e.end_line),
                name: e.name.clone(),
                node: e.node.map(|n| n.to_string()),
                depth: e.depth.map(acms::Depth::value),
                tokens: e.tokens,
                truncated: e.truncated,
                caps,
                notes: env.notes(&[]),
            };
            Ok(text_result(e.text, None, &out))
        })
        .await
    }

    #[tool(
        title = "Start a plan",
        description = "Start a plan for a task; returns the plan id to pass to plan_phase, plan_child, plan_decide, plan_close and plan_history (result at most 1000 tokens).",
        input_schema = input::<params::PlanStartParams>(),
        output_schema = schema_for_output::<PlanResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn plan_start(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args("plan_start", &arguments, &["task"], |a| {
            a.text("task", true)
        });
        self.run(&ctx, parsed, |ws, _, task| {
            let (plan, memory) = ws.start_plan(&task).map_err(|e| error_text(&e))?;
            Ok(plan_result(&plan, &memory))
        })
        .await
    }

    #[tool(
        title = "Start a child plan",
        description = "Start a child plan of a plan: its phases inherit the parent's latest context as a signature skeleton (15% of their budget). Result at most 1000 tokens.",
        input_schema = input::<params::PlanChildParams>(),
        output_schema = schema_for_output::<PlanResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn plan_child(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args("plan_child", &arguments, &["parent", "task"], |a| {
            let parent = parse_plan(a, "parent");
            let task = a.text("task", true);
            Some((parent?, task?))
        });
        self.run(&ctx, parsed, |ws, _, (parent, task)| {
            let (plan, memory) = ws.child_plan(parent, &task).map_err(|e| error_text(&e))?;
            Ok(plan_result(&plan, &memory))
        })
        .await
    }

    #[tool(
        title = "Context for a plan phase",
        description = "The context for a named phase of a plan (explore, design, implement, verify, ...): re-indexes changed files, assembles within the budget or model window, and records the phase. Returns the context text (at most `budget` tokens), a status block (at most 400 tokens) and the manifest (structured content, at most a quarter of the budget or 1000 tokens).",
        input_schema = input::<params::PlanPhaseParams>(),
        output_schema = schema_for_output::<PhaseOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn plan_phase(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args(
            "plan_phase",
            &arguments,
            &[
                "plan",
                "phase",
                "focus",
                "budget",
                "window",
                "tool_definitions",
                "files",
                "symbols",
            ],
            |a| {
                let plan = parse_plan(a, "plan");
                let phase = parse_phase(a);
                let focus = a.text("focus", false).unwrap_or_default();
                let budget = args::budget(a, self.limits);
                let files = a.list("files");
                let symbols = a.list("symbols");
                Some((plan?, phase?, focus, budget?, files, symbols))
            },
        );
        self.run(&ctx, parsed, |ws, env, args| {
            let (plan, phase, focus, budget, files, symbols) = args;
            let t = Instant::now();
            let mut notes = Vec::new();
            let files = check_mentions("plan_phase", ws, &files, &symbols, &mut notes)?;
            let request = PhaseRequest {
                focus,
                budget: acms::BudgetSpec::tokens(budget.tokens),
                mentioned_files: files,
                mentioned_symbols: symbols,
            };
            let r = ws
                .phase(plan, &phase, request)
                .map_err(|e| error_text(&e))?;
            let changes = r.changes.as_ref().map(acms::PhaseChanges::line);
            notes.extend(changes.clone());
            notes.extend(env.notes(&r.context.diagnostics.notes));
            let mut context = ContextOut::new(&r.context, budget.caps, notes);
            context.refreshed = r.refresh.refreshed;
            context.millis = t.elapsed().as_secs_f64() * 1000.0;
            let counter = env.tokenizer.counter();
            let bound = reply::manifest_bound(context.budget);
            let mut out = PhaseOut {
                plan: r.plan.id.to_string(),
                phase: r.phase.name.clone(),
                seq: r.phase.seq,
                inherited_tokens: r.inherited_tokens,
                seeded_by: r.phase.inputs.seeded_by,
                changes,
                context,
                memory: MemoryOut::from(&r.memory),
            };
            let all = std::mem::take(&mut out.context.manifest);
            let n = all.len();
            let kept = reply::keep_within(n, |k| {
                out.context.manifest = all[..k].to_vec();
                out.context.manifest_omitted = n - k;
                reply::tokens(&out, &counter) <= bound
            });
            out.context.manifest = all[..kept].to_vec();
            out.context.manifest_omitted = n - kept;
            let status = status_block(&out.context, &counter);
            Ok(text_result(r.context.text, Some(status), &out))
        })
        .await
    }

    #[tool(
        title = "Record a decision",
        description = "Record a decision taken in a phase: notes, and the fragments it is about as that phase's text shows them (`path:start-end` from a block header, or a name; all of the phase's fragments when none). Recent decisions are warm memory, older ones cold. Result at most 1000 tokens.",
        input_schema = input::<params::PlanDecideParams>(),
        output_schema = schema_for_output::<DecideOut>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn plan_decide(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args(
            "plan_decide",
            &arguments,
            &["plan", "phase", "notes", "fragments"],
            |a| {
                let plan = parse_plan(a, "plan");
                let phase = parse_phase(a);
                let notes = a.text("notes", false).filter(|n| !n.trim().is_empty());
                let fragments = a.list("fragments");
                Some((plan?, phase?, notes, fragments))
            },
        );
        self.run(&ctx, parsed, |ws, env, (plan, phase, notes, fragments)| {
            let ids = if fragments.is_empty() {
                Vec::new()
            } else {
                let (history, _) = ws.history(plan).map_err(|e| error_text(&e))?;
                let Some(run) = history
                    .phases
                    .iter()
                    .filter(|p| p.name == phase)
                    .max_by_key(|p| p.seq)
                else {
                    let mut known: Vec<&str> =
                        history.phases.iter().map(|p| p.name.as_str()).collect();
                    known.dedup();
                    return Err(error_text(&acms::Error::Plan(
                        acms::plan::Error::UnknownPhase {
                            plan: plan.to_string(),
                            phase,
                            known: if known.is_empty() {
                                "none".into()
                            } else {
                                known.join(", ")
                            },
                        },
                    )));
                };
                decide_fragments(&run.manifest, &phase, &fragments)?
            };
            let (d, memory) = ws
                .decide(plan, &phase, notes.as_deref(), &ids)
                .map_err(|e| error_text(&e))?;
            let recorded = format!(
                "decision {} recorded in phase `{}` of plan {} on {} {}{}",
                d.id,
                d.phase,
                d.plan,
                d.manifest.len(),
                if fragments.is_empty() {
                    "fragments (all of the phase's context: name some with `fragments` to narrow it)"
                } else {
                    "fragments"
                },
                if d.notes.is_none() { ", without notes" } else { "" }
            );
            let mut out = DecideOut {
                decision: DecisionOut::from(&d),
                recorded,
                memory: MemoryOut::from(&memory),
            };
            let counter = env.tokenizer.counter();
            let refs = std::mem::take(&mut out.decision.refs);
            let kept = reply::keep_within(refs.len(), |k| {
                out.decision.refs = refs[..k].to_vec();
                reply::tokens(&out, &counter) <= SMALL_RESULT
            });
            out.decision.refs = refs[..kept].to_vec();
            Ok(json_result(&out))
        })
        .await
    }

    #[tool(
        title = "Close a plan",
        description = "Close a plan: its decisions leave the hot tier; its history stays readable. Result at most 1000 tokens.",
        input_schema = input::<params::PlanCloseParams>(),
        output_schema = schema_for_output::<PlanResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn plan_close(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args("plan_close", &arguments, &["plan"], |a| {
            parse_plan(a, "plan")
        });
        self.run(&ctx, parsed, |ws, _, plan| {
            let (plan, memory) = ws.close_plan(plan).map_err(|e| error_text(&e))?;
            Ok(plan_result(&plan, &memory))
        })
        .await
    }

    #[tool(
        title = "Plan history",
        description = "A summary of a plan: its phase runs and decisions (with fragment counts and tiers) and child plans; with `phase`, also that phase's fragments. At most `max_tokens` tokens (default 4000): the oldest phases and decisions are left out past it and counted.",
        input_schema = input::<params::PlanHistoryParams>(),
        output_schema = schema_for_output::<HistoryOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn plan_history(
        &self,
        arguments: JsonObject,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args(
            "plan_history",
            &arguments,
            &["plan", "phase", "max_tokens"],
            |a| {
                let plan = parse_plan(a, "plan");
                // A run number may come as a number or a string; anything else is a phase name.
                let phase = match a.value("phase") {
                    Some(Value::Number(n)) => Some(n.to_string()),
                    _ => a.text("phase", false),
                };
                let mut caps = Vec::new();
                let max_tokens = max_tokens(a, &self.limits, &mut caps);
                Some((plan?, phase, caps, max_tokens))
            },
        );
        self.run(&ctx, parsed, |ws, env, (plan, phase, caps, max_tokens)| {
            let (h, memory) = ws.history(plan).map_err(|e| error_text(&e))?;
            let counter = env.tokenizer.counter();
            let out = history::history_out(
                &h,
                &memory,
                plan,
                phase.as_deref(),
                caps,
                max_tokens,
                &counter,
            )?;
            Ok(json_result(&out))
        })
        .await
    }

    #[tool(
        title = "Compact a conversation",
        description = "Compact a conversation (OpenAI or Anthropic messages JSON) to fit a token limit; returns the compacted conversation (at most `limit` tokens as acms counts messages) and figures (under 300 tokens more).",
        input_schema = input::<params::CompactParams>(),
        output_schema = schema_for_output::<reply::CompactOut>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn compact(&self, arguments: JsonObject) -> Result<CallToolResult, ErrorData> {
        let parsed = parse_args(
            "compact",
            &arguments,
            &["conversation", "limit", "format"],
            compact_args,
        );
        let (conversation, limit, format) = match parsed {
            Ok(p) => p,
            Err(e) => return Ok(*e),
        };
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        Ok(blocking(move || compact(conversation, limit, format)).await)
    }
}

/// The `compact` tool's arguments: the conversation, its token limit, its format if named.
fn compact_args(a: &mut Args<'_>) -> Option<(Value, u64, Option<String>)> {
    let conversation = match a.value("conversation") {
        None => {
            a.error("conversation: missing (an array of messages, an object with `messages`, or that JSON as a string)".into());
            None
        }
        Some(v @ (Value::Array(_) | Value::Object(_) | Value::String(_))) => Some(v.clone()),
        Some(other) => {
            a.error(format!(
                "conversation: expected an array of messages, an object with `messages`, or that JSON as a string, got {}",
                args::describe(other)
            ));
            None
        }
    };
    let limit = match a.value("limit") {
        None => {
            a.error(
                "limit: missing (the token limit for the compacted conversation, at least 1)"
                    .into(),
            );
            None
        }
        Some(_) => a.count("limit", "accepted: at least 1 token"),
    };
    if limit == Some(0) {
        a.error("limit: 0 is below the minimum of 1 token".into());
    }
    let format = a.text("format", false);
    if let Some(f) = &format
        && f != "openai"
        && f != "anthropic"
    {
        a.error(format!(
            "format: `{f}` is not a conversation format: use openai or anthropic"
        ));
    }
    Some((conversation?, limit?, format))
}

/// The `compact` tool: one call of [`acms::compact::Compactor`].
fn compact(
    conversation: Value,
    limit: usize,
    format: Option<String>,
) -> Result<CallToolResult, String> {
    use acms::compact::{CompactConfig, Compactor, Error as CompactError, Measured, Meter, format};
    let text = match &conversation {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let fmt = match format.as_deref() {
        Some("anthropic") => Some(format::Format::Anthropic),
        Some(_) => Some(format::Format::OpenAi),
        None => None,
    };
    let doc =
        format::read(&text, fmt).map_err(|e| format!("conversation: {}", acms::error_line(&e)))?;
    let meter = Meter::tokens(acms::Tokenizer::Cl100kBase);
    let compactor = Compactor::new(CompactConfig::new(limit), meter.clone())
        .map_err(|e| acms::error_line(&e))?;
    match compactor.compact(&doc.conversation) {
        Ok(out) => {
            let written = format::write(&doc, &out.conversation);
            let size = Measured::new(&out.conversation, &meter).total;
            let conversation: Value =
                serde_json::from_str(&written).unwrap_or(Value::String(written));
            let d = &out.diagnostics;
            Ok(json_result(&reply::CompactOut {
                outcome: "fits".into(),
                size,
                limit,
                original_size: d.original_size,
                original_messages: d.original_messages,
                final_messages: d.final_messages,
                tier: d.tier,
                conversation,
            }))
        }
        Err(CompactError::Irreducible { size, .. }) => Err(format!(
            "the conversation cannot fit: {size} tokens remain against a limit of {limit} (the system prompt, the latest user message and pinned messages are never dropped): call again with a larger `limit`, or shorten those messages"
        )),
        Err(e) => Err(acms::error_line(&e)),
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for AcmsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(log::capabilities())
            .with_server_info(Implementation::new("acms", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "acms gives you the code relevant to a task within a token budget. Use `context` for one-off questions; for multi-step work call plan_start, then plan_phase for each phase (explore, design, implement, verify), plan_decide to remember decisions, plan_child for sub-tasks. Every block of a context starts with `# path:start-end · names · depth d`: pass that `path:start-end` to `expand` for the full text, or to `plan_decide` as a fragment. Every result has a size bound (see each tool); caps the server applied are listed in the result. On a repository indexed for the first time, the first call waits for the symbol pass and semantic matches come later.",
            )
    }

    #[expect(
        deprecated,
        reason = "MCP logging is deprecated by the 2026-07-28 draft; hosts on 2025-11-25 still set its level"
    )]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level
            .store(log::requested(&request).rank(), Ordering::Relaxed);
        Ok(())
    }
}

async fn serve_server<R, W>(server: AcmsServer, read: R, write: W) -> Result<(), Error>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let transport = frame::FrameTransport::new(read, write);
    let logger = server.clone();
    let running = match server.serve(transport).await {
        Ok(r) => r,
        // The client went away before initializing: nothing to serve, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(Error::Session(e.to_string())),
    };
    let logging = tokio::spawn(logger.log_opening(running.peer().clone()));
    let ended = running
        .waiting()
        .await
        .map_err(|e| Error::Session(e.to_string()));
    logging.abort();
    ended?;
    Ok(())
}

/// Serves `ws` over stdin/stdout until the client closes stdin (or the session ends).
pub async fn serve(ws: Workspace) -> Result<(), Error> {
    serve_server(AcmsServer::new(ws), tokio::io::stdin(), tokio::io::stdout()).await
}

/// [`serve`] on its own runtime (two workers: one for the protocol, one for a call).
pub fn serve_stdio(ws: Workspace) -> Result<(), Error> {
    runtime()?.block_on(serve(ws))
}

/// Serves over stdin/stdout, answering `initialize` at once while the workspace `spec` names
/// opens (and is indexed, the first time) on its own thread ([`open::staged`]).
pub fn serve_stdio_opening(spec: OpenSpec) -> Result<(), Error> {
    let config = spec.config.clone();
    let rt = runtime()?;
    let server = AcmsServer::opening(&config, open::staged(spec))?;
    let shared = Arc::clone(&server.shared);
    let served = rt.block_on(serve_server(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ));
    shared.close();
    served
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests;
