//! How a failed command reports itself: `error: …` on stderr, or under `--format json` one
//! JSON object on stderr, `{"error": {"kind", "message", "hint"}}` — stdout stays empty, so a
//! caller parsing it never mistakes an error for a result. Exit codes are the same in both
//! forms: 2 for a usage error (as clap's own), 4 for unreadable input, 1 otherwise.

use std::process::ExitCode;

/// An error a command classifies itself (a usage mistake, unreadable input), with the exit
/// code it ends with.
#[derive(Debug)]
pub struct Failure {
    pub kind: &'static str,
    pub message: String,
    pub hint: Option<String>,
    pub code: u8,
    /// The line the text form prints.
    text: String,
}

impl Failure {
    /// A mistake in the command line (exit 2).
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Failure {
        let (message, hint) = (message.into(), hint.into());
        Failure {
            kind: "usage",
            text: format!("{message}: {hint}"),
            message,
            hint: Some(hint),
            code: crate::EXIT_USAGE,
        }
    }

    /// A library error, kept classified (its text is the one line the MCP server returns).
    pub fn library(e: &acms::Error) -> Failure {
        Failure::classified(lib_kind(e), &acms::error_line(e))
    }

    /// A plan id, phase or decision the plan store does not know, or one that does not parse.
    pub fn plan(e: &acms::plan::Error) -> Failure {
        Failure::classified("plan", &acms::error_line(e))
    }

    fn classified(kind: &'static str, line: &str) -> Failure {
        let (message, hint) = split_hint(line);
        Failure {
            kind,
            message,
            hint,
            code: 1,
            text: line.to_string(),
        }
    }

    /// Input that cannot be read or parsed (exit 4).
    pub fn input(message: impl Into<String>, code: u8) -> Failure {
        let message = message.into();
        Failure {
            kind: "input",
            text: message.clone(),
            message,
            hint: None,
            code,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for Failure {}

/// True when the command line asks for JSON output (`--format json` or `--format=json`).
/// Read from the raw arguments so that even a line clap rejects gets a JSON error.
pub fn wants_json(args: &[String]) -> bool {
    args.windows(2)
        .any(|w| w[0] == "--format" && w[1] == "json")
        || args.iter().any(|a| a == "--format=json")
}

/// Reports `err` the way the command line asked and returns the exit code.
pub fn report(err: &anyhow::Error, json: bool) -> ExitCode {
    let failure = err.chain().find_map(|c| c.downcast_ref::<Failure>());
    let code = failure.map_or(1, |f| f.code);
    if !json {
        eprintln!("error: {}", crate::one_line(err));
        return ExitCode::from(code);
    }
    let (kind, message, hint) = match failure {
        Some(f) => (f.kind, f.message.clone(), f.hint.clone()),
        None => {
            let (message, hint) = split_hint(&crate::one_line(err));
            (kind_of(err), message, hint)
        }
    };
    print_json(kind, &message, hint.as_deref());
    ExitCode::from(code)
}

/// Reports a command line clap rejected; help and version requests print as usual.
pub fn report_usage(err: &clap::Error, json: bool) -> ExitCode {
    use clap::error::ErrorKind;
    let informational = matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !json || informational {
        // clap's own codes: 0 for help and version, 2 for a usage error (help shown because
        // an argument or subcommand is missing counts as one).
        let _ = err.print();
        return ExitCode::from(u8::try_from(err.exit_code()).unwrap_or(crate::EXIT_USAGE));
    }
    let text = err.to_string();
    let message = text
        .lines()
        .next()
        .unwrap_or("")
        .trim_start_matches("error: ")
        .to_string();
    print_json(
        "usage",
        &message,
        Some("see `acms --help` or `acms <command> --help`"),
    );
    ExitCode::from(crate::EXIT_USAGE)
}

fn print_json(kind: &str, message: &str, hint: Option<&str>) {
    let v = serde_json::json!({ "error": { "kind": kind, "message": message, "hint": hint } });
    eprintln!("{v}");
}

/// The kind of an error no command classified, from the first cause acms knows.
fn kind_of(err: &anyhow::Error) -> &'static str {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<acms::Error>() {
            return lib_kind(e);
        }
        if cause.downcast_ref::<acms::plan::Error>().is_some() {
            return "plan";
        }
        if cause.downcast_ref::<acms::model::Error>().is_some()
            || cause.downcast_ref::<acms::vector::Error>().is_some()
        {
            return "model";
        }
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return "io";
        }
    }
    "error"
}

fn lib_kind(e: &acms::Error) -> &'static str {
    match e {
        acms::Error::Index(_) => "index",
        acms::Error::Retrieve(_) => "retrieval",
        acms::Error::Assemble(_) => "assembly",
        acms::Error::Plan(_) => "plan",
        acms::Error::Config(_) => "config",
        acms::Error::Budget(_) => "budget",
        acms::Error::UnknownSymbol(_) => "unknown-symbol",
        acms::Error::Model(_) | acms::Error::Vector(_) => "model",
        _ => "error",
    }
}

/// Library messages end with what to do after the last `: ` ("…: run `acms index`");
/// that tail is the hint when it reads as an instruction.
fn split_hint(line: &str) -> (String, Option<String>) {
    const VERBS: &[&str] = &[
        "run ", "use ", "retry", "start ", "list ", "pass ", "delete ", "call ", "raise ", "set ",
        "re-run ", "rebuild ", "index ", "give ", "check ", "remove ", "move ",
    ];
    // `: ` first ("unknown plan p42: use …"), then `; ` ("…; offload it again …").
    for sep in [": ", "; "] {
        for (i, _) in line.rmatch_indices(sep) {
            let tail = &line[i + sep.len()..];
            if VERBS.iter().any(|v| tail.starts_with(v)) {
                return (line[..i].to_string(), Some(tail.to_string()));
            }
        }
    }
    (line.to_string(), None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_instruction_at_the_end_is_the_hint() {
        let (m, h) = split_hint("unknown plan p42: use an id printed by `acms plan start`");
        assert_eq!(m, "unknown plan p42");
        assert_eq!(h.as_deref(), Some("use an id printed by `acms plan start`"));
        let (m, h) = split_hint("cannot open /y: denied");
        assert_eq!((m.as_str(), h), ("cannot open /y: denied", None));
    }

    #[test]
    fn json_is_asked_for_in_either_spelling() {
        let a = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert!(wants_json(&a("acms query --format json x")));
        assert!(wants_json(&a("acms query --format=json x")));
        assert!(!wants_json(&a("acms query --format text json")));
    }
}
