//! Outer runs, per-digest leases and explicit rehydration: the non-retransmission rules.
//!
//! A [`Run`] is one outer agent run (many provider calls, possibly nested and concurrent).
//! A body re-enters context only through [`Run::rehydrate`], which reads and verifies it from
//! the artifact store and refuses it when it does not fit the budget it is given. Within a
//! run, each provider call that would deliver a rehydrated body must first *reserve* the
//! body's digest; the reservation is *committed* when the call succeeds and *released* when
//! it fails or is dropped (cancelled). So the same body reaches the provider at most once
//! per run, a failed call's retry can still deliver it, and of two concurrent calls only one
//! delivers it: the other has it evicted back to its reference before assembly.
//!
//! A rehydrated body that this run did not rehydrate (it came from an earlier run's history)
//! is evicted too: its presence in context is scoped to the run that asked for it, while the
//! durable reference stays in the conversation.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::Error;
use crate::artifact::{
    ARTIFACT_SCHEME, ArtifactAttribution, ArtifactOperation, ArtifactOutcome, ArtifactRef,
    ArtifactStore, REFERENCE_BYTES, is_digest,
};
use crate::measure::Meter;
use crate::model::{Message, Role};
// The markers live in `model` with the other prefixes compaction writes (a rehydrated body
// is not a user request); they stay reachable here, where they are made.
pub use crate::model::{EVICTED_MARKER, REHYDRATED_MARKER};

/// The digest of a message that carries a rehydrated body.
pub fn rehydrated_digest(message: &Message) -> Option<&str> {
    let rest = message
        .content
        .strip_prefix(REHYDRATED_MARKER)?
        .strip_prefix(ARTIFACT_SCHEME)?;
    let digest = rest.get(..64)?;
    is_digest(digest).then_some(digest)
}

/// The bounded reference text that replaces a rehydrated body.
pub fn evicted_text(digest: &str, bytes: usize) -> String {
    format!(
        "{EVICTED_MARKER}{ARTIFACT_SCHEME}{digest} ({bytes} bytes) evicted from context: rehydrate it to read it again]"
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lease {
    Reserved(u64),
    Committed,
}

#[derive(Debug, Default)]
struct RunState {
    leases: HashMap<String, Lease>,
    rehydrated: HashSet<String>,
}

static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

/// One outer agent run: the scope of leases and rehydrations.
#[derive(Debug, Default)]
pub struct Run {
    state: Mutex<RunState>,
}

/// A rehydration's result: the message to place in context and its byte attribution (the
/// same instance the progress event carries).
#[derive(Debug, Clone)]
pub struct Rehydrated {
    pub message: Message,
    pub attribution: Arc<ArtifactAttribution>,
}

/// A failed rehydration: the error and its byte attribution (`output_bytes` is `None`).
#[derive(Debug)]
pub struct RehydrationFailed {
    pub error: Error,
    pub attribution: Arc<ArtifactAttribution>,
}

impl Run {
    /// A new run.
    pub fn new() -> Arc<Run> {
        Arc::new(Run::default())
    }

    fn lock(&self) -> MutexGuard<'_, RunState> {
        // A poisoned lock only means another thread panicked mid-update of plain maps.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads `reference` from `store`, verifies it, and returns it as a message when it fits
    /// `budget` (measured with `meter`, framing included). The body is registered with this
    /// run, so a provider call of this run may deliver it once.
    pub fn rehydrate(
        &self,
        store: &ArtifactStore,
        reference: &str,
        budget: usize,
        meter: &Meter,
    ) -> std::result::Result<Rehydrated, RehydrationFailed> {
        let fail = |error: Error, outcome: ArtifactOutcome| RehydrationFailed {
            error,
            attribution: Arc::new(ArtifactAttribution {
                operation: ArtifactOperation::Rehydrate,
                outcome,
                input_bytes: reference.len(),
                output_bytes: None,
            }),
        };
        let digest = match ArtifactRef::parse(reference) {
            Ok(d) => d.to_string(),
            Err(e) => return Err(fail(e, ArtifactOutcome::Failed)),
        };
        let body = match store.get_digest(&digest) {
            Ok(b) => b,
            Err(e @ Error::ArtifactCorrupt { .. }) => {
                return Err(fail(e, ArtifactOutcome::Corrupt));
            }
            Err(e @ Error::ArtifactMissing { .. }) => {
                return Err(fail(e, ArtifactOutcome::Missing));
            }
            Err(e) => return Err(fail(e, ArtifactOutcome::Failed)),
        };
        // A body that is not UTF-8 cannot be context; it is reported as unreadable.
        let Ok(text) = String::from_utf8(body) else {
            return Err(fail(
                Error::Config("the artifact body is not UTF-8 text".into()),
                ArtifactOutcome::Failed,
            ));
        };
        let message = Message::text(
            Role::User,
            format!(
                "{REHYDRATED_MARKER}{ARTIFACT_SCHEME}{digest} ({} bytes)]\n{text}",
                text.len()
            ),
        );
        let size = meter.message(&message);
        if size > budget {
            return Err(fail(
                Error::RehydrationOverBudget {
                    size,
                    budget,
                    unit: meter.unit(),
                },
                ArtifactOutcome::OverBudget,
            ));
        }
        self.lock().rehydrated.insert(digest);
        Ok(Rehydrated {
            message,
            attribution: Arc::new(ArtifactAttribution {
                operation: ArtifactOperation::Rehydrate,
                outcome: ArtifactOutcome::Rehydrated,
                input_bytes: REFERENCE_BYTES,
                output_bytes: Some(text.len()),
            }),
        })
    }

    /// True when a call of this run has delivered `digest` (committed its lease).
    pub fn delivered(&self, digest: &str) -> bool {
        self.lock().leases.get(digest) == Some(&Lease::Committed)
    }

    /// True when this run rehydrated `digest`.
    pub fn rehydrated(&self, digest: &str) -> bool {
        self.lock().rehydrated.contains(digest)
    }

    /// Starts the lease set of one provider call.
    pub fn call(self: &Arc<Run>) -> CallLeases {
        CallLeases {
            run: Arc::clone(self),
            call: NEXT_CALL.fetch_add(1, Ordering::Relaxed),
            reserved: Vec::new(),
            done: false,
        }
    }
}

/// The leases one provider call holds. Committed on success; released on failure, and on
/// drop when neither happened (a cancelled call).
#[derive(Debug)]
pub struct CallLeases {
    run: Arc<Run>,
    call: u64,
    reserved: Vec<String>,
    done: bool,
}

impl CallLeases {
    /// Reserves `digest` for this call; false when this run already delivered it or another
    /// in-flight call holds it (the caller must then leave the body out).
    pub fn reserve(&mut self, digest: &str) -> bool {
        let mut state = self.run.lock();
        if !state.rehydrated.contains(digest) {
            return false;
        }
        match state.leases.get(digest) {
            Some(Lease::Committed) => false,
            Some(Lease::Reserved(c)) => *c == self.call,
            None => {
                state
                    .leases
                    .insert(digest.to_string(), Lease::Reserved(self.call));
                self.reserved.push(digest.to_string());
                true
            }
        }
    }

    /// How many digests this call holds.
    pub fn len(&self) -> usize {
        self.reserved.len()
    }

    /// True when the call holds no lease.
    pub fn is_empty(&self) -> bool {
        self.reserved.is_empty()
    }

    /// The call succeeded: its bodies were delivered.
    pub fn commit(mut self) {
        let mut state = self.run.lock();
        for d in self.reserved.drain(..) {
            state.leases.insert(d, Lease::Committed);
        }
        drop(state);
        self.done = true;
    }

    /// The call failed: its bodies may be delivered by a later call.
    pub fn release(mut self) {
        self.release_all();
        self.done = true;
    }

    fn release_all(&mut self) {
        let mut state = self.run.lock();
        for d in self.reserved.drain(..) {
            if state.leases.get(&d) == Some(&Lease::Reserved(self.call)) {
                state.leases.remove(&d);
            }
        }
    }
}

impl Drop for CallLeases {
    fn drop(&mut self) {
        if !self.done {
            self.release_all();
        }
    }
}
