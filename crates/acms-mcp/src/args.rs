//! Tool arguments as a model sends them, read by hand rather than by serde: every mistake in
//! a call is reported at once (not only the first), each on its own line naming the field and
//! what it accepts, and the forms models commonly send for a number (`"4000"`, `4000.0`) are
//! taken for what they mean. A `null` is an argument left out.
//!
//! Range checks that need the configuration (budgets) live here too, as pure functions of
//! [`Limits`], so they run before the call waits for the workspace.

use acms::ContextConfig;
use rmcp::model::JsonObject;
use serde_json::Value;

/// The arguments of one call, and the mistakes found in them so far.
pub struct Args<'a> {
    tool: &'static str,
    map: &'a JsonObject,
    errors: Vec<String>,
}

impl<'a> Args<'a> {
    /// Starts reading `map` for `tool`, whose arguments are `known`: any other key is a
    /// mistake (a misspelt optional argument would otherwise be silently ignored).
    pub fn new(tool: &'static str, map: &'a JsonObject, known: &[&str]) -> Args<'a> {
        let mut args = Args {
            tool,
            map,
            errors: Vec::new(),
        };
        for key in map.keys() {
            if !known.contains(&key.as_str()) {
                args.errors.push(format!(
                    "{key}: not an argument of `{tool}` (its arguments: {})",
                    known.join(", ")
                ));
            }
        }
        args
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// Records a mistake (one line, starting with the field).
    pub fn error(&mut self, line: String) {
        self.errors.push(line);
    }

    /// A string argument; `required` ones must be present and not blank.
    pub fn text(&mut self, key: &str, required: bool) -> Option<String> {
        match self.get(key) {
            None if required => {
                self.errors
                    .push(format!("{key}: missing (a non-empty string)"));
                None
            }
            None => None,
            Some(Value::String(s)) if required && s.trim().is_empty() => {
                self.errors
                    .push(format!("{key}: empty (a non-empty string is required)"));
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.errors
                    .push(format!("{key}: expected a string, got {}", describe(other)));
                None
            }
        }
    }

    /// A whole number: a JSON integer, a float with no fraction, or a string holding one.
    pub fn count(&mut self, key: &str, accepted: &str) -> Option<u64> {
        let v = self.get(key)?;
        match whole(v) {
            Ok(n) => Some(n),
            Err(what) => {
                self.errors
                    .push(format!("{key}: {what}, got {} ({accepted})", describe(v)));
                None
            }
        }
    }

    /// A list of strings (a lone string is a list of one).
    pub fn list(&mut self, key: &str) -> Vec<String> {
        match self.get(key) {
            None => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                        Value::String(_) => self.errors.push(format!("{key}[{i}]: empty string")),
                        other => self.errors.push(format!(
                            "{key}[{i}]: expected a string, got {}",
                            describe(other)
                        )),
                    }
                }
                out
            }
            Some(other) => {
                self.errors.push(format!(
                    "{key}: expected an array of strings, got {}",
                    describe(other)
                ));
                Vec::new()
            }
        }
    }

    /// A raw argument (checked by the caller).
    pub fn value(&self, key: &str) -> Option<&'a Value> {
        self.get(key)
    }

    /// The mistakes, as one tool error ([`mistakes`]).
    pub fn finish(self) -> Result<(), String> {
        if self.errors.is_empty() {
            return Ok(());
        }
        Err(mistakes(self.tool, &self.errors))
    }
}

/// A tool error listing mistakes in a call's arguments: a first line naming the tool and
/// their number, then one line each, starting with the field.
pub fn mistakes(tool: &str, errors: &[String]) -> String {
    let n = errors.len();
    let mut out = format!(
        "invalid arguments for `{tool}` ({n} {}); fix and call again:",
        if n == 1 { "mistake" } else { "mistakes" }
    );
    for e in errors {
        out.push_str("\n- ");
        out.push_str(e);
    }
    out
}

/// A short, bounded rendering of a value for an error line.
pub fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => {
            let cut: String = s.chars().take(40).collect();
            if cut.len() < s.len() {
                format!("the string \"{cut}…\"")
            } else {
                format!("the string \"{cut}\"")
            }
        }
        Value::Number(n) => format!("{n}"),
        Value::Bool(b) => format!("{b}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
        Value::Null => "null".into(),
    }
}

/// The largest whole number taken (2^53: exact in every JSON reader).
const MAX_WHOLE: u64 = 1 << 53;

fn whole(v: &Value) -> Result<u64, &'static str> {
    let from_f64 = |f: f64| {
        if !f.is_finite() {
            Err("expected a whole number")
        } else if f < 0.0 {
            Err("expected a number of at least 0")
        } else if f.fract() != 0.0 {
            Err("expected a whole number")
        } else if f > MAX_WHOLE as f64 {
            Err("expected a number below 2^53")
        } else {
            Ok(f as u64)
        }
    };
    match v {
        Value::Number(n) => match n.as_u64() {
            Some(u) if u <= MAX_WHOLE => Ok(u),
            Some(_) => Err("expected a number below 2^53"),
            None => from_f64(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => {
            let t = s.trim();
            match t.parse::<u64>() {
                Ok(u) if u <= MAX_WHOLE => Ok(u),
                Ok(_) => Err("expected a number below 2^53"),
                Err(_) => match t.parse::<f64>() {
                    Ok(f) => from_f64(f),
                    Err(_) => Err("expected a whole number"),
                },
            }
        }
        _ => Err("expected a whole number"),
    }
}

/// The limits a budget is checked against (from the configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `context.budget.min-useful-budget`: a smaller context holds nothing useful.
    pub min: usize,
    /// `context.hot.max-tokens`: the largest context the server assembles.
    pub max: usize,
    /// `context.budget.response-reserve`: kept free in a model's window for its answer.
    pub reserve: usize,
}

impl Limits {
    pub fn from_config(config: &ContextConfig) -> Limits {
        Limits {
            min: config.budget.min_useful_budget,
            max: config.hot.max_tokens,
            reserve: config.budget.response_reserve,
        }
    }
}

/// A budget after the checks: the tokens to assemble for, and every cap that was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    pub tokens: usize,
    pub caps: Vec<String>,
}

/// Reads `budget`, `window` and `tool_definitions` (see the `context` schema): a budget below
/// the minimum, a window that leaves less than the minimum, or `tool_definitions` without a
/// window is a mistake; a budget above the maximum or above what the window leaves is lowered,
/// and the result says so. Neither given: the maximum.
pub fn budget(a: &mut Args<'_>, limits: Limits) -> Option<Budget> {
    let range = format!("accepted: {}–{} tokens", limits.min, limits.max);
    let errors = a.errors.len();
    let budget = a.count("budget", &range).map(clamp);
    let window = a
        .count("window", "the model's context window in tokens")
        .map(clamp);
    let tools = a
        .count(
            "tool_definitions",
            "tokens the tool definitions take in the window",
        )
        .map(clamp);
    if tools.is_some() && window.is_none() {
        a.error(
            "tool_definitions: only counts with `window` (the model's context window): give `window` too, or leave it out"
                .into(),
        );
    }
    if let Some(b) = budget
        && b < limits.min
    {
        a.error(format!(
            "budget: {b} is below the minimum of {} tokens (context.budget.min-useful-budget: a smaller context holds nothing useful); {range}",
            limits.min
        ));
    }
    let tools = tools.unwrap_or(0);
    let derived = window.map(|w| (w, w.saturating_sub(limits.reserve).saturating_sub(tools)));
    if let Some((w, d)) = derived {
        if let Some(b) = budget
            && b > w
        {
            a.error(format!(
                "budget: {b} is larger than window {w}: give at most the window"
            ));
        }
        if d < limits.min {
            a.error(format!(
                "window: {w} leaves {d} tokens after the response reserve ({}) and tool_definitions ({tools}), below the minimum of {}; accepted: a window of at least {} tokens",
                limits.reserve,
                limits.min,
                limits.min + limits.reserve + tools
            ));
        }
    }
    if a.errors.len() > errors {
        return None;
    }
    let mut caps = Vec::new();
    let mut tokens = match (budget, derived) {
        (Some(b), Some((w, d))) if b > d => {
            caps.push(format!(
                "budget {b} lowered to {d}: window {w} minus the response reserve ({}) and tool_definitions ({tools})",
                limits.reserve
            ));
            d
        }
        (Some(b), _) => b,
        (None, Some((_, d))) => d,
        (None, None) => limits.max,
    };
    if tokens > limits.max {
        caps.push(format!(
            "budget {tokens} capped at {} (context.hot.max-tokens, the largest context this server assembles)",
            limits.max
        ));
        tokens = limits.max;
    }
    Some(Budget { tokens, caps })
}

fn clamp(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// A whole-number argument with a default, a minimum (below it: a mistake) and a maximum
/// (above it: lowered, with a cap line).
pub fn bounded(
    a: &mut Args<'_>,
    key: &str,
    default: usize,
    min: usize,
    max: usize,
    caps: &mut Vec<String>,
) -> usize {
    let accepted = format!("accepted: {min}–{max}, default {default}");
    let Some(n) = a.count(key, &accepted).map(clamp) else {
        return default;
    };
    if n < min {
        a.error(format!(
            "{key}: {n} is below the minimum of {min} ({accepted})"
        ));
        return default;
    }
    if n > max {
        caps.push(format!("{key} {n} capped at {max}"));
        return max;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMITS: Limits = Limits {
        min: 500,
        max: 16_000,
        reserve: 4096,
    };

    fn map(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap()
    }

    /// Reads a budget from `v`: the budget, or the error text.
    fn check(v: Value) -> Result<Budget, String> {
        let m = map(v);
        let mut a = Args::new(
            "context",
            &m,
            &["task", "budget", "window", "tool_definitions"],
        );
        let b = budget(&mut a, LIMITS);
        a.finish().map(|()| b.unwrap())
    }

    #[test]
    fn budgets_below_the_minimum_are_mistakes_naming_the_field_and_the_range() {
        let e = check(json!({"budget": 300})).unwrap_err();
        assert!(
            e.starts_with("invalid arguments for `context` (1 mistake)"),
            "{e}"
        );
        assert!(
            e.contains("- budget: 300 is below the minimum of 500 tokens")
                && e.contains("500–16000"),
            "{e}"
        );
        let e = check(json!({"budget": 0})).unwrap_err();
        assert!(e.contains("budget: 0 is below the minimum"), "{e}");
    }

    #[test]
    fn budgets_above_the_maximum_are_capped_and_the_cap_is_reported() {
        let b = check(json!({"budget": 100_000})).unwrap();
        assert_eq!(b.tokens, 16_000);
        assert_eq!(b.caps.len(), 1);
        assert!(
            b.caps[0].contains("budget 100000 capped at 16000"),
            "{:?}",
            b.caps
        );
        assert_eq!(
            check(json!({})).unwrap(),
            Budget {
                tokens: 16_000,
                caps: vec![]
            }
        );
        assert_eq!(
            check(json!({"budget": 4000})).unwrap().caps,
            Vec::<String>::new()
        );
    }

    #[test]
    fn numeric_strings_and_whole_floats_are_numbers_other_strings_are_mistakes() {
        assert_eq!(check(json!({"budget": "4000"})).unwrap().tokens, 4000);
        assert_eq!(check(json!({"budget": " 4000 "})).unwrap().tokens, 4000);
        assert_eq!(check(json!({"budget": 4000.0})).unwrap().tokens, 4000);
        assert_eq!(check(json!({"budget": null})).unwrap().tokens, 16_000);
        for (v, what) in [
            (
                json!("many"),
                "budget: expected a whole number, got the string \"many\"",
            ),
            (json!(4000.5), "budget: expected a whole number, got 4000.5"),
            (json!(-5), "budget: expected a number of at least 0, got -5"),
            (json!([1]), "budget: expected a whole number, got an array"),
        ] {
            let e = check(json!({ "budget": v })).unwrap_err();
            assert!(e.contains(what) && e.contains("500–16000"), "{e}");
        }
    }

    #[test]
    fn windows_derive_the_budget_and_say_when_they_lower_it() {
        let b = check(json!({"window": 8192, "tool_definitions": 1000})).unwrap();
        assert_eq!(
            b,
            Budget {
                tokens: 8192 - 4096 - 1000,
                caps: vec![]
            }
        );
        let b = check(json!({"window": 8192, "budget": 5000})).unwrap();
        assert_eq!(b.tokens, 8192 - 4096);
        assert!(
            b.caps[0].starts_with("budget 5000 lowered to 4096"),
            "{:?}",
            b.caps
        );
        let b = check(json!({"window": 200_000})).unwrap();
        assert_eq!(b.tokens, 16_000);
        assert!(b.caps[0].contains("capped at 16000"), "{:?}", b.caps);
        let e = check(json!({"window": 4200})).unwrap_err();
        assert!(
            e.contains("window: 4200 leaves 104 tokens") && e.contains("at least 4596"),
            "{e}"
        );
        let e = check(json!({"tool_definitions": 100})).unwrap_err();
        assert!(
            e.contains("tool_definitions: only counts with `window`"),
            "{e}"
        );
        let e = check(json!({"budget": 9000, "window": 8192})).unwrap_err();
        assert!(e.contains("budget: 9000 is larger than window 8192"), "{e}");
    }

    #[test]
    fn every_mistake_is_reported_once_on_its_own_line() {
        let e = check(json!({"budget": "lots", "window": -1, "budjet": 5, "task": 7})).unwrap_err();
        assert!(
            e.starts_with("invalid arguments for `context` (3 mistakes)"),
            "{e}"
        );
        let lines: Vec<&str> = e.lines().skip(1).collect();
        assert_eq!(lines.len(), 3, "{e}");
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("- budjet: not an argument of `context`"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("- budget: expected a whole number"))
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("- window: expected a number of at least 0"))
        );
    }

    #[test]
    fn strings_and_lists_are_checked_field_by_field() {
        let m = map(json!({"task": " ", "files": ["a.py", 3, ""], "symbols": "App"}));
        let mut a = Args::new("context", &m, &["task", "files", "symbols"]);
        assert_eq!(a.text("task", true), None);
        assert_eq!(a.list("files"), vec!["a.py".to_string()]);
        assert_eq!(a.list("symbols"), vec!["App".to_string()]);
        let e = a.finish().unwrap_err();
        assert!(e.contains("- task: empty"), "{e}");
        assert!(e.contains("- files[1]: expected a string, got 3"), "{e}");
        assert!(e.contains("- files[2]: empty string"), "{e}");
        let m = map(json!({}));
        let mut a = Args::new("context", &m, &["task"]);
        assert_eq!(a.text("task", true), None);
        assert!(a.finish().unwrap_err().contains("- task: missing"));
    }

    #[test]
    fn bounded_numbers_cap_above_and_refuse_below() {
        let m = map(json!({"limit": 500}));
        let mut a = Args::new("search", &m, &["limit"]);
        let mut caps = Vec::new();
        assert_eq!(bounded(&mut a, "limit", 20, 1, 100, &mut caps), 100);
        assert_eq!(caps, vec!["limit 500 capped at 100".to_string()]);
        assert!(a.finish().is_ok());
        let m = map(json!({"limit": 0}));
        let mut a = Args::new("search", &m, &["limit"]);
        bounded(&mut a, "limit", 20, 1, 100, &mut caps);
        let e = a.finish().unwrap_err();
        assert!(
            e.contains("limit: 0 is below the minimum of 1 (accepted: 1–100, default 20)"),
            "{e}"
        );
    }
}
