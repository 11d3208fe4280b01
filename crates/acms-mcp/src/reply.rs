//! What the tools return: one serde type per result (its JSON schema is the tool's output
//! schema), the size bound each result keeps, and error texts written for the model that
//! reads them.
//!
//! **Bounds.** Every result is measured with the configured tokenizer on the final JSON
//! text, never estimated. A list that would take a result over its bound is cut from its
//! least important end, and the result counts what it left out (`*_omitted`). The context
//! text of `context` and `plan_phase` is the assembly's own, within `budget` by the
//! engine's exact count.

use acms::TokenCounter;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// The size bound of a JSON result with no `max_tokens` argument (plan_start, plan_child,
/// plan_close, plan_decide).
pub const SMALL_RESULT: usize = 1_000;
/// The size bound of the status block that follows a context text.
pub const STATUS_BLOCK: usize = 400;
/// The default and smallest `max_tokens` of `search` and `plan_history`.
pub const DEFAULT_MAX_TOKENS: usize = 4_000;
pub const MIN_MAX_TOKENS: usize = 500;
/// Characters of a task, focus or notes echoed back (the caller wrote them: a preview is
/// enough to tell which plan is which).
const ECHO_CHARS: usize = 300;
/// Fragment refs listed in a decision.
const DECISION_REFS: usize = 20;

/// The structured content of `context` (and the context part of `plan_phase`) may take a
/// quarter of the budget, at least this much.
const MIN_MANIFEST_BOUND: usize = 1_000;

/// Bound of the structured content of a context assembled for `budget` tokens.
pub fn manifest_bound(budget: usize) -> usize {
    (budget / 4).max(MIN_MANIFEST_BOUND)
}

/// `text` cut to `n` characters with an ellipsis.
pub fn preview(text: &str, n: usize) -> String {
    let t = text.trim();
    if t.chars().count() <= n {
        return t.to_string();
    }
    let mut s: String = t.chars().take(n).collect();
    s.push('…');
    s
}

/// `path:start-end`, as a block header shows a location.
pub fn location(path: &str, start: u32, end: u32) -> String {
    format!("{path}:{start}-{end}")
}

/// Where something is, in the words the library and the CLI use too (`path`, `start_line`,
/// `end_line`), plus `ref`: the `path:start-end` a block header shows, which `expand` and
/// `plan_decide` accept.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Place {
    #[serde(rename = "ref")]
    pub reference: String,
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
}

impl Place {
    pub fn new(path: &str, start_line: u32, end_line: u32) -> Place {
        Place {
            reference: location(path, start_line, end_line),
            path: path.to_string(),
            start_line,
            end_line,
        }
    }
}

/// One fragment of a context, as its text shows it.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct FragmentOut {
    /// Where the fragment is; its block header shows `ref` (a block may hold several
    /// fragments of one file). Pass `ref` to `expand` for the full text.
    #[serde(flatten)]
    pub place: Place,
    /// The node id (16 hex digits): `expand` and `plan_decide` accept it too.
    pub node: String,
    /// Qualified name of the symbol.
    pub name: String,
    pub kind: String,
    /// How much of it is shown: 0 signature, 2 with its doc, 4 skeleton, 9 full source.
    pub depth: u8,
    /// Tokens of the fragment rendered alone.
    pub tokens: u32,
    pub score: f64,
    /// The retrieval strategies that found it.
    pub strategies: Vec<String>,
}

impl FragmentOut {
    fn from_manifest(m: &acms::ManifestEntry) -> FragmentOut {
        FragmentOut {
            place: Place::new(&m.path, m.start_line, m.end_line),
            node: m.node.to_string(),
            name: m.name.clone(),
            kind: m.kind.clone(),
            depth: m.depth.value(),
            tokens: m.tokens,
            score: (m.score * 1000.0).round() / 1000.0,
            strategies: m.strategies.clone(),
        }
    }
}

/// An assembled context's figures (the text itself is the first text block).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ContextOut {
    /// Exact tokens of the context text, never more than `budget`.
    pub tokens: usize,
    /// The budget it was assembled for, after any cap in `caps`.
    pub budget: usize,
    pub tokenizer: String,
    /// The fragments in the text, best first.
    pub manifest: Vec<FragmentOut>,
    /// Fragments in the text but left out of `manifest` to keep this result within its
    /// bound (a quarter of the budget, at least 1000 tokens).
    pub manifest_omitted: usize,
    /// Candidates left out of the text for lack of budget.
    pub dropped: usize,
    /// Every limit the server applied to the arguments; empty when none.
    pub caps: Vec<String>,
    /// What else the model should know: an incomplete index or semantic search, files that
    /// were re-indexed, names read as something else.
    pub notes: Vec<String>,
    /// Files re-indexed before the assembly because they changed.
    pub refreshed: usize,
    pub millis: f64,
}

impl ContextOut {
    pub fn new(ctx: &acms::AssembledContext, caps: Vec<String>, notes: Vec<String>) -> ContextOut {
        ContextOut {
            tokens: ctx.tokens,
            budget: ctx.budget,
            tokenizer: ctx.tokenizer.clone(),
            manifest: ctx
                .manifest
                .iter()
                .map(FragmentOut::from_manifest)
                .collect(),
            manifest_omitted: 0,
            dropped: ctx.dropped.len(),
            caps,
            notes,
            refreshed: 0,
            millis: 0.0,
        }
    }
}

/// Decision memory after the call's maintenance.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct MemoryOut {
    /// Decisions per tier.
    pub hot: usize,
    pub warm: usize,
    pub cold: usize,
    /// Decisions this call's maintenance moved or deleted.
    pub promoted: usize,
    pub demoted: usize,
    pub expired: usize,
}

impl From<&acms::TierReport> for MemoryOut {
    fn from(r: &acms::TierReport) -> MemoryOut {
        MemoryOut {
            hot: r.counts[0],
            warm: r.counts[1],
            cold: r.counts[2],
            promoted: r.promoted,
            demoted: r.demoted,
            expired: r.expired,
        }
    }
}

/// The result of `plan_phase`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PhaseOut {
    pub plan: String,
    pub phase: String,
    /// 1 for the plan's first phase run, then 2, 3, ...
    pub seq: i64,
    /// Tokens of the parent plan's skeleton in the text (child plans).
    pub inherited_tokens: usize,
    /// The phase run (`seq`) whose fragments seeded this one: the latest phase of another
    /// name, so running a phase again gives the same context unless its inputs changed.
    pub seeded_by: Option<i64>,
    /// What changed since the previous run of this phase (none on its first run).
    pub changes: Option<String>,
    #[serde(flatten)]
    pub context: ContextOut,
    pub memory: MemoryOut,
}

/// A plan, its task shortened.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanOut {
    /// The plan id (`p3`): pass it as `plan` to the other plan tools.
    pub id: String,
    pub parent: Option<String>,
    /// The task (its first 300 characters).
    pub task: String,
    pub created: i64,
    pub closed: Option<i64>,
}

impl From<&acms::Plan> for PlanOut {
    fn from(p: &acms::Plan) -> PlanOut {
        PlanOut {
            id: p.id.to_string(),
            parent: p.parent.map(|p| p.to_string()),
            task: preview(&p.task, ECHO_CHARS),
            created: p.created,
            closed: p.closed,
        }
    }
}

/// The result of `plan_start`, `plan_child` and `plan_close`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PlanResult {
    pub plan: PlanOut,
    pub memory: MemoryOut,
}

/// A decision, with its fragments as refs.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecisionOut {
    pub id: String,
    pub plan: String,
    pub phase: String,
    /// hot, warm or cold.
    pub tier: String,
    /// The notes (their first 300 characters).
    pub notes: Option<String>,
    /// Fragments the decision is about.
    pub fragments: usize,
    /// The first 20 of them, as `path:start-end`.
    pub refs: Vec<String>,
    pub corrected: bool,
}

impl From<&acms::Decision> for DecisionOut {
    fn from(d: &acms::Decision) -> DecisionOut {
        DecisionOut {
            id: d.id.to_string(),
            plan: d.plan.to_string(),
            phase: d.phase.clone(),
            tier: d.tier.name().to_string(),
            notes: d.notes.as_deref().map(|n| preview(n, ECHO_CHARS)),
            fragments: d.manifest.len(),
            refs: d
                .manifest
                .iter()
                .take(DECISION_REFS)
                .map(|f| location(&f.path, f.start_line, f.end_line))
                .collect(),
            corrected: d.corrected.is_some(),
        }
    }
}

/// The result of `plan_decide`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DecideOut {
    pub decision: DecisionOut,
    /// What was recorded, in a sentence.
    pub recorded: String,
    pub memory: MemoryOut,
}

/// One phase run, without its fragments.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PhaseSummary {
    pub seq: i64,
    pub phase: String,
    /// Its focus (first 300 characters).
    pub focus: String,
    pub budget: usize,
    pub tokens: usize,
    /// Fragments in its context (see them with `plan_history` and `phase`).
    pub fragments: usize,
    pub refreshed: usize,
    pub created: i64,
}

/// A fragment of a recorded phase.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct RefOut {
    #[serde(flatten)]
    pub place: Place,
    pub node: String,
    pub name: String,
    pub depth: u8,
    pub tokens: u32,
}

/// One phase run with its fragments.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PhaseDetail {
    pub seq: i64,
    pub phase: String,
    pub manifest: Vec<RefOut>,
    /// Fragments left out of `manifest` to keep the result within `max_tokens`.
    pub manifest_omitted: usize,
}

/// The result of `plan_history`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HistoryOut {
    pub plan: PlanOut,
    /// Phase runs, oldest first.
    pub phases: Vec<PhaseSummary>,
    /// Oldest phase runs left out to keep the result within `max_tokens`.
    pub phases_omitted: usize,
    /// Decisions, oldest first.
    pub decisions: Vec<DecisionOut>,
    pub decisions_omitted: usize,
    /// Child plan ids.
    pub children: Vec<String>,
    /// The fragments of the phase asked for with `phase`.
    pub detail: Option<PhaseDetail>,
    pub caps: Vec<String>,
    pub memory: MemoryOut,
}

/// One retrieval hit.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct HitOut {
    #[serde(flatten)]
    pub place: Place,
    pub node: String,
    pub name: String,
    pub kind: String,
    pub relevance: f32,
    pub strategy: String,
    /// Why the strategy found it (matched terms, similarity, graph path, mention).
    pub reason: Value,
}

/// The result of `search`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchOut {
    /// Best first.
    pub hits: Vec<HitOut>,
    /// Hits left out to keep the result within `max_tokens`.
    pub hits_omitted: usize,
    /// How each strategy's run went.
    pub strategies: Vec<Value>,
    pub caps: Vec<String>,
    pub notes: Vec<String>,
    pub refreshed: usize,
}

/// The figures of `expand` (the text is the first text block).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ExpandOut {
    /// Where the text is.
    #[serde(flatten)]
    pub place: Place,
    pub name: Option<String>,
    pub node: Option<String>,
    /// The depth shown, for a symbol (it falls back 9 → 4 → 2 → 0 to fit).
    pub depth: Option<u8>,
    /// Exact tokens of the text, never more than the budget.
    pub tokens: usize,
    /// A line range cut short to fit the budget.
    pub truncated: bool,
    pub caps: Vec<String>,
    pub notes: Vec<String>,
}

/// The result of `compact`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CompactOut {
    /// `fits`.
    pub outcome: String,
    /// Tokens of the compacted conversation as acms counts messages (cl100k_base).
    pub size: usize,
    pub limit: usize,
    pub original_size: usize,
    pub original_messages: usize,
    pub final_messages: usize,
    /// The highest reduction tier used (0: none needed).
    pub tier: u8,
    /// The compacted conversation, in the format it came in.
    pub conversation: Value,
}

/// Serializes `out` compactly, as the text block of a JSON result.
pub fn json<T: Serialize>(out: &T) -> String {
    serde_json::to_string(out).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Tokens of `out`'s JSON.
pub fn tokens<T: Serialize>(out: &T, counter: &dyn TokenCounter) -> usize {
    counter.count(&json(out))
}

/// Keeps the longest prefix of a list (`len` items) for which `fits(kept)` holds, by bisection;
/// returns how many were kept. `fits(0)` is assumed.
pub fn keep_within(len: usize, mut fits: impl FnMut(usize) -> bool) -> usize {
    if fits(len) {
        return len;
    }
    let (mut lo, mut hi) = (0, len);
    // Invariant: fits(lo), !fits(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Cuts `out.manifest` so the JSON holds at most `bound` tokens.
pub fn bound_context(out: &mut ContextOut, bound: usize, counter: &dyn TokenCounter) {
    let all = std::mem::take(&mut out.manifest);
    let n = all.len();
    let kept = keep_within(n, |k| {
        out.manifest = all[..k].to_vec();
        out.manifest_omitted = n - k;
        tokens(out, counter) <= bound
    });
    out.manifest = all;
    out.manifest.truncate(kept);
    out.manifest_omitted = n - kept;
}

/// The model-facing text of an error of the workspace: plan errors name the tool to call,
/// and a command only the user can run says so.
pub fn error_text(e: &acms::Error) -> String {
    use acms::plan::Error as P;
    match e {
        acms::Error::Plan(P::UnknownPlan(id)) => format!(
            "unknown plan {id}: call `plan_start` first and pass the `plan` id it returns (plan ids look like p3)"
        ),
        acms::Error::Plan(P::UnknownPhase { plan, phase, known }) => format!(
            "plan {plan} has no phase `{phase}`: call `plan_phase` with plan {plan} and phase `{phase}` first (phases run so far: {known})"
        ),
        acms::Error::Plan(P::NotInManifest { phase, fragment }) => format!(
            "fragment {fragment} is not in the context of phase `{phase}`: pass a `path:start-end` from a block header of that phase's context, or call `plan_history` with `phase` to list its fragments"
        ),
        acms::Error::Plan(P::PlanClosed(id)) => format!(
            "plan {id} is closed: call `plan_start` for a new plan, or `plan_child` with parent {id} to continue from it"
        ),
        acms::Error::Plan(P::Busy { .. }) => {
            "the plan database is busy (another acms process is writing it): call again in a moment"
                .to_string()
        }
        other => for_user(acms::error_line(other)),
    }
}

/// A message that tells a person to run a command: the model cannot, so it should say so.
pub fn for_user(line: String) -> String {
    if line.contains("`acms ") || line.contains("scripts/") || line.contains("sqlite3 ") {
        format!("{line} (a command for the user: tell them, you cannot run it through this server)")
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_within_finds_the_longest_fitting_prefix() {
        for len in 0..20 {
            for limit in 0..=len {
                assert_eq!(keep_within(len, |k| k <= limit), limit);
            }
        }
    }

    #[test]
    fn plan_errors_name_the_tool_to_call() {
        let e = acms::Error::Plan(acms::plan::Error::UnknownPlan("p999".into()));
        let t = error_text(&e);
        assert!(
            t.starts_with("unknown plan p999: call `plan_start` first"),
            "{t}"
        );
        assert!(!t.contains("acms plan"), "{t}");
        let e = acms::Error::Plan(acms::plan::Error::PlanClosed("p2".into()));
        assert!(error_text(&e).contains("call `plan_start` for a new plan"));
        let t = for_user("damaged: run `acms index --rebuild`".into());
        assert!(t.ends_with("you cannot run it through this server)"), "{t}");
    }

    #[test]
    fn previews_are_cut_on_characters() {
        assert_eq!(preview("  short ", 10), "short");
        assert_eq!(preview("ééééé", 3), "ééé…");
    }
}
