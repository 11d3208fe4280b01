//! The compaction pipeline: given a conversation and a hard limit, escalate through the tiers
//! until it fits, verifying every proposal, and end with a typed outcome.
//!
//! 1. **Tier 1** (no model call): offload large old tool results to the artifact store, replace
//!    tool results older than the age limit with the sentinel, then compact code in the
//!    remaining older messages (the last `keep_recent_results` results are always kept). Each
//!    stage runs only while the conversation is still over the limit.
//! 2. **Tier 3** when a [`Summarizer`] is configured (one call), else **tier 2**: summarize
//!    the older history into one message, keep recent context and restore recently read
//!    files and active skills. A failed or over-budget tier 3 falls back to tier 2.
//! 3. **Tier 4**: peel the oldest rounds until the conversation fits.
//!
//! A conversation already within the limit is returned unchanged. System messages, the latest
//! user turn, pinned messages and the task (the first user request, unless
//! [`CompactConfig::pin_task`] is off) are never changed, and tool calls stay with their
//! results (see `verify`). The one exception is a task too large to fit beside the other
//! required content: it is shortened first, with a marker that says so (see `task`). When nothing more can be removed the result is [`Error::Irreducible`]:
//! over-limit content is never returned as a success. The pipeline runs each tier at most once
//! and so always terminates.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::artifact::{ArtifactOutcome, ArtifactRef, ArtifactStore, PendingBody, store_referenced};
use crate::assembly::{ReduceRequest, Reducer, ReducerError};
use crate::budget::Thresholds;
use crate::code::{CodeOutliner, IndexOutliner, compact_code, compact_fences, is_code_path};
use crate::density;
use crate::diagnostics::{Diagnostics, Outcome, Rejection, Stage, StageReport};
use crate::measure::{Measured, Meter, SizeCache, View};
use crate::model::{
    CLEARED_PREFIX, Conversation, History, LEDGER_MARKER, Message, OFFLOAD_MARKER, RESTORED_MARKER,
    Role, SUMMARY_MARKER, StructureWarning, ToolCall, call_of, calls_by_id, groups, groups_with,
    is_stub, needs_normalize, normalize,
};
use crate::session::{self, Access, SessionFacts, call_access, call_path};
use crate::summarize::{Summarizer, SummaryRequest};
use crate::verify::{Reference, verify};
use crate::{Error, Result};

/// The one-line stub that replaces a cleared tool result: what produced it (the tool and its
/// command or path, first 100 characters) and how long it was.
/// `bytes` and `lines` count the result's text.
fn cleared_stub(call: Option<&ToolCall>, bytes: usize, lines: usize) -> String {
    let what = call.map_or_else(
        || "tool".to_string(),
        |c| {
            let arg = session::call_command(c)
                .or_else(|| call_path(c))
                .unwrap_or_default();
            let arg: String = arg.lines().next().unwrap_or("").chars().take(100).collect();
            if arg.is_empty() {
                c.name.clone()
            } else {
                format!("{} `{arg}`", c.name)
            }
        },
    );
    format!("{CLEARED_PREFIX}: {what} ({lines} lines, {bytes} bytes)]")
}

/// Compaction settings. Sizes are in the [`Meter`]'s unit.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactConfig {
    /// The hard limit the output must fit.
    pub limit: usize,
    /// The context window the budget states refer to (default: `limit`).
    pub window: Option<usize>,
    pub thresholds: Thresholds,
    /// Tier 1: tool results older than this are cleared.
    pub microcompact_age_secs: f64,
    /// Tier 1: this many most recent tool results are never cleared, offloaded or compacted.
    pub keep_recent_results: usize,
    /// Tool results at least this large (bytes) are offloaded when an artifact store is set.
    pub offload_min_bytes: usize,
    /// Tier 1: compact code in old messages.
    pub code_compaction: bool,
    /// Tier 2/3: keep at least this much recent context (when the limit allows).
    pub keep_recent: usize,
    /// Tier 3: room reserved for the summary.
    pub summary_reserve: usize,
    pub restore_files: usize,
    pub restore_file_max: usize,
    pub restore_files_total: usize,
    pub restore_skill_max: usize,
    pub restore_skills_total: usize,
    /// Compute the per-category density report (costs one more pass over the output).
    pub category_report: bool,
    /// Which tiers may run (index 0 is tier 1).
    pub tiers: [bool; 4],
    /// Keep the task (the first user request) verbatim, as the system prompt is; shortened
    /// with a marker only when it cannot fit beside the other required content.
    pub pin_task: bool,
}

impl CompactConfig {
    /// The spec's defaults for a hard `limit`.
    pub fn new(limit: usize) -> CompactConfig {
        CompactConfig {
            limit,
            window: None,
            thresholds: Thresholds::default(),
            microcompact_age_secs: 3600.0,
            keep_recent_results: 5,
            offload_min_bytes: 16 * 1024,
            code_compaction: true,
            keep_recent: 10_000,
            summary_reserve: 20_000,
            restore_files: 5,
            restore_file_max: 5_000,
            restore_files_total: 50_000,
            restore_skill_max: 5_000,
            restore_skills_total: 25_000,
            category_report: true,
            tiers: [true; 4],
            pin_task: true,
        }
    }

    /// The window the states are computed against.
    pub fn window(&self) -> usize {
        self.window.unwrap_or(self.limit)
    }
}

/// A skill (instructions loaded into the session) to restore after tier 2+.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    pub name: String,
    pub content: String,
}

/// A compacted conversation and its diagnostics.
#[derive(Debug, Clone)]
pub struct Compacted {
    pub conversation: Conversation,
    pub diagnostics: Diagnostics,
}

/// Compacts conversations to a hard limit. Build one, then call [`Compactor::compact`].
pub struct Compactor {
    config: CompactConfig,
    meter: Meter,
    summarizer: Option<Box<dyn Summarizer>>,
    outliner: Box<dyn CodeOutliner>,
    artifacts: Option<ArtifactStore>,
    skills: Vec<Skill>,
    now: Option<f64>,
    /// Sizes of the messages the tiers write (stubs, ledgers, summaries), by content: an
    /// agent resends its history, so the same stubs are measured again on every call.
    sizes: SizeCache,
    /// What old tool results say (error lines, frames, failing tests), by content.
    facts: session::FactCache,
}

impl std::fmt::Debug for Compactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compactor")
            .field("config", &self.config)
            .field("unit", &self.meter.unit())
            .field("summarizer", &self.summarizer.is_some())
            .field("artifacts", &self.artifacts.is_some())
            .finish()
    }
}

/// The work of one stage: a proposal and how many messages it touched.
struct Proposal {
    measured: Measured,
    changed: usize,
}

/// Tier 1's clearing in progress: stubs built beside the borrowed input (only the messages
/// kept as they are get copied, once, at the end) and the sizes they leave.
struct Clearing<'a> {
    cur: View<'a>,
    stubs: Vec<Option<Message>>,
    sizes: Vec<usize>,
    total: usize,
    /// The results cleared, in order.
    cleared: Vec<usize>,
    /// Each candidate's text is read once per call (and once per distinct text across
    /// calls): its facts give the stub's counts and the ledger's content.
    read: HashMap<usize, Arc<session::ResultFacts>>,
}

/// A state of tier 1 where the stubs and the ledger fit: results cleared, total, ledger.
struct Fit {
    cleared: usize,
    total: usize,
    ledger: (Message, usize),
}

impl<'a> Clearing<'a> {
    fn new(cur: View<'a>) -> Clearing<'a> {
        Clearing {
            cur,
            stubs: vec![None; cur.messages.len()],
            sizes: cur.sizes.to_vec(),
            total: cur.total,
            cleared: Vec::new(),
            read: HashMap::new(),
        }
    }

    /// Back to the state after the first `n` results were cleared, when the total was
    /// `total`.
    fn roll_back(&mut self, n: usize, total: usize) {
        for &i in &self.cleared[n..] {
            self.stubs[i] = None;
            self.sizes[i] = self.cur.sizes[i];
        }
        self.cleared.truncate(n);
        self.total = total;
    }

    /// The proposal: the stubs in place, and the `ledger` before the round that holds the
    /// first cleared result (stubs keep the groups).
    fn into_proposal(self, ledger: Option<(Message, usize)>) -> Proposal {
        let mut sizes = self.sizes;
        let mut messages: Vec<Message> = self
            .cur
            .messages
            .iter()
            .zip(self.stubs)
            .map(|(m, s)| s.unwrap_or_else(|| m.clone()))
            .collect();
        if let Some((m, size)) = ledger {
            let first = self.cleared[0];
            let at = groups(self.cur.messages)
                .into_iter()
                .find(|g| g.contains(&first))
                .map_or(first, |g| g.start);
            messages.insert(at, m);
            sizes.insert(at, size);
        }
        Proposal {
            measured: Measured::from_parts(messages, sizes),
            changed: self.cleared.len(),
        }
    }
}

/// A conversation's groups as tiers 2 and 3 choose from them: which are protected (hold a
/// protected message, so they are kept whole) and how large each is.
struct Span<'a> {
    cur: View<'a>,
    groups: Vec<Range<usize>>,
    /// Per message.
    protected: Vec<bool>,
    /// Per group.
    group_protected: Vec<bool>,
    /// Per group.
    sizes: Vec<usize>,
}

impl<'a> Span<'a> {
    fn of(cur: View<'a>, protected: Vec<bool>) -> Span<'a> {
        let groups = groups(cur.messages);
        let group_protected = groups_with(&groups, &protected);
        let sizes = groups.iter().map(|g| cur.group_size(g.clone())).collect();
        Span {
            cur,
            groups,
            protected,
            group_protected,
            sizes,
        }
    }

    /// The size of the protected groups: what no summary frees.
    fn protected_size(&self) -> usize {
        self.sizes
            .iter()
            .zip(&self.group_protected)
            .filter(|(_, p)| **p)
            .map(|(size, _)| size)
            .sum()
    }

    /// The unprotected groups, oldest first.
    fn unprotected(&self) -> impl DoubleEndedIterator<Item = usize> + '_ {
        (0..self.groups.len()).filter(|&g| !self.group_protected[g])
    }

    /// The messages of `groups`, in the order given.
    fn messages_of(&self, groups: impl IntoIterator<Item = usize>) -> Vec<&'a Message> {
        let messages = self.cur.messages;
        groups
            .into_iter()
            .flat_map(|g| &messages[self.groups[g].clone()])
            .collect()
    }

    /// The protected messages, in order.
    fn protected_messages(&self) -> impl Iterator<Item = &'a Message> + '_ {
        self.protected
            .iter()
            .zip(self.cur.messages)
            .filter(|(p, _)| **p)
            .map(|(_, m)| m)
    }
}

/// The tiers as a seam [`Reducer`]: attempt 1 proposes tier 1 (clear old tool results,
/// code outlines), attempt 2 adds the session summary (tier 3 when a summarizer is set, else
/// tier 2), attempt 3 and later add tier 4 (peel oldest rounds). Each proposal is the
/// smallest state the tiers reach toward the target, fitting or not; the assembler decides.
#[derive(Debug)]
pub struct TieredReducer {
    compactor: Compactor,
}

impl TieredReducer {
    /// A reducer over `compactor` (its limit is replaced by each request's target; its meter
    /// must be the assembler's).
    pub fn new(compactor: Compactor) -> TieredReducer {
        TieredReducer { compactor }
    }
}

impl Reducer for TieredReducer {
    fn propose(
        &self,
        request: &ReduceRequest<'_>,
    ) -> std::result::Result<Vec<Message>, ReducerError> {
        let tiers = match request.attempt {
            1 => [true, false, false, false],
            2 => [true, true, true, false],
            _ => [true; 4],
        };
        // The assembler's state is already normalized: the tiers borrow it (a copy only
        // when it is not).
        let (out, mut diag, pending) = if needs_normalize(request.messages) {
            let input = Measured::from_parts(request.messages.to_vec(), request.sizes.to_vec());
            let (out, diag, pending) = self.compactor.run_best(input, request.target, tiers);
            (Some(out), diag, pending)
        } else {
            let input = View {
                messages: request.messages,
                sizes: request.sizes,
                total: request.total,
            };
            self.compactor
                .reduce(input, request.total, Vec::new(), request.target, tiers)
        };
        match out {
            Some(out) if out.total < request.total => {
                // A compactor with its own store writes what its proposal references.
                self.compactor
                    .store_referenced(&out.messages, pending, &mut diag);
                Ok(out.messages)
            }
            _ => Err(ReducerError::Exhausted),
        }
    }
}

impl Compactor {
    /// A compactor with no summarizer (tier 2 instead of 3), the index's tree-sitter outliner
    /// for code, and no artifact store (no offload).
    pub fn new(config: CompactConfig, meter: Meter) -> Result<Compactor> {
        config.thresholds.validate(config.window())?;
        if config.limit == 0 {
            return Err(Error::Config("the limit must be positive".into()));
        }
        Ok(Compactor {
            config,
            meter,
            summarizer: None,
            outliner: Box::new(IndexOutliner::default()),
            artifacts: None,
            skills: Vec::new(),
            now: None,
            sizes: SizeCache::default(),
            facts: session::FactCache::default(),
        })
    }

    /// Enables tier 3 with `summarizer`.
    pub fn with_summarizer(mut self, summarizer: Box<dyn Summarizer>) -> Compactor {
        self.summarizer = Some(summarizer);
        self
    }

    /// Uses `outliner` for AST-aware code compaction.
    pub fn with_outliner(mut self, outliner: Box<dyn CodeOutliner>) -> Compactor {
        self.outliner = outliner;
        self
    }

    /// Offloads large tool results to `store`.
    pub fn with_artifacts(mut self, store: ArtifactStore) -> Compactor {
        self.artifacts = Some(store);
        self
    }

    /// Skills to restore after tier 2+.
    pub fn with_skills(mut self, skills: Vec<Skill>) -> Compactor {
        self.skills = skills;
        self
    }

    /// Uses `now` (unix seconds) as the current time for tier 1 ages.
    pub fn at_time(mut self, now: f64) -> Compactor {
        self.now = Some(now);
        self
    }

    /// The meter sizes are measured with.
    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    /// The settings.
    pub fn config(&self) -> &CompactConfig {
        &self.config
    }

    /// Compacts `conversation` to the limit.
    pub fn compact(&self, conversation: &Conversation) -> Result<Compacted> {
        self.compact_measured(Measured::new(conversation, &self.meter))
    }

    /// Compacts an already measured conversation (the sizes must come from this compactor's
    /// meter).
    pub fn compact_measured(&self, input: Measured) -> Result<Compacted> {
        self.run(input, self.config.limit, self.config.tiers)
    }

    /// Compacts a snapshot of `history`; when the history changed before the result was
    /// ready, restarts on a fresh snapshot, at most `max_attempts` times in all, then fails
    /// with [`Error::ConcurrentMutationLimit`] instead of returning a stale result.
    pub fn compact_history(&self, history: &dyn History, max_attempts: usize) -> Result<Compacted> {
        for _ in 0..max_attempts {
            let (version, conversation) = history.snapshot();
            let out = self.compact(&conversation)?;
            if history.version() == version {
                return Ok(out);
            }
        }
        Err(Error::ConcurrentMutationLimit {
            attempts: max_attempts,
        })
    }

    /// Tier 4 alone: peel the oldest rounds until the conversation is at most `target`
    /// (capped at the limit).
    pub fn reactive(&self, conversation: &Conversation, target: usize) -> Result<Compacted> {
        let input = Measured::new(conversation, &self.meter);
        self.run(
            input,
            target.min(self.config.limit),
            [false, false, false, true],
        )
    }

    /// Reacts to a provider error: `None` unless it is a context overflow, else tier 4 to at
    /// most 90% of the conversation's current size (the provider's real limit is unknown).
    pub fn on_provider_error(
        &self,
        conversation: &Conversation,
        error: &acms_llm::Error,
    ) -> Option<Result<Compacted>> {
        if !error.is_context_overflow() {
            return None;
        }
        let input = Measured::new(conversation, &self.meter);
        let target = input.total - (input.total / 10).max(1).min(input.total);
        Some(self.run(
            input,
            target.min(self.config.limit),
            [false, false, false, true],
        ))
    }

    fn run(&self, input: Measured, limit: usize, tiers: [bool; 4]) -> Result<Compacted> {
        let (cur, mut diag, pending) = self.run_best(input, limit, tiers);
        if cur.total > limit {
            diag.outcome = Outcome::Irreducible;
            return Err(Error::Irreducible {
                size: cur.total,
                limit,
                unit: self.meter.unit(),
                diagnostics: Box::new(diag),
            });
        }
        self.store_referenced(&cur.messages, pending, &mut diag);
        Ok(Compacted {
            conversation: Conversation::new(cur.messages),
            diagnostics: diag,
        })
    }

    /// Runs the enabled tiers toward `limit` and returns the smallest verified state
    /// reached, over the limit or not (the seam's reducer uses it as a proposal), and the
    /// offloaded bodies it may reference, not yet written.
    fn run_best(
        &self,
        input: Measured,
        limit: usize,
        tiers: [bool; 4],
    ) -> (Measured, Diagnostics, Vec<PendingBody>) {
        let original_size = input.total;
        let mut messages = input.messages;
        let mut sizes = input.sizes;
        let warnings = normalize(&mut messages);
        for w in &warnings {
            if let StructureWarning::OrphanToolResult { index } = w {
                sizes[*index] = self.meter.message(&messages[*index]);
            }
        }
        let input = Measured::from_parts(messages, sizes);
        let (best, diag, pending) =
            self.reduce(input.view(), original_size, warnings, limit, tiers);
        (best.unwrap_or(input), diag, pending)
    }

    /// The tiers over a borrowed, normalized `input`: the smallest verified state reached
    /// (`None`: no stage was accepted, the input stands), and the offloaded bodies, unwritten.
    fn reduce(
        &self,
        input: View<'_>,
        original_size: usize,
        warnings: Vec<StructureWarning>,
        limit: usize,
        tiers: [bool; 4],
    ) -> (Option<Measured>, Diagnostics, Vec<PendingBody>) {
        let original_messages = input.messages.len();
        let mut pending = Vec::new();
        let mut best: Option<Measured> = None;
        fn pick<'b>(best: &'b Option<Measured>, input: View<'b>) -> View<'b> {
            best.as_ref().map_or(input, Measured::view)
        }
        let mut reference = Reference::of(input.messages).pin_task(self.config.pin_task);
        let window = self.config.window();
        let mut diag = Diagnostics {
            unit: self.meter.unit(),
            tokenizer: self.meter.tokenizer(),
            limit,
            window,
            original_size,
            final_size: original_size,
            original_messages,
            final_messages: original_messages,
            state_before: self.config.thresholds.state(window, original_size),
            state_after: self.config.thresholds.state(window, original_size),
            outcome: Outcome::WithinLimit,
            tier: 0,
            stages: Vec::new(),
            categories: Vec::new(),
            warnings,
            artifacts: Vec::new(),
            restored_files: 0,
            restored_skills: 0,
        };
        if self.config.pin_task && pick(&best, input).total > limit {
            let now = pick(&best, input);
            if let Some((i, task, size)) = crate::task::fit(now, limit, &self.meter) {
                // Only the shortening this found necessary is acceptable to the verifier.
                reference = reference.allow_shortened_task();
                let mut messages = now.messages.to_vec();
                let mut sizes = now.sizes.to_vec();
                messages[i] = task;
                sizes[i] = size;
                let p = Proposal {
                    measured: Measured::from_parts(messages, sizes),
                    changed: 1,
                };
                if let Some(m) =
                    self.consider(Stage::ShortenTask, &reference, now, Ok(Some(p)), &mut diag)
                {
                    best = Some(m);
                }
            }
        }
        if pick(&best, input).total > limit && tiers[0] {
            for stage in [Stage::Offload, Stage::Microcompact, Stage::CodeCompaction] {
                let now = pick(&best, input);
                if now.total <= limit {
                    break;
                }
                let proposal = match stage {
                    Stage::Offload => Ok(self.offload(now, &mut pending)),
                    Stage::CodeCompaction => self.code(now),
                    _ => self.microcompact(now, limit),
                };
                if let Some(m) = self.consider(stage, &reference, now, proposal, &mut diag) {
                    best = Some(m);
                }
            }
        }
        if pick(&best, input).total > limit && (tiers[1] || tiers[2]) {
            let mut accepted = false;
            if tiers[2] && self.summarizer.is_some() {
                let now = pick(&best, input);
                let p = self.summarize(now, limit, true, &mut diag);
                if let Some(m) = self.consider(Stage::LlmSummary, &reference, now, p, &mut diag) {
                    best = Some(m);
                    accepted = true;
                }
            }
            if !accepted && tiers[1] {
                let now = pick(&best, input);
                let p = self.summarize(now, limit, false, &mut diag);
                if let Some(m) = self.consider(Stage::SessionSummary, &reference, now, p, &mut diag)
                {
                    best = Some(m);
                }
            }
        }
        if pick(&best, input).total > limit && tiers[3] {
            let now = pick(&best, input);
            let p = self.peel(now, limit);
            if let Some(m) = self.consider(Stage::Peel, &reference, now, p, &mut diag) {
                best = Some(m);
            }
        }
        let last = pick(&best, input);
        diag.final_size = last.total;
        diag.final_messages = last.messages.len();
        diag.state_after = self.config.thresholds.state(window, last.total);
        if self.config.category_report {
            let calls = calls_by_id(last.messages);
            diag.categories = density::categories(last.messages, last.sizes, &calls);
        }
        if last.total != original_size || !diag.stages.is_empty() {
            diag.outcome = Outcome::Reduced;
        }
        (best, diag, pending)
    }

    /// Verifies a stage's proposal, records it, and adopts it when valid. Returns whether it
    /// was accepted.
    fn consider(
        &self,
        stage: Stage,
        reference: &Reference,
        cur: View<'_>,
        proposal: std::result::Result<Option<Proposal>, Rejection>,
        diag: &mut Diagnostics,
    ) -> Option<Measured> {
        let mut report = StageReport {
            stage,
            tier: stage.tier(),
            size_before: cur.total,
            size_after: cur.total,
            messages_before: cur.messages.len(),
            messages_after: cur.messages.len(),
            messages_changed: 0,
            accepted: false,
            rejection: None,
        };
        let mut accepted = None;
        match proposal {
            Ok(None) => return None, // nothing this stage could do
            Err(r) => report.rejection = Some(r),
            Ok(Some(p)) => {
                report.size_after = p.measured.total;
                report.messages_after = p.measured.messages.len();
                report.messages_changed = p.changed;
                match verify(reference, cur.total, &p.measured) {
                    Ok(()) => {
                        report.accepted = true;
                        diag.tier = diag.tier.max(stage.tier());
                        accepted = Some(p.measured);
                    }
                    Err(r) => report.rejection = Some(r),
                }
            }
        }
        diag.stages.push(report);
        accepted
    }

    /// The size of a message a tier wrote (cached by content).
    fn size_of(&self, m: &Message) -> usize {
        self.sizes.message(m, &self.meter)
    }

    /// Messages no step may remove: system, the task (when pinned), latest user request and
    /// pinned messages.
    fn required(&self, messages: &[Message]) -> Vec<bool> {
        crate::task::required(messages, self.config.pin_task)
    }

    /// Messages no step may touch: the required ones and earlier compaction summaries (kept
    /// whole by tiers 1-3; tier 4 peels them last).
    fn protected(&self, messages: &[Message]) -> Vec<bool> {
        let mut protected = self.required(messages);
        for (p, m) in protected.iter_mut().zip(messages) {
            *p |= m.is_compaction_artifact();
        }
        protected
    }

    /// Indices of tool results tier 1 may rewrite: not protected, not among the most recent.
    fn old_results(&self, messages: &[Message]) -> Vec<usize> {
        let protected = self.protected(messages);
        let results: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].role == Role::Tool && !protected[i])
            .collect();
        let keep = self.config.keep_recent_results.min(results.len());
        results[..results.len() - keep].to_vec()
    }

    /// Rewrites the messages at the given indices with `f` (returning `None` = unchanged).
    fn rewrite(
        &self,
        cur: View<'_>,
        indices: impl IntoIterator<Item = usize>,
        mut f: impl FnMut(usize, &Message) -> Option<String>,
    ) -> Option<Proposal> {
        let mut new: Vec<Option<String>> = vec![None; cur.messages.len()];
        let mut changed = 0;
        for i in indices {
            if let Some(content) = f(i, &cur.messages[i]) {
                new[i] = Some(content);
                changed += 1;
            }
        }
        if changed == 0 {
            return None;
        }
        // Only the messages kept as they are are copied; rewritten ones get their new text.
        let mut sizes = cur.sizes.to_vec();
        let messages: Vec<Message> = cur
            .messages
            .iter()
            .zip(new)
            .enumerate()
            .map(|(i, (m, c))| match c {
                Some(c) => {
                    let m = with_content(m, c);
                    sizes[i] = self.meter.message(&m);
                    m
                }
                None => m.clone(),
            })
            .collect();
        Some(Proposal {
            measured: Measured::from_parts(messages, sizes),
            changed,
        })
    }

    /// Replaces old large tool results by stubs; the bodies are written only once the
    /// final output is decided ([`Compactor::store_referenced`]).
    fn offload(&self, cur: View<'_>, pending: &mut Vec<PendingBody>) -> Option<Proposal> {
        self.artifacts.as_ref()?;
        self.rewrite(cur, self.old_results(cur.messages), |_, m| {
            if m.content.len() < self.config.offload_min_bytes
                || m.content.starts_with(OFFLOAD_MARKER)
            {
                return None;
            }
            let (body, stub) = PendingBody::offload(&m.content)?;
            pending.push(body);
            Some(stub)
        })
    }

    /// Writes the pending bodies `messages` reference; reports those in `diag`.
    fn store_referenced(
        &self,
        messages: &[Message],
        pending: Vec<PendingBody>,
        diag: &mut Diagnostics,
    ) {
        let Some(store) = &self.artifacts else {
            return;
        };
        let refs: Vec<ArtifactRef> = pending.iter().map(|p| p.reference.clone()).collect();
        for (r, outcome) in refs
            .into_iter()
            .zip(store_referenced(store, messages, pending))
        {
            if matches!(
                outcome,
                Some(ArtifactOutcome::Written | ArtifactOutcome::Reused)
            ) && !diag.artifacts.contains(&r)
            {
                diag.artifacts.push(r);
            }
        }
    }

    fn code(&self, cur: View<'_>) -> std::result::Result<Option<Proposal>, Rejection> {
        if !self.config.code_compaction {
            return Ok(None);
        }
        let protected = self.protected(cur.messages);
        let old: HashSet<usize> = self.old_results(cur.messages).into_iter().collect();
        let calls = calls_by_id(cur.messages);
        let eligible = (0..cur.messages.len()).filter(|&i| {
            if cur.messages[i].role == Role::Tool {
                old.contains(&i)
            } else {
                !protected[i]
            }
        });
        Ok(self.rewrite(cur, eligible, |_, m| {
            if is_stub(&m.content) {
                return None;
            }
            let file = call_of(m, &calls)
                .filter(|c| call_access(c) == Access::Read)
                .and_then(call_path)
                .filter(|p| is_code_path(p));
            match file {
                Some(path) => compact_code(self.outliner.as_ref(), Some(&path), &m.content),
                None => compact_fences(self.outliner.as_ref(), &m.content),
            }
        }))
    }

    /// Tier 1: clears old tool results oldest first, each replaced by a one-line stub naming
    /// what was cleared, until the conversation fits `limit`; the facts of the cleared
    /// results (error lines, traceback frames, failing tests) go into one session ledger
    /// message placed before the first cleared round, so they outlive the text.
    fn microcompact(
        &self,
        cur: View<'_>,
        limit: usize,
    ) -> std::result::Result<Option<Proposal>, Rejection> {
        let calls = calls_by_id(cur.messages);
        let candidates = self.clear_candidates(cur);
        if candidates.is_empty() {
            return Ok(None);
        }
        let mut clearing = Clearing::new(cur);
        let mut ledger = None;
        if let Some(fit) = self.clear_until_fit(&mut clearing, &candidates, &calls, limit) {
            // Back to the latest state that fit.
            clearing.roll_back(fit.cleared, fit.total);
            ledger = Some(fit.ledger);
        }
        if clearing.cleared.is_empty() {
            return Ok(None);
        }
        let ledger_size = ledger.as_ref().map_or(0, |(_, n)| *n);
        if ledger.is_none() || clearing.total + ledger_size > limit {
            // Not fitting yet: later tiers need room, so the ledger takes at most a fifth.
            ledger = self
                .ledger(
                    cur.messages,
                    &clearing.cleared,
                    &clearing.read,
                    &calls,
                    limit / 5,
                )
                .map(|(m, size, _)| (m, size));
        }
        Ok(Some(clearing.into_proposal(ledger)))
    }

    /// The tool results tier 1 may clear, oldest first: old results past the age limit. A
    /// result without a timestamp cannot be shown to be recent, so it counts as old. An
    /// offloaded result is already a small, recoverable reference: it is kept.
    fn clear_candidates(&self, cur: View<'_>) -> Vec<usize> {
        let now = self.now.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs_f64())
                .unwrap_or(0.0)
        });
        let age = self.config.microcompact_age_secs;
        self.old_results(cur.messages)
            .into_iter()
            .filter(|&i| {
                let m = &cur.messages[i];
                m.timestamp.is_none_or(|t| now - t >= age) && !is_stub(&m.content)
            })
            .collect()
    }

    /// Clears `candidates` in order until the stubs and the ledger of what they cleared fit
    /// `limit`; returns the latest state where they did, if any. `None` too when the cleared
    /// results hold no facts: then the stubs alone fit and clearing stops there.
    fn clear_until_fit(
        &self,
        clearing: &mut Clearing<'_>,
        candidates: &[usize],
        calls: &HashMap<&str, &ToolCall>,
        limit: usize,
    ) -> Option<Fit> {
        let mut fitted: Option<Fit> = None;
        let mut past_fit = 0;
        for &i in candidates {
            // The ledger only adds size, so it is built once the stubs alone fit.
            if !self.clear(clearing, i, calls) || clearing.total >= limit {
                continue;
            }
            let room = limit - clearing.total;
            let (m, size, level) = self.ledger(
                clearing.cur.messages,
                &clearing.cleared,
                &clearing.read,
                calls,
                room,
            )?;
            if size <= room {
                fitted = Some(Fit {
                    cleared: clearing.cleared.len(),
                    total: clearing.total,
                    ledger: (m, size),
                });
                // A coarse ledger keeps few frames of each error; clearing a few more old
                // results (each down to a stub) usually buys a detailed one.
                if level <= 1 || past_fit >= 8 {
                    break;
                }
            }
            if fitted.is_some() {
                past_fit += 1;
                if past_fit > 8 {
                    break;
                }
            }
        }
        fitted
    }

    /// Replaces tool result `i` by its stub, unless the stub is not smaller; returns whether
    /// it did.
    fn clear(
        &self,
        clearing: &mut Clearing<'_>,
        i: usize,
        calls: &HashMap<&str, &ToolCall>,
    ) -> bool {
        let cur = clearing.cur;
        let m = &cur.messages[i];
        let facts = clearing
            .read
            .entry(i)
            .or_insert_with(|| self.facts.get(&m.content));
        let stubbed = with_content(
            m,
            cleared_stub(call_of(m, calls), m.content.len(), facts.line_count),
        );
        let (before, after) = (clearing.sizes[i], self.size_of(&stubbed));
        // A result smaller than its stub stays as it is.
        if after >= before {
            return false;
        }
        clearing.stubs[i] = Some(stubbed);
        clearing.sizes[i] = after;
        clearing.total = clearing.total + after - before;
        clearing.cleared.push(i);
        true
    }

    /// The ledger message of the facts in the cleared results, its size and level: the most
    /// detailed level that fits `room` (the least detailed one when none does); `None` when
    /// there are no facts.
    fn ledger(
        &self,
        original: &[Message],
        cleared: &[usize],
        read: &HashMap<usize, Arc<session::ResultFacts>>,
        calls: &HashMap<&str, &ToolCall>,
        room: usize,
    ) -> Option<(Message, usize, usize)> {
        // The facts microcompact already read, found again by the text's address.
        let known: HashMap<usize, &Arc<session::ResultFacts>> = cleared
            .iter()
            .filter_map(|i| Some((original[*i].content.as_ptr() as usize, read.get(i)?)))
            .collect();
        let mut facts = session::extract_with(
            cleared.iter().map(|&i| &original[i]),
            calls,
            &mut |m| match known.get(&(m.content.as_ptr() as usize)) {
                Some(f) => Arc::clone(f),
                None => self.facts.get(&m.content),
            },
        );
        // The calls stay in context: the ledger carries only what the results said.
        facts.files.clear();
        facts.edits.clear();
        facts.tests_run.clear();
        if facts.ledger_is_empty() {
            return None;
        }
        let mut best = None;
        for level in 0..session::LEDGER_LEVEL_COUNT {
            let m = Message::text(
                Role::User,
                format!(
                    "{LEDGER_MARKER}: facts from {} cleared tool results]{}",
                    cleared.len(),
                    facts.render_ledger(level)
                ),
            );
            let size = self.size_of(&m);
            let fits = size <= room;
            best = Some((m, size, level));
            if fits {
                break;
            }
        }
        best
    }

    /// Tier 2 (`llm == false`) or tier 3: replaces older history with one summary message,
    /// keeps recent groups and restores recent files and skills.
    fn summarize(
        &self,
        cur: View<'_>,
        limit: usize,
        llm: bool,
        diag: &mut Diagnostics,
    ) -> std::result::Result<Option<Proposal>, Rejection> {
        let span = Span::of(cur, self.protected(cur.messages));
        let protected_size = span.protected_size();
        if protected_size >= limit {
            return Err(Rejection::OverBudget);
        }
        let room = limit - protected_size;
        let calls = calls_by_id(cur.messages);
        // Tier 3 knows its summary budget up front; tier 2 measures its summary instead.
        let reserve = if llm {
            self.config.summary_reserve.min(room / 2)
        } else {
            self.ledger_reserve(&span, &calls, room)
        };
        let (mut tail, mut tail_size) = self.recent_tail(&span, reserve, room);
        loop {
            let kept: HashSet<usize> = tail.iter().copied().collect();
            let removed: Vec<usize> = span.unprotected().filter(|g| !kept.contains(g)).collect();
            if removed.is_empty() {
                return Ok(None);
            }
            let removed_msgs = span.messages_of(removed.iter().copied());
            let facts = self.facts_of(&removed_msgs, &calls);
            let budget = room - tail_size;
            let summary = if llm {
                Some(self.llm_summary(&removed_msgs, &facts, reserve, budget)?)
            } else {
                self.session_summary(&facts, removed_msgs.len(), tail.is_empty(), budget)
            };
            let Some((summary, summary_size)) = summary else {
                // Not even the tightest summary fits next to this tail: give up the oldest
                // tail group and try again (bounded by the tail's length).
                let g = tail.pop().ok_or(Rejection::OverBudget)?;
                tail_size -= span.sizes[g];
                continue;
            };
            let tail_msgs: Vec<&Message> = span
                .messages_of(tail.iter().copied())
                .into_iter()
                .chain(span.protected_messages())
                .collect();
            let restored =
                self.restoration(&removed_msgs, &tail_msgs, &calls, budget - summary_size);
            let changed = removed_msgs.len() + 1 + usize::from(restored.is_some());
            let mut inserted = vec![(summary, summary_size)];
            if let Some((m, size, files, skills)) = restored {
                inserted.push((m, size));
                diag.restored_files = files;
                diag.restored_skills = skills;
            }
            let measured = cur.select_groups(
                &span.groups,
                |g| span.group_protected[g] || kept.contains(&g),
                Some((removed[0], inserted)),
            );
            return Ok(Some(Proposal { measured, changed }));
        }
    }

    /// What `messages` say, read once per distinct text ([`session::FactCache`]).
    fn facts_of(&self, messages: &[&Message], calls: &HashMap<&str, &ToolCall>) -> SessionFacts {
        session::extract_with(messages.iter().copied(), calls, &mut |m| {
            self.facts.get(&m.content)
        })
    }

    /// Tier 2's reserve for its summary: room for the full ledger of everything it may
    /// summarize (up to half the room), as a fact kept in the ledger is cheaper than the
    /// verbatim round it came from.
    fn ledger_reserve(
        &self,
        span: &Span<'_>,
        calls: &HashMap<&str, &ToolCall>,
        room: usize,
    ) -> usize {
        let all = span.messages_of(span.unprotected());
        let facts = self.facts_of(&all, calls);
        self.meter
            .text_capped(&facts.render_summary(all.len(), None), room / 2)
    }

    /// Recent unprotected groups, newest first, contiguous from the end, with their size:
    /// up to `keep_recent` of context, as long as it leaves `reserve` for the summary.
    fn recent_tail(&self, span: &Span<'_>, reserve: usize, room: usize) -> (Vec<usize>, usize) {
        let mut tail: Vec<usize> = Vec::new();
        let mut tail_size = 0;
        for g in span.unprotected().rev() {
            if tail_size >= self.config.keep_recent || tail_size + span.sizes[g] + reserve > room {
                break;
            }
            tail_size += span.sizes[g];
            tail.push(g);
        }
        (tail, tail_size)
    }

    /// Tier 3's summary of `removed` by the summarizer, asked for at most `reserve` and
    /// accepted within `budget` too.
    fn llm_summary(
        &self,
        removed: &[&Message],
        facts: &SessionFacts,
        reserve: usize,
        budget: usize,
    ) -> std::result::Result<(Message, usize), Rejection> {
        let s = self.summarizer.as_deref().ok_or(Rejection::OverBudget)?;
        let transcript: Vec<String> = removed.iter().map(|m| m.render()).collect();
        let request = SummaryRequest {
            transcript: &transcript.join("\n\n"),
            facts,
            max_size: reserve,
        };
        let text = s.summarize(&request).map_err(Rejection::SummarizerFailed)?;
        let mut body = text.trim().to_string();
        // The last error is appended from the facts: a model may paraphrase it.
        let last_error = facts.render_last_error();
        if !last_error.is_empty() {
            body.push('\n');
            body.push_str(&last_error);
        }
        let m = Message::text(
            Role::User,
            format!(
                "{SUMMARY_MARKER} of {} earlier messages, written by the summary model]\n{body}",
                removed.len(),
            ),
        );
        let size = self.size_of(&m);
        // Never loop on the model: one call, and an oversized answer means tier 2.
        if size > reserve.min(budget) {
            return Err(Rejection::OverBudget);
        }
        Ok((m, size))
    }

    /// Tier 2's summary of `n` removed messages from their `facts`: the most detailed
    /// rendering that fits `budget`. With `nothing_kept` (no recent context left to give
    /// up) the last resort is the summary of the last error alone.
    fn session_summary(
        &self,
        facts: &SessionFacts,
        n: usize,
        nothing_kept: bool,
        budget: usize,
    ) -> Option<(Message, usize)> {
        let minimal = nothing_kept.then(|| facts.render_minimal_summary(n));
        [None, Some(2000), Some(400), Some(80)]
            .into_iter()
            .map(|cap| facts.render_summary(n, cap))
            .chain(minimal)
            .find_map(|text| {
                let m = Message::text(Role::User, text);
                let size = self.size_of(&m);
                (size <= budget).then_some((m, size))
            })
    }

    /// The restoration message: the last files read in the compacted span (not read again in
    /// what is kept) and the active skills, each capped, all within `room`.
    fn restoration(
        &self,
        removed: &[&Message],
        kept: &[&Message],
        calls: &HashMap<&str, &ToolCall>,
        room: usize,
    ) -> Option<(Message, usize, usize, usize)> {
        let still_visible: HashSet<String> = session::recent_reads_of(kept.iter().copied(), calls)
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        let reads: Vec<(String, &str)> = session::recent_reads_of(removed.iter().copied(), calls)
            .into_iter()
            .filter(|(path, _)| !still_visible.contains(path))
            .collect();
        let reads = &reads[reads.len().saturating_sub(self.config.restore_files)..];
        if reads.is_empty() && self.skills.is_empty() {
            return None;
        }
        let mut text =
            format!("{RESTORED_MARKER} after compaction: recently read files and active skills]\n");
        let header = self.size_of(&Message::text(Role::User, text.clone()));
        if header >= room {
            return None;
        }
        // Budgets are checked on each piece, then the whole message is measured exactly and
        // pieces are dropped from the end until it fits.
        let mut pieces: Vec<(bool, String)> = Vec::new();
        let mut used = header;
        let mut files_total = 0;
        for (path, content) in reads.iter().rev() {
            let cap = self
                .config
                .restore_file_max
                .min(self.config.restore_files_total - files_total)
                .min(room.saturating_sub(used));
            let body = self
                .sizes
                .truncate(content, cap.saturating_sub(20), &self.meter);
            if body.is_empty() {
                continue;
            }
            let piece = format!("\n### File: {path}\n```\n{body}\n```\n");
            let size = self.sizes.text(&piece, &self.meter);
            if used + size > room || files_total + size > self.config.restore_files_total {
                continue;
            }
            files_total += size;
            used += size;
            pieces.push((true, piece));
        }
        let mut skills_total = 0;
        for s in &self.skills {
            let cap = self
                .config
                .restore_skill_max
                .min(self.config.restore_skills_total - skills_total)
                .min(room.saturating_sub(used));
            let body = self
                .sizes
                .truncate(&s.content, cap.saturating_sub(10), &self.meter);
            if body.is_empty() {
                continue;
            }
            let piece = format!("\n### Skill: {}\n{}\n", s.name, body);
            let size = self.sizes.text(&piece, &self.meter);
            if used + size > room || skills_total + size > self.config.restore_skills_total {
                continue;
            }
            skills_total += size;
            used += size;
            pieces.push((false, piece));
        }
        while !pieces.is_empty() {
            let mut t = text.clone();
            for (_, p) in &pieces {
                t.push_str(p);
            }
            let m = Message::text(Role::User, t);
            let size = self.size_of(&m);
            if size <= room {
                let files = pieces.iter().filter(|(f, _)| *f).count();
                return Some((m, size, files, pieces.len() - files));
            }
            pieces.pop();
        }
        text.clear();
        None
    }

    /// Tier 4: removes the oldest unprotected groups (earlier summaries last; never the
    /// system prompt, the pinned task, the latest user turn or pinned messages) until the
    /// total is at most `limit`, recounting after each.
    fn peel(
        &self,
        cur: View<'_>,
        limit: usize,
    ) -> std::result::Result<Option<Proposal>, Rejection> {
        let msgs = cur.messages;
        let gs = groups(msgs);
        let hard = groups_with(&gs, &self.required(msgs));
        let summaries: Vec<bool> = msgs.iter().map(Message::is_compaction_artifact).collect();
        let summary = groups_with(&gs, &summaries);
        let order = (0..gs.len())
            .filter(|&g| !hard[g] && !summary[g])
            .chain((0..gs.len()).filter(|&g| !hard[g] && summary[g]));
        let mut total = cur.total;
        let mut removed = vec![false; gs.len()];
        let mut changed = 0;
        for g in order {
            if total <= limit {
                break;
            }
            total -= cur.group_size(gs[g].clone());
            removed[g] = true;
            changed += gs[g].len();
        }
        if changed == 0 {
            return Ok(None);
        }
        Ok(Some(Proposal {
            measured: cur.select_groups(&gs, |g| !removed[g], None),
            changed,
        }))
    }
}

/// A copy of `m` with `content` in place of its text (the old text is not copied).
fn with_content(m: &Message, content: String) -> Message {
    Message {
        role: m.role,
        content,
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        is_error: m.is_error,
        pinned: m.pinned,
        timestamp: m.timestamp,
        origin: m.origin,
    }
}
