//! The verifier every compaction step's proposal must pass before it is accepted: strictly
//! smaller than its input, system messages unchanged and in order, the latest user turn,
//! pinned messages and the task (the first user request, see `task`) present verbatim — or
//! the task as exactly its marked shortening, where the caller found that necessary — and
//! every tool call still paired with exactly the results it had (and no result without its
//! call). A proposal is advice, never trusted.
//!
//! The verifier judges; it never repairs a proposal.

use std::collections::HashMap;

use crate::diagnostics::Rejection;
use crate::measure::Measured;
use crate::model::{Message, Role, groups, latest_user};

/// What the original conversation requires of every proposal.
#[derive(Debug, Clone)]
pub struct Reference {
    system: Vec<Message>,
    latest_user: Option<Message>,
    pinned: Vec<Message>,
    /// The task, when it is pinned.
    task: Option<Message>,
    /// The task may be replaced by its marked shortening.
    task_shortened: bool,
    results_per_call: HashMap<String, usize>,
}

impl Reference {
    /// The requirements of `messages` (the normalized input), the task pinned.
    pub fn of(messages: &[Message]) -> Reference {
        Reference {
            task: crate::task::task_index(messages).map(|i| messages[i].clone()),
            task_shortened: false,
            system: messages
                .iter()
                .filter(|m| m.role.is_system())
                .cloned()
                .collect(),
            latest_user: latest_user(messages).map(|i| messages[i].clone()),
            pinned: messages.iter().filter(|m| m.pinned).cloned().collect(),
            results_per_call: results_per_call(messages),
        }
    }
}

impl Reference {
    /// Pins the task (`true`, the default of [`Reference::of`]) or leaves it to compaction.
    pub fn pin_task(mut self, pin: bool) -> Reference {
        if !pin {
            self.task = None;
        }
        self
    }

    /// Accepts the task's marked shortening ([`crate::task::shorten`]) in its place: only
    /// for a caller that found the required content over its limit with the task whole.
    pub fn allow_shortened_task(mut self) -> Reference {
        self.task_shortened = true;
        self
    }
}

fn results_per_call(messages: &[Message]) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for g in groups(messages) {
        for (id, n) in results_in(&messages[g]) {
            out.insert(id.to_string(), n);
        }
    }
    out
}

/// For each call of a group's first message, its id and how many of the group's results
/// answer it.
fn results_in(group: &[Message]) -> impl Iterator<Item = (&str, usize)> {
    group[0].tool_calls.iter().map(|c| {
        let n = group[1..]
            .iter()
            .filter(|r| r.tool_call_id.as_deref() == Some(c.id.as_str()))
            .count();
        (c.id.as_str(), n)
    })
}

/// Checks `proposal` against `reference` and the size it must beat.
pub fn verify(
    reference: &Reference,
    before_total: usize,
    proposal: &Measured,
) -> Result<(), Rejection> {
    if proposal.total >= before_total {
        return Err(Rejection::NotSmaller);
    }
    structure(reference, &proposal.messages)
}

/// Message sequencing: the messages a proposal keeps verbatim from `base` appear in their
/// original relative order, and no user request follows the latest one of `base`.
///
/// Messages are looked up by a cheap fingerprint (role, call id, lengths and at most 32
/// bytes from each end of the text) rather than by hashing whole contents, which on a long
/// session is megabytes per check; a fingerprint match is then confirmed by full equality, so
/// a collision costs a comparison, never a wrong verdict.
pub fn sequence(base: &[Message], proposal: &[Message]) -> Result<(), Rejection> {
    let mut at: HashMap<Fingerprint<'_>, Vec<usize>> = HashMap::with_capacity(base.len());
    for (i, m) in base.iter().enumerate() {
        at.entry(Fingerprint::of(m)).or_default().push(i);
    }
    let mut next = 0usize;
    for m in proposal {
        let Some(indices) = at.get(&Fingerprint::of(m)) else {
            continue; // new or rewritten content
        };
        match indices.iter().find(|&&i| i >= next && base[i] == *m) {
            Some(&i) => next = i + 1,
            // Kept verbatim, but only an earlier copy exists: moved backwards.
            None if indices.iter().any(|&i| base[i] == *m) => {
                return Err(Rejection::SequenceInvalid);
            }
            None => {}
        }
    }
    let latest_base = latest_user(base).map(|i| &base[i]);
    let latest_proposal = latest_user(proposal).map(|i| &proposal[i]);
    if latest_base.is_some() && latest_base != latest_proposal {
        return Err(Rejection::SequenceInvalid);
    }
    Ok(())
}

/// What [`sequence`] looks a message up by: equal messages have equal fingerprints.
#[derive(PartialEq, Eq, Hash)]
struct Fingerprint<'m> {
    role: Role,
    tool_call_id: Option<&'m str>,
    calls: usize,
    len: usize,
    head: &'m [u8],
    tail: &'m [u8],
}

impl<'m> Fingerprint<'m> {
    fn of(m: &'m Message) -> Fingerprint<'m> {
        let b = m.content.as_bytes();
        let n = b.len().min(32);
        Fingerprint {
            role: m.role,
            tool_call_id: m.tool_call_id.as_deref(),
            calls: m.tool_calls.len(),
            len: b.len(),
            head: &b[..n],
            tail: &b[b.len() - n..],
        }
    }
}

/// The structural checks alone (used on final outputs, where size is checked separately).
pub fn structure(reference: &Reference, messages: &[Message]) -> Result<(), Rejection> {
    let system: Vec<&Message> = messages.iter().filter(|m| m.role.is_system()).collect();
    if system.len() != reference.system.len()
        || system.iter().zip(&reference.system).any(|(a, b)| *a != b)
    {
        return Err(Rejection::RequiredMessageChanged);
    }
    if let Some(u) = &reference.latest_user
        && !messages.contains(u)
    {
        return Err(Rejection::RequiredMessageChanged);
    }
    if reference.pinned.iter().any(|p| !messages.contains(p)) {
        return Err(Rejection::RequiredMessageChanged);
    }
    if let Some(t) = &reference.task {
        let kept = messages.iter().any(|m| {
            m == t
                || (reference.task_shortened
                    && m.role == t.role
                    && crate::task::is_shortened_from(&m.content, &t.content))
        });
        if !kept {
            return Err(Rejection::RequiredMessageChanged);
        }
    }
    for g in groups(messages) {
        let group = &messages[g];
        if group[0].role == Role::Tool
            || results_in(group).any(|(id, n)| reference.results_per_call.get(id) != Some(&n))
        {
            return Err(Rejection::ToolPairBroken);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Meter;
    use crate::model::ToolCall;

    fn conv() -> Vec<Message> {
        vec![
            Message::text(Role::System, "s"),
            Message::text(Role::User, "first"),
            Message::calls(
                "",
                vec![ToolCall {
                    id: "1".into(),
                    name: "t".into(),
                    arguments: "{}".into(),
                }],
            ),
            Message::tool_result("1", "result body"),
            Message::text(Role::User, "latest"),
        ]
    }

    fn check_with(r: &Reference, proposal: Vec<Message>, expected: Result<(), Rejection>) {
        let before = Measured::from_messages(conv(), &Meter::bytes()).total;
        let p = Measured::from_messages(proposal, &Meter::bytes());
        assert_eq!(verify(r, before, &p), expected);
    }

    fn check(proposal: Vec<Message>, expected: Result<(), Rejection>) {
        check_with(&Reference::of(&conv()), proposal, expected);
    }

    #[test]
    fn accepts_and_rejects() {
        let c = conv();
        check(c.clone(), Err(Rejection::NotSmaller));
        // The task (the first user request) is pinned unless the caller unpins it.
        let without_task = vec![c[0].clone(), c[2].clone(), c[3].clone(), c[4].clone()];
        check(without_task.clone(), Err(Rejection::RequiredMessageChanged));
        check_with(&Reference::of(&c).pin_task(false), without_task, Ok(()));
        // Its marked shortening passes only where the caller allowed it.
        let mut shortened = c[1].clone();
        shortened.content = crate::task::shorten(&c[1], 1000, &Meter::bytes())
            .unwrap()
            .0
            .content;
        let with_shortened = vec![c[0].clone(), shortened, c[4].clone()];
        assert_eq!(
            structure(&Reference::of(&c), &with_shortened),
            Err(Rejection::RequiredMessageChanged)
        );
        assert_eq!(
            structure(&Reference::of(&c).allow_shortened_task(), &with_shortened),
            Ok(())
        );
        check(vec![c[0].clone(), c[1].clone(), c[4].clone()], Ok(()));
        check(
            vec![c[0].clone(), c[1].clone(), c[2].clone(), c[4].clone()],
            Err(Rejection::ToolPairBroken),
        );
        check(
            vec![c[0].clone(), c[1].clone(), c[3].clone(), c[4].clone()],
            Err(Rejection::ToolPairBroken),
        );
        check(
            vec![c[1].clone(), c[4].clone()],
            Err(Rejection::RequiredMessageChanged),
        );
        check(
            vec![c[0].clone(), c[1].clone()],
            Err(Rejection::RequiredMessageChanged),
        );
        let mut edited = c[4].clone();
        edited.content = "late".into();
        check(
            vec![c[0].clone(), edited],
            Err(Rejection::RequiredMessageChanged),
        );
    }
}
