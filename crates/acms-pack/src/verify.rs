//! The hard budget guarantee. Packers add up per-fragment token counts, but BPE counts are not
//! additive (the count of a concatenation differs from the sum of its parts, and headers and
//! separators cost tokens too), so the rendered context must be counted again. This module
//! re-renders and recounts with the caller's renderer and exact counter; while the text is
//! over budget it downgrades the item with the lowest value per token one depth (or drops it
//! when it has no shallower option) and verifies again.
//!
//! It does not render or tokenize itself, and it does not re-pack: freed tokens are not
//! reused, because re-adding risks another overflow and the overflow is usually a few tokens.
//! The caller's renderer may fail (it reads the texts it lays out); its error ends the
//! verification and is returned as it is.

use crate::front::usable;
use crate::{Candidate, PackItem};
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// How [`verify_and_trim`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VerifyOutcome {
    /// The rendering fitted as packed; nothing changed.
    Fits,
    /// Items were downgraded or dropped until the rendering fitted.
    Trimmed,
    /// Even the rendering of no items is over budget (e.g. the preamble alone does not fit):
    /// the result is empty and `tokens` is the count of that empty rendering.
    EmptyOverBudget,
}

/// The result of [`verify_and_trim`].
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The final items, in the order given.
    pub items: Vec<PackItem>,
    /// `render(&items)`: the text `tokens` counts, so the caller need not render it again.
    pub text: String,
    /// The exact count of `text`; ≤ budget unless the outcome is `EmptyOverBudget`.
    pub tokens: usize,
    pub outcome: VerifyOutcome,
    /// Downgrade steps applied (one depth each).
    pub downgraded: usize,
    /// Items dropped.
    pub dropped: usize,
    /// Calls to `render` (and `count`).
    pub renders: usize,
}

/// An item that may be trimmed next: the lowest value per token first.
#[derive(Debug, Clone, Copy)]
struct Victim {
    density: f64,
    id: u64,
    slot: usize,
    version: u32,
}

impl PartialEq for Victim {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Victim {}
impl PartialOrd for Victim {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Victim {
    /// Max-heap order, so reversed: lowest density is "greatest"; ties by id, then slot.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .density
            .total_cmp(&self.density)
            .then(other.id.cmp(&self.id))
            .then(other.slot.cmp(&self.slot))
    }
}

fn density(it: &PackItem) -> f64 {
    it.value / f64::from(it.tokens.max(1))
}

/// The next shallower option of the item's candidate that is usable and cheaper: the deepest
/// such option, the most valuable among equal depths. `None` means the item must be dropped
/// (also when `item.candidate` does not point at a candidate with the item's id).
fn downgrade(candidates: &[Candidate], item: &PackItem) -> Option<PackItem> {
    let c = candidates.get(item.candidate).filter(|c| c.id == item.id)?;
    c.options
        .iter()
        .filter(|o| usable(o) && o.depth < item.depth && o.tokens < item.tokens)
        .max_by(|a, b| {
            a.depth
                .cmp(&b.depth)
                .then(a.value.total_cmp(&b.value))
                .then(b.tokens.cmp(&a.tokens))
        })
        .map(|o| PackItem {
            depth: o.depth,
            tokens: o.tokens,
            value: o.value,
            ..*item
        })
}

/// Renders `items`, counts the text exactly and, while it is over `budget`, downgrades the
/// lowest value-per-token item one depth (using `candidates`' options) or drops it, then
/// verifies again.
///
/// Each round trims until the items' own token counts promise to cover the measured excess
/// (at least one step), so a small overflow costs one extra render, not one per item. It
/// terminates because every step removes a depth or an item, and it ends within budget
/// whenever the empty rendering does; when even that is over budget it returns no items and
/// [`VerifyOutcome::EmptyOverBudget`].
///
/// The last call to `render` is always on the returned items, so a renderer may keep what it
/// worked out for them. The first error `render` returns is returned.
pub fn verify_and_trim<E>(
    candidates: &[Candidate],
    items: &[PackItem],
    budget: u32,
    mut render: impl FnMut(&[PackItem]) -> Result<String, E>,
    count: impl Fn(&str) -> usize,
) -> Result<Verified, E> {
    let budget = budget as usize;
    let text = render(items)?;
    let mut out = Verified {
        items: items.to_vec(),
        tokens: count(&text),
        text,
        outcome: VerifyOutcome::Fits,
        downgraded: 0,
        dropped: 0,
        renders: 1,
    };
    if out.tokens <= budget {
        return Ok(out);
    }
    // If nothing fits, say so at once rather than trimming item by item to find out.
    let empty = render(&[])?;
    let empty_tokens = count(&empty);
    out.renders += 1;
    if empty_tokens > budget {
        out.dropped = out.items.len();
        out.items.clear();
        out.text = empty;
        out.tokens = empty_tokens;
        out.outcome = VerifyOutcome::EmptyOverBudget;
        return Ok(out);
    }
    out.outcome = VerifyOutcome::Trimmed;

    let mut slots: Vec<Option<PackItem>> = items.iter().copied().map(Some).collect();
    let mut versions = vec![0u32; slots.len()];
    let mut heap: BinaryHeap<Victim> = items
        .iter()
        .enumerate()
        .map(|(slot, it)| Victim {
            density: density(it),
            id: it.id,
            slot,
            version: 0,
        })
        .collect();
    while out.tokens > budget {
        let excess = out.tokens - budget;
        let mut saved = 0usize;
        while saved < excess {
            let Some(v) = heap.pop() else { break };
            if v.version != versions[v.slot] {
                continue; // superseded by a later downgrade of the same item
            }
            let Some(item) = slots[v.slot] else { continue };
            versions[v.slot] += 1;
            match downgrade(candidates, &item) {
                Some(lower) => {
                    saved += (item.tokens - lower.tokens) as usize;
                    slots[v.slot] = Some(lower);
                    out.downgraded += 1;
                    heap.push(Victim {
                        density: density(&lower),
                        version: versions[v.slot],
                        ..v
                    });
                }
                None => {
                    saved += item.tokens as usize;
                    slots[v.slot] = None;
                    out.dropped += 1;
                }
            }
        }
        out.items = slots.iter().flatten().copied().collect();
        out.text = render(&out.items)?;
        out.tokens = count(&out.text);
        out.renders += 1;
        if out.items.is_empty() && out.tokens > budget {
            // The renderer disagrees with its own earlier empty rendering; nothing is left to
            // trim, so report the empty result honestly instead of looping.
            out.outcome = VerifyOutcome::EmptyOverBudget;
            break;
        }
    }
    Ok(out)
}
