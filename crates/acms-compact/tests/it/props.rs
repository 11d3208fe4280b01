//! Invariants over random conversations: within the limit on success, tool pairs intact,
//! system and latest user messages verbatim, the task verbatim unless the required content
//! with it whole is over the limit (then shortened with its marker), unchanged when already
//! fitting, and irreducible only when the required content alone is over the limit.

use acms_compact::model::{Message, Role, ToolCall, groups, latest_user};
use acms_compact::task::{is_shortened_from, task_index};
use acms_compact::{
    CompactConfig, Compactor, Conversation, DeterministicSummarizer, Error, Measured, Meter,
};
use acms_core::Tokenizer;
use proptest::prelude::*;

use crate::assert_valid;

#[derive(Debug, Clone)]
enum Round {
    User(String, bool),
    Text(String),
    Tools(Vec<(String, String, String)>, f64),
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z]{1,8}|fn [a-z]+\\(\\) \\{|```|\\n|é|🦀", 0..60)
        .prop_map(|w| w.join(" "))
}

fn round() -> impl Strategy<Value = Round> {
    prop_oneof![
        (text(), prop::bool::weighted(0.1)).prop_map(|(t, p)| Round::User(t, p)),
        text().prop_map(Round::Text),
        (
            prop::collection::vec(("[a-z_]{3,10}", text(), text()), 1..4),
            0.0..20_000.0f64
        )
            .prop_map(|(c, age)| Round::Tools(c, age)),
    ]
}

fn conversation() -> impl Strategy<Value = Conversation> {
    (
        prop::option::of(text()),
        prop::collection::vec(round(), 0..25),
    )
        .prop_map(|(sys, rounds)| {
            let mut m = Vec::new();
            if let Some(s) = sys {
                m.push(Message::text(Role::System, s));
            }
            for (r, round) in rounds.into_iter().enumerate() {
                match round {
                    Round::User(t, pinned) => {
                        let mut u = Message::text(Role::User, t);
                        u.pinned = pinned;
                        m.push(u);
                    }
                    Round::Text(t) => m.push(Message::text(Role::Assistant, t)),
                    Round::Tools(calls, age) => {
                        let ids: Vec<String> =
                            (0..calls.len()).map(|i| format!("call_{r}_{i}")).collect();
                        m.push(Message::calls(
                            "",
                            calls
                                .iter()
                                .zip(&ids)
                                .map(|((name, args, _), id)| ToolCall {
                                    id: id.clone(),
                                    name: name.clone(),
                                    arguments: format!("{{\"path\":\"f{r}.py\",\"q\":{args:?}}}"),
                                })
                                .collect(),
                        ));
                        for ((_, _, out), id) in calls.iter().zip(&ids) {
                            let mut res = Message::tool_result(id.clone(), out.clone());
                            res.timestamp = Some(1_000_000.0 - age);
                            m.push(res);
                        }
                    }
                }
            }
            Conversation::new(m)
        })
}

/// Size of what no tier may remove: system messages, the task, the latest user turn,
/// pinned groups.
fn required_size(conv: &Conversation, meter: &Meter) -> usize {
    let m = Measured::new(conv, meter);
    let latest = latest_user(&conv.messages);
    let task = task_index(&conv.messages);
    groups(&conv.messages)
        .into_iter()
        .filter(|g| {
            g.clone().any(|i| {
                conv.messages[i].role.is_system()
                    || Some(i) == latest
                    || Some(i) == task
                    || conv.messages[i].pinned
            })
        })
        .map(|g| m.sizes[g].iter().sum::<usize>())
        .sum()
}

/// The task is in `out` verbatim, or — only when the required content with it whole is
/// over `limit` — as its marked shortening.
fn check_task(conv: &Conversation, out: &[Message], limit: usize) -> Result<(), TestCaseError> {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let Some(t) = task_index(&conv.messages).map(|i| &conv.messages[i]) else {
        return Ok(());
    };
    if out.contains(t) {
        return Ok(());
    }
    prop_assert!(
        required_size(conv, &meter) > limit,
        "task lost while it fit"
    );
    prop_assert!(
        out.iter()
            .any(|m| is_shortened_from(&m.content, &t.content)),
        "task neither verbatim nor marked as shortened"
    );
    Ok(())
}

fn run(conv: &Conversation, limit: usize, summarizer: bool) -> Result<(), TestCaseError> {
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let mut config = CompactConfig::new(limit);
    config.keep_recent = limit / 4;
    config.summary_reserve = limit / 4;
    let mut c = Compactor::new(config, meter.clone())
        .unwrap()
        .at_time(1_000_000.0);
    if summarizer {
        c = c.with_summarizer(Box::new(DeterministicSummarizer));
    }
    let before = Measured::new(conv, &meter).total;
    match c.compact(conv) {
        Ok(out) => {
            assert_valid(conv, &out, limit, &meter);
            if before <= limit {
                prop_assert_eq!(&out.conversation, conv);
            }
            let latest = latest_user(&conv.messages).map(|i| &conv.messages[i]);
            if let Some(u) = latest {
                prop_assert!(out.conversation.messages.contains(u));
            }
            check_task(conv, &out.conversation.messages, limit)?;
            // Idempotent: compacting the output again changes nothing.
            let again = c.compact(&out.conversation).unwrap();
            prop_assert_eq!(&again.conversation, &out.conversation);
        }
        Err(Error::Irreducible { size, .. }) => {
            prop_assert!(size > limit);
            prop_assert!(required_size(conv, &meter) > limit);
        }
        Err(e) => prop_assert!(false, "unexpected error {e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn compaction_invariants(conv in conversation(), frac in 0.05f64..1.3, summarizer: bool) {
        let total = Measured::new(&conv, &Meter::tokens(Tokenizer::Cl100kBase)).total;
        let limit = ((total as f64) * frac).max(1.0) as usize;
        run(&conv, limit, summarizer)?;
    }
}

fn run_seam(conv: &Conversation, hard: usize, margin_frac: f64) -> Result<(), TestCaseError> {
    use acms_compact::{AssemblyPolicy, CompactionProfile, Seam};
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let mut policy = AssemblyPolicy::new(hard);
    policy.trigger_margin = ((hard as f64) * margin_frac) as usize;
    let seam = Seam::new(
        CompactionProfile::tiered(policy, meter.clone()).unwrap(),
        None,
    )
    .unwrap();
    let before = Measured::new(conv, &meter).total;
    match seam.prepare(None, conv.messages.clone()) {
        Ok(p) => {
            let size = Measured::from_messages(p.messages.clone(), &meter).total;
            prop_assert!(size <= hard, "{} > {}", size, hard);
            prop_assert_eq!(size, p.diagnostics.final_size);
            prop_assert!(p.diagnostics.sequence_valid);
            let sum: usize = p.diagnostics.categories.iter().map(|c| c.size).sum();
            prop_assert_eq!(sum, size);
            if before <= policy.trigger_threshold() {
                prop_assert!(!p.changed);
                prop_assert_eq!(&p.messages, &conv.messages);
            } else {
                prop_assert!(
                    size <= policy.trigger_threshold()
                        || p.diagnostics.outcome == acms_compact::Outcome::PreservationFallback
                );
            }
            let mut normalized = conv.messages.clone();
            acms_compact::model::normalize(&mut normalized);
            let mut reference = acms_compact::verify::Reference::of(&normalized);
            if p.diagnostics
                .stages
                .iter()
                .any(|s| matches!(s, acms_compact::AssemblyStage::ShortenTask { .. }))
            {
                reference = reference.allow_shortened_task();
            }
            prop_assert!(acms_compact::verify::structure(&reference, &p.messages).is_ok());
            check_task(conv, &p.messages, policy.trigger_threshold())?;
        }
        Err(Error::Terminated(t)) => {
            prop_assert_eq!(t.outcome, acms_compact::Outcome::Irreducible);
            prop_assert!(t.final_size > hard);
            prop_assert!(required_size(conv, &meter) > hard);
        }
        Err(e) => prop_assert!(false, "unexpected error {e}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Never forwarded over the hard limit; terminated only when required content alone is
    /// over it; unchanged when at or under the trigger threshold.
    #[test]
    fn seam_never_forwards_over_the_limit(conv in conversation(), frac in 0.05f64..1.3, margin in 0.0f64..0.3) {
        let total = Measured::new(&conv, &Meter::tokens(Tokenizer::Cl100kBase)).total;
        let hard = ((total as f64) * frac).max(2.0) as usize;
        run_seam(&conv, hard, margin)?;
    }
}
