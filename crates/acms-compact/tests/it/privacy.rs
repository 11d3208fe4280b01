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
        let c = Compactor::new(config, meter)
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
