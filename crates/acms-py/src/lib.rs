//! The `acms` Python module (`acms._acms`, re-exported by `python/acms/__init__.py`).
//!
//! This layer converts types only: every call is one call of the `acms` facade (the same the
//! CLI and the MCP server make), results go to Python through their serde form (the field
//! names of `--format json` and MCP structured content: `path`, `start_line`, `end_line`,
//! ids as 16-hex-digit strings), and every error becomes `acms.AcmsError` carrying the line
//! `acms::error_line` gives. Nothing here panics on Python input.
//!
//! The GIL is released (`Python::detach`) around every call that indexes, assembles or
//! compacts. A `Workspace` is a `Mutex` around `acms::Workspace`, shared with the `Plan`s it
//! starts, so Python threads may share one: their calls run one at a time.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use acms::compact::{CompactConfig, Compactor, Measured, Meter, format};
use acms::{BudgetSpec, PhaseRequest, PlanId, Query, WorkspaceOptions};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use serde::Serialize;

create_exception!(
    acms,
    AcmsError,
    PyException,
    "An error of the acms engine; the message is the engine's own (with its causes)."
);

type Shared = Arc<Mutex<acms::Workspace>>;

/// One line for any engine error.
fn error(e: impl std::error::Error + 'static) -> String {
    acms::error_line(&e)
}

/// A Rust value as Python objects (dicts, lists, str, int, float, bool, None).
fn to_py<T: Serialize + ?Sized>(py: Python<'_>, value: &T) -> PyResult<Py<PyAny>> {
    pythonize::pythonize(py, value)
        .map(Bound::unbind)
        .map_err(|e| AcmsError::new_err(format!("cannot convert a result to Python: {e}")))
}

fn lock(ws: &Shared) -> Result<MutexGuard<'_, acms::Workspace>, String> {
    // A poisoned lock means a call panicked half-way: the workspace's state is not known.
    ws.lock().map_err(|_| {
        "this Workspace is unusable after an internal error: open a new acms.Workspace".into()
    })
}

/// Runs `f` on the workspace without the GIL; an engine error becomes `AcmsError`.
fn with_ws<T, F>(py: Python<'_>, ws: &Shared, f: F) -> PyResult<T>
where
    T: Send,
    F: Send + FnOnce(&mut acms::Workspace) -> Result<T, String>,
{
    py.detach(|| f(&mut *lock(ws)?)).map_err(AcmsError::new_err)
}

fn budget(tokens: Option<usize>, window: Option<usize>) -> BudgetSpec {
    BudgetSpec {
        tokens,
        window,
        tool_definitions: 0,
    }
}

fn plan_id(id: &str) -> PyResult<PlanId> {
    id.parse::<PlanId>()
        .map_err(|e| AcmsError::new_err(error(e)))
}

/// A repository opened for an agent: indexed on first use, refreshed before every call.
#[pyclass(module = "acms", frozen)]
struct Workspace {
    inner: Shared,
    path: String,
}

#[pymethods]
impl Workspace {
    /// Opens `path` (indexing it when it has no index yet; `vectors=False` skips the
    /// embeddings of that first run: keyword and graph retrieval only).
    #[new]
    #[pyo3(signature = (path = PathBuf::from("."), *, vectors = true))]
    fn new(py: Python<'_>, path: PathBuf, vectors: bool) -> PyResult<Workspace> {
        let opts = WorkspaceOptions {
            vectors,
            ..WorkspaceOptions::default()
        };
        let ws = py
            .detach(|| acms::Workspace::open_with(&path, opts))
            .map_err(|e| AcmsError::new_err(error(e)))?;
        let path = ws
            .repo()
            .unwrap_or(path.as_path())
            .to_string_lossy()
            .into_owned();
        Ok(Workspace {
            inner: Arc::new(Mutex::new(ws)),
            path,
        })
    }

    /// The repository's absolute path.
    #[getter]
    fn path(&self) -> &str {
        &self.path
    }

    /// The index folder.
    #[getter]
    fn index_dir(&self, py: Python<'_>) -> PyResult<String> {
        with_ws(py, &self.inner, |ws| {
            Ok(ws.index_dir().to_string_lossy().into_owned())
        })
    }

    /// The context for `task` within `budget` tokens (and/or a model's context `window`).
    #[pyo3(signature = (task, budget = Some(8000), *, window = None))]
    fn context(
        &self,
        py: Python<'_>,
        task: &str,
        budget: Option<usize>,
        window: Option<usize>,
    ) -> PyResult<Context> {
        let spec = self::budget(budget, window);
        let ctx = with_ws(py, &self.inner, |ws| {
            ws.context(Query::new(task), spec).map_err(error)
        })?;
        Context::new(py, &ctx.context, to_py(py, &ctx)?)
    }

    /// Raw strategy hits for `query`, best first (all configured strategies when none are
    /// named): a list of dicts with `node`, `path`, `start_line`, `end_line`, `name`, `kind`,
    /// `relevance`, `strategy`, `reason`.
    #[pyo3(signature = (query, *, strategies = None, limit = 20))]
    fn search(
        &self,
        py: Python<'_>,
        query: &str,
        strategies: Option<Vec<String>>,
        limit: usize,
    ) -> PyResult<Py<PyAny>> {
        let strategies = strategies.unwrap_or_default();
        let found = with_ws(py, &self.inner, |ws| {
            ws.search(&Query::new(query), &strategies, limit)
                .map_err(error)
        })?;
        to_py(py, &found.hits)
    }

    /// The text of a symbol (its id or qualified name) or of `path:start-end`, within
    /// `budget` tokens: a dict with `path`, `start_line`, `end_line`, `text`, `tokens`, ...
    #[pyo3(signature = (target, budget = 2000))]
    fn expand(&self, py: Python<'_>, target: &str, budget: usize) -> PyResult<Py<PyAny>> {
        let expanded = with_ws(py, &self.inner, |ws| {
            ws.expand(target, budget).map_err(error)
        })?;
        to_py(py, &expanded)
    }

    /// Re-indexes what changed since the last call (every call does this first).
    fn refresh(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let report = with_ws(py, &self.inner, |ws| ws.refresh().map_err(error))?;
        to_py(py, &report)
    }

    /// Starts a plan for `task`.
    fn plan(&self, py: Python<'_>, task: &str) -> PyResult<Plan> {
        let (plan, _) = with_ws(py, &self.inner, |ws| ws.start_plan(task).map_err(error))?;
        Plan::new(&self.inner, plan)
    }

    /// A plan started earlier (by this process, another one, the CLI or the MCP server).
    fn get_plan(&self, py: Python<'_>, id: &str) -> PyResult<Plan> {
        let id = plan_id(id)?;
        let plan = with_ws(py, &self.inner, |ws| {
            ws.plans().and_then(|p| Ok(p.plan(id)?)).map_err(error)
        })?;
        Plan::new(&self.inner, plan)
    }

    fn __repr__(&self) -> String {
        format!("acms.Workspace({:?})", self.path)
    }
}

/// A plan: phases with their contexts, decisions, child plans.
#[pyclass(module = "acms", frozen)]
struct Plan {
    ws: Shared,
    id: PlanId,
    #[pyo3(get)]
    task: String,
    parent: Option<PlanId>,
}

impl Plan {
    fn new(ws: &Shared, plan: acms::Plan) -> PyResult<Plan> {
        Ok(Plan {
            ws: Arc::clone(ws),
            id: plan.id,
            task: plan.task,
            parent: plan.parent,
        })
    }
}

#[pymethods]
impl Plan {
    /// The plan's id, as every surface writes it.
    #[getter]
    fn id(&self) -> String {
        self.id.to_string()
    }

    /// The parent plan's id (child plans).
    #[getter]
    fn parent(&self) -> Option<String> {
        self.parent.map(|p| p.to_string())
    }

    /// The context of phase `name` (explore, design, implement, verify, ...), recorded in
    /// the plan. `focus` is added to the plan's task; `files` and `symbols` are mentioned.
    #[pyo3(signature = (name, budget = Some(8000), *, window = None, focus = String::new(), files = Vec::new(), symbols = Vec::new()))]
    #[expect(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn phase(
        &self,
        py: Python<'_>,
        name: &str,
        budget: Option<usize>,
        window: Option<usize>,
        focus: String,
        files: Vec<String>,
        symbols: Vec<String>,
    ) -> PyResult<Context> {
        let request = PhaseRequest {
            focus,
            budget: self::budget(budget, window),
            mentioned_files: files,
            mentioned_symbols: symbols,
        };
        let id = self.id;
        let ctx = with_ws(py, &self.ws, |ws| {
            ws.phase(id, name, request).map_err(error)
        })?;
        Context::new(py, &ctx.context, to_py(py, &ctx)?)
    }

    /// Records a decision taken in the latest run of `phase`, on `fragments` (the `node` ids
    /// of that phase's manifest; all of them when none are given). Returns the decision.
    #[pyo3(signature = (phase, notes = None, fragments = Vec::new()))]
    fn decide(
        &self,
        py: Python<'_>,
        phase: &str,
        notes: Option<&str>,
        fragments: Vec<String>,
    ) -> PyResult<Py<PyAny>> {
        let id = self.id;
        let (decision, _) = with_ws(py, &self.ws, |ws| {
            ws.decide(id, phase, notes, &fragments).map_err(error)
        })?;
        to_py(py, &decision)
    }

    /// Starts a child plan: its phases inherit this plan's latest phase as a skeleton.
    fn child(&self, py: Python<'_>, task: &str) -> PyResult<Plan> {
        let id = self.id;
        let (plan, _) = with_ws(py, &self.ws, |ws| ws.child_plan(id, task).map_err(error))?;
        Plan::new(&self.ws, plan)
    }

    /// Phases, decisions and children: a dict with `plan`, `phases`, `decisions`, `children`.
    fn history(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let id = self.id;
        let (history, _) = with_ws(py, &self.ws, |ws| ws.history(id).map_err(error))?;
        to_py(py, &history)
    }

    /// Closes the plan; returns it as a dict.
    fn close(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let id = self.id;
        let (plan, _) = with_ws(py, &self.ws, |ws| ws.close_plan(id).map_err(error))?;
        to_py(py, &plan)
    }

    fn __repr__(&self) -> String {
        format!(
            "acms.Plan(id={:?}, task={:?})",
            self.id.to_string(),
            self.task
        )
    }
}

/// An assembled context: `text` holds `tokens` ≤ `budget` tokens, counted exactly.
#[pyclass(module = "acms", frozen, get_all)]
struct Context {
    text: String,
    tokens: usize,
    budget: usize,
    /// What the text holds: dicts with `node`, `path`, `start_line`, `end_line`, `name`,
    /// `kind`, `depth`, `tokens`, `score`, `strategies`, `reasons`.
    manifest: Py<PyAny>,
    /// Candidates left out, with why.
    dropped: Py<PyAny>,
    /// Notes on the assembly (refresh, budget caps, missing vectors, ...).
    notes: Py<PyAny>,
    /// The whole result in its serde form (`context`, `refresh`; a phase adds `plan`,
    /// `phase`, `memory`, `inherited_tokens`, `changes`).
    data: Py<PyAny>,
}

impl Context {
    fn new(py: Python<'_>, c: &acms::AssembledContext, data: Py<PyAny>) -> PyResult<Context> {
        Ok(Context {
            text: c.text.clone(),
            tokens: c.tokens,
            budget: c.budget,
            manifest: to_py(py, &c.manifest)?,
            dropped: to_py(py, &c.dropped)?,
            notes: to_py(py, &c.diagnostics.notes)?,
            data,
        })
    }
}

#[pymethods]
impl Context {
    fn __str__(&self) -> &str {
        &self.text
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let entries = self.manifest.bind(py).len().unwrap_or(0);
        format!(
            "acms.Context(tokens={}, budget={}, fragments={entries})",
            self.tokens, self.budget
        )
    }
}

/// What `compact` returns.
#[pyclass(module = "acms", frozen, get_all)]
struct Compacted {
    /// The conversation in the shape it was given (a list of messages, or a dict with
    /// `messages` and the other top-level keys).
    messages: Py<PyAny>,
    /// `within_limit`, `reduced`, ...: what the compactor did.
    outcome: Py<PyAny>,
    /// Size of `messages` as written, in tokens of `tokenizer`: never above `hard_limit`.
    size: usize,
    original_size: usize,
    hard_limit: usize,
    /// The compactor's report (stages, categories, tiers): never message text.
    diagnostics: Py<PyAny>,
}

#[pymethods]
impl Compacted {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "acms.Compacted(outcome={}, size={}, original_size={}, hard_limit={})",
            self.outcome.bind(py),
            self.size,
            self.original_size,
            self.hard_limit
        )
    }
}

/// Compacts an OpenAI or Anthropic conversation (a list of message dicts, or a request dict
/// with `messages`) to at most `hard_limit` tokens: one `acms::compact::Compactor` call, as
/// the MCP `compact` tool makes. The system prompt, the latest user message and pinned
/// messages are never dropped; when they alone exceed the limit this raises `AcmsError`
/// (nothing over the limit is ever returned).
#[pyfunction]
#[pyo3(signature = (messages, hard_limit, *, format = None, tokenizer = "cl100k_base"))]
fn compact(
    py: Python<'_>,
    messages: &Bound<'_, PyAny>,
    hard_limit: usize,
    format: Option<&str>,
    tokenizer: &str,
) -> PyResult<Compacted> {
    let value: serde_json::Value = pythonize::depythonize(messages).map_err(|e| {
        AcmsError::new_err(format!(
            "messages: not a JSON conversation (a list of message dicts, or a dict with `messages`): {e}"
        ))
    })?;
    let fmt = format
        .map(str::parse::<format::Format>)
        .transpose()
        .map_err(|e| AcmsError::new_err(error(e)))?;
    let tokenizer = tokenizer
        .parse::<acms::Tokenizer>()
        .map_err(|e| AcmsError::new_err(error(e)))?;
    if hard_limit == 0 {
        return Err(AcmsError::new_err(
            "hard_limit must be at least 1 token: give the provider's context limit",
        ));
    }
    let text = value.to_string();
    let done = py.detach(|| -> Result<_, String> {
        let doc = format::read(&text, fmt).map_err(|e| format!("conversation: {}", error(e)))?;
        let meter = Meter::tokens(tokenizer);
        let compactor = Compactor::new(CompactConfig::new(hard_limit), meter.clone())
            .map_err(error)?;
        // Irreducible says what cannot fit and what to do, as every surface says it.
        let out = compactor.compact(&doc.conversation).map_err(error)?;
        let written = format::write(&doc, &out.conversation);
        // Measured on what is handed back, as it reads again (Anthropic's writer merges
        // same-role neighbours): the bound holds for the returned messages themselves.
        let size = format::read(&written, Some(doc.format))
            .map(|d| Measured::new(&d.conversation, &meter).total)
            .map_err(|e| format!("the compacted conversation does not read back: {}", error(e)))?;
        if size > hard_limit {
            return Err(format!(
                "the compacted conversation is {size} tokens as written, over the hard limit of {hard_limit}: lower hard_limit"
            ));
        }
        let written: serde_json::Value = serde_json::from_str(&written).map_err(error)?;
        Ok((written, size, out.diagnostics))
    });
    let (written, size, diagnostics) = done.map_err(AcmsError::new_err)?;
    Ok(Compacted {
        messages: to_py(py, &written)?,
        outcome: to_py(py, &diagnostics.outcome)?,
        size,
        original_size: diagnostics.original_size,
        hard_limit,
        diagnostics: to_py(py, &diagnostics)?,
    })
}

/// The engine's version (the crates' version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _acms(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("AcmsError", m.py().get_type::<AcmsError>())?;
    m.add_class::<Workspace>()?;
    m.add_class::<Plan>()?;
    m.add_class::<Context>()?;
    m.add_class::<Compacted>()?;
    m.add_function(wrap_pyfunction!(compact, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
