//! Converts public agent trajectories into the message JSON `acms compact` reads (an
//! OpenAI-format message array), as the agent sent them to its model: the source of
//! `test_data/trajectories/`.
//!
//! `cargo run -p acms-compact --example trajectory -- OUT_DIR [--max-message-bytes N] FILE...`
//!
//! Each FILE is a mini-swe-agent `.traj.json`, a SWE-agent `.traj` or an OpenAI-format list
//! (see `acms_compact::retention::read_as_sent`); OUT_DIR receives `<name>.json` for each.
//! With `--max-message-bytes`, a message longer than N bytes keeps its first and last N/2
//! bytes around a line saying how much was trimmed (to keep committed test data small).
//! `--sizes` prints each file's size in cl100k tokens instead: the whole conversation, the
//! system messages, the task (the first user request) and the latest user turn.

use std::path::PathBuf;

use acms_compact::format::openai_message;
use acms_compact::model::{Message, latest_user};
use acms_compact::retention::read_as_sent;
use acms_compact::task::task_index;
use acms_compact::{Measured, Meter};
use acms_core::Tokenizer;

/// `text` with its middle replaced by a marker when longer than `max` bytes.
fn trim(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut head = max / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - max / 2;
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n[… {} bytes trimmed from the test data …]\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut sizes = false;
    let mut max = None;
    let mut files = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sizes" => sizes = true,
            "--max-message-bytes" => {
                max = Some(
                    args.next()
                        .ok_or("--max-message-bytes N")?
                        .parse::<usize>()?,
                );
            }
            _ => files.push(a),
        }
    }
    let mut positional = files.iter().map(String::as_str);
    let meter = Meter::tokens(Tokenizer::Cl100kBase);
    let out_dir = if sizes {
        None
    } else {
        Some(PathBuf::from(
            positional.next().ok_or("usage: OUT_DIR FILE...")?,
        ))
    };
    for file in positional {
        let path = PathBuf::from(file);
        let conv = read_as_sent(&std::fs::read_to_string(&path)?)?;
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or("a file name")?
            .trim_end_matches(".json")
            .trim_end_matches(".traj")
            .to_string();
        let Some(dir) = &out_dir else {
            let m = Measured::new(&conv, &meter);
            let size = |i: Option<usize>| i.map_or(0, |i| m.sizes[i]);
            let system: usize = (0..conv.messages.len())
                .filter(|&i| conv.messages[i].role.is_system())
                .map(|i| m.sizes[i])
                .sum();
            println!(
                "{name}: {} messages, {} tokens; system {system}, task {}, latest user {}",
                conv.messages.len(),
                m.total,
                size(task_index(&conv.messages)),
                size(latest_user(&conv.messages)),
            );
            continue;
        };
        let messages: Vec<serde_json::Value> = conv
            .messages
            .iter()
            .map(|m| {
                let m = match max {
                    Some(max) => Message {
                        content: trim(&m.content, max),
                        ..m.clone()
                    },
                    None => m.clone(),
                };
                openai_message(&m)
            })
            .collect();
        let out = dir.join(format!("{name}.json"));
        std::fs::write(&out, serde_json::to_string_pretty(&messages)? + "\n")?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}
