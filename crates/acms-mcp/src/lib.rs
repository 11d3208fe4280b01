//! acms as a Model Context Protocol server, on the official Rust SDK (`rmcp`): the
//! [`AcmsServer`] exposes one MCP tool per call of the [`acms::Workspace`] API — `context`,
//! `search`, `expand`, `plan_start`, `plan_phase`, `plan_child`, `plan_decide`,
//! `plan_close`, `plan_history` — plus `compact` ([`acms::compact`]). [`serve_stdio`] runs it
//! over stdin/stdout until the client closes stdin.
//!
//! Each tool has a JSON schema (from its parameter type) and a one-line description.
//! A failure of the call is an MCP tool error carrying the same one-line message the CLI
//! prints; protocol problems (unknown tool, malformed request) are JSON-RPC errors, and the
//! server keeps serving. Nothing but protocol messages is written to stdout.
//!
//! Frames are read by [`frame::FrameTransport`], not by rmcp's stdio transport: every request
//! gets exactly one answer, malformed and oversized frames (over [`frame::MAX_FRAME_BYTES`])
//! included.
//!
//! This crate owns no logic of its own: parameters in, one workspace call, results out.

pub mod frame;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use acms::{BudgetSpec, PhaseRequest, Query, Workspace};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// Errors of running the server (not of its tools: those are MCP tool errors).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("cannot start the MCP server runtime: {0}")]
    Runtime(#[from] std::io::Error),
    #[error("MCP session failed: {0}")]
    Session(String),
}

/// Parameters shared by `context` and `plan_phase`: the budget as an agent knows it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct BudgetParams {
    /// Tokens for the assembled context (capped at context.hot.max-tokens, 16000 by default).
    pub budget: Option<usize>,
    /// The model's context window; the budget is derived from it (window - 4096 response reserve - tool_definitions).
    pub window: Option<usize>,
    /// Tokens the tool definitions take in the window (with `window`).
    pub tool_definitions: Option<usize>,
}

impl BudgetParams {
    fn spec(&self) -> BudgetSpec {
        BudgetSpec {
            tokens: self.budget,
            window: self.window,
            tool_definitions: self.tool_definitions.unwrap_or(0),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextParams {
    /// The task, in the agent's words (paths, names and error text help).
    pub task: String,
    #[serde(flatten)]
    pub budget: BudgetParams,
    /// Repository-relative files the task is about.
    #[serde(default)]
    pub files: Vec<String>,
    /// Symbol names (simple or qualified) the task is about.
    #[serde(default)]
    pub symbols: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchParams {
    /// The query text.
    pub query: String,
    /// Only these strategies (simple-keyword, semantic-embedding, breadth-depth-navigator, ...); all configured when empty.
    #[serde(default)]
    pub strategies: Vec<String>,
    /// Hits to return (default 20).
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExpandParams {
    /// A node id (16 hex digits) or `path:start-end` from a manifest, or a qualified symbol name.
    pub target: String,
    /// Tokens the text may take (default 4000).
    pub budget: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanStartParams {
    /// What the plan is for.
    pub task: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanChildParams {
    /// The parent plan id (from plan_start).
    pub parent: String,
    /// What the child plan is for.
    pub task: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanPhaseParams {
    /// The plan id (from plan_start or plan_child).
    pub plan: String,
    /// The phase name: explore, design, implement, verify, ...
    pub phase: String,
    /// What this phase focuses on, beyond the plan's task.
    #[serde(default)]
    pub focus: String,
    #[serde(flatten)]
    pub budget: BudgetParams,
    /// Repository-relative files this phase is about.
    #[serde(default)]
    pub files: Vec<String>,
    /// Symbol names this phase is about.
    #[serde(default)]
    pub symbols: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanDecideParams {
    /// The plan id.
    pub plan: String,
    /// The phase the decision was taken in (it must have run).
    pub phase: String,
    /// The decision and why, in a sentence or two.
    pub notes: Option<String>,
    /// Node ids of that phase's manifest the decision is about (all of them when empty).
    #[serde(default)]
    pub fragments: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct PlanIdParams {
    /// The plan id.
    pub plan: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CompactParams {
    /// The conversation: an OpenAI or Anthropic messages JSON document (object or array), or that JSON as a string.
    pub conversation: Value,
    /// Hard limit in tokens for the compacted conversation.
    pub limit: usize,
    /// `openai` or `anthropic` (default: detected).
    pub format: Option<String>,
}

/// The acms MCP server.
#[derive(Clone)]
pub struct AcmsServer {
    ws: Arc<Mutex<Slot>>,
    tool_router: ToolRouter<AcmsServer>,
}

/// Opens a workspace (its error as the one line a tool error carries).
pub type Opener = Box<dyn FnOnce() -> Result<Workspace, String> + Send>;

/// The workspace, or the thread still opening it: on a large repository opening (or indexing
/// it the first time) takes seconds to minutes, and `initialize` must not wait for that.
enum Slot {
    Opening(std::thread::JoinHandle<Result<Workspace, String>>),
    Ready(Box<Workspace>),
    Failed(String),
}

impl Slot {
    /// The workspace, waiting for the opening thread the first time.
    fn get(&mut self) -> Result<&mut Workspace, String> {
        if matches!(self, Slot::Opening(_)) {
            let Slot::Opening(handle) = std::mem::replace(self, Slot::Failed(String::new())) else {
                unreachable!("checked above")
            };
            *self = match handle.join() {
                Ok(Ok(ws)) => Slot::Ready(Box::new(ws)),
                Ok(Err(message)) => Slot::Failed(message),
                Err(_) => Slot::Failed("internal error: opening the workspace panicked".into()),
            };
        }
        match self {
            Slot::Ready(ws) => Ok(ws),
            Slot::Failed(message) => Err(message.clone()),
            Slot::Opening(_) => unreachable!("joined above"),
        }
    }
}

/// A tool error with the CLI's one-line message.
fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// A result whose text is `text` and whose structured content is `data`.
fn with_data(text: String, data: Value) -> CallToolResult {
    let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
    r.structured_content = Some(data);
    r
}

fn json_text(data: Value) -> CallToolResult {
    CallToolResult::structured(data)
}

fn parse_plan(s: &str) -> Result<acms::PlanId, String> {
    s.parse::<acms::PlanId>().map_err(|e| acms::error_line(&e))
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// A manifest entry as agents read it: ids as hex strings.
fn manifest(ctx: &acms::AssembledContext) -> Value {
    Value::Array(
        ctx.manifest
            .iter()
            .map(|m| {
                json!({
                    "node": m.node.to_string(),
                    "path": m.path,
                    "lines": format!("{}-{}", m.start_line, m.end_line),
                    "name": m.name,
                    "kind": m.kind,
                    "depth": m.depth,
                    "tokens": m.tokens,
                    "score": m.score,
                    "strategies": m.strategies,
                })
            })
            .collect(),
    )
}

impl AcmsServer {
    /// A server on an opened workspace.
    pub fn new(ws: Workspace) -> AcmsServer {
        Self::with_slot(Slot::Ready(Box::new(ws)))
    }

    /// A server whose workspace `open` opens on its own thread, started now; the first tool
    /// call waits for it, and an error there is every call's tool error.
    pub fn opening(open: Opener) -> Result<AcmsServer, Error> {
        let handle = std::thread::Builder::new()
            .name("acms-open".into())
            .spawn(open)?;
        Ok(Self::with_slot(Slot::Opening(handle)))
    }

    fn with_slot(slot: Slot) -> AcmsServer {
        AcmsServer {
            ws: Arc::new(Mutex::new(slot)),
            tool_router: Self::tool_router(),
        }
    }

    /// Runs `f` on the workspace on a blocking thread; its error becomes a tool error.
    async fn call(
        &self,
        f: impl FnOnce(&mut Workspace) -> Result<CallToolResult, String> + Send + 'static,
    ) -> Result<CallToolResult, ErrorData> {
        let ws = Arc::clone(&self.ws);
        let joined = tokio::task::spawn_blocking(move || {
            let mut guard = ws.lock().unwrap_or_else(PoisonError::into_inner);
            f(guard.get()?)
        })
        .await;
        match joined {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(message)) => Ok(tool_error(message)),
            Err(e) => Ok(tool_error(format!("internal error: {e}"))),
        }
    }
}

fn line(e: acms::Error) -> String {
    acms::error_line(&e)
}

#[tool_router]
impl AcmsServer {
    #[tool(
        description = "Assemble the code most relevant to a task within a token budget (changed files are re-indexed first); returns the context text, its exact token count and a manifest whose node ids work with `expand`."
    )]
    async fn context(
        &self,
        Parameters(p): Parameters<ContextParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let t = Instant::now();
            let query = Query {
                text: p.task,
                mentioned_files: p.files,
                mentioned_symbols: p.symbols,
                previous: Vec::new(),
            };
            let c = ws.context(query, p.budget.spec()).map_err(line)?;
            let data = json!({
                "tokens": c.context.tokens,
                "budget": c.context.budget,
                "tokenizer": c.context.tokenizer,
                "manifest": manifest(&c.context),
                "dropped": c.context.dropped.len(),
                "refreshed": c.refresh.refreshed,
                "notes": c.context.diagnostics.notes,
                "millis": t.elapsed().as_secs_f64() * 1000.0,
            });
            Ok(with_data(c.context.text, data))
        })
        .await
    }

    #[tool(
        description = "Raw retrieval hits for a query, best first, each with its strategy and the reason it was found (matched terms, similarity, graph path): to see what `context` draws from."
    )]
    async fn search(
        &self,
        Parameters(p): Parameters<SearchParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let r = ws
                .search(&Query::new(p.query), &p.strategies, p.limit.unwrap_or(20))
                .map_err(line)?;
            Ok(json_text(json!({
                "hits": r.hits,
                "strategies": r.runs,
                "refreshed": r.refresh.refreshed,
            })))
        })
        .await
    }

    #[tool(
        description = "The full text of one fragment — a node id or `path:start-end` from a manifest, or a qualified name — within a token budget (symbols fall back to shallower depths to fit)."
    )]
    async fn expand(
        &self,
        Parameters(p): Parameters<ExpandParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let e = ws
                .expand(&p.target, p.budget.unwrap_or(4_000))
                .map_err(line)?;
            let data = json!({
                "path": e.path,
                "lines": format!("{}-{}", e.start_line, e.end_line),
                "name": e.name,
                "node": e.node.map(|n| n.to_string()),
                "depth": e.depth,
                "tokens": e.tokens,
                "truncated": e.truncated,
            });
            Ok(with_data(e.text, data))
        })
        .await
    }

    #[tool(
        description = "Start a plan for a task; returns the plan id to pass to plan_phase, plan_child, plan_decide, plan_close and plan_history."
    )]
    async fn plan_start(
        &self,
        Parameters(p): Parameters<PlanStartParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let (plan, memory) = ws.start_plan(&p.task).map_err(line)?;
            Ok(json_text(json!({ "plan": plan, "memory": memory })))
        })
        .await
    }

    #[tool(
        description = "Start a child plan of a plan: its phases inherit the parent's latest context as a signature skeleton (15% of their budget)."
    )]
    async fn plan_child(
        &self,
        Parameters(p): Parameters<PlanChildParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let parent = parse_plan(&p.parent)?;
            let (plan, memory) = ws.child_plan(parent, &p.task).map_err(line)?;
            Ok(json_text(json!({ "plan": plan, "memory": memory })))
        })
        .await
    }

    #[tool(
        description = "The context for a named phase of a plan (explore, design, implement, verify, ...): re-indexes changed files, assembles within the budget or model window, and records the phase."
    )]
    async fn plan_phase(
        &self,
        Parameters(p): Parameters<PlanPhaseParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let t = Instant::now();
            let plan = parse_plan(&p.plan)?;
            let request = PhaseRequest {
                focus: p.focus,
                budget: p.budget.spec(),
                mentioned_files: p.files,
                mentioned_symbols: p.symbols,
            };
            let r = ws.phase(plan, &p.phase, request).map_err(line)?;
            let data = json!({
                "plan": r.plan.id,
                "phase": r.phase.name,
                "seq": r.phase.seq,
                "tokens": r.context.tokens,
                "budget": r.context.budget,
                "manifest": manifest(&r.context),
                "inherited_tokens": r.inherited_tokens,
                "refreshed": r.refresh.refreshed,
                "memory": r.memory,
                "notes": r.context.diagnostics.notes,
                "millis": t.elapsed().as_secs_f64() * 1000.0,
            });
            Ok(with_data(r.context.text, data))
        })
        .await
    }

    #[tool(
        description = "Record a decision taken in a phase (notes, and optionally the manifest node ids it is about); recent decisions are warm memory, older ones cold."
    )]
    async fn plan_decide(
        &self,
        Parameters(p): Parameters<PlanDecideParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let plan = parse_plan(&p.plan)?;
            let (d, memory) = ws
                .decide(plan, &p.phase, p.notes.as_deref(), &p.fragments)
                .map_err(line)?;
            Ok(json_text(json!({ "decision": d, "memory": memory })))
        })
        .await
    }

    #[tool(
        description = "Close a plan: its decisions leave the hot tier; its history stays readable."
    )]
    async fn plan_close(
        &self,
        Parameters(p): Parameters<PlanIdParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let plan = parse_plan(&p.plan)?;
            let (plan, memory) = ws.close_plan(plan).map_err(line)?;
            Ok(json_text(json!({ "plan": plan, "memory": memory })))
        })
        .await
    }

    #[tool(
        description = "The phases, decisions (with their tier: hot, warm or cold) and child plans of a plan."
    )]
    async fn plan_history(
        &self,
        Parameters(p): Parameters<PlanIdParams>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call(move |ws| {
            let plan = parse_plan(&p.plan)?;
            let (history, memory) = ws.history(plan).map_err(line)?;
            Ok(json_text(json!({ "history": history, "memory": memory })))
        })
        .await
    }

    #[tool(
        description = "Compact a conversation (OpenAI or Anthropic messages JSON) to fit a token limit; returns the compacted conversation and the outcome."
    )]
    async fn compact(
        &self,
        Parameters(p): Parameters<CompactParams>,
    ) -> Result<CallToolResult, ErrorData> {
        tokio::task::spawn_blocking(move || compact(p))
            .await
            .unwrap_or_else(|e| Err(format!("internal error: {e}")))
            .map_or_else(|m| Ok(tool_error(m)), Ok)
    }
}

/// The `compact` tool: one call of [`acms::compact::Compactor`].
fn compact(p: CompactParams) -> Result<CallToolResult, String> {
    use acms::compact::{CompactConfig, Compactor, Error as CompactError, Measured, Meter, format};
    let text = match &p.conversation {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let fmt = match p.format.as_deref() {
        None => None,
        Some("openai") => Some(format::Format::OpenAi),
        Some("anthropic") => Some(format::Format::Anthropic),
        Some(other) => {
            return Err(format!(
                "`{other}` is not a conversation format: use openai or anthropic"
            ));
        }
    };
    let doc = format::read(&text, fmt).map_err(|e| acms::error_line(&e))?;
    let meter = Meter::tokens(acms::Tokenizer::Cl100kBase);
    let compactor = Compactor::new(CompactConfig::new(p.limit), meter.clone())
        .map_err(|e| acms::error_line(&e))?;
    match compactor.compact(&doc.conversation) {
        Ok(out) => {
            let written = format::write(&doc, &out.conversation);
            let size = Measured::new(&out.conversation, &meter).total;
            let conversation: Value =
                serde_json::from_str(&written).unwrap_or(Value::String(written));
            Ok(json_text(json!({
                "outcome": "fits",
                "size": size,
                "limit": p.limit,
                "conversation": conversation,
                "diagnostics": to_value(&out.diagnostics),
            })))
        }
        Err(CompactError::Irreducible { size, .. }) => Err(format!(
            "the conversation cannot fit: {size} remain against a limit of {} (system prompt, latest user message and pinned messages are never dropped); raise the limit or shorten them",
            p.limit
        )),
        Err(e) => Err(acms::error_line(&e)),
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for AcmsServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("acms", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "acms gives you the code relevant to a task within a token budget. Use `context` for one-off questions; for multi-step work call plan_start, then plan_phase for each phase (explore, design, implement, verify), plan_decide to remember decisions, plan_child for sub-tasks. Manifests list node ids: pass them to `expand` for full text.",
            )
    }
}

/// Serves `ws` over stdin/stdout until the client closes stdin (or the session ends).
pub async fn serve(ws: Workspace) -> Result<(), Error> {
    serve_server(AcmsServer::new(ws), tokio::io::stdin(), tokio::io::stdout()).await
}

async fn serve_server<R, W>(server: AcmsServer, read: R, write: W) -> Result<(), Error>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
    W: tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let transport = frame::FrameTransport::new(read, write);
    let running = match server.serve(transport).await {
        Ok(r) => r,
        // The client went away before initializing: nothing to serve, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(Error::Session(e.to_string())),
    };
    running
        .waiting()
        .await
        .map_err(|e| Error::Session(e.to_string()))?;
    Ok(())
}

/// [`serve`] on its own runtime (two workers: one for the protocol, one for a call).
pub fn serve_stdio(ws: Workspace) -> Result<(), Error> {
    runtime()?.block_on(serve(ws))
}

/// Like [`serve_stdio`], but answers `initialize` at once while `open` opens the workspace on
/// its own thread ([`AcmsServer::opening`]).
pub fn serve_stdio_opening(open: Opener) -> Result<(), Error> {
    let server = AcmsServer::opening(open)?;
    runtime()?.block_on(serve_server(
        server,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ))
}

fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// `initialize` is answered while the workspace is still opening; the first tool call
    /// that needs it waits for the opener and carries its error; `compact` needs none.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn initialize_does_not_wait_for_the_workspace() {
        let (release, released) = mpsc::channel::<()>();
        let server = AcmsServer::opening(Box::new(move || {
            // Released by the test only after `initialize` was answered; had the server waited
            // for this thread, the timeout would fire first and the message would say so.
            match released.recv_timeout(Duration::from_secs(20)) {
                Ok(()) => Err("opened after initialize".to_string()),
                Err(_) => Err("the server waited for the workspace".to_string()),
            }
        }))
        .unwrap();
        let (client, server_end) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server_end);
        let serving = tokio::spawn(serve_server(server, server_read, server_write));
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut lines = BufReader::new(client_read).lines();
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
        client_write
            .write_all(format!("{init}\n").as_bytes())
            .await
            .unwrap();
        let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(init["id"], 1, "{init}");
        assert!(init["result"]["serverInfo"].is_object(), "{init}");
        release.send(()).unwrap();
        let calls = concat!(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"x"}}}"#,
            "\n"
        );
        client_write.write_all(calls.as_bytes()).await.unwrap();
        let search: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(search["id"], 2, "{search}");
        assert_eq!(search["result"]["isError"], true, "{search}");
        assert!(
            search.to_string().contains("opened after initialize"),
            "{search}"
        );
        drop(client_write);
        drop(lines);
        let _ = serving.await;
    }
}
