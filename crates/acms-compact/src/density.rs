//! The context-density report: how the final size of a context splits over the
//! [`Category`]s of what it holds. Each message's exact size is split over its parts (prose,
//! code signatures, code bodies), so the category sizes sum exactly to the total.

use std::collections::HashMap;

use crate::code::{fences, is_code_path, is_signature_line};
use crate::diagnostics::{Category, CategoryReport};
use crate::measure::floor_boundary;
use crate::model::{Message, Role, ToolCall, call_of};
use crate::session::{Access, call_access, call_path, looks_like_error};

/// Splits each message's exact size over its categories. A message with several parts
/// (prose and code) is split in proportion to the parts' own sizes, with the rounding
/// remainder on its largest part, so the sum over categories equals the total exactly.
pub(crate) fn categories(
    messages: &[Message],
    sizes: &[usize],
    calls: &HashMap<&str, &ToolCall>,
) -> Vec<CategoryReport> {
    let mut size: HashMap<Category, usize> = HashMap::new();
    let mut entries: HashMap<Category, usize> = HashMap::new();
    for (m, &total) in messages.iter().zip(sizes) {
        let parts = parts(m, calls);
        let shares: Vec<(Category, usize)> = if parts.len() == 1 {
            vec![(parts[0].0, total)]
        } else {
            // Weights only need to be proportional: UTF-8 bytes, so the split costs no
            // second tokenization of every message.
            let weights: Vec<usize> = parts.iter().map(|(_, t)| t.len().max(1)).collect();
            let w: usize = weights.iter().sum();
            let mut s: Vec<(Category, usize)> = parts
                .iter()
                .zip(&weights)
                .map(|((c, _), wi)| (*c, total * wi / w))
                .collect();
            let given: usize = s.iter().map(|(_, n)| n).sum();
            let largest = (0..weights.len()).max_by_key(|&i| weights[i]).unwrap_or(0);
            s[largest].1 += total - given;
            s
        };
        let mut seen = Vec::new();
        for (c, n) in shares {
            *size.entry(c).or_default() += n;
            if !seen.contains(&c) {
                seen.push(c);
                *entries.entry(c).or_default() += 1;
            }
        }
    }
    let mut out: Vec<CategoryReport> = size
        .into_iter()
        .map(|(category, size)| CategoryReport {
            category,
            size,
            entries: entries[&category],
        })
        .collect();
    out.sort_by_key(|r| r.category);
    out
}

/// The parts of one message with their category. Always at least one part.
fn parts<'m>(m: &'m Message, calls: &HashMap<&str, &ToolCall>) -> Vec<(Category, &'m str)> {
    let base = match m.role {
        Role::System | Role::Developer => return vec![(Category::System, &m.content)],
        Role::User if m.is_compaction_artifact() => return vec![(Category::Summaries, &m.content)],
        Role::User if m.is_user_request() => Category::UserRequests,
        Role::User => Category::ToolOutput,
        Role::Assistant => Category::Assistant,
        Role::Tool => {
            let call = call_of(m, calls);
            if looks_like_error(m, call) {
                return vec![(Category::Errors, &m.content)];
            }
            let shows_file = call.is_some_and(|c| {
                call_access(c) == Access::Read && call_path(c).is_some_and(|p| is_code_path(&p))
            });
            if shows_file {
                return code_parts(&m.content);
            }
            Category::ToolOutput
        }
    };
    let mut out = Vec::new();
    let mut last = 0;
    for f in fences(&m.content) {
        out.push((base, &m.content[last..f.body.start]));
        out.extend(code_parts(&m.content[f.body.clone()]));
        last = f.body.end;
    }
    out.push((base, &m.content[last..]));
    out.retain(|(_, t)| !t.is_empty());
    if out.is_empty() {
        out.push((base, ""));
    }
    out
}

/// Code split into declaration lines and body lines (one part each at most).
fn code_parts(code: &str) -> Vec<(Category, &str)> {
    // Lines are classified, then represented by their first and last occurrence, which keeps
    // the parts borrowed; the weights only need to be proportional.
    let (sig, body): (Vec<&str>, Vec<&str>) = code.lines().partition(|l| is_signature_line(l));
    let sig_len: usize = sig.iter().map(|l| l.len() + 1).sum();
    let body_len: usize = body.iter().map(|l| l.len() + 1).sum();
    let mut out = Vec::new();
    // Weight by byte share of the whole code text: the first `sig_len` bytes stand in for the
    // signatures and the rest for bodies. Exact per-line token counts are not worth a second
    // tokenization of every file.
    let split = floor_boundary(code, sig_len.min(code.len()));
    if sig_len > 0 {
        out.push((Category::CodeSignatures, &code[..split]));
    }
    if body_len > 0 {
        out.push((Category::CodeBodies, &code[split..]));
    }
    if out.is_empty() {
        out.push((Category::CodeBodies, code));
    }
    out
}
