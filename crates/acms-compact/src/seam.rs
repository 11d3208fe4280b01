//! The provider seam: a middleware that wraps the real provider client and bounds the exact
//! message set of every call — each intermediate tool round, not only the outer turn.
//!
//! - [`ChatProvider`] is the provider trait the seam wraps (tool-call aware, unlike the
//!   plain-text [`acms_llm::LlmClient`], which [`LlmProvider`] adapts; [`HttpProvider`]
//!   speaks OpenAI chat-completions with tools through `acms-llm`).
//! - [`ClientStack`] composes a client. Compaction is installed only when the host both
//!   requests [`Capability::Compaction`] and supplies a [`CompactionProfile`] for the same
//!   stack; either without the other fails closed before any call ([`resolve`]). Exactly one
//!   compaction component per stack: it sits innermost, directly around the provider, and a
//!   second one is an error.
//! - [`Seam`] runs one bounded assembly per call ([`crate::assembly`]), reports the progress
//!   events ([`crate::events`]) to the sink given at construction (none: nothing reported),
//!   and hands back the messages to dispatch with the call's leases. The proxy uses it
//!   directly; [`CompactingClient`] uses it around a [`ChatProvider`].
//!
//! A terminated assembly is never dispatched: the caller gets [`Error::Terminated`].

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use acms_llm::{ChatMessage, LlmClient};
use serde_json::{Map, Value};

use crate::artifact::ArtifactStore;
use crate::assembly::{Assembler, AssemblyPolicy, Bounded, Reducer, TerminatedAssembly};
use crate::compactor::{CompactConfig, Compactor, TieredReducer};
use crate::events::{AssemblyDiagnostics, AssemblyId, CompactionEvent, ProgressSink};
use crate::lease::{CallLeases, Rehydrated, RehydrationFailed, Run};
use crate::measure::Meter;
use crate::model::{History, Message, Role};
use crate::verify::{Reference, structure};
use crate::{Error, Result};

/// One provider call: the messages and the provider options (model, tools, ...), passed
/// through untouched.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub options: Map<String, Value>,
}

/// A provider's answer: one assistant message (text and/or tool calls).
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub message: Message,
}

/// A chat provider that understands tool calls: what the seam wraps.
pub trait ChatProvider: Send + Sync {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse>;

    /// True when this client already contains a compaction component.
    fn has_compaction(&self) -> bool {
        false
    }
}

impl<T: ChatProvider + ?Sized> ChatProvider for &T {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).complete(request)
    }
    fn has_compaction(&self) -> bool {
        (**self).has_compaction()
    }
}

impl<T: ChatProvider + ?Sized> ChatProvider for Box<T> {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).complete(request)
    }
    fn has_compaction(&self) -> bool {
        (**self).has_compaction()
    }
}

impl<T: ChatProvider + ?Sized> ChatProvider for Arc<T> {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        (**self).complete(request)
    }
    fn has_compaction(&self) -> bool {
        (**self).has_compaction()
    }
}

/// A plain-text [`LlmClient`] as a [`ChatProvider`]: tool calls and results are sent in
/// their canonical text rendering (what every size is measured on).
#[derive(Debug)]
pub struct LlmProvider<C>(pub C);

impl<C: LlmClient> ChatProvider for LlmProvider<C> {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let messages: Vec<ChatMessage> = request
            .messages
            .iter()
            .map(|m| match m.role {
                Role::System | Role::Developer => ChatMessage::system(m.content.clone()),
                Role::Assistant if m.tool_calls.is_empty() => {
                    ChatMessage::assistant(m.content.clone())
                }
                Role::Assistant => ChatMessage::assistant(m.render()),
                Role::User => ChatMessage::user(m.content.clone()),
                Role::Tool => ChatMessage::user(m.render()),
            })
            .collect();
        let max_tokens = request
            .options
            .get("max_tokens")
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let text = self.0.chat(&messages, max_tokens)?;
        Ok(ChatResponse {
            message: Message::text(Role::Assistant, text),
        })
    }
}

/// OpenAI chat-completions with tools over [`acms_llm::HttpClient`].
#[derive(Debug, Clone)]
pub struct HttpProvider {
    client: acms_llm::HttpClient,
}

impl HttpProvider {
    pub fn new(client: acms_llm::HttpClient) -> HttpProvider {
        HttpProvider { client }
    }
}

impl ChatProvider for HttpProvider {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let mut body = request.options.clone();
        body.insert(
            "messages".into(),
            Value::Array(
                request
                    .messages
                    .iter()
                    .map(crate::format::openai_message)
                    .collect(),
            ),
        );
        let reply = self.client.post_json(&Value::Object(body))?;
        let message = reply
            .pointer("/choices/0/message")
            .ok_or_else(|| acms_llm::Error::BadResponse("no choices[0].message".into()))?;
        let message = crate::format::read_openai_message(message).map_err(|_| {
            acms_llm::Error::BadResponse("choices[0].message is not a message".into())
        })?;
        Ok(ChatResponse { message })
    }
}

/// A capability a client stack may request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Capability {
    /// Bounded context at every provider call.
    Compaction,
}

/// The capabilities one composition requests. Resolved once per stack; there is no second,
/// independently resolved profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapabilityProfile {
    requested: Vec<Capability>,
}

impl CapabilityProfile {
    /// No capability requested.
    pub fn none() -> CapabilityProfile {
        CapabilityProfile::default()
    }

    /// Also requests `capability`.
    pub fn with(mut self, capability: Capability) -> CapabilityProfile {
        if !self.requested.contains(&capability) {
            self.requested.push(capability);
        }
        self
    }

    pub fn requests(&self, capability: Capability) -> bool {
        self.requested.contains(&capability)
    }
}

/// Where a composition is: the compaction capability is delivered at the provider call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryPhase {
    /// The stack is being composed; nothing is installed yet.
    Composition,
    /// The stack is built and calls go through it.
    ProviderCall,
}

/// State of a capability for a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CapabilityState {
    /// Requested, its profile supplied, and its delivery phase reached.
    Enabled,
    /// Requested and its profile supplied, but its delivery phase not reached yet.
    Deferred,
    /// Not requested.
    Disabled,
}

/// The trust boundary content crosses under a capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustBoundary {
    /// Host-classified conversational and tool content.
    ExternalContent,
}

/// How a capability reports what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticsStatus {
    /// Structured, privacy-safe events per decision ([`crate::events`]).
    StructuredEvents,
}

/// A resolved capability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct CapabilityStatus {
    pub capability: Capability,
    pub state: CapabilityState,
    pub trust_boundary: TrustBoundary,
    pub diagnostics: DiagnosticsStatus,
}

/// Resolves compaction for one composition: both the capability and the profile, or
/// neither. Either alone fails closed.
pub fn resolve(
    capabilities: &CapabilityProfile,
    profile: Option<&CompactionProfile>,
    phase: DeliveryPhase,
) -> Result<CapabilityStatus> {
    let state = match (
        capabilities.requests(Capability::Compaction),
        profile.is_some(),
    ) {
        (false, false) => CapabilityState::Disabled,
        (false, true) => return Err(Error::CompactionCapabilityMissing),
        (true, false) => return Err(Error::CompactionProfileMissing),
        (true, true) if phase >= DeliveryPhase::ProviderCall => CapabilityState::Enabled,
        (true, true) => CapabilityState::Deferred,
    };
    Ok(CapabilityStatus {
        capability: Capability::Compaction,
        state,
        trust_boundary: TrustBoundary::ExternalContent,
        diagnostics: DiagnosticsStatus::StructuredEvents,
    })
}

/// Everything the compaction component needs for one stack.
#[derive(Clone)]
pub struct CompactionProfile {
    pub policy: AssemblyPolicy,
    pub meter: Meter,
    pub reducer: Arc<dyn Reducer>,
    pub artifacts: Option<Arc<ArtifactStore>>,
}

impl std::fmt::Debug for CompactionProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionProfile")
            .field("policy", &self.policy)
            .field("unit", &self.meter.unit())
            .field("artifacts", &self.artifacts.is_some())
            .finish()
    }
}

impl CompactionProfile {
    /// A profile with `reducer`.
    pub fn new(
        policy: AssemblyPolicy,
        meter: Meter,
        reducer: Arc<dyn Reducer>,
    ) -> CompactionProfile {
        CompactionProfile {
            policy,
            meter,
            reducer,
            artifacts: None,
        }
    }

    /// A profile whose reducer is the built-in tiers ([`TieredReducer`]) with settings
    /// scaled to the hard limit and no model call.
    pub fn tiered(policy: AssemblyPolicy, meter: Meter) -> Result<CompactionProfile> {
        let mut config = CompactConfig::new(policy.trigger_threshold().max(1));
        // Recent context is kept verbatim as far as the limit allows: what stays verbatim
        // needs no summary.
        config.keep_recent = policy.hard_limit;
        config.summary_reserve = policy.hard_limit / 5;
        config.restore_file_max = (policy.hard_limit / 10).max(1);
        config.restore_files_total = policy.hard_limit / 4;
        config.restore_skill_max = (policy.hard_limit / 10).max(1);
        config.restore_skills_total = policy.hard_limit / 8;
        config.category_report = false;
        // Outlining old file reads with tree-sitter costs tens of milliseconds per call on a
        // long session; at the seam, clearing with a ledger reaches the target first.
        config.code_compaction = false;
        config.pin_task = policy.pin_task;
        let compactor = Compactor::new(config, meter.clone())?;
        Ok(CompactionProfile::new(
            policy,
            meter,
            Arc::new(TieredReducer::new(compactor)),
        ))
    }

    /// Offloads large tool results to `store`.
    pub fn with_artifacts(mut self, store: Arc<ArtifactStore>) -> CompactionProfile {
        self.artifacts = Some(store);
        self
    }
}

/// One bounded assembly ready for dispatch: the messages and the call's leases.
#[derive(Debug)]
pub struct Prepared {
    pub messages: Vec<Message>,
    /// False when the messages are exactly the call's own (forward the original bytes).
    pub changed: bool,
    pub assembly_id: AssemblyId,
    /// The same instance the completed and composed events carried.
    pub diagnostics: Arc<AssemblyDiagnostics>,
    leases: Option<CallLeases>,
}

impl Prepared {
    /// The call succeeded: commit its leases (its rehydrated bodies count as delivered).
    pub fn commit(self) {
        if let Some(l) = self.leases {
            l.commit();
        }
    }

    /// The call failed or was abandoned: release its leases so a retry may deliver them.
    /// Dropping a `Prepared` does the same.
    pub fn release(self) {
        if let Some(l) = self.leases {
            l.release();
        }
    }
}

/// The seam: one bounded assembly per provider call, with its events.
pub struct Seam {
    assembler: Assembler,
    progress: Option<Arc<dyn ProgressSink>>,
    sequence: AtomicU64,
}

impl std::fmt::Debug for Seam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seam")
            .field("assembler", &self.assembler)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

impl Seam {
    /// A seam for `profile`; `progress` receives the events (`None`: nothing reported).
    pub fn new(
        profile: CompactionProfile,
        progress: Option<Arc<dyn ProgressSink>>,
    ) -> Result<Seam> {
        let mut assembler = Assembler::new(profile.policy, profile.meter, profile.reducer)?;
        if let Some(store) = profile.artifacts {
            assembler = assembler.with_artifacts(store);
        }
        Ok(Seam {
            assembler,
            progress,
            sequence: AtomicU64::new(0),
        })
    }

    pub fn assembler(&self) -> &Assembler {
        &self.assembler
    }

    /// Reports one event to the seam's sink and to the call's `observer`, if any.
    fn emit(
        &self,
        observer: Option<&dyn ProgressSink>,
        event: impl FnOnce(u64) -> CompactionEvent,
    ) {
        if self.progress.is_none() && observer.is_none() {
            return;
        }
        let seq = self.sequence.fetch_add(1, Ordering::Relaxed);
        let event = event(seq);
        if let Some(sink) = &self.progress {
            sink.report(&event);
        }
        if let Some(o) = observer {
            o.report(&event);
        }
    }

    /// Bounds one call's `messages` within `run` (`None`: a call outside any run, which may
    /// deliver no rehydrated body).
    pub fn prepare(&self, run: Option<&Arc<Run>>, messages: Vec<Message>) -> Result<Prepared> {
        self.prepare_observed(run, messages, None)
    }

    /// [`Seam::prepare`], also reporting this call's events to `observer` (a seam shared by
    /// concurrent callers, such as the proxy's, gives each request its own event stream).
    pub fn prepare_observed(
        &self,
        run: Option<&Arc<Run>>,
        messages: Vec<Message>,
        observer: Option<&dyn ProgressSink>,
    ) -> Result<Prepared> {
        let mut leases = run.map(Run::call);
        let id = self.started(observer);
        let result = self.assembler.assemble(messages, leases.as_mut());
        self.finish(id, result, leases, observer)
    }

    /// Bounds a snapshot of `history`, restarting when it changes under an attempt.
    pub fn prepare_history(
        &self,
        run: Option<&Arc<Run>>,
        history: &dyn History,
    ) -> Result<Prepared> {
        let mut leases = run.map(Run::call);
        let id = self.started(None);
        let result = self.assembler.assemble_history(history, leases.as_mut());
        self.finish(id, result, leases, None)
    }

    fn started(&self, observer: Option<&dyn ProgressSink>) -> AssemblyId {
        // One id per attempt, generated at the gate right before the started event.
        let id = AssemblyId::new();
        let p = self.assembler.policy();
        self.emit(observer, |sequence| CompactionEvent::Started {
            assembly_id: id,
            sequence,
            unit: self.assembler.meter().unit(),
            trigger_threshold: p.trigger_threshold(),
            hard_limit: p.hard_limit,
        });
        id
    }

    fn finish(
        &self,
        id: AssemblyId,
        result: std::result::Result<Bounded, TerminatedAssembly>,
        leases: Option<CallLeases>,
        observer: Option<&dyn ProgressSink>,
    ) -> Result<Prepared> {
        match result {
            Ok(b) => {
                self.emit(observer, |sequence| CompactionEvent::Completed {
                    assembly_id: id,
                    sequence,
                    diagnostics: Arc::clone(&b.diagnostics),
                });
                // Trust revalidation before dispatch: recount and recheck what will be sent.
                let sizes = self.assembler.measure(&b.messages);
                let total: usize = sizes.iter().sum();
                let valid = total == b.diagnostics.final_size
                    && total <= self.assembler.policy().hard_limit
                    && b.diagnostics.sequence_valid
                    && structure(&Reference::of(&b.messages), &b.messages).is_ok();
                if !valid {
                    // Unreachable unless the assembler is wrong; still never dispatched.
                    return Err(Error::Terminated(crate::error::Terminated {
                        outcome: crate::Outcome::Irreducible,
                        final_size: total,
                        hard_limit: self.assembler.policy().hard_limit,
                        unit: self.assembler.meter().unit(),
                    }));
                }
                self.emit(observer, |sequence| CompactionEvent::Composed {
                    assembly_id: id,
                    sequence,
                    diagnostics: Arc::clone(&b.diagnostics),
                });
                Ok(Prepared {
                    messages: b.messages,
                    changed: b.changed,
                    assembly_id: id,
                    diagnostics: b.diagnostics,
                    leases,
                })
            }
            Err(t) => {
                self.emit(observer, |sequence| CompactionEvent::Terminated {
                    assembly_id: id,
                    sequence,
                    diagnostics: Arc::clone(&t.diagnostics),
                });
                Err(Error::Terminated(t.terminated))
            }
        }
    }

    /// Explicit, budget-checked rehydration within `run`; reports an artifact event carrying
    /// the same attribution instance as the result.
    pub fn rehydrate(
        &self,
        run: &Run,
        store: &ArtifactStore,
        reference: &str,
        budget: usize,
    ) -> std::result::Result<Rehydrated, RehydrationFailed> {
        let result = run.rehydrate(store, reference, budget, self.assembler.meter());
        let attribution = match &result {
            Ok(r) => Arc::clone(&r.attribution),
            Err(f) => Arc::clone(&f.attribution),
        };
        self.emit(None, |sequence| CompactionEvent::Artifact {
            sequence,
            attribution,
        });
        result
    }
}

/// The compaction component: a [`ChatProvider`] that bounds every call to the provider it
/// wraps.
#[derive(Debug)]
pub struct CompactingClient<P> {
    inner: P,
    seam: Seam,
}

impl<P: ChatProvider> CompactingClient<P> {
    /// Bounds and sends one call of `run`. Leases are committed when the provider answers
    /// and released when it fails.
    pub fn complete_in(&self, run: &Arc<Run>, request: &ChatRequest) -> Result<ChatResponse> {
        let prepared = self.seam.prepare(Some(run), request.messages.clone())?;
        let bounded = ChatRequest {
            messages: prepared.messages.clone(),
            options: request.options.clone(),
        };
        match self.inner.complete(&bounded) {
            Ok(r) => {
                prepared.commit();
                Ok(r)
            }
            Err(e) => {
                prepared.release();
                Err(e)
            }
        }
    }

    pub fn seam(&self) -> &Seam {
        &self.seam
    }
}

impl<P: ChatProvider> ChatProvider for CompactingClient<P> {
    /// A call outside any run.
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        let prepared = self.seam.prepare(None, request.messages.clone())?;
        let bounded = ChatRequest {
            messages: prepared.messages,
            options: request.options.clone(),
        };
        self.inner.complete(&bounded)
    }

    fn has_compaction(&self) -> bool {
        true
    }
}

/// Composes a client: the provider, the capabilities requested, and at most one
/// compaction profile.
#[derive(Debug)]
pub struct ClientStack<P> {
    provider: P,
    capabilities: CapabilityProfile,
    profile: Option<CompactionProfile>,
}

impl<P: ChatProvider> ClientStack<P> {
    pub fn new(provider: P, capabilities: CapabilityProfile) -> ClientStack<P> {
        ClientStack {
            provider,
            capabilities,
            profile: None,
        }
    }

    /// Supplies the compaction profile; a second one is an error.
    pub fn compaction(mut self, profile: CompactionProfile) -> Result<ClientStack<P>> {
        if self.profile.is_some() {
            return Err(Error::CompactionAlreadyInstalled);
        }
        self.profile = Some(profile);
        Ok(self)
    }

    /// What the capability resolves to for this stack before it is built.
    pub fn status(&self) -> Result<CapabilityStatus> {
        resolve(
            &self.capabilities,
            self.profile.as_ref(),
            DeliveryPhase::Composition,
        )
    }

    /// Builds the stack. `progress` is required and may be `None` (nothing reported).
    /// Fails closed when the capability and the profile do not come together, and when the
    /// provider already contains a compaction component.
    pub fn build(self, progress: Option<Arc<dyn ProgressSink>>) -> Result<Client<P>> {
        let status = resolve(
            &self.capabilities,
            self.profile.as_ref(),
            DeliveryPhase::ProviderCall,
        )?;
        match (status.state, self.profile) {
            (CapabilityState::Enabled, Some(profile)) => {
                if self.provider.has_compaction() {
                    return Err(Error::CompactionAlreadyInstalled);
                }
                Ok(Client::Compacting(CompactingClient {
                    inner: self.provider,
                    seam: Seam::new(profile, progress)?,
                }))
            }
            _ => Ok(Client::Plain(self.provider)),
        }
    }
}

/// A built client: plain, or with the compaction component innermost.
#[derive(Debug)]
pub enum Client<P> {
    Plain(P),
    Compacting(CompactingClient<P>),
}

impl<P: ChatProvider> Client<P> {
    /// Sends one call of `run`.
    pub fn complete_in(&self, run: &Arc<Run>, request: &ChatRequest) -> Result<ChatResponse> {
        match self {
            Client::Plain(p) => p.complete(request),
            Client::Compacting(c) => c.complete_in(run, request),
        }
    }

    /// The seam, when compaction is installed.
    pub fn seam(&self) -> Option<&Seam> {
        match self {
            Client::Plain(_) => None,
            Client::Compacting(c) => Some(c.seam()),
        }
    }

    /// The capability's state for this built stack.
    pub fn compaction_state(&self) -> CapabilityState {
        match self {
            Client::Plain(_) => CapabilityState::Disabled,
            Client::Compacting(_) => CapabilityState::Enabled,
        }
    }
}

impl<P: ChatProvider> ChatProvider for Client<P> {
    fn complete(&self, request: &ChatRequest) -> Result<ChatResponse> {
        match self {
            Client::Plain(p) => p.complete(request),
            Client::Compacting(c) => c.complete(request),
        }
    }

    fn has_compaction(&self) -> bool {
        match self {
            Client::Plain(p) => p.has_compaction(),
            Client::Compacting(_) => true,
        }
    }
}
