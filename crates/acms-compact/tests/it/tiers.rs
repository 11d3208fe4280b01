//! Each tier on small conversations, data-driven where it fits.

use acms_compact::model::{Message, Role, is_cleared};
use acms_compact::{
    ArtifactStore, BudgetState, BudgetTracker, CLEARED_SENTINEL, CompactConfig, Compactor,
    DeterministicSummarizer, Error, LlmSummarizer, Meter, OFFLOAD_MARKER, Outcome, Rejection,
    Skill, Stage, Thresholds,
};
use acms_core::Tokenizer;
use acms_llm::{Error as LlmError, ScriptedClient};

use crate::{assert_valid, call, filler, session};

const NOW: f64 = 1_700_000_000.0;

fn tokens() -> Meter {
    Meter::tokens(Tokenizer::Cl100kBase)
}

fn config(limit: usize) -> CompactConfig {
    let mut c = CompactConfig::new(limit);
    c.keep_recent = 300;
    c.summary_reserve = 400;
    c
}

fn compactor(c: CompactConfig) -> Compactor {
    Compactor::new(c, tokens()).unwrap().at_time(NOW)
}

fn accepted(d: &acms_compact::Diagnostics) -> Vec<Stage> {
    d.stages
        .iter()
        .filter(|s| s.accepted)
        .map(|s| s.stage)
        .collect()
}

#[test]
fn fitting_conversation_is_returned_unchanged() {
    let conv = session(3, 5, NOW);
    let out = compactor(config(100_000)).compact(&conv).unwrap();
    assert_eq!(out.conversation, conv);
    assert_eq!(out.diagnostics.outcome, Outcome::WithinLimit);
    assert!(out.diagnostics.stages.is_empty());
    assert_eq!(out.diagnostics.tier, 0);
}

/// Indices (among tool results) of the cleared ones.
fn cleared(out: &acms_compact::Compacted) -> Vec<usize> {
    out.conversation
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .enumerate()
        .filter(|(_, m)| is_cleared(&m.content))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn tier1_clears_old_results_oldest_first_but_keeps_last_five() {
    // 12 rounds 10 minutes apart: rounds 0..=6 are at least 60 minutes old; 7..12 are the
    // last five.
    let conv = session(12, 40, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = config(before - 100);
    c.code_compaction = false;
    let out = compactor(c.clone()).compact(&conv).unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::Microcompact]);
    // Just enough, oldest first.
    assert_eq!(cleared(&out), vec![0]);
    let stub = &out.conversation.messages[3].content;
    assert!(
        stub.starts_with(CLEARED_SENTINEL.trim_end_matches(']')),
        "{stub}"
    );
    assert!(
        stub.contains("read_file `src/mod0.py`"),
        "names what was cleared: {stub}"
    );
    assert!(stub.contains("40 lines"), "{stub}");
    assert_valid(&conv, &out, before - 100, &tokens());

    // A tighter limit clears every old result, never one of the last five or a recent one.
    let tight = before * 2 / 3;
    let mut c2 = c.clone();
    c2.limit = tight;
    c2.tiers = [true, false, false, false];
    match compactor(c2).compact(&conv) {
        Ok(out) => assert!(cleared(&out).iter().all(|&i| i <= 6)),
        Err(Error::Irreducible { diagnostics, .. }) => {
            assert_eq!(diagnostics.stages[0].stage, Stage::Microcompact);
        }
        Err(e) => panic!("{e}"),
    }

    // Without timestamps every result but the last five counts as old.
    let mut untimed = conv.clone();
    untimed.messages.iter_mut().for_each(|m| m.timestamp = None);
    let mut c3 = c;
    c3.limit = before / 2;
    c3.tiers = [true, false, false, false];
    let n = match compactor(c3).compact(&untimed) {
        Ok(out) => cleared(&out).len(),
        Err(Error::Irreducible { diagnostics, .. }) => diagnostics.stages[0].messages_changed,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(n, 7);
}

#[test]
fn tier1_ledger_keeps_the_facts_of_cleared_results() {
    let mut conv = session(10, 30, NOW);
    // A command's report (a file read's text would be file content, not an error).
    conv.messages[2] = call("c0", "bash", r#"{"command":"pytest -x tests/test_cfg.py"}"#);
    conv.messages[3].content = format!(
        "Traceback (most recent call last):\n  File \"src/mod0.py\", line 3, in load\nKeyError: 'db_url'\n{}FAILED tests/test_cfg.py::test_load - KeyError\n",
        crate::filler("log", 30)
    );
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = config(before * 3 / 4);
    c.code_compaction = false;
    c.tiers = [true, false, false, false];
    let out = compactor(c).compact(&conv).unwrap();
    let ledger = out
        .conversation
        .messages
        .iter()
        .find(|m| m.content.starts_with("[Session ledger"))
        .expect("a ledger");
    for fact in ["KeyError: 'db_url'", "src/mod0.py:3 in load", "test_load"] {
        assert!(ledger.content.contains(fact), "{fact}: {}", ledger.content);
    }
    assert!(!ledger.is_user_request());
    assert_valid(&conv, &out, before * 3 / 4, &tokens());
}

#[test]
fn tier1_offloads_large_results_to_artifacts() {
    let dir = tempfile::tempdir().unwrap();
    let conv = session(8, 400, NOW);
    let original_body = conv.messages[3].content.clone();
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = config(before - 1000);
    c.offload_min_bytes = 4096;
    let out = compactor(c)
        .with_artifacts(ArtifactStore::new(dir.path()))
        .compact(&conv)
        .unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::Offload]);
    let first = &out.conversation.messages[3].content;
    assert!(first.starts_with(OFFLOAD_MARKER), "{first}");
    assert!(first.contains("artifact://sha256/"));
    // The reference resolves to the original body.
    let digest = &out.diagnostics.artifacts[0].digest;
    let store = ArtifactStore::new(dir.path());
    assert_eq!(store.get_digest(digest).unwrap(), original_body.as_bytes());
    assert_eq!(out.diagnostics.artifacts.len(), 3);
}

fn code_session() -> (acms_compact::Conversation, String) {
    let code: String = (0..60)
        .map(|i| format!("def handler_{i}(request):\n    data = load(request)\n    return process(data, {i})\n"))
        .collect();
    let mut conv = vec![Message::text(Role::System, "sys")];
    for r in 0..7 {
        conv.push(Message::text(Role::User, format!("read file {r}")));
        conv.push(call(
            &format!("c{r}"),
            "Read",
            &format!(r#"{{"file_path":"app/h{r}.py"}}"#),
        ));
        // Recent results: microcompact leaves them to code compaction.
        let mut res = Message::tool_result(format!("c{r}"), code.clone());
        res.timestamp = Some(NOW - 60.0);
        conv.push(res);
    }
    (acms_compact::Conversation::new(conv), code)
}

#[test]
fn tier1_outlines_code_in_old_file_reads() {
    let (conv, code) = code_session();
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let out = compactor(config(before - 200)).compact(&conv).unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::CodeCompaction]);
    let compacted = &out.conversation.messages[3].content;
    assert!(
        compacted.starts_with(acms_compact::code::OUTLINE_MARKER),
        "{compacted}"
    );
    assert!(compacted.contains("def handler_59(request)"), "{compacted}");
    assert!(!compacted.contains("load(request)"), "{compacted}");
    // The last five results are untouched.
    assert_eq!(out.conversation.messages[9].content, code);
}

#[test]
fn tier1_code_falls_back_to_head_tail() {
    let (conv, _) = code_session();
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let out = compactor(config(before - 200))
        .with_outliner(Box::new(acms_compact::NoOutliner))
        .compact(&conv)
        .unwrap();
    let compacted = &out.conversation.messages[3].content;
    assert!(compacted.contains("lines elided]"), "{compacted}");
    assert!(compacted.starts_with("def handler_0(request):"));
}

#[test]
fn tier2_summarizes_and_restores_files() {
    let conv = session(20, 30, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let limit = before / 3;
    let mut c = config(limit);
    c.tiers = [false, true, false, true];
    let out = compactor(c)
        .with_skills(vec![Skill {
            name: "pytest".into(),
            content: "Run tests with `pytest -q`.".into(),
        }])
        .compact(&conv)
        .unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::SessionSummary]);
    assert_eq!(out.diagnostics.tier, 2);
    let msgs = &out.conversation.messages;
    let summary = msgs
        .iter()
        .find(|m| m.content.starts_with("[Session summary"))
        .unwrap();
    for section in [
        "## User requests (oldest first; ` […]` marks a cut)",
        "## Files touched",
        "## Tool usage",
        "## Current state",
    ] {
        assert!(summary.content.contains(section), "{section}");
    }
    // The task (the first request) stays verbatim in place; later requests are summarized.
    assert_eq!(msgs[1], conv.messages[1]);
    assert!(!summary.content.contains("request 0: look at module 0"));
    assert!(summary.content.contains("- request 1: look at module 1\n"));
    assert!(summary.content.contains("- read_file: "));
    let restored = msgs
        .iter()
        .find(|m| m.content.starts_with("[Restored context"))
        .unwrap();
    assert!(restored.content.contains("### Skill: pytest"));
    assert!(out.diagnostics.restored_files >= 1);
    assert!(out.diagnostics.restored_skills == 1);
    // The latest user turn is the original one, verbatim.
    assert!(msgs.contains(&conv.messages[conv.messages.len() - 4]));
    assert_valid(&conv, &out, limit, &tokens());
}

#[test]
fn tier3_uses_the_summarizer() {
    let conv = session(20, 30, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let limit = before / 3;
    let mut c = config(limit);
    c.tiers = [false, true, true, true];
    c.summary_reserve = 2_000;
    let out = compactor(c)
        .with_summarizer(Box::new(DeterministicSummarizer))
        .compact(&conv)
        .unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::LlmSummary]);
    let summary = out
        .conversation
        .messages
        .iter()
        .find(|m| m.content.starts_with("[Session summary"))
        .unwrap();
    assert_eq!(
        summary.content.matches("\n## ").count(),
        9,
        "{}",
        summary.content
    );
    assert_valid(&conv, &out, limit, &tokens());
}

/// Tier 3 failures fall back to tier 2 after exactly one call, and no error text enters the
/// history.
fn check_tier3_fallback(client: ScriptedClient, expected: Rejection) {
    let conv = session(20, 30, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let limit = before / 3;
    let mut c = config(limit);
    c.tiers = [false, true, true, true];
    let client = std::sync::Arc::new(client);
    let out = compactor(c)
        .with_summarizer(Box::new(LlmSummarizer::new(client.clone(), 1.0)))
        .compact(&conv)
        .unwrap();
    assert_eq!(client.requests().len(), 1, "exactly one model call");
    let stages: Vec<(Stage, bool, Option<Rejection>)> = out
        .diagnostics
        .stages
        .iter()
        .map(|s| (s.stage, s.accepted, s.rejection))
        .collect();
    assert_eq!(
        stages,
        vec![
            (Stage::LlmSummary, false, Some(expected)),
            (Stage::SessionSummary, true, None)
        ]
    );
    for m in &out.conversation.messages {
        assert!(!m.content.contains("quota"), "error text leaked");
        assert!(!m.content.contains("HTTP"), "error text leaked");
    }
    assert_valid(&conv, &out, limit, &tokens());
}

#[test]
fn tier3_falls_back_to_tier2() {
    check_tier3_fallback(
        ScriptedClient::new().fail(LlmError::Status {
            status: 429,
            code: Some("quota".into()),
        }),
        Rejection::SummarizerFailed(acms_compact::SummarizerError::CallFailed),
    );
    check_tier3_fallback(
        ScriptedClient::new().fail(LlmError::ContextOverflow { status: 413 }),
        Rejection::SummarizerFailed(acms_compact::SummarizerError::ContextOverflow),
    );
    check_tier3_fallback(
        ScriptedClient::new().reply("## Primary objective\n".to_string() + &filler("big", 400)),
        Rejection::OverBudget,
    );
}

#[test]
fn tier4_peels_oldest_rounds() {
    let conv = session(10, 30, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = config(before / 2);
    c.tiers = [false, false, false, true];
    let out = compactor(c).compact(&conv).unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::Peel]);
    let msgs = &out.conversation.messages;
    assert_eq!(msgs[0], conv.messages[0]);
    // The newest rounds survive, in order, and the oldest are gone; the task stays.
    assert_eq!(msgs.last(), conv.messages.last());
    assert_eq!(msgs[1], conv.messages[1]);
    assert!(!msgs.contains(&conv.messages[2]));
    assert_valid(&conv, &out, before * 3 / 4, &tokens());
}

#[test]
fn reacts_to_provider_overflow() {
    let conv = session(10, 30, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let c = compactor(config(1_000_000));
    assert!(
        c.on_provider_error(
            &conv,
            &LlmError::Status {
                status: 500,
                code: None
            }
        )
        .is_none()
    );
    let out = c
        .on_provider_error(&conv, &LlmError::ContextOverflow { status: 413 })
        .unwrap()
        .unwrap();
    assert!(out.diagnostics.final_size <= before - before / 10);
    assert_eq!(out.diagnostics.tier, 4);
    let out = c.reactive(&conv, before / 3).unwrap();
    assert!(out.diagnostics.final_size <= before / 3);
}

#[test]
fn required_content_over_limit_is_irreducible() {
    let mut conv = session(4, 10, NOW);
    conv.messages
        .push(Message::text(Role::User, filler("huge", 200)));
    let err = compactor(config(500)).compact(&conv).unwrap_err();
    match err {
        Error::Irreducible {
            size,
            limit,
            diagnostics,
            ..
        } => {
            assert_eq!(limit, 500);
            assert!(size > 500);
            assert_eq!(diagnostics.outcome, Outcome::Irreducible);
            assert_eq!(diagnostics.final_size, size);
        }
        other => panic!("expected Irreducible, got {other:?}"),
    }
}

#[test]
fn categories_sum_to_final_size() {
    let mut conv = session(12, 30, NOW);
    conv.messages.push(Message::text(
        Role::Assistant,
        "Here is the fix:\n```python\ndef f(x):\n    return x + 1\n```\nDone.",
    ));
    conv.messages
        .push(Message::text(Role::User, "thanks, now run the tests"));
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    for limit in [before + 10, before / 2, before / 4] {
        let out = compactor(config(limit)).compact(&conv).unwrap();
        let d = &out.diagnostics;
        assert_eq!(
            d.categories.iter().map(|c| c.size).sum::<usize>(),
            d.final_size
        );
    }
}

#[test]
fn state_events_follow_usage() {
    let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tracker = BudgetTracker::new(200_000, Thresholds::default()).unwrap();
    let e = events.clone();
    tracker.subscribe(move |c| e.lock().unwrap().push(c.to));
    for used in [10_000, 176_000, 183_000, 188_000, 198_000, 120_000] {
        tracker.observe(used);
    }
    assert_eq!(
        *events.lock().unwrap(),
        vec![
            BudgetState::Warning,
            BudgetState::Pressure,
            BudgetState::AutoCompact,
            BudgetState::Blocking,
            BudgetState::Normal
        ]
    );
    // The compactor reports the states of its input and output against the window.
    let conv = session(10, 30, NOW);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = config(before / 2);
    c.window = Some(before + 1000);
    c.thresholds = Thresholds::fractions(0.4, 0.3, 0.2, 0.01);
    let out = compactor(c).compact(&conv).unwrap();
    assert_eq!(out.diagnostics.state_before, BudgetState::AutoCompact);
    assert_eq!(out.diagnostics.state_after, BudgetState::Normal);
}

#[test]
fn bytes_unit() {
    let conv = session(10, 30, NOW);
    let m = Meter::bytes();
    let before = acms_compact::Measured::new(&conv, &m).total;
    let out = Compactor::new(config(before / 2), m.clone())
        .unwrap()
        .at_time(NOW)
        .compact(&conv)
        .unwrap();
    assert_eq!(out.diagnostics.unit, acms_compact::Unit::Utf8Bytes);
    assert_valid(&conv, &out, before / 2, &m);
}

/// A history that a "host" mutates `mutations` times, once per snapshot.
struct Busy {
    conv: acms_compact::Conversation,
    version: std::sync::atomic::AtomicU64,
    mutations: u64,
}

impl acms_compact::History for Busy {
    fn version(&self) -> u64 {
        self.version.load(std::sync::atomic::Ordering::SeqCst)
    }
    fn snapshot(&self) -> (u64, acms_compact::Conversation) {
        let v = self.version();
        if v < self.mutations {
            // The host appends right after the snapshot is taken.
            self.version
                .store(v + 1, std::sync::atomic::Ordering::SeqCst);
        }
        (v, self.conv.clone())
    }
}

#[test]
fn concurrent_mutation_restarts_then_gives_up() {
    let conv = session(6, 30, NOW);
    let c = compactor(config(1_000));
    let busy = |mutations| Busy {
        conv: conv.clone(),
        version: 0.into(),
        mutations,
    };
    assert!(c.compact_history(&busy(2), 3).is_ok());
    assert!(matches!(
        c.compact_history(&busy(3), 3),
        Err(Error::ConcurrentMutationLimit { attempts: 3 })
    ));
}

/// Source code that names exceptions everywhere and reports none: before issue 39 (item 13)
/// its lines went into the ledger's "Errors seen" (`[read_file] httpcore.TimeoutException…`).
const HTTPX_SOURCE: &str = r#"import httpcore

TimeoutException: TypeAlias = httpcore.TimeoutException

HTTPCORE_EXC_MAP = {
    httpcore.TimeoutException: TimeoutException,
    httpcore.ConnectError: ConnectError,
}


def map_httpcore_exceptions():
    """
    Raises:
        TimeoutException: when the pool times out.
    """
    raise TimeoutException("timed out")
"#;

/// What a test run reported: a real traceback.
const TRACEBACK: &str = r#"Traceback (most recent call last):
  File "/repo/httpx/_transports/default.py", line 101, in map_httpcore_exceptions
    raise mapped_exc(message) from exc
httpx.ReadTimeout: timed out
"#;

/// A session whose first four tool results print files (`read_file`, `cat`, `sed -n`, a
/// text-only agent's `cat`) and, when `traceback`, a fifth runs the tests and fails; then
/// six small rounds, so tier 1 clears the first ones into the ledger.
fn printed_source_session(traceback: bool) -> acms_compact::Conversation {
    let mut m = vec![
        Message::text(Role::System, "You are a coding agent."),
        Message::text(Role::User, "Fix the timeout mapping in httpx."),
        call("r", "read_file", r#"{"path":"httpx/_exceptions.py"}"#),
        Message::tool_result("r", HTTPX_SOURCE),
        call("c", "bash", r#"{"command":"cat httpx/_exceptions.py"}"#),
        Message::tool_result("c", HTTPX_SOURCE),
        call(
            "s",
            "bash",
            r#"{"command":"sed -n '1,40p' httpx/_exceptions.py | nl -ba"}"#,
        ),
        Message::tool_result("s", HTTPX_SOURCE),
        // A text-only agent: the command in a fenced block, the output as a user message.
        Message::text(
            Role::Assistant,
            "THOUGHT: read it again.\n\n```bash\ncat httpx/_exceptions.py\n```",
        ),
        Message::text(
            Role::User,
            format!("<returncode>0</returncode>\n<output>\n{HTTPX_SOURCE}</output>"),
        ),
    ];
    if traceback {
        m.push(call(
            "t",
            "bash",
            r#"{"command":"python -m pytest tests/test_timeouts.py"}"#,
        ));
        m.push(Message::tool_result("t", TRACEBACK));
    }
    for r in 0..6 {
        m.push(call(&format!("f{r}"), "bash", r#"{"command":"ls"}"#));
        m.push(Message::tool_result(format!("f{r}"), "README.md"));
    }
    m.push(Message::text(Role::User, "Go on."));
    acms_compact::Conversation::new(m)
}

#[test]
fn ledger_errors_are_what_commands_reported() {
    for traceback in [false, true] {
        let conv = printed_source_session(traceback);
        let before = acms_compact::Measured::new(&conv, &tokens()).total;
        // Tier 2 summarizes every round before the last ones: the printed files and the
        // test run are all in the summarized span.
        let mut c = config(before * 2 / 3);
        c.keep_recent = 60;
        c.tiers = [false, true, false, false];
        let out = compactor(c).compact(&conv).unwrap();
        let summary = out
            .conversation
            .messages
            .iter()
            .find(|m| m.content.starts_with("[Session summary"))
            .expect("a summary");
        let errors = summary
            .content
            .split("\n## ")
            .filter(|s| s.starts_with("Errors seen") || s.starts_with("Last error"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!errors.contains("TimeoutException"), "{}", summary.content);
        if traceback {
            assert!(
                errors.contains("- [bash] httpx.ReadTimeout: timed out"),
                "{}",
                summary.content
            );
            assert!(
                summary.content.contains(
                    "## Last error\n- [bash `python -m pytest tests/test_timeouts.py`] httpx.ReadTimeout: timed out\n  at /repo/httpx/_transports/default.py:101 in map_httpcore_exceptions\n"
                ),
                "{}",
                summary.content
            );
        } else {
            assert!(errors.is_empty(), "{}", summary.content);
        }
        assert_valid(&conv, &out, before * 2 / 3, &tokens());
    }
}

#[test]
fn tier1_ledger_has_no_errors_from_printed_files() {
    let conv = printed_source_session(false);
    let before = acms_compact::Measured::new(&conv, &tokens()).total;
    let mut c = config(before * 17 / 20);
    c.code_compaction = false;
    c.tiers = [true, false, false, false];
    let out = compactor(c).compact(&conv).unwrap();
    assert_eq!(accepted(&out.diagnostics), vec![Stage::Microcompact]);
    assert!(
        out.conversation
            .messages
            .iter()
            .all(|m| !m.content.contains("## Errors seen") && !m.content.contains("## Last error")),
        "{:#?}",
        out.conversation.messages
    );
    assert_valid(&conv, &out, before * 17 / 20, &tokens());
}
