//! One privacy-safe line per request: what came in, what the proxy did, what went out.
//!
//! A [`RequestRecord`] holds the method, the normalised path (never the query string, which
//! can carry keys), the status, the outcome, sizes before and after (bytes, and the counted
//! unit for completion requests), the assemblies and reducer attempts it took, the time to
//! the upstream's response head, and the seam's event stream for this request
//! ([`EventSummary`]: numbers, units and ids only). It never holds message text, headers or
//! error text.

use std::io::Write;
use std::sync::{Arc, Mutex};

use acms_compact::{CompactionEvent, EventSummary, ProgressSink};

/// How request lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Nothing is written.
    #[default]
    Off,
    /// One human line per request, then one indented line per assembly event.
    Text,
    /// One JSON object per request (events inside), one per line.
    Json,
}

/// What one request did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct RequestRecord {
    pub method: String,
    /// The normalised path (no query string).
    pub path: String,
    pub status: u16,
    /// The seam's outcome (`within_limit`, `reduced`, `preservation_fallback`,
    /// `irreducible`, ...), or `passed_through`, `context_length_exceeded`, `bad_request`,
    /// `upstream_error`.
    pub outcome: String,
    pub bytes_in: usize,
    /// The body forwarded upstream (absent when nothing was forwarded).
    pub bytes_out: Option<usize>,
    /// The request's size in `unit`, before and after (completion requests): for a bounded
    /// request, its messages as the seam measured them plus the other fields as counted (the
    /// forwarded body itself is counted exactly against the limit, but not again for the log).
    pub size_before: Option<usize>,
    pub size_after: Option<usize>,
    pub unit: Option<&'static str>,
    pub hard_limit: Option<usize>,
    /// Seam assemblies run (more than one when the whole body was still over the limit).
    pub assemblies: usize,
    /// Reducer attempts over all assemblies.
    pub attempts: usize,
    /// Milliseconds from receiving the request to the upstream's response head (or to the
    /// proxy's own answer).
    pub ms: f64,
    pub events: Vec<EventSummary>,
    /// The same events as the seam words them (`CompactionEvent`'s one-line form), for text.
    #[serde(skip)]
    pub event_lines: Vec<String>,
}

impl RequestRecord {
    /// The text form: one line, then one indented line per event.
    pub fn text(&self) -> String {
        let mut line = format!(
            "acms proxy: {} {} {} {}",
            self.method, self.path, self.status, self.outcome
        );
        if let (Some(before), Some(after), Some(unit)) =
            (self.size_before, self.size_after, self.unit)
        {
            line.push_str(&format!(", {before} -> {after} {unit}"));
            if let Some(limit) = self.hard_limit {
                line.push_str(&format!(" (limit {limit})"));
            }
        }
        match self.bytes_out {
            Some(out) => line.push_str(&format!(", {} -> {out} bytes", self.bytes_in)),
            None => line.push_str(&format!(", {} bytes in, nothing forwarded", self.bytes_in)),
        }
        if self.assemblies > 0 {
            line.push_str(&format!(
                ", {} assembl{}, {} attempt{}",
                self.assemblies,
                if self.assemblies == 1 { "y" } else { "ies" },
                self.attempts,
                if self.attempts == 1 { "" } else { "s" }
            ));
        }
        line.push_str(&format!(", {:.1} ms", self.ms));
        for e in &self.event_lines {
            line.push_str("\n  ");
            line.push_str(e);
        }
        line
    }
}

/// Where request lines go. Cloning shares the writer; lines from concurrent requests never
/// interleave.
#[derive(Clone)]
pub struct RequestLog {
    format: LogFormat,
    out: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl std::fmt::Debug for RequestLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestLog")
            .field("format", &self.format)
            .finish()
    }
}

impl Default for RequestLog {
    fn default() -> RequestLog {
        RequestLog::off()
    }
}

impl RequestLog {
    /// Writes nothing.
    pub fn off() -> RequestLog {
        RequestLog::to(LogFormat::Off, std::io::sink())
    }

    /// Writes to stderr.
    pub fn stderr(format: LogFormat) -> RequestLog {
        RequestLog::to(format, std::io::stderr())
    }

    /// Writes to `out`.
    pub fn to(format: LogFormat, out: impl Write + Send + 'static) -> RequestLog {
        RequestLog {
            format,
            out: Arc::new(Mutex::new(Box::new(out))),
        }
    }

    /// Whether anything is written (events are collected only then).
    pub fn enabled(&self) -> bool {
        self.format != LogFormat::Off
    }

    /// Writes `record` (a failed write is ignored: logging never fails a request).
    pub fn write(&self, record: &RequestRecord) {
        let line = match self.format {
            LogFormat::Off => return,
            LogFormat::Text => record.text(),
            LogFormat::Json => match serde_json::to_string(record) {
                Ok(s) => s,
                Err(_) => return,
            },
        };
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// Collects one request's events: their log-sized form and their one-line wording.
#[derive(Debug, Default)]
pub(crate) struct EventLog(Mutex<Vec<(EventSummary, String)>>);

impl EventLog {
    pub(crate) fn take(&self) -> Vec<(EventSummary, String)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl ProgressSink for EventLog {
    fn report(&self, event: &CompactionEvent) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((event.summary(), event.to_string()));
    }
}
