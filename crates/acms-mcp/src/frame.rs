//! The stdio transport: newline-delimited JSON-RPC frames read in front of rmcp, so that
//! every request gets exactly one answer.
//!
//! rmcp's own stdio transport drops what it cannot read without a word (invalid JSON, a
//! lone surrogate, nesting past serde_json's recursion limit, an oversized line, a last
//! frame without its newline) and, given the same id twice, answers only one of them: the
//! client waits forever. [`FrameTransport`] answers each of those with a JSON-RPC error
//! carrying the request's id whenever it can be read, and hands rmcp only messages it can
//! serve.
//!
//! - A frame is one line of at most [`MAX_FRAME_BYTES`] (its newline not counted). A
//!   longer one is answered with -32600 and skipped to its newline without being buffered:
//!   at most [`MAX_FRAME_BYTES`] of it are held, to look for its id.
//! - Input that is not JSON is answered with -32700; JSON that is not a request with -32600.
//!   Notifications and responses are never answered; blank lines are skipped.
//! - The last frame is served even without its newline.
//! - A request reusing the id of one still in flight is answered with -32600.

use std::collections::HashSet;
use std::future::Future;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The largest frame served, in bytes (8 MiB): far above any real request, small enough that
/// a runaway client cannot make the server hold gigabytes.
pub const MAX_FRAME_BYTES: usize = 8 * 1024 * 1024;

/// JSON-RPC: the frame is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: the frame is JSON but not a request this server can take.
pub const INVALID_REQUEST: i64 = -32600;

/// Lines waiting for stdout; when full, reading stops until the client reads its answers.
const WRITE_QUEUE: usize = 64;

/// What one frame is to the server.
#[derive(Debug)]
pub enum Frame {
    /// A message for rmcp.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// A JSON-RPC error response to write instead.
    Reply(Value),
    /// Nothing to do: a blank line, or a notification or response that cannot be read
    /// (neither is ever answered).
    Skip,
}

/// Reads one frame (its newline already removed).
pub fn classify(frame: &[u8]) -> Frame {
    let frame = frame
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(frame)
        .trim_ascii();
    if frame.is_empty() {
        return Frame::Skip;
    }
    // serde_json's default recursion limit (128) bounds both parses: deep nesting is an
    // error here, never a stack overflow.
    let error = match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(frame) {
        Ok(m) => return Frame::Message(Box::new(m)),
        Err(e) => e,
    };
    let value: Value = match serde_json::from_slice(frame) {
        Ok(v) => v,
        Err(e) => {
            return Frame::Reply(error_response(
                recover_id(frame),
                PARSE_ERROR,
                &format!("parse error: {e}"),
            ));
        }
    };
    let has = |key: &str| value.get(key).is_some();
    let notification = has("method") && !has("id");
    let response = !has("method") && (has("result") || has("error"));
    if notification || response {
        return Frame::Skip;
    }
    let id = value.get("id").filter(|id| id_like(id)).cloned();
    Frame::Reply(error_response(
        id,
        INVALID_REQUEST,
        &format!("invalid request: {error}"),
    ))
}

/// A JSON-RPC error response; `id` null when the request's cannot be read.
fn error_response(id: Option<Value>, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
}

fn id_like(v: &Value) -> bool {
    v.is_string() || v.is_number()
}

/// The `id` member of a top-level object in a frame that may be invalid or cut short
/// anywhere after it. One pass with a depth counter: no recursion, whatever the nesting.
pub fn recover_id(frame: &[u8]) -> Option<Value> {
    let frame = frame.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(frame);
    let mut i = skip_space(frame, 0);
    if frame.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_space(frame, i);
        if frame.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = string_end(frame, i)?;
        let key = &frame[i + 1..key_end - 1];
        i = skip_space(frame, key_end);
        if frame.get(i) != Some(&b':') {
            return None;
        }
        i = skip_space(frame, i + 1);
        let value_end = value_end(frame, i)?;
        if key == b"id" {
            let id: Value = serde_json::from_slice(&frame[i..value_end]).ok()?;
            return id_like(&id).then_some(id);
        }
        i = skip_space(frame, value_end);
        if frame.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// The index after the string opening at `start`.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// The index after the value starting at `start`.
fn value_end(b: &[u8], start: usize) -> Option<usize> {
    match b.get(start)? {
        b'"' => string_end(b, start),
        b'{' | b'[' => {
            let (mut depth, mut i) = (0usize, start);
            loop {
                match b.get(i)? {
                    b'"' => {
                        i = string_end(b, i)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        _ => {
            let mut i = start;
            while b
                .get(i)
                .is_some_and(|c| !c.is_ascii_whitespace() && !b",}]".contains(c))
            {
                i += 1;
            }
            (i > start).then_some(i)
        }
    }
}

/// The outcome of reading one frame.
enum Read {
    /// A whole frame is in `line` (its newline, if any, included).
    Frame,
    /// A frame over the limit, with the id read from its start.
    Oversized(Option<Value>),
    /// The end of input, or a read error (the stream is unusable after either).
    Eof,
}

/// rmcp's [`Transport`] over a byte stream, reading through the frame rules above. Answers
/// go through one writer task, so an error written here never interleaves with rmcp's.
/// Create it inside a Tokio runtime (it spawns the writer).
pub struct FrameTransport<R> {
    read: BufReader<R>,
    line: Vec<u8>,
    max: usize,
    /// Skipping the rest of an oversized frame until its newline.
    discarding: bool,
    eof: bool,
    /// An error answer waiting for room in the write queue (kept here because `receive`
    /// can be cancelled while it waits).
    reply: Option<Vec<u8>>,
    /// Ids of requests handed to rmcp and not answered yet.
    in_flight: Arc<Mutex<HashSet<RequestId>>>,
    out: Option<mpsc::Sender<Vec<u8>>>,
    writer: Option<JoinHandle<()>>,
}

impl<R: AsyncRead + Unpin + Send> FrameTransport<R> {
    /// Reads frames from `read`, writes answers to `write`, frames of at most
    /// [`MAX_FRAME_BYTES`].
    pub fn new<W: AsyncWrite + Unpin + Send + 'static>(read: R, write: W) -> Self {
        let (out, queue) = mpsc::channel(WRITE_QUEUE);
        FrameTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            max: MAX_FRAME_BYTES,
            discarding: false,
            eof: false,
            reply: None,
            in_flight: Arc::default(),
            out: Some(out),
            writer: Some(tokio::spawn(write_lines(write, queue))),
        }
    }

    /// Another frame limit (tests and fuzzing reach the oversized path with small ones).
    pub fn with_max_frame_bytes(mut self, max: usize) -> Self {
        self.max = max;
        self
    }

    /// Reads up to the next newline (or the end of input) into `line`, never holding more
    /// than the limit. Cancel-safe: bytes are consumed only once copied or skipped.
    async fn read_frame(&mut self) -> Read {
        if self.eof {
            return Read::Eof;
        }
        loop {
            let (used, read) = {
                let available = match self.read.fill_buf().await {
                    Ok(a) => a,
                    Err(_) => return Read::Eof,
                };
                if available.is_empty() {
                    self.eof = true;
                    // The last frame is served without its newline.
                    return if self.discarding || self.line.is_empty() {
                        Read::Eof
                    } else {
                        Read::Frame
                    };
                }
                let newline = available.iter().position(|&c| c == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                let content = take - usize::from(newline.is_some());
                if self.discarding {
                    self.discarding = newline.is_none();
                    (take, None)
                } else if self.line.len() + content > self.max {
                    // Look for the id in what fits, then drop it all.
                    let room = self.max.saturating_sub(self.line.len()).min(content);
                    self.line.extend_from_slice(&available[..room]);
                    let id = recover_id(&self.line);
                    self.line.clear();
                    self.discarding = newline.is_none();
                    (take, Some(Read::Oversized(id)))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| Read::Frame))
                }
            };
            self.read.consume(used);
            if let Some(read) = read {
                return read;
            }
        }
    }

    fn queue_reply(&mut self, reply: &Value) {
        let mut line = reply.to_string().into_bytes();
        line.push(b'\n');
        self.reply = Some(line);
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<RequestId>> {
        self.in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(mut write: W, mut queue: mpsc::Receiver<Vec<u8>>) {
    while let Some(line) = queue.recv().await {
        if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
            return;
        }
    }
}

impl<R: AsyncRead + Unpin + Send> Transport<RoleServer> for FrameTransport<R> {
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), io::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        if let Some(id) = answered {
            self.in_flight().remove(id);
        }
        let line = serde_json::to_vec(&item).map(|mut l| {
            l.push(b'\n');
            l
        });
        let out = self.out.clone();
        async move {
            let line = line.map_err(io::Error::other)?;
            let out = out.ok_or_else(|| io::Error::from(io::ErrorKind::NotConnected))?;
            out.send(line)
                .await
                .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.reply.is_some() {
                let permit = self.out.as_ref()?.reserve().await.ok()?;
                if let Some(line) = self.reply.take() {
                    permit.send(line);
                }
            }
            match self.read_frame().await {
                Read::Frame => {}
                Read::Oversized(id) => {
                    let message = format!(
                        "frame over the maximum of {} bytes: skipped to its newline",
                        self.max
                    );
                    self.queue_reply(&error_response(id, INVALID_REQUEST, &message));
                    continue;
                }
                Read::Eof => return None,
            }
            let frame = classify(self.line.strip_suffix(b"\n").unwrap_or(&self.line));
            self.line.clear();
            match frame {
                Frame::Message(m) => {
                    match &*m {
                        JsonRpcMessage::Request(r) if !self.in_flight().insert(r.id.clone()) => {
                            // rmcp keys its requests by id: the second would silence one.
                            let message = format!(
                                "request id {} is already in use by a request in flight",
                                r.id
                            );
                            let id = serde_json::to_value(&r.id).ok();
                            self.queue_reply(&error_response(id, INVALID_REQUEST, &message));
                            continue;
                        }
                        JsonRpcMessage::Notification(n) => {
                            // A cancelled request is never answered: its id is free again.
                            if let ClientNotification::CancelledNotification(c) = &n.notification
                                && let Some(id) = &c.params.request_id
                            {
                                self.in_flight().remove(id);
                            }
                        }
                        _ => {}
                    }
                    return Some(*m);
                }
                Frame::Reply(reply) => self.queue_reply(&reply),
                Frame::Skip => {}
            }
        }
    }

    async fn close(&mut self) -> Result<(), io::Error> {
        // The writer ends once every queued line is written.
        self.out = None;
        if let Some(writer) = self.writer.take() {
            writer.await.map_err(io::Error::other)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_is_recovered_from_broken_frames() {
        for (frame, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":7,"params":{"q":"\ud800"}}"#[..],
                json!(7),
            ),
            (
                br#"{"a":[{"id":1},"}"],"id":"s-1","method":"x" trailing"#,
                json!("s-1"),
            ),
            (
                br#"  {"params":{"q":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ "#,
                Value::Null,
            ),
            (br#"{"id":7"#, json!(7)),
            (br#"{"id":[1]}"#, Value::Null),
            (br#"{"id":"\ud800"}"#, Value::Null),
            (b"not json", Value::Null),
            (b"{\"id\":", Value::Null),
        ] {
            assert_eq!(
                recover_id(frame).unwrap_or(Value::Null),
                id,
                "{}",
                String::from_utf8_lossy(frame)
            );
        }
    }

    #[test]
    fn frames_are_classified() {
        let deep = format!(
            r#"{{"id":3,"q":{}{}}}"#,
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let code = |f: &[u8]| match classify(f) {
            Frame::Reply(v) => Some((v["error"]["code"].as_i64().unwrap(), v["id"].clone())),
            _ => None,
        };
        assert_eq!(code(deep.as_bytes()), Some((PARSE_ERROR, json!(3))));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}"#),
            Some((INVALID_REQUEST, json!(4)))
        );
        assert_eq!(code(b"[]"), Some((INVALID_REQUEST, Value::Null)));
        assert!(matches!(classify(b"  \r"), Frame::Skip));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#),
            Frame::Skip
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Frame::Message(_)
        ));
    }

    /// Runs the transport over `input`: the messages rmcp would get, and the answers written.
    async fn run(input: &[u8], max: usize, answer_first: bool) -> (usize, Vec<Value>) {
        use tokio::io::AsyncReadExt;
        let (write, mut answers) = tokio::io::duplex(1 << 16);
        let reader = tokio::spawn(async move {
            let mut all = String::new();
            let _ = answers.read_to_string(&mut all).await;
            all
        });
        let mut t = FrameTransport::new(std::io::Cursor::new(input.to_vec()), write)
            .with_max_frame_bytes(max);
        let mut messages = 0;
        while let Some(m) = Transport::<RoleServer>::receive(&mut t).await {
            messages += 1;
            if let (true, JsonRpcMessage::Request(r)) = (answer_first, m) {
                let done =
                    JsonRpcMessage::error(rmcp::ErrorData::internal_error("x", None), Some(r.id));
                Transport::<RoleServer>::send(&mut t, done).await.unwrap();
            }
        }
        Transport::<RoleServer>::close(&mut t).await.unwrap();
        drop(t);
        let all = reader.await.unwrap();
        (
            messages,
            all.lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect(),
        )
    }

    const LIST: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;

    #[tokio::test]
    async fn a_second_request_with_an_id_in_flight_is_answered_with_an_error() {
        let (messages, answers) = run(format!("{LIST}\n{LIST}\n").as_bytes(), 1024, false).await;
        assert_eq!(messages, 1);
        assert_eq!(answers.len(), 1, "{answers:?}");
        assert_eq!(answers[0]["id"], 8);
        assert_eq!(answers[0]["error"]["code"], INVALID_REQUEST);
        // Once answered, the id may be used again.
        let (messages, answers) = run(format!("{LIST}\n{LIST}").as_bytes(), 1024, true).await;
        assert_eq!(messages, 2);
        assert!(
            answers.iter().all(|a| a["error"]["code"] == -32603),
            "{answers:?}"
        );
    }

    #[tokio::test]
    async fn an_oversized_frame_is_answered_and_reading_resumes_at_its_newline() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":"big","params":"{}"}}"#,
            "x".repeat(5000)
        );
        let (messages, answers) = run(format!("{big}\n{LIST}").as_bytes(), 100, false).await;
        assert_eq!(messages, 1, "the frame after it, without its newline");
        assert_eq!(answers.len(), 1, "{answers:?}");
        assert_eq!(answers[0]["id"], "big");
        assert_eq!(answers[0]["error"]["code"], INVALID_REQUEST);
        assert!(
            answers[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("100 bytes")
        );
        // A frame of exactly the limit is served, one byte more is not; `\r\n` endings too.
        let n = LIST.len();
        for (ending, max, served) in [("\n", n, true), ("\r\n", n + 1, true), ("\n", n - 1, false)]
        {
            let (messages, answers) = run(format!("{LIST}{ending}").as_bytes(), max, false).await;
            assert_eq!(
                (messages == 1, answers.is_empty()),
                (served, served),
                "{answers:?}"
            );
        }
    }
}
