//! Unified diffs, as far as the real-issue benchmark needs them: which files a patch touches,
//! which lines it removes (with their line numbers in the old file), and which of those count
//! as "code to change" for changed-line coverage.
//!
//! It parses `git diff` / SWE-bench `golden_patch` text only; it does not apply patches.

/// One file of a patch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilePatch {
    /// The path before the change (`a/` side, without the prefix); `None` for a new file.
    pub old_path: Option<String>,
    /// The path after the change (`b/` side); `None` for a deleted file.
    pub new_path: Option<String>,
    /// The file's header lines (`diff --git`, `index`, `---`, `+++`), verbatim.
    pub header: String,
    pub hunks: Vec<Hunk>,
}

/// One `@@ -a,b +c,d @@` hunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// 1-based first line of the hunk in the old file.
    pub old_start: u32,
    pub old_len: u32,
    /// Removed lines with their 1-based line number in the old file, verbatim (no `-`).
    pub removed: Vec<(u32, String)>,
    /// Added lines, verbatim (no `+`).
    pub added: Vec<String>,
    /// The hunk as it appears in the diff (its `@@` line included), for [`FilePatch::render`].
    pub text: String,
}

/// Removed lines shorter than this (trimmed) are too generic to say that the code to change is
/// visible (`}`, `else:`, `return x`), so changed-line coverage ignores them.
pub const MIN_CHANGED_LINE: usize = 12;

fn strip_prefix_path(p: &str) -> Option<String> {
    let p = p.split('\t').next().unwrap_or(p).trim();
    if p == "/dev/null" {
        return None;
    }
    Some(
        p.strip_prefix("a/")
            .or_else(|| p.strip_prefix("b/"))
            .unwrap_or(p)
            .to_string(),
    )
}

/// `-12,3` or `-12` → (12, 3) / (12, 1).
fn range(s: &str) -> Option<(u32, u32)> {
    let s = &s[1..];
    match s.split_once(',') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

/// Parses a unified diff. Lines outside any file or hunk (commit messages, `index` lines) are
/// skipped; a malformed hunk header ends that file's hunks rather than failing.
pub fn parse(diff: &str) -> Vec<FilePatch> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut hunk: Option<(Hunk, u32, u32)> = None; // (hunk, next old line, old lines left + new left)
    let flush = |files: &mut Vec<FilePatch>, hunk: &mut Option<(Hunk, u32, u32)>| {
        if let (Some((h, _, _)), Some(f)) = (hunk.take(), files.last_mut()) {
            f.hunks.push(h);
        }
    };
    for line in diff.lines() {
        if let Some((h, next_old, left)) = hunk.as_mut()
            && *left > 0
        {
            h.text.push_str(line);
            h.text.push('\n');
            match line.as_bytes().first() {
                Some(b'-') => {
                    h.removed.push((*next_old, line[1..].to_string()));
                    *next_old += 1;
                    *left -= 1;
                    continue;
                }
                Some(b'+') => {
                    h.added.push(line[1..].to_string());
                    *left -= 1;
                    continue;
                }
                Some(b' ') | None => {
                    *next_old += 1;
                    // A context line counts on both sides.
                    *left = left.saturating_sub(2);
                    continue;
                }
                Some(b'\\') => continue, // "\ No newline at end of file"
                _ => {
                    // Not a hunk line after all: take it back out of the hunk's text.
                    h.text.truncate(h.text.len() - line.len() - 1);
                }
            }
        } else if let Some((h, _, _)) = hunk.as_mut()
            && line.starts_with('\\')
        {
            h.text.push_str(line);
            h.text.push('\n');
            continue;
        }
        let header_line = |files: &mut Vec<FilePatch>| {
            if let Some(f) = files.last_mut() {
                f.header.push_str(line);
                f.header.push('\n');
            }
        };
        if line.starts_with("diff --git ") {
            flush(&mut files, &mut hunk);
            files.push(FilePatch::default());
            header_line(&mut files);
        } else if let Some(p) = line.strip_prefix("--- ") {
            flush(&mut files, &mut hunk);
            if files.last().is_none_or(|f| !f.hunks.is_empty()) {
                files.push(FilePatch::default());
            }
            header_line(&mut files);
            if let Some(f) = files.last_mut() {
                f.old_path = strip_prefix_path(p);
            }
        } else if let Some(p) = line.strip_prefix("+++ ") {
            header_line(&mut files);
            if let Some(f) = files.last_mut() {
                f.new_path = strip_prefix_path(p);
            }
        } else if line.starts_with("@@ ") {
            flush(&mut files, &mut hunk);
            let mut parts = line.split_whitespace().skip(1);
            let (Some(old), Some(new)) = (parts.next(), parts.next()) else {
                continue;
            };
            let (Some((os, ol)), Some((_, nl))) = (range(old), range(new)) else {
                continue;
            };
            hunk = Some((
                Hunk {
                    old_start: os,
                    old_len: ol,
                    text: format!("{line}\n"),
                    ..Hunk::default()
                },
                os,
                ol + nl,
            ));
        } else if hunk.is_none() && files.last().is_some_and(|f| f.hunks.is_empty()) {
            // `index …`, `new file mode …` between `diff --git` and the first hunk.
            header_line(&mut files);
        }
    }
    flush(&mut files, &mut hunk);
    files.retain(|f| f.old_path.is_some() || f.new_path.is_some());
    files
}

impl FilePatch {
    /// The file's part of a unified diff: header, then every hunk.
    pub fn render(&self) -> String {
        let mut s = self.header.clone();
        for h in &self.hunks {
            s.push_str(&h.text);
        }
        s
    }

    /// The path the benchmark scores against: the file as it is in the base tree.
    pub fn path(&self) -> Option<&str> {
        self.old_path.as_deref().or(self.new_path.as_deref())
    }

    /// Removed lines that count for changed-line coverage: trimmed, at least
    /// [`MIN_CHANGED_LINE`] characters.
    pub fn changed_lines(&self) -> Vec<(u32, String)> {
        self.hunks
            .iter()
            .flat_map(|h| &h.removed)
            .map(|(n, l)| (*n, l.trim().to_string()))
            .filter(|(_, l)| l.chars().count() >= MIN_CHANGED_LINE)
            .collect()
    }

    /// Old-file lines the patch touches (see [`Hunk::touched_lines`]).
    pub fn touched_lines(&self) -> Vec<u32> {
        self.hunks.iter().flat_map(Hunk::touched_lines).collect()
    }
}

impl Hunk {
    /// Old-file lines the hunk touches: its removed lines, or for a pure insertion the line
    /// next to the insertion point (the code it sits in).
    pub fn touched_lines(&self) -> Vec<u32> {
        if self.removed.is_empty() {
            // Skip the leading context lines (usually 3) to the insertion point.
            let lead = self.old_len.saturating_sub(3).min(3);
            vec![self.old_start + lead]
        } else {
            self.removed.iter().map(|(n, _)| *n).collect()
        }
    }
}
