//! The task: the first user request of a conversation — for a coding agent, the issue it was
//! given. It is pinned as the system prompt is: no tier outlines, summarizes, clears or peels
//! it, and the verifier rejects a proposal that lost it (`pin_task` in [`CompactConfig`] and
//! [`AssemblyPolicy`] turns this off; then the task is compacted like any older message).
//!
//! Only when the content that can never be removed — system messages, the task, the latest
//! user turn, pinned messages — is over the limit by itself is the task shortened: its head
//! and tail are kept verbatim around a marked elision, under a header line that says it was
//! shortened and which bytes were kept ([`shorten`]). The budget is never exceeded for it, a
//! shortened task is never passed off as whole, and the verifier accepts it only when the
//! caller found the shortening necessary and only if it is exactly that rendering of the
//! original. The latest user turn is never changed, so a task that is also the latest user
//! turn (or a message pinned by the caller) is never shortened: the result is irreducible.
//!
//! This module decides what the task is and how it is shortened; the compactor and the
//! assembler decide when, from their limits.
//!
//! [`CompactConfig`]: crate::CompactConfig
//! [`AssemblyPolicy`]: crate::AssemblyPolicy

use crate::measure::{Meter, View};
use crate::model::{Message, Role, groups, groups_with, latest_user};

/// The first line of a shortened task.
const TASK_SHORTENED_PREFIX: &str = "[Task shortened to fit the context limit: bytes 0..";

/// Index of the task: the first user request (summaries, ledgers and restorations are not
/// requests).
pub fn task_index(messages: &[Message]) -> Option<usize> {
    messages.iter().position(Message::is_user_request)
}

/// The messages no step may remove, by index: system messages, pinned ones, the latest user
/// request and, when `pin_task`, the task.
pub(crate) fn required(messages: &[Message], pin_task: bool) -> Vec<bool> {
    let latest = latest_user(messages);
    let task = if pin_task { task_index(messages) } else { None };
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| m.role.is_system() || m.pinned || Some(i) == latest || Some(i) == task)
        .collect()
}

/// The text of `original` with bytes `head..tail` elided (both on char boundaries).
fn shortened_text(original: &str, head: usize, tail: usize) -> String {
    let n = original.len();
    format!(
        "{TASK_SHORTENED_PREFIX}{head} and {tail}..{n} of {n} kept verbatim, the {} bytes between them elided]\n{}\n[… {} bytes of the task elided …]\n{}",
        tail - head,
        &original[..head],
        tail - head,
        &original[tail..]
    )
}

/// True when `candidate` is exactly a shortening of `original` made by [`shorten`].
pub fn is_shortened_from(candidate: &str, original: &str) -> bool {
    let Some(rest) = candidate.strip_prefix(TASK_SHORTENED_PREFIX) else {
        return false;
    };
    let number = |s: &str| -> Option<(usize, usize)> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        Some((s[..end].parse().ok()?, end))
    };
    let parsed = (|| {
        let (head, at) = number(rest)?;
        let rest = rest[at..].strip_prefix(" and ")?;
        let (tail, _) = number(rest)?;
        Some((head, tail))
    })();
    let Some((head, tail)) = parsed else {
        return false;
    };
    head < tail
        && tail <= original.len()
        && original.is_char_boundary(head)
        && original.is_char_boundary(tail)
        && shortened_text(original, head, tail) == candidate
}

/// `task` shortened to at most `room` (its head and about a quarter as much of its tail
/// kept), or `None` when not even the header and markers fit. The size is `meter`'s.
pub fn shorten(task: &Message, room: usize, meter: &Meter) -> Option<(Message, usize)> {
    let text = &task.content;
    let n = text.len();
    let build = |keep: usize| -> (Message, usize) {
        let mut head = (keep * 3 / 4).min(n);
        while !text.is_char_boundary(head) {
            head -= 1;
        }
        let mut tail = n - (keep - keep * 3 / 4).min(n - head);
        while !text.is_char_boundary(tail) {
            tail += 1;
        }
        // At least one byte is elided, or this would not be a shortening.
        let tail = tail.max(head + 1).min(n);
        let mut m = task.clone();
        m.content = shortened_text(text, head, tail);
        let size = meter.message(&m);
        (m, size)
    };
    if n == 0 {
        return None;
    }
    let (m, size) = build(0);
    if size > room {
        return None;
    }
    // The most bytes kept that still fit: sizes grow with what is kept.
    let (mut lo, mut hi) = (0usize, n - 1);
    let mut best = (m, size);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        let (m, size) = build(mid);
        if size <= room {
            lo = mid;
            best = (m, size);
        } else {
            hi = mid - 1;
        }
    }
    Some(best)
}

/// The smallest a shortened `task` can be (header and markers, nothing of its text): below
/// this, beside the other required content, a limit cannot hold the task at all.
pub fn shortened_floor(task: &Message, meter: &Meter) -> usize {
    let mut m = task.clone();
    m.content = shortened_text(&task.content, 0, task.content.len());
    meter.message(&m)
}

/// When the content that can never be removed (system, task, latest user turn, pinned)
/// is over `target` and shortening the task can bring it under, the task's index and its
/// shortened form. The task takes what the rest leaves, minus a tenth of `target` for a
/// summary and recent context when that still leaves it something.
pub(crate) fn fit(cur: View<'_>, target: usize, meter: &Meter) -> Option<(usize, Message, usize)> {
    let msgs = cur.messages;
    let task = task_index(msgs)?;
    let latest = latest_user(msgs);
    if Some(task) == latest || msgs[task].pinned || msgs[task].role != Role::User {
        return None;
    }
    let gs = groups(msgs);
    let required_size: usize = gs
        .iter()
        .zip(groups_with(&gs, &required(msgs, true)))
        .filter(|(_, required)| *required)
        .map(|(g, _)| cur.group_size(g.clone()))
        .sum();
    if required_size <= target {
        return None;
    }
    let others = required_size - cur.sizes[task];
    let room = target.checked_sub(others)?;
    let (m, size) = room
        .checked_sub(target / 10)
        .and_then(|r| shorten(&msgs[task], r, meter))
        .or_else(|| shorten(&msgs[task], room, meter))?;
    Some((task, m, size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortening_is_marked_fits_and_verifies() {
        let meter = Meter::bytes();
        let task = Message::text(
            Role::User,
            format!("Fix the bug.\n{}\nThe end.", "é".repeat(500)),
        );
        let full = meter.message(&task);
        for room in [300, 500, 800] {
            let (m, size) = shorten(&task, room, &meter).unwrap();
            assert!(size <= room && size < full, "{size} > {room}");
            assert_eq!(size, meter.message(&m));
            assert!(m.content.starts_with(TASK_SHORTENED_PREFIX));
            assert!(m.content.contains("Fix the bug."));
            assert!(m.content.ends_with("The end."));
            assert!(is_shortened_from(&m.content, &task.content));
            // Any other text, or the same shape over another original, is not accepted.
            assert!(!is_shortened_from(
                &m.content.replace("Fix", "Fax"),
                &task.content
            ));
            assert!(!is_shortened_from(&m.content, "Fix the bug."));
        }
        assert!(shorten(&task, 50, &meter).is_none());
        assert!(!is_shortened_from(&task.content, &task.content));
    }

    #[test]
    fn fit_only_when_required_content_is_over() {
        let meter = Meter::bytes();
        let msgs = vec![
            Message::text(Role::System, "s"),
            Message::text(Role::User, "t".repeat(1000)),
            Message::text(Role::Assistant, "a".repeat(100)),
            Message::text(Role::User, "latest"),
        ];
        let sizes: Vec<usize> = msgs.iter().map(|m| meter.message(m)).collect();
        let total: usize = sizes.iter().sum();
        let view = View {
            messages: &msgs,
            sizes: &sizes,
            total,
        };
        assert!(fit(view, 1100, &meter).is_none());
        let (i, m, size) = fit(view, 600, &meter).unwrap();
        assert_eq!(i, 1);
        assert!(size + sizes[0] + sizes[3] <= 600 - 60);
        assert!(is_shortened_from(&m.content, &msgs[1].content));
        // The task that is also the latest user turn is never shortened.
        assert!(
            fit(
                View {
                    messages: &msgs[..3],
                    sizes: &sizes[..3],
                    total: total - sizes[3],
                },
                600,
                &meter
            )
            .is_none()
        );
    }
}
