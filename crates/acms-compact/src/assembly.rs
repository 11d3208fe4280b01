//! Bounded assembly for one provider call: from a fresh snapshot of the call's messages,
//! produce a message set within the hard limit, or terminate with a typed outcome. Nothing
//! a reducer proposes is trusted.
//!
//! 1. **Snapshot** the messages (with the history's version) and measure them in the unit
//!    the [`Meter`] declares.
//! 2. **Evict rehydrated bodies** back to their references: those this run did not
//!    rehydrate, those already delivered or held by a concurrent call of the run (see
//!    [`crate::lease`]), and all of them when the snapshot is over the trigger threshold.
//! 3. At or under the trigger threshold (`hard_limit - trigger_margin`) the snapshot is
//!    forwarded as is: [`Outcome::WithinLimit`].
//! 4. **Offload** large tool results to the artifact store (when one is configured).
//! 5. **Shorten the task**, with a marker, only when the required content (system, task,
//!    latest user turn, pinned) is over the threshold with the task whole (see `task`).
//! 6. Ask the [`Reducer`] for a proposal, at most `max_attempts` times; each proposal is
//!    measured here and verified independently (strictly smaller, system / pinned / task /
//!    latest user content unchanged, tool pairs intact, order kept). The first accepted
//!    state at or under the threshold is [`Outcome::Reduced`].
//! 7. Otherwise the **preservation-only fallback**: required content plus the most recent
//!    optional context that fits, nothing reducer-made ([`Outcome::PreservationFallback`]),
//!    or [`Outcome::Irreducible`] when required content alone exceeds the hard limit.
//! 8. A history that changes under a proposal invalidates it and the assembly restarts from
//!    a fresh snapshot; when that uses up the attempt budget the outcome is
//!    [`Outcome::ConcurrentMutationLimit`].
//!
//! Termination is never forwarded: the caller gets [`TerminatedAssembly`].

use std::sync::Arc;

use crate::artifact::{
    ArtifactAttribution, ArtifactOperation, ArtifactOutcome, ArtifactStore, PendingBody,
    REFERENCE_BYTES, store_referenced,
};
use crate::density;
use crate::diagnostics::{Outcome, Rejection};
use crate::error::Terminated;
use crate::events::{AssemblyDiagnostics, AssemblyStage, Verdict};
use crate::lease::{CallLeases, EVICTED_MARKER, evicted_text, rehydrated_digest};
use crate::measure::{Measured, Meter, SizeCache};
use crate::model::{
    Conversation, History, Message, Role, calls_by_id, groups, groups_with, is_stub, normalize,
};
use crate::verify::{Reference, sequence, structure, verify};
use crate::{Error, Result};

/// The limits one assembly enforces. Sizes are in the meter's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssemblyPolicy {
    /// Never forwarded above this.
    pub hard_limit: usize,
    /// Reduction starts above `hard_limit - trigger_margin` and aims at or under it.
    pub trigger_margin: usize,
    /// Reducer proposals (and restarts after a mutation) per assembly.
    pub max_attempts: usize,
    /// Tool results of at least this many bytes are offloaded (with an artifact store).
    pub offload_min_bytes: usize,
    /// This many most recent tool results are never offloaded.
    pub keep_recent_results: usize,
    /// Keep the task (the first user request) verbatim, as the system prompt is; shortened
    /// with a marker only when it cannot fit beside the other required content.
    pub pin_task: bool,
}

impl AssemblyPolicy {
    /// Defaults for `hard_limit`: a 5% trigger margin, three attempts, offload from 16 KiB,
    /// the last five results kept, the task pinned.
    pub fn new(hard_limit: usize) -> AssemblyPolicy {
        AssemblyPolicy {
            hard_limit,
            trigger_margin: hard_limit / 20,
            max_attempts: 3,
            offload_min_bytes: 16 * 1024,
            keep_recent_results: 5,
            pin_task: true,
        }
    }

    /// `hard_limit - trigger_margin`.
    pub fn trigger_threshold(&self) -> usize {
        self.hard_limit.saturating_sub(self.trigger_margin)
    }

    /// Checks the settings.
    pub fn validate(&self) -> Result<()> {
        if self.hard_limit == 0 {
            return Err(Error::Config("the hard limit must be positive".into()));
        }
        if self.trigger_margin >= self.hard_limit {
            return Err(Error::Config(format!(
                "the trigger margin ({}) must be below the hard limit ({})",
                self.trigger_margin, self.hard_limit
            )));
        }
        if self.max_attempts == 0 {
            return Err(Error::Config("max attempts must be at least 1".into()));
        }
        Ok(())
    }
}

/// What a reducer is asked for: a smaller version of `messages`, at most `target`.
#[derive(Debug)]
pub struct ReduceRequest<'a> {
    /// The current state (the snapshot after eviction, offload and accepted proposals).
    pub messages: &'a [Message],
    /// Their sizes, measured by the assembler.
    pub sizes: &'a [usize],
    pub total: usize,
    /// The trigger threshold: the size to reach.
    pub target: usize,
    pub hard_limit: usize,
    /// 1 for the first attempt of this assembly.
    pub attempt: usize,
    pub max_attempts: usize,
}

/// Why a reducer produced no proposal. A category, never text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ReducerError {
    #[error("the reducer failed")]
    Failed,
    #[error("the reducer has nothing more to propose")]
    Exhausted,
}

/// A reducer proposes a smaller message set. Its output is advice: the assembler measures
/// and verifies every proposal and may reject it.
pub trait Reducer: Send + Sync {
    fn propose(
        &self,
        request: &ReduceRequest<'_>,
    ) -> std::result::Result<Vec<Message>, ReducerError>;
}

/// A successful assembly: the messages to forward.
#[derive(Debug)]
pub struct Bounded {
    pub messages: Vec<Message>,
    pub sizes: Vec<usize>,
    /// False when the snapshot is forwarded exactly as it was given.
    pub changed: bool,
    pub diagnostics: Arc<AssemblyDiagnostics>,
}

/// A terminated assembly: what the caller learns ([`Terminated`]) and the diagnostics the
/// terminated event carries.
#[derive(Debug)]
pub struct TerminatedAssembly {
    pub terminated: Terminated,
    pub diagnostics: Arc<AssemblyDiagnostics>,
}

/// A fixed message set as a history that never changes (one provider call's messages).
#[derive(Debug)]
pub struct FixedHistory(pub Vec<Message>);

impl History for FixedHistory {
    fn version(&self) -> u64 {
        0
    }
    fn snapshot(&self) -> (u64, Conversation) {
        (0, Conversation::new(self.0.clone()))
    }
}

/// The assembler: policy, meter, reducer, size cache and an optional artifact store.
pub struct Assembler {
    policy: AssemblyPolicy,
    meter: Meter,
    reducer: Arc<dyn Reducer>,
    artifacts: Option<Arc<ArtifactStore>>,
    cache: SizeCache,
}

impl std::fmt::Debug for Assembler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Assembler")
            .field("policy", &self.policy)
            .field("unit", &self.meter.unit())
            .field("artifacts", &self.artifacts.is_some())
            .finish()
    }
}

/// Mutable record of one assembly.
#[derive(Default)]
struct Record {
    stages: Vec<AssemblyStage>,
    artifacts: Vec<ArtifactAttribution>,
    /// Offloaded bodies not yet written, with the index of their attribution.
    pending: Vec<(usize, PendingBody)>,
    attempts: usize,
    restarts: usize,
    original: Option<(usize, usize)>,
}

/// One pass over a snapshot: the states it goes through, each kept beside the one before
/// it rather than copied — the snapshot after eviction, then (where each happened) its
/// offload, the task shortened and the last accepted reducer proposal.
struct Pass {
    /// The history's version the snapshot was taken at.
    version: u64,
    base: Measured,
    /// Rehydrated bodies evicted from the snapshot.
    evicted: usize,
    /// What every later state is verified against.
    reference: Reference,
    offloaded: Option<Measured>,
    shortened: Option<Measured>,
    reduced: Option<Measured>,
}

impl Pass {
    /// The state the reducer starts from: the task shortened, else the offload, else the
    /// snapshot.
    fn prepared(&self) -> &Measured {
        self.shortened
            .as_ref()
            .or(self.offloaded.as_ref())
            .unwrap_or(&self.base)
    }

    /// The current state: the last accepted proposal, else [`Pass::prepared`].
    fn current(&self) -> &Measured {
        self.reduced.as_ref().unwrap_or_else(|| self.prepared())
    }

    /// Whether any step changed the snapshot.
    fn changed(&self) -> bool {
        self.evicted > 0
            || self.offloaded.is_some()
            || self.shortened.is_some()
            || self.reduced.is_some()
    }

    /// [`Pass::current`], owned.
    fn into_current(self) -> Measured {
        self.reduced
            .or(self.shortened)
            .or(self.offloaded)
            .unwrap_or(self.base)
    }
}

impl Assembler {
    /// An assembler; fails on invalid settings.
    pub fn new(
        policy: AssemblyPolicy,
        meter: Meter,
        reducer: Arc<dyn Reducer>,
    ) -> Result<Assembler> {
        policy.validate()?;
        Ok(Assembler {
            policy,
            meter,
            reducer,
            artifacts: None,
            cache: SizeCache::default(),
        })
    }

    /// Offloads large tool results to `store` when over the trigger.
    pub fn with_artifacts(mut self, store: Arc<ArtifactStore>) -> Assembler {
        self.artifacts = Some(store);
        self
    }

    pub fn policy(&self) -> &AssemblyPolicy {
        &self.policy
    }

    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    /// Sizes of `messages` (cached by content).
    pub fn measure(&self, messages: &[Message]) -> Vec<usize> {
        self.cache.measure(messages, &self.meter)
    }

    /// Assembles one call's `messages` (a snapshot that cannot change).
    pub fn assemble(
        &self,
        messages: Vec<Message>,
        leases: Option<&mut CallLeases>,
    ) -> std::result::Result<Bounded, TerminatedAssembly> {
        let mut once = Some(messages);
        self.run(&mut || (0, once.take().unwrap_or_default()), &|| 0, leases)
    }

    /// Assembles from `history`, restarting on a fresh snapshot when it changes under an
    /// attempt.
    pub fn assemble_history(
        &self,
        history: &dyn History,
        leases: Option<&mut CallLeases>,
    ) -> std::result::Result<Bounded, TerminatedAssembly> {
        self.run(
            &mut || {
                let (v, c) = history.snapshot();
                (v, c.messages)
            },
            &|| history.version(),
            leases,
        )
    }

    /// Runs passes over fresh snapshots (steps 1-8 of the module documentation) until one
    /// settles: a pass the history changed under is restarted, and each restart costs an
    /// attempt.
    fn run(
        &self,
        snapshot: &mut dyn FnMut() -> (u64, Vec<Message>),
        version: &dyn Fn() -> u64,
        mut leases: Option<&mut CallLeases>,
    ) -> std::result::Result<Bounded, TerminatedAssembly> {
        let max = self.policy.max_attempts;
        let mut rec = Record::default();
        loop {
            let mut pass = self.prepare(snapshot(), &mut rec, leases.as_deref_mut());
            let snap_version = pass.version;
            let stale = || version() != snap_version;
            if !self.reduce(&mut pass, &mut rec, &stale) {
                if rec.attempts >= max {
                    let at = pass.current();
                    return Err(self.terminate(Outcome::ConcurrentMutationLimit, at, rec));
                }
                rec.restarts += 1;
                continue;
            }
            let (outcome, fallback) = self.settle(&pass, &mut rec)?;
            // The result is stale if the history moved on meanwhile: start again (a restart
            // costs an attempt, so this loop is bounded).
            if stale() {
                rec.attempts += 1;
                if rec.attempts >= max {
                    let at = fallback.as_ref().unwrap_or(pass.current());
                    return Err(self.terminate(Outcome::ConcurrentMutationLimit, at, rec));
                }
                rec.restarts += 1;
                continue;
            }
            return Ok(self.finish(pass, fallback, outcome, rec));
        }
    }

    /// Steps 1, 2, 4 and 5 on a fresh snapshot: measure it, evict rehydrated bodies, offload
    /// large tool results and shorten the task where each is called for.
    fn prepare(
        &self,
        (version, mut messages): (u64, Vec<Message>),
        rec: &mut Record,
        leases: Option<&mut CallLeases>,
    ) -> Pass {
        let threshold = self.policy.trigger_threshold();
        normalize(&mut messages);
        let sizes = self.measure(&messages);
        let snap = Measured::from_parts(messages, sizes);
        rec.original
            .get_or_insert((snap.total, snap.messages.len()));
        rec.stages.push(AssemblyStage::Snapshot {
            messages: snap.messages.len(),
            size: snap.total,
        });
        let over = snap.total > threshold;
        // The snapshot is owned and never copied: eviction edits it in place, offload and
        // accepted proposals are new states beside it, and the reducer and the verifier
        // borrow whichever state is current.
        let (base, evicted) = self.evict(snap, over, leases);
        if evicted > 0 {
            rec.stages.push(AssemblyStage::EvictRehydrated { evicted });
        }
        let mut pass = Pass {
            version,
            reference: Reference::of(&base.messages).pin_task(self.policy.pin_task),
            base,
            evicted,
            offloaded: None,
            shortened: None,
            reduced: None,
        };
        if pass.base.total > threshold
            && let Some(p) = self.offload(&pass.base, rec)
        {
            rec.stages.push(AssemblyStage::Offload {
                offloaded: rec
                    .artifacts
                    .iter()
                    .filter(|a| a.output_bytes.is_some())
                    .count(),
                size_after: p.total,
            });
            if verify(&pass.reference, pass.base.total, &p).is_ok() {
                pass.offloaded = Some(p);
            }
        }
        pass.shortened = self.shorten_task(pass.prepared(), threshold, self.policy.hard_limit);
        if let Some(p) = &pass.shortened {
            // Accepted only because the required content cannot fit otherwise.
            pass.reference = pass.reference.allow_shortened_task();
            rec.stages.push(AssemblyStage::ShortenTask {
                size_after: p.total,
            });
        }
        pass
    }

    /// Step 6: asks the reducer for proposals until the current state is at or under the
    /// threshold or the attempts are used up, and adopts each one that passes verification.
    /// Returns false when the history changed under a proposal (`stale`): the pass is
    /// invalidated.
    fn reduce(&self, pass: &mut Pass, rec: &mut Record, stale: &dyn Fn() -> bool) -> bool {
        let threshold = self.policy.trigger_threshold();
        loop {
            let cur = pass.current();
            if cur.total <= threshold || rec.attempts >= self.policy.max_attempts {
                return true;
            }
            rec.attempts += 1;
            let cur_total = cur.total;
            let proposal = self.reducer.propose(&ReduceRequest {
                messages: &cur.messages,
                sizes: &cur.sizes,
                total: cur.total,
                target: threshold,
                hard_limit: self.policy.hard_limit,
                attempt: rec.attempts,
                max_attempts: self.policy.max_attempts,
            });
            if stale() {
                rec.stages.push(AssemblyStage::Reducer {
                    attempt: rec.attempts,
                    size_after: cur_total,
                    verdict: Verdict::Invalidated,
                });
                return false;
            }
            let verdict = match proposal {
                Err(_) => Err(Rejection::ReducerFailed),
                Ok(p) => {
                    let sizes = self.measure(&p);
                    let p = Measured::from_parts(p, sizes);
                    verify(&pass.reference, cur_total, &p)
                        .and_then(|()| sequence(&pass.base.messages, &p.messages))
                        .map(|()| p)
                }
            };
            match verdict {
                Ok(p) => {
                    rec.stages.push(AssemblyStage::Reducer {
                        attempt: rec.attempts,
                        size_after: p.total,
                        verdict: Verdict::Accepted,
                    });
                    pass.reduced = Some(p);
                }
                Err(rejection) => rec.stages.push(AssemblyStage::Reducer {
                    attempt: rec.attempts,
                    size_after: cur_total,
                    verdict: Verdict::Rejected { rejection },
                }),
            }
        }
    }

    /// Steps 3 and 7: the outcome of a pass the reducer is done with, and the
    /// preservation-only fallback when the current state is still over the threshold.
    /// Terminates when the required content alone is over the hard limit.
    fn settle(
        &self,
        pass: &Pass,
        rec: &mut Record,
    ) -> std::result::Result<(Outcome, Option<Measured>), TerminatedAssembly> {
        let threshold = self.policy.trigger_threshold();
        if pass.current().total <= threshold {
            // A state other than the snapshot is an accepted, strictly smaller proposal
            // (or offload), so it differs from what the caller sent.
            let outcome = if pass.changed() {
                Outcome::Reduced
            } else {
                Outcome::WithinLimit
            };
            return Ok((outcome, None));
        }
        let hard = self.policy.hard_limit;
        let (fb, required) = self.fallback(pass.prepared(), threshold, hard);
        rec.stages.push(AssemblyStage::PreservationFallback {
            size_after: fb.total,
        });
        if required > hard {
            let rec = std::mem::take(rec);
            return Err(self.terminate(Outcome::Irreducible, &fb, rec));
        }
        Ok((Outcome::PreservationFallback, Some(fb)))
    }

    /// The bounded result of a pass: writes the offloaded bodies it references and records
    /// its diagnostics.
    fn finish(
        &self,
        pass: Pass,
        fallback: Option<Measured>,
        outcome: Outcome,
        mut rec: Record,
    ) -> Bounded {
        let out = fallback.as_ref().unwrap_or(pass.current());
        let sequence_valid = structure(&pass.reference, &out.messages).is_ok()
            && sequence(&pass.base.messages, &out.messages).is_ok();
        let changed = outcome != Outcome::WithinLimit;
        self.store_referenced(Some(&out.messages), &mut rec);
        let diagnostics = Arc::new(self.diagnostics(outcome, out, rec, sequence_valid));
        let out = fallback.unwrap_or_else(|| pass.into_current());
        Bounded {
            messages: out.messages,
            sizes: out.sizes,
            changed,
            diagnostics,
        }
    }

    fn diagnostics(
        &self,
        outcome: Outcome,
        out: &Measured,
        rec: Record,
        sequence_valid: bool,
    ) -> AssemblyDiagnostics {
        let calls = calls_by_id(&out.messages);
        let (original_size, original_messages) =
            rec.original.unwrap_or((out.total, out.messages.len()));
        AssemblyDiagnostics {
            outcome,
            unit: self.meter.unit(),
            tokenizer: self.meter.tokenizer(),
            original_size,
            final_size: out.total,
            trigger_threshold: self.policy.trigger_threshold(),
            hard_limit: self.policy.hard_limit,
            attempts: rec.attempts,
            max_attempts: self.policy.max_attempts,
            restarts: rec.restarts,
            original_messages,
            final_messages: out.messages.len(),
            stages: rec.stages,
            categories: density::categories(&out.messages, &out.sizes, &calls),
            sequence_valid,
            artifacts: rec.artifacts,
        }
    }

    fn terminate(&self, outcome: Outcome, at: &Measured, mut rec: Record) -> TerminatedAssembly {
        rec.stages.push(AssemblyStage::Terminate);
        self.store_referenced(None, &mut rec);
        let d = self.diagnostics(outcome, at, rec, false);
        TerminatedAssembly {
            terminated: Terminated {
                outcome,
                final_size: d.final_size,
                hard_limit: d.hard_limit,
                unit: d.unit,
            },
            diagnostics: Arc::new(d),
        }
    }

    /// Replaces rehydrated bodies that may not be delivered with this call by their
    /// references; reserves a lease for each one kept.
    fn evict(
        &self,
        mut snap: Measured,
        over: bool,
        mut leases: Option<&mut CallLeases>,
    ) -> (Measured, usize) {
        let mut evicted = 0;
        for m in snap.messages.iter_mut() {
            let Some(digest) = rehydrated_digest(m) else {
                continue;
            };
            let keep = !over && leases.as_deref_mut().is_some_and(|l| l.reserve(digest));
            if keep {
                continue;
            }
            let body_bytes = m.content.split_once('\n').map_or(0, |(_, b)| b.len());
            m.content = evicted_text(digest, body_bytes);
            evicted += 1;
        }
        if evicted > 0 {
            snap.sizes = self.measure(&snap.messages);
            snap.total = snap.sizes.iter().sum();
        }
        (snap, evicted)
    }

    /// The task shortened so that the required content fits `target` (or, failing that,
    /// `hard`); `None` when the task is not pinned, not in the way, or cannot be shortened
    /// enough.
    fn shorten_task(&self, cur: &Measured, target: usize, hard: usize) -> Option<Measured> {
        if !self.policy.pin_task || cur.total <= target {
            return None;
        }
        let (i, task, _) = crate::task::fit(cur.view(), target, &self.meter)
            .or_else(|| crate::task::fit(cur.view(), hard, &self.meter))?;
        let mut out = cur.messages.clone();
        out[i] = task;
        let sizes = self.measure(&out);
        Some(Measured::from_parts(out, sizes))
    }

    /// Offloads large tool results outside the recent ones; `None` when nothing moved.
    /// Nothing is written yet: see [`Assembler::store_referenced`].
    fn offload(&self, cur: &Measured, rec: &mut Record) -> Option<Measured> {
        self.artifacts.as_ref()?;
        let results: Vec<usize> = (0..cur.messages.len())
            .filter(|&i| cur.messages[i].role == Role::Tool && !cur.messages[i].pinned)
            .collect();
        let keep = self.policy.keep_recent_results.min(results.len());
        let mut out = cur.messages.clone();
        let mut moved = 0;
        for &i in &results[..results.len() - keep] {
            let m = &cur.messages[i];
            if m.content.len() < self.policy.offload_min_bytes
                || is_stub(&m.content)
                || m.content.starts_with(EVICTED_MARKER)
            {
                continue;
            }
            let Some((body, stub)) = PendingBody::offload(&m.content) else {
                continue;
            };
            out[i].content = stub;
            moved += 1;
            // Discarded until the final output is known to reference it.
            rec.pending.push((rec.artifacts.len(), body));
            rec.artifacts.push(ArtifactAttribution {
                operation: ArtifactOperation::Offload,
                outcome: ArtifactOutcome::Discarded,
                input_bytes: m.content.len(),
                output_bytes: Some(REFERENCE_BYTES),
            });
        }
        if moved == 0 {
            return None;
        }
        let sizes = self.measure(&out);
        Some(Measured::from_parts(out, sizes))
    }

    /// Writes the offloaded bodies `out` references (`None`: nothing is forwarded) and
    /// records each one's outcome; a body whose stub a later step dropped is not written.
    fn store_referenced(&self, out: Option<&[Message]>, rec: &mut Record) {
        let pending = std::mem::take(&mut rec.pending);
        let (Some(store), Some(out)) = (self.artifacts.as_ref(), out) else {
            for (k, _) in pending {
                rec.artifacts[k].output_bytes = None;
            }
            return;
        };
        let (at, bodies): (Vec<usize>, Vec<PendingBody>) = pending.into_iter().unzip();
        for (k, outcome) in at.into_iter().zip(store_referenced(store, out, bodies)) {
            match outcome {
                Some(o) => rec.artifacts[k].outcome = o,
                None => rec.artifacts[k].output_bytes = None,
            }
        }
    }

    /// The preservation-only fallback: required groups (system, pinned, the pinned task,
    /// latest user request), plus the most recent optional groups that fit under `target` (under `hard`
    /// when required content alone is over `target`). Returns it with the required size.
    fn fallback(&self, cur: &Measured, target: usize, hard: usize) -> (Measured, usize) {
        let cur = cur.view();
        let gs = groups(cur.messages);
        let required = groups_with(
            &gs,
            &crate::task::required(cur.messages, self.policy.pin_task),
        );
        let size = |g: usize| cur.group_size(gs[g].clone());
        let required_size: usize = (0..gs.len()).filter(|&g| required[g]).map(size).sum();
        let budget = if required_size <= target {
            target
        } else {
            hard
        };
        let mut keep = required.clone();
        let mut total = required_size;
        if required_size <= hard {
            for g in (0..gs.len()).rev().filter(|&g| !required[g]) {
                if total + size(g) > budget {
                    break;
                }
                total += size(g);
                keep[g] = true;
            }
        }
        (cur.select_groups(&gs, |g| keep[g], None), required_size)
    }
}
