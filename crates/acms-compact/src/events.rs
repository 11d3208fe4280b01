//! The privacy-safe observability contract of the provider seam: per-assembly diagnostics,
//! the opaque [`AssemblyId`], and the progress events a host receives through a
//! [`ProgressSink`].
//!
//! For every assembly attempt that reaches the assembler there is exactly one
//! [`CompactionEvent::Started`] and exactly one terminal event — [`CompactionEvent::Completed`]
//! or [`CompactionEvent::Terminated`], never both — and, only on success and only after the
//! post-assembly revalidation, one [`CompactionEvent::Composed`] that carries the *same*
//! diagnostics instance (`Arc`) as the completed event. All of them carry the attempt's one
//! [`AssemblyId`]. With no sink installed nothing is reported and behaviour is unchanged.
//!
//! **Invariant:** nothing here holds message text, artifact bodies, digests, paths, owner
//! identity, tool arguments or results, or error text: numbers, units, enums and ids only.

use std::sync::{Arc, Mutex};

use crate::artifact::ArtifactAttribution;
use crate::diagnostics::{CategoryReport, Outcome, Rejection};
use crate::types::Unit;

/// One opaque id per assembly attempt (a random 128-bit value, shown as a UUID), so two
/// concurrent assemblies stay pairable although their sequence numbers interleave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AssemblyId(u128);

impl AssemblyId {
    /// A fresh random id.
    pub fn new() -> AssemblyId {
        AssemblyId(uuid::Uuid::new_v4().as_u128())
    }
}

impl Default for AssemblyId {
    fn default() -> AssemblyId {
        AssemblyId::new()
    }
}

impl std::fmt::Display for AssemblyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        uuid::Uuid::from_u128(self.0).hyphenated().fmt(f)
    }
}

impl serde::Serialize for AssemblyId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// What happened to one reducer proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "verdict")]
pub enum Verdict {
    /// Verified and adopted.
    Accepted,
    /// Failed verification (or the reducer failed); the previous state stands.
    Rejected { rejection: Rejection },
    /// The history changed while the proposal was being made: discarded, assembly restarts
    /// from a fresh snapshot.
    Invalidated,
}

/// One stage of a bounded assembly, in the order executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "stage")]
pub enum AssemblyStage {
    /// A fresh snapshot of the call's messages was taken and measured.
    Snapshot { messages: usize, size: usize },
    /// Rehydrated bodies evicted back to their references (already delivered in this run,
    /// held by a concurrent call, from another run, or over the trigger).
    EvictRehydrated { evicted: usize },
    /// Large tool results moved to the artifact store.
    Offload { offloaded: usize, size_after: usize },
    /// The task shortened, with a marker, because the required content was over the
    /// threshold with the task whole.
    ShortenTask { size_after: usize },
    /// One reducer proposal and its verdict.
    Reducer {
        attempt: usize,
        size_after: usize,
        verdict: Verdict,
    },
    /// The deterministic preservation-only fallback ran.
    PreservationFallback { size_after: usize },
    /// The assembly terminated; nothing is forwarded.
    Terminate,
}

/// Everything reported about one bounded assembly. Every size is in `unit`; the category
/// sizes sum exactly to `final_size`, measured with the same estimator that governed the
/// decision.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AssemblyDiagnostics {
    pub outcome: Outcome,
    pub unit: Unit,
    /// The tokenizer, when `unit` is exact tokens.
    pub tokenizer: Option<&'static str>,
    pub original_size: usize,
    pub final_size: usize,
    pub trigger_threshold: usize,
    pub hard_limit: usize,
    /// Reducer attempts used (restarts after a mutation count too).
    pub attempts: usize,
    pub max_attempts: usize,
    /// Fresh snapshots taken after a concurrent mutation.
    pub restarts: usize,
    pub original_messages: usize,
    pub final_messages: usize,
    pub stages: Vec<AssemblyStage>,
    pub categories: Vec<CategoryReport>,
    /// The final message set keeps tool pairs, required content and order.
    pub sequence_valid: bool,
    /// Offloads made during this assembly.
    pub artifacts: Vec<ArtifactAttribution>,
}

/// A progress event of the provider seam.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum CompactionEvent {
    Started {
        assembly_id: AssemblyId,
        sequence: u64,
        unit: Unit,
        trigger_threshold: usize,
        hard_limit: usize,
    },
    Completed {
        assembly_id: AssemblyId,
        sequence: u64,
        diagnostics: Arc<AssemblyDiagnostics>,
    },
    Terminated {
        assembly_id: AssemblyId,
        sequence: u64,
        diagnostics: Arc<AssemblyDiagnostics>,
    },
    /// The bounded context passed revalidation and is about to be dispatched.
    Composed {
        assembly_id: AssemblyId,
        sequence: u64,
        diagnostics: Arc<AssemblyDiagnostics>,
    },
    /// An explicit rehydration (or its failure), with the same attribution instance the
    /// caller receives.
    Artifact {
        sequence: u64,
        attribution: Arc<ArtifactAttribution>,
    },
}

impl CompactionEvent {
    /// The assembly this event belongs to (`None` for artifact events).
    pub fn assembly_id(&self) -> Option<AssemblyId> {
        match self {
            CompactionEvent::Started { assembly_id, .. }
            | CompactionEvent::Completed { assembly_id, .. }
            | CompactionEvent::Terminated { assembly_id, .. }
            | CompactionEvent::Composed { assembly_id, .. } => Some(*assembly_id),
            CompactionEvent::Artifact { .. } => None,
        }
    }

    /// The event's name, as serialized.
    pub fn name(&self) -> &'static str {
        match self {
            CompactionEvent::Started { .. } => "started",
            CompactionEvent::Completed { .. } => "completed",
            CompactionEvent::Terminated { .. } => "terminated",
            CompactionEvent::Composed { .. } => "composed",
            CompactionEvent::Artifact { .. } => "artifact",
        }
    }
}

impl std::fmt::Display for CompactionEvent {
    /// One line: name, id and the numbers that matter; never content.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompactionEvent::Started {
                assembly_id,
                sequence,
                unit,
                trigger_threshold,
                hard_limit,
            } => write!(
                f,
                "#{sequence} started {assembly_id}: trigger {trigger_threshold} {unit}, hard limit {hard_limit} {unit}"
            ),
            CompactionEvent::Completed {
                assembly_id,
                sequence,
                diagnostics: d,
            }
            | CompactionEvent::Terminated {
                assembly_id,
                sequence,
                diagnostics: d,
            }
            | CompactionEvent::Composed {
                assembly_id,
                sequence,
                diagnostics: d,
            } => write!(
                f,
                "#{sequence} {} {assembly_id}: {}, {} {} -> {} {} (limit {} {}), {} attempts, {} -> {} messages",
                self.name(),
                d.outcome,
                d.original_size,
                d.unit,
                d.final_size,
                d.unit,
                d.hard_limit,
                d.unit,
                d.attempts,
                d.original_messages,
                d.final_messages
            ),
            CompactionEvent::Artifact {
                sequence,
                attribution: a,
            } => write!(
                f,
                "#{sequence} artifact {:?} {:?}: {} bytes in, {} out",
                a.operation,
                a.outcome,
                a.input_bytes,
                a.output_bytes
                    .map_or("nothing".to_string(), |b| format!("{b} bytes"))
            ),
        }
    }
}

impl CompactionEvent {
    /// The log-sized form of this event: its name, ids and headline numbers (the full
    /// diagnostics stay on the event itself).
    pub fn summary(&self) -> EventSummary {
        let mut s = EventSummary {
            event: self.name(),
            sequence: 0,
            assembly_id: self.assembly_id(),
            outcome: None,
            unit: None,
            size_before: None,
            size_after: None,
            hard_limit: None,
            attempts: None,
        };
        match self {
            CompactionEvent::Started {
                sequence,
                unit,
                hard_limit,
                ..
            } => {
                s.sequence = *sequence;
                s.unit = Some(*unit);
                s.hard_limit = Some(*hard_limit);
            }
            CompactionEvent::Completed {
                sequence,
                diagnostics: d,
                ..
            }
            | CompactionEvent::Terminated {
                sequence,
                diagnostics: d,
                ..
            }
            | CompactionEvent::Composed {
                sequence,
                diagnostics: d,
                ..
            } => {
                s.sequence = *sequence;
                s.outcome = Some(d.outcome);
                s.unit = Some(d.unit);
                s.size_before = Some(d.original_size);
                s.size_after = Some(d.final_size);
                s.hard_limit = Some(d.hard_limit);
                s.attempts = Some(d.attempts);
            }
            CompactionEvent::Artifact {
                sequence,
                attribution: a,
            } => {
                s.sequence = *sequence;
                s.unit = Some(Unit::Utf8Bytes);
                s.size_before = Some(a.input_bytes);
                s.size_after = a.output_bytes;
            }
        }
        s
    }
}

/// A [`CompactionEvent`] in one log line: numbers, units and ids only, like the event.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EventSummary {
    pub event: &'static str,
    pub sequence: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assembly_id: Option<AssemblyId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<Unit>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_before: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_after: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hard_limit: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<usize>,
}

/// Receives progress events. Installed per client stack; never global.
pub trait ProgressSink: Send + Sync {
    fn report(&self, event: &CompactionEvent);
}

/// A sink that keeps every event in memory (tests, examples, small hosts).
#[derive(Debug, Default)]
pub struct CollectingSink {
    events: Mutex<Vec<CompactionEvent>>,
}

impl CollectingSink {
    /// An empty sink.
    pub fn new() -> Arc<CollectingSink> {
        Arc::new(CollectingSink::default())
    }

    /// The events so far, in order.
    pub fn events(&self) -> Vec<CompactionEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Removes and returns the events so far.
    pub fn take(&self) -> Vec<CompactionEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl ProgressSink for CollectingSink {
    fn report(&self, event: &CompactionEvent) {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event.clone());
    }
}
