//! The provider seam: the outcome matrix, fail-closed capability/profile resolution, the
//! event contract, unit labels, exact category sums, leases under concurrency and byte
//! attribution. Each test is named after the spec's confirmation list.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use acms_compact::artifact::{ArtifactOutcome, REFERENCE_BYTES};
use acms_compact::lease::{EVICTED_MARKER, REHYDRATED_MARKER};
use acms_compact::model::{Message, Role};
use acms_compact::seam::resolve;
use acms_compact::{
    ArtifactStore, Assembler, AssemblyPolicy, AssemblyStage, Capability, CapabilityProfile,
    CapabilityState, ChatProvider, ChatRequest, ChatResponse, ClientStack, CollectingSink,
    CompactionEvent, CompactionProfile, Conversation, DeliveryPhase, DiagnosticsStatus, Error,
    Estimator, History, Meter, Outcome, ReduceRequest, Reducer, ReducerError, Run, Seam,
    TrustBoundary, Unit, Verdict,
};
use acms_core::Tokenizer;

use crate::{call, filler, session};

const NOW: f64 = 1_700_000_000.0;

/// A provider that records what it receives and answers "ok" (or fails when told to).
#[derive(Default)]
pub struct FakeProvider {
    pub requests: Mutex<Vec<Vec<Message>>>,
    pub fail_next: AtomicUsize,
}

impl ChatProvider for FakeProvider {
    fn complete(&self, request: &ChatRequest) -> acms_compact::Result<ChatResponse> {
        self.requests.lock().unwrap().push(request.messages.clone());
        if self
            .fail_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Err(Error::Provider(acms_llm::Error::Status {
                status: 500,
                code: None,
            }));
        }
        Ok(ChatResponse {
            message: Message::text(Role::Assistant, "ok"),
        })
    }
}

/// A reducer that drops the oldest unprotected rounds (all but the system prompt, the task
/// and the latest user turn) on attempt `works_from` and later, and proposes something
/// invalid (drops the system prompt) before.
struct StagedReducer {
    works_from: usize,
    calls: AtomicUsize,
}

impl Reducer for StagedReducer {
    fn propose(&self, r: &ReduceRequest<'_>) -> Result<Vec<Message>, ReducerError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if r.attempt < self.works_from {
            // Invalid: the system message is gone.
            return Ok(r.messages[1..].to_vec());
        }
        let latest = acms_compact::model::latest_user(r.messages);
        let task = acms_compact::task::task_index(r.messages);
        let gs = acms_compact::model::groups(r.messages);
        let mut out = Vec::new();
        let mut total = r.total;
        for g in gs {
            let keep = g
                .clone()
                .any(|i| r.messages[i].role.is_system() || Some(i) == latest || Some(i) == task);
            let size: usize = r.sizes[g.clone()].iter().sum();
            if !keep && total > r.target {
                total -= size;
                continue;
            }
            out.extend(r.messages[g].iter().cloned());
        }
        Ok(out)
    }
}

fn tokens() -> Meter {
    Meter::tokens(Tokenizer::Cl100kBase)
}

fn total(messages: &[Message], meter: &Meter) -> usize {
    messages.iter().map(|m| meter.message(m)).sum()
}

fn assembler(limit: usize, reducer: Arc<dyn Reducer>, attempts: usize) -> Assembler {
    let mut p = AssemblyPolicy::new(limit);
    p.max_attempts = attempts;
    Assembler::new(p, tokens(), reducer).unwrap()
}

/// A history that changes on every snapshot for its first `mutations` snapshots.
struct Mutating {
    conv: Conversation,
    version: AtomicU64,
    mutations: u64,
}

impl History for Mutating {
    fn version(&self) -> u64 {
        self.version.load(Ordering::SeqCst)
    }
    fn snapshot(&self) -> (u64, Conversation) {
        let v = self.version.load(Ordering::SeqCst);
        // Another thread appends right after the snapshot is taken.
        if v < self.mutations {
            self.version.fetch_add(1, Ordering::SeqCst);
        }
        (v, self.conv.clone())
    }
}

#[test]
fn outcome_matrix() {
    let conv = session(12, 40, NOW);
    let size = total(&conv.messages, &tokens());
    let staged = |from| {
        Arc::new(StagedReducer {
            works_from: from,
            calls: AtomicUsize::new(0),
        })
    };

    // WithinLimit: forwarded unchanged, no reducer call.
    let r = staged(1);
    let b = assembler(size * 2, r.clone(), 3)
        .assemble(conv.messages.clone(), None)
        .unwrap();
    assert_eq!(b.diagnostics.outcome, Outcome::WithinLimit);
    assert!(!b.changed);
    assert_eq!(b.messages, conv.messages);
    assert_eq!(r.calls.load(Ordering::SeqCst), 0);

    // Reduced on the second attempt: the first (invalid) proposal is rejected.
    let r = staged(2);
    let b = assembler(size / 2, r.clone(), 3)
        .assemble(conv.messages.clone(), None)
        .unwrap();
    let d = &b.diagnostics;
    assert_eq!(d.outcome, Outcome::Reduced);
    assert_eq!(d.attempts, 2);
    assert!(d.final_size <= d.trigger_threshold);
    let verdicts: Vec<Verdict> = d
        .stages
        .iter()
        .filter_map(|s| match s {
            AssemblyStage::Reducer { verdict, .. } => Some(*verdict),
            _ => None,
        })
        .collect();
    assert!(matches!(verdicts[0], Verdict::Rejected { .. }));
    assert_eq!(verdicts[1], Verdict::Accepted);

    // Attempt exhaustion: never a valid proposal, so the preservation-only fallback runs
    // after exactly max_attempts proposals.
    let r = staged(usize::MAX);
    let b = assembler(size / 2, r.clone(), 3)
        .assemble(conv.messages.clone(), None)
        .unwrap();
    assert_eq!(b.diagnostics.outcome, Outcome::PreservationFallback);
    assert_eq!(r.calls.load(Ordering::SeqCst), 3);
    assert_eq!(b.diagnostics.attempts, 3);
    assert!(b.diagnostics.final_size <= b.diagnostics.trigger_threshold);
    assert_eq!(b.messages[0], conv.messages[0]);
    assert!(
        b.messages.contains(conv.messages.last().unwrap())
            || b.messages.iter().any(|m| m.is_user_request())
    );

    // Irreducible: the system prompt alone is over the hard limit; never forwarded.
    let mut big = conv.clone();
    big.messages[0].content = filler("system", 400);
    let r = staged(1);
    let t = assembler(500, r, 3)
        .assemble(big.messages.clone(), None)
        .unwrap_err();
    assert_eq!(t.terminated.outcome, Outcome::Irreducible);
    assert!(t.terminated.final_size > t.terminated.hard_limit);
    assert_eq!(t.terminated.hard_limit, 500);
    assert_eq!(t.diagnostics.stages.last(), Some(&AssemblyStage::Terminate));

    // ConcurrentMutationLimit: the history changes under every attempt.
    let h = Mutating {
        conv: conv.clone(),
        version: AtomicU64::new(0),
        mutations: u64::MAX,
    };
    let r = staged(1);
    let t = assembler(size / 2, r, 3)
        .assemble_history(&h, None)
        .unwrap_err();
    assert_eq!(t.terminated.outcome, Outcome::ConcurrentMutationLimit);
    assert_eq!(t.diagnostics.attempts, 3);

    // Restart after mutation: one change, then a fresh snapshot succeeds.
    let h = Mutating {
        conv: conv.clone(),
        version: AtomicU64::new(0),
        mutations: 1,
    };
    let r = staged(1);
    let b = assembler(size / 2, r, 3)
        .assemble_history(&h, None)
        .unwrap();
    assert_eq!(b.diagnostics.outcome, Outcome::Reduced);
    assert_eq!(b.diagnostics.restarts, 1);
    assert!(b.diagnostics.stages.iter().any(|s| matches!(
        s,
        AssemblyStage::Reducer {
            verdict: Verdict::Invalidated,
            ..
        }
    )));
}

#[test]
fn terminated_call_is_never_forwarded() {
    let provider = Arc::new(FakeProvider::default());
    let profile = CompactionProfile::tiered(AssemblyPolicy::new(60), tokens()).unwrap();
    let client = ClientStack::new(
        provider.clone(),
        CapabilityProfile::none().with(Capability::Compaction),
    )
    .compaction(profile)
    .unwrap()
    .build(None)
    .unwrap();
    let request = ChatRequest {
        messages: vec![
            Message::text(Role::System, filler("rules", 20)),
            Message::text(Role::User, "hi"),
        ],
        ..ChatRequest::default()
    };
    match client.complete(&request) {
        Err(Error::Terminated(t)) => {
            assert_eq!(t.outcome, Outcome::Irreducible);
            assert_eq!(t.hard_limit, 60);
            assert_eq!(t.unit, Unit::ExactTokens);
        }
        other => panic!("{other:?}"),
    }
    assert!(provider.requests.lock().unwrap().is_empty());
}

#[test]
fn fail_closed_capability_and_profile_resolution() {
    let profile = || CompactionProfile::tiered(AssemblyPolicy::new(1000), tokens()).unwrap();
    let with = CapabilityProfile::none().with(Capability::Compaction);
    let without = CapabilityProfile::none();

    // Capability without profile, profile without capability: fail before any call.
    let p = Arc::new(FakeProvider::default());
    assert!(matches!(
        ClientStack::new(p.clone(), with.clone()).build(None),
        Err(Error::CompactionProfileMissing)
    ));
    assert!(matches!(
        ClientStack::new(p.clone(), without.clone())
            .compaction(profile())
            .unwrap()
            .build(None),
        Err(Error::CompactionCapabilityMissing)
    ));
    assert!(p.requests.lock().unwrap().is_empty());

    // Exactly one component: a second profile, or a stack around a compacting client.
    assert!(matches!(
        ClientStack::new(p.clone(), with.clone())
            .compaction(profile())
            .unwrap()
            .compaction(profile()),
        Err(Error::CompactionAlreadyInstalled)
    ));
    let inner = ClientStack::new(p.clone(), with.clone())
        .compaction(profile())
        .unwrap()
        .build(None)
        .unwrap();
    assert_eq!(inner.compaction_state(), CapabilityState::Enabled);
    assert!(matches!(
        ClientStack::new(inner, with.clone())
            .compaction(profile())
            .unwrap()
            .build(None),
        Err(Error::CompactionAlreadyInstalled)
    ));

    // The resolver: Disabled when not requested, Deferred before the delivery phase,
    // Enabled at it; exact field values.
    let disabled = resolve(&without, None, DeliveryPhase::ProviderCall).unwrap();
    assert_eq!(disabled.state, CapabilityState::Disabled);
    let prof = profile();
    let deferred = resolve(&with, Some(&prof), DeliveryPhase::Composition).unwrap();
    assert_eq!(deferred.state, CapabilityState::Deferred);
    let enabled = resolve(&with, Some(&prof), DeliveryPhase::ProviderCall).unwrap();
    assert_eq!(enabled.state, CapabilityState::Enabled);
    for s in [disabled, deferred, enabled] {
        assert_eq!(s.capability, Capability::Compaction);
        assert_eq!(s.trust_boundary, TrustBoundary::ExternalContent);
        assert_eq!(s.diagnostics, DiagnosticsStatus::StructuredEvents);
    }
    assert!(matches!(
        resolve(&with, None, DeliveryPhase::Composition),
        Err(Error::CompactionProfileMissing)
    ));

    // Neither: a plain client, no events, behaviour unchanged.
    let plain = ClientStack::new(p.clone(), without).build(None).unwrap();
    assert_eq!(plain.compaction_state(), CapabilityState::Disabled);
    assert!(plain.seam().is_none());
    let conv = session(3, 5, NOW);
    plain
        .complete(&ChatRequest {
            messages: conv.messages.clone(),
            ..ChatRequest::default()
        })
        .unwrap();
    assert_eq!(p.requests.lock().unwrap().last().unwrap(), &conv.messages);
}

/// The events of each assembly id, in order.
fn by_id(events: &[CompactionEvent]) -> Vec<Vec<&CompactionEvent>> {
    let mut ids: Vec<acms_compact::AssemblyId> = Vec::new();
    for e in events {
        if let Some(id) = e.assembly_id()
            && !ids.contains(&id)
        {
            ids.push(id);
        }
    }
    ids.iter()
        .map(|id| {
            events
                .iter()
                .filter(|e| e.assembly_id() == Some(*id))
                .collect()
        })
        .collect()
}

fn check_event_contract(events: &[CompactionEvent], expected: Outcome) {
    let groups = by_id(events);
    assert_eq!(groups.len(), 1, "one assembly id per attempt");
    let g = &groups[0];
    let names: Vec<&str> = g.iter().map(|e| e.name()).collect();
    if expected.is_success() {
        assert_eq!(names, ["started", "completed", "composed"]);
        let (
            CompactionEvent::Completed { diagnostics: a, .. },
            CompactionEvent::Composed { diagnostics: b, .. },
        ) = (g[1], g[2])
        else {
            panic!("{names:?}");
        };
        assert!(
            Arc::ptr_eq(a, b),
            "composed carries the completed diagnostics instance"
        );
        assert_eq!(a.outcome, expected);
    } else {
        assert_eq!(names, ["started", "terminated"]);
        let CompactionEvent::Terminated { diagnostics, .. } = g[1] else {
            panic!();
        };
        assert_eq!(diagnostics.outcome, expected);
    }
    let seqs: Vec<u64> = g
        .iter()
        .map(|e| match e {
            CompactionEvent::Started { sequence, .. }
            | CompactionEvent::Completed { sequence, .. }
            | CompactionEvent::Terminated { sequence, .. }
            | CompactionEvent::Composed { sequence, .. }
            | CompactionEvent::Artifact { sequence, .. } => *sequence,
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn exactly_one_terminal_event_per_attempt() {
    let conv = session(12, 40, NOW);
    let size = total(&conv.messages, &tokens());
    let cases: Vec<(usize, usize, Outcome)> = vec![
        (size * 2, 1, Outcome::WithinLimit),
        (size / 2, 1, Outcome::Reduced),
        (size / 2, usize::MAX, Outcome::PreservationFallback),
        (12, 1, Outcome::Irreducible),
    ];
    for (limit, works_from, outcome) in cases {
        let sink = CollectingSink::new();
        let profile = CompactionProfile::new(
            AssemblyPolicy::new(limit),
            tokens(),
            Arc::new(StagedReducer {
                works_from,
                calls: AtomicUsize::new(0),
            }),
        );
        let seam = Seam::new(profile, Some(sink.clone())).unwrap();
        let result = seam.prepare(None, conv.messages.clone());
        assert_eq!(result.is_ok(), outcome.is_success(), "{outcome:?}");
        if let Ok(p) = &result {
            // The caller's diagnostics are the events' instance too.
            let ev = sink.events();
            let CompactionEvent::Completed { diagnostics, .. } = &ev[1] else {
                panic!()
            };
            assert!(Arc::ptr_eq(diagnostics, &p.diagnostics));
            assert_eq!(Some(p.assembly_id), ev[0].assembly_id());
        }
        check_event_contract(&sink.events(), outcome);
    }
    // Mutation limit through the history path.
    let sink = CollectingSink::new();
    let profile = CompactionProfile::new(
        AssemblyPolicy::new(size / 2),
        tokens(),
        Arc::new(StagedReducer {
            works_from: 1,
            calls: AtomicUsize::new(0),
        }),
    );
    let seam = Seam::new(profile, Some(sink.clone())).unwrap();
    let h = Mutating {
        conv: conv.clone(),
        version: AtomicU64::new(0),
        mutations: u64::MAX,
    };
    assert!(seam.prepare_history(None, &h).is_err());
    check_event_contract(&sink.events(), Outcome::ConcurrentMutationLimit);

    // Two assemblies: two ids, each with its own complete set.
    let sink = CollectingSink::new();
    let seam = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(size / 2), tokens()).unwrap(),
        Some(sink.clone()),
    )
    .unwrap();
    seam.prepare(None, conv.messages.clone()).unwrap();
    seam.prepare(None, conv.messages.clone()).unwrap();
    let events = sink.events();
    let groups = by_id(&events);
    assert_eq!(groups.len(), 2);
    assert!(groups.iter().all(|g| g.len() == 3));

    // No sink: nothing reported, same result.
    let quiet = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(size / 2), tokens()).unwrap(),
        None,
    )
    .unwrap();
    let a = quiet.prepare(None, conv.messages.clone()).unwrap();
    let b = seam.prepare(None, conv.messages.clone()).unwrap();
    assert_eq!(a.messages, b.messages);
}

/// Counts one unit per message and nothing per character: a fixed test estimator.
#[derive(Debug)]
struct Constant(Unit);

impl Estimator for Constant {
    fn unit(&self) -> Unit {
        self.0
    }
    fn measure(&self, _: &str) -> usize {
        10
    }
}

#[test]
fn units_are_labelled_as_the_estimator_declares() {
    assert!(matches!(
        Meter::custom(Arc::new(Constant(Unit::ExactTokens))),
        Err(Error::Config(_))
    ));
    let constant = Meter::custom(Arc::new(Constant(Unit::Units))).unwrap();
    assert_eq!(constant.unit(), Unit::Units);
    assert_eq!(constant.tokenizer(), None);
    let conv = session(6, 3, NOW);
    for (meter, unit, tokenizer) in [
        (constant, Unit::Units, None),
        (Meter::bytes(), Unit::Utf8Bytes, None),
        (Meter::estimated_tokens(), Unit::EstimatedTokens, None),
        (tokens(), Unit::ExactTokens, Some("cl100k_base")),
    ] {
        let size = total(&conv.messages, &meter);
        for limit in [size * 2, size / 2, 5] {
            let sink = CollectingSink::new();
            let seam = Seam::new(
                CompactionProfile::tiered(AssemblyPolicy::new(limit), meter.clone()).unwrap(),
                Some(sink.clone()),
            )
            .unwrap();
            let result = seam.prepare(None, conv.messages.clone());
            for e in sink.events() {
                let json = serde_json::to_value(&e).unwrap();
                match &e {
                    CompactionEvent::Started { unit: u, .. } => assert_eq!(*u, unit),
                    CompactionEvent::Completed { diagnostics, .. }
                    | CompactionEvent::Composed { diagnostics, .. }
                    | CompactionEvent::Terminated { diagnostics, .. } => {
                        assert_eq!(diagnostics.unit, unit);
                        assert_eq!(diagnostics.tokenizer, tokenizer);
                        assert_eq!(
                            json["diagnostics"]["unit"],
                            serde_json::to_value(unit).unwrap()
                        );
                    }
                    CompactionEvent::Artifact { .. } => {}
                }
                let shown = e.to_string();
                assert!(shown.contains(unit.label()), "{shown}");
                if unit == Unit::Units || unit == Unit::Utf8Bytes {
                    assert!(!shown.contains("token"), "{shown}");
                }
            }
            if let Err(Error::Terminated(t)) = result {
                assert_eq!(t.unit, unit);
                let shown = t.to_string();
                assert!(shown.contains(unit.label()));
                if unit == Unit::Units {
                    assert!(
                        !shown.contains("token"),
                        "a constant estimator is never tokens: {shown}"
                    );
                }
            }
        }
    }
}

#[test]
fn category_sizes_sum_exactly_to_the_final_size() {
    let conv = session(12, 40, NOW);
    let meter = tokens();
    let size = total(&conv.messages, &meter);
    // Code fences and errors make messages with several categories.
    let mut conv = conv;
    conv.messages[3].content = format!(
        "```python\ndef f():\n    return 1\n```\nTraceback: boom\n{}",
        filler("x", 10)
    );
    conv.messages[3].is_error = true;
    for limit in [size * 2, size, size / 2, size / 4, size / 10, 30] {
        for works_from in [1, usize::MAX] {
            let a = assembler(
                limit,
                Arc::new(StagedReducer {
                    works_from,
                    calls: AtomicUsize::new(0),
                }),
                3,
            );
            let d = match a.assemble(conv.messages.clone(), None) {
                Ok(b) => {
                    assert_eq!(b.sizes.iter().sum::<usize>(), b.diagnostics.final_size);
                    b.diagnostics
                }
                Err(t) => t.diagnostics,
            };
            let sum: usize = d.categories.iter().map(|c| c.size).sum();
            assert_eq!(sum, d.final_size, "limit {limit}: {:?}", d.categories);
            let entries: usize = d.categories.iter().map(|c| c.entries).sum();
            assert!(entries >= d.final_messages);
        }
    }
}

/// A run with one rehydrated body in the history.
fn rehydrated_session(
    dir: &std::path::Path,
    body: &str,
) -> (Arc<Run>, ArtifactStore, Seam, Vec<Message>, String) {
    let store = ArtifactStore::new(dir);
    let r = store.put(body.as_bytes()).unwrap();
    let run = Run::new();
    let seam = Seam::new(
        CompactionProfile::tiered(AssemblyPolicy::new(100_000), tokens()).unwrap(),
        None,
    )
    .unwrap();
    let rehydrated = seam.rehydrate(&run, &store, &r.uri(), 50_000).unwrap();
    let mut messages = session(2, 3, NOW).messages;
    messages.push(rehydrated.message);
    messages.push(Message::text(Role::User, "use the log above"));
    (run, store, seam, messages, r.uri())
}

fn delivers(messages: &[Message], marker: &str) -> bool {
    messages
        .iter()
        .any(|m| m.content.starts_with(REHYDRATED_MARKER) && m.content.contains(marker))
}

#[test]
fn leases_reserve_commit_release_under_concurrency() {
    let dir = tempfile::tempdir().unwrap();
    let body = format!("BODY-MARK\n{}", filler("log", 30));
    let (run, _store, seam, messages, _uri) = rehydrated_session(dir.path(), &body);
    let seam = Arc::new(seam);

    // Sequential: delivered once, then filtered out of the next call of the same run.
    let first = seam.prepare(Some(&run), messages.clone()).unwrap();
    assert!(delivers(&first.messages, "BODY-MARK"));
    // A failed call releases: the retry delivers it again.
    first.release();
    let retry = seam.prepare(Some(&run), messages.clone()).unwrap();
    assert!(delivers(&retry.messages, "BODY-MARK"));
    retry.commit();
    assert!(run.delivered(&body_digest(&body)));
    let again = seam.prepare(Some(&run), messages.clone()).unwrap();
    assert!(!delivers(&again.messages, "BODY-MARK"));
    assert!(
        again
            .messages
            .iter()
            .any(|m| m.content.starts_with(EVICTED_MARKER))
    );
    assert_eq!(again.diagnostics.outcome, Outcome::Reduced);
    drop(again);

    // Concurrent nested calls of a fresh run: exactly one holds and delivers the body.
    for _ in 0..20 {
        let (run, _store, seam, messages, _) = rehydrated_session(dir.path(), &body);
        let seam = Arc::new(seam);
        let barrier = Arc::new(std::sync::Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (seam, run, messages, barrier) =
                    (seam.clone(), run.clone(), messages.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let p = seam.prepare(Some(&run), messages).unwrap();
                    let delivered = delivers(&p.messages, "BODY-MARK");
                    // Hold the lease until every thread has assembled.
                    (delivered, p)
                })
            })
            .collect();
        let results: Vec<(bool, acms_compact::Prepared)> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(results.iter().filter(|(d, _)| *d).count(), 1);
        // The holder fails: released, and a retry of the run can deliver it.
        for (_, p) in results {
            p.release();
        }
        let retry = seam.prepare(Some(&run), messages.clone()).unwrap();
        assert!(delivers(&retry.messages, "BODY-MARK"));
    }

    // Through the client: the provider sees the body once per run; a failed call's retry
    // delivers it.
    let (run, store, _seam, messages, _) = rehydrated_session(dir.path(), &body);
    let _ = store;
    let provider = Arc::new(FakeProvider::default());
    let client = ClientStack::new(
        provider.clone(),
        CapabilityProfile::none().with(Capability::Compaction),
    )
    .compaction(CompactionProfile::tiered(AssemblyPolicy::new(100_000), tokens()).unwrap())
    .unwrap()
    .build(None)
    .unwrap();
    let request = ChatRequest {
        messages,
        ..ChatRequest::default()
    };
    provider.fail_next.store(1, Ordering::SeqCst);
    assert!(client.complete_in(&run, &request).is_err());
    client.complete_in(&run, &request).unwrap();
    client.complete_in(&run, &request).unwrap();
    let seen: Vec<bool> = provider
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|m| delivers(m, "BODY-MARK"))
        .collect();
    assert_eq!(seen, [true, true, false]);
    // A body from another run is evicted: its presence is scoped to the run.
    let other = Run::new();
    client.complete_in(&other, &request).unwrap();
    assert!(!delivers(
        provider.requests.lock().unwrap().last().unwrap(),
        "BODY-MARK"
    ));
}

fn body_digest(body: &str) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(body.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn byte_attribution_with_multibyte_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ArtifactStore::new(dir.path()));
    // Four bytes per crab, two per é: bytes, not characters, are attributed.
    let body: String = "é🦀 résumé naïve ".repeat(2000);
    assert_ne!(body.len(), body.chars().count());
    let mut messages = vec![
        Message::text(Role::System, "s"),
        Message::text(Role::User, "go"),
    ];
    for i in 0..8 {
        messages.push(call(&format!("c{i}"), "run", "{}"));
        messages.push(Message::tool_result(format!("c{i}"), format!("{i}{body}")));
    }
    messages.push(Message::text(Role::User, "next"));
    let size = total(&messages, &tokens());
    let mut policy = AssemblyPolicy::new(size / 3);
    policy.keep_recent_results = 2;
    policy.offload_min_bytes = 1024;
    let sink = CollectingSink::new();
    let seam = Seam::new(
        CompactionProfile::tiered(policy, tokens())
            .unwrap()
            .with_artifacts(store.clone()),
        Some(sink.clone()),
    )
    .unwrap();
    let p = seam.prepare(None, messages.clone()).unwrap();
    let offloads = &p.diagnostics.artifacts;
    assert_eq!(offloads.len(), 6);
    for (a, i) in offloads.iter().zip(0..) {
        assert_eq!(a.input_bytes, format!("{i}{body}").len());
        assert_eq!(a.output_bytes, Some(REFERENCE_BYTES));
        assert_eq!(a.outcome, ArtifactOutcome::Written);
    }
    // The event carries the same instance.
    let ev = sink.events();
    let CompactionEvent::Completed { diagnostics, .. } = &ev[1] else {
        panic!()
    };
    assert!(Arc::ptr_eq(diagnostics, &p.diagnostics));
    // Offloading the same bodies again reuses them.
    let p2 = seam.prepare(None, messages.clone()).unwrap();
    assert!(
        p2.diagnostics
            .artifacts
            .iter()
            .all(|a| a.outcome == ArtifactOutcome::Reused)
    );

    // Rehydration: the reference in, the body's bytes out; the event has the same instance.
    let run = Run::new();
    let uri = p
        .messages
        .iter()
        .find_map(|m| {
            m.content
                .find("artifact://sha256/")
                .map(|i| m.content[i..i + REFERENCE_BYTES].to_string())
        })
        .unwrap();
    sink.take();
    let r = seam.rehydrate(&run, &store, &uri, 100_000).unwrap();
    assert_eq!(r.attribution.input_bytes, REFERENCE_BYTES);
    assert_eq!(r.attribution.output_bytes, Some(format!("0{body}").len()));
    let ev = sink.take();
    let CompactionEvent::Artifact { attribution, .. } = &ev[0] else {
        panic!()
    };
    assert!(Arc::ptr_eq(attribution, &r.attribution));
    // Over budget, corrupt, missing, malformed: no output bytes.
    let over = seam.rehydrate(&run, &store, &uri, 10).unwrap_err();
    assert_eq!(over.attribution.outcome, ArtifactOutcome::OverBudget);
    assert_eq!(over.attribution.output_bytes, None);
    assert!(matches!(over.error, Error::RehydrationOverBudget { .. }));
    let missing = seam
        .rehydrate(
            &run,
            &store,
            &format!("artifact://sha256/{}", "0".repeat(64)),
            10,
        )
        .unwrap_err();
    assert_eq!(missing.attribution.outcome, ArtifactOutcome::Missing);
    let bad = seam
        .rehydrate(&run, &store, "artifact://sha256/../x", 10)
        .unwrap_err();
    assert!(matches!(bad.error, Error::ArtifactReference));
    assert_eq!(bad.attribution.output_bytes, None);
    let digest = &uri["artifact://sha256/".len()..];
    let file = dir.path().join("sha256").join(&digest[..2]).join(digest);
    std::fs::write(&file, "tampered").unwrap();
    let corrupt = seam.rehydrate(&run, &store, &uri, 100_000).unwrap_err();
    assert_eq!(corrupt.attribution.outcome, ArtifactOutcome::Corrupt);
    assert_eq!(corrupt.attribution.output_bytes, None);
    let ev = sink.take();
    assert_eq!(ev.len(), 4);
}

#[test]
fn staged_limits_hold_for_the_tiered_profile() {
    // The trigger margin is enforced (result at or under it) and the hard limit too.
    let conv = session(20, 60, NOW);
    let meter = tokens();
    let size = total(&conv.messages, &meter);
    for frac in [0.9, 0.5, 0.25, 0.1] {
        let mut policy = AssemblyPolicy::new((size as f64 * frac) as usize);
        policy.trigger_margin = policy.hard_limit / 10;
        let seam = Seam::new(
            CompactionProfile::tiered(policy, meter.clone()).unwrap(),
            None,
        )
        .unwrap();
        match seam.prepare(None, conv.messages.clone()) {
            Ok(p) => {
                let n = total(&p.messages, &meter);
                assert!(
                    n <= policy.trigger_threshold()
                        || p.diagnostics.outcome == Outcome::PreservationFallback
                );
                assert!(n <= policy.hard_limit);
                assert!(p.diagnostics.sequence_valid);
            }
            Err(e) => panic!("{frac}: {e}"),
        }
    }
}
