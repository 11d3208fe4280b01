//! Diagnostics and errors never carry message text, artifact bodies, paths, tool arguments or
//! error text.

use acms_compact::model::{Message, Role};
use acms_compact::{ArtifactStore, CompactConfig, Compactor, Conversation, Error, Meter};
use acms_core::Tokenizer;

use crate::{call, filler};

const SECRETS: &[&str] = &[
    "SYSTEM-SECRET-1",
    "USER-SECRET-2",
    "secret_dir/creds.py",
    "ARG-SECRET-3",
    "ERROR-SECRET-4",
    "BODY-SECRET-5",
    "ASSISTANT-SECRET-6",
];

fn conversation() -> Conversation {
    let mut m = vec![Message::text(
        Role::System,
        "You are an agent. SYSTEM-SECRET-1",
    )];
    for r in 0..12 {
        m.push(Message::text(
            Role::User,
            format!("USER-SECRET-2 request {r}"),
        ));
        m.push(call(
            &format!("c{r}"),
            "read_file",
            &format!(r#"{{"path":"secret_dir/creds.py","token":"ARG-SECRET-3-{r}"}}"#),
        ));
        let mut res = Message::tool_result(
            format!("c{r}"),
            format!(
                "Traceback: ERROR-SECRET-4\n{}",
                filler("BODY-SECRET-5", 200)
            ),
        );
        res.is_error = r % 3 == 0;
        m.push(res);
        m.push(Message::text(
            Role::Assistant,
            "ASSISTANT-SECRET-6 thinking",
        ));
    }
    Conversation::new(m)
}

fn assert_clean(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} leaks {s}: {text}");
    }
}

#[test]
fn diagnostics_never_hold_content() {
    let dir = tempfile::tempdir().unwrap();
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let conv = conversation();
    for limit in [1_000_000, 8_000, 2_000, 200] {
        let mut config = CompactConfig::new(limit);
        config.offload_min_bytes = 1024;
        let c = Compactor::new(config, meter.clone())
            .unwrap()
            .with_artifacts(ArtifactStore::new(dir.path()));
        match c.compact(&conv) {
            Ok(out) => {
                let d = &out.diagnostics;
                assert_clean("diagnostics json", &serde_json::to_string(d).unwrap());
                assert_clean("diagnostics debug", &format!("{d:?}"));
            }
            Err(e) => {
                assert_clean("error display", &e.to_string());
                assert_clean("error debug", &format!("{e:?}"));
                if let Error::Irreducible { diagnostics, .. } = e {
                    assert_clean(
                        "diagnostics json",
                        &serde_json::to_string(&diagnostics).unwrap(),
                    );
                }
            }
        }
    }
}

/// Every serialized, `Debug` and `Display` form of every seam event, diagnostic and error,
/// across all five outcomes, offload and rehydration, with canaries planted in the system
/// prompt, requests, paths, tool arguments and results, error text, artifact bodies, the
/// provider's error and the caller's identity.
#[test]
fn seam_events_and_errors_never_hold_canaries() {
    use std::sync::Arc;

    use acms_compact::{
        AssemblyPolicy, Capability, CapabilityProfile, ChatProvider, ChatRequest, ChatResponse,
        ClientStack, CollectingSink, CompactionProfile, Measured, Outcome, Run, Seam,
    };

    const OWNER: &str = "OWNER-SECRET-7";
    const PROVIDER: &str = "PROVIDER-SECRET-8";
    const ARTIFACT: &str = "ARTIFACT-SECRET-9";

    struct Failing;
    impl ChatProvider for Failing {
        fn complete(&self, _: &ChatRequest) -> acms_compact::Result<ChatResponse> {
            Err(Error::Provider(acms_llm::Error::Transport(PROVIDER.into())))
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(ArtifactStore::new(dir.path().join("secret_dir")));
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let conv = conversation();
    let size = Measured::new(&conv, &meter).total;
    let mut all = Vec::new();
    let mut errors = Vec::new();
    for limit in [size * 2, size / 2, size / 5, 10] {
        let sink = CollectingSink::new();
        let mut policy = AssemblyPolicy::new(limit);
        policy.offload_min_bytes = 1024;
        let profile = CompactionProfile::tiered(policy, meter.clone())
            .unwrap()
            .with_artifacts(store.clone());
        let seam = Seam::new(profile.clone(), Some(sink.clone())).unwrap();
        let run = Run::new();
        if let Err(e) = seam.prepare(Some(&run), conv.messages.clone()) {
            errors.push(format!("{e} {e:?}"));
        }
        // Explicit rehydration: success, over budget, bad reference.
        let r = store.put(format!("{ARTIFACT} body").as_bytes()).unwrap();
        let _ = seam.rehydrate(&run, &store, &r.uri(), 10_000);
        if let Err(f) = seam.rehydrate(&run, &store, &r.uri(), 1) {
            errors.push(format!("{} {:?}", f.error, f.error));
        }
        if let Err(f) = seam.rehydrate(&run, &store, "artifact://sha256/../secret_dir/creds.py", 1)
        {
            errors.push(format!("{} {:?}", f.error, f.error));
        }
        // Through a client whose provider fails with a secret.
        let client = ClientStack::new(
            Failing,
            CapabilityProfile::none().with(Capability::Compaction),
        )
        .compaction(profile)
        .unwrap()
        .build(Some(sink.clone()))
        .unwrap();
        let mut options = serde_json::Map::new();
        options.insert("user".into(), serde_json::json!(OWNER));
        let _ = client.complete(&ChatRequest {
            messages: conv.messages.clone(),
            options,
        });
        all.extend(sink.take());
    }
    let outcomes: Vec<Outcome> = all
        .iter()
        .filter_map(|e| match e {
            acms_compact::CompactionEvent::Completed { diagnostics, .. }
            | acms_compact::CompactionEvent::Terminated { diagnostics, .. } => {
                Some(diagnostics.outcome)
            }
            _ => None,
        })
        .collect();
    assert!(outcomes.contains(&Outcome::WithinLimit));
    assert!(outcomes.contains(&Outcome::Reduced));
    assert!(outcomes.contains(&Outcome::Irreducible));
    let secrets: Vec<&str> = SECRETS
        .iter()
        .copied()
        .chain([OWNER, PROVIDER, ARTIFACT])
        .collect();
    let check = |what: &str, text: &str| {
        for s in &secrets {
            assert!(!text.contains(s), "{what} leaks {s}: {text}");
        }
    };
    assert!(all.len() > 10);
    for e in &all {
        check("event json", &serde_json::to_string(e).unwrap());
        check("event debug", &format!("{e:?}"));
        check("event display", &e.to_string());
    }
    for e in &errors {
        check("error", e);
    }
}
