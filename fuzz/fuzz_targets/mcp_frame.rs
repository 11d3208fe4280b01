#![no_main]
//! The MCP stdio frame reader (issue 37 item 12) on arbitrary bytes: never a panic, and at most
//! one message or one answer per frame, every answer a JSON-RPC error line.

use acms_mcp::frame::{FrameTransport, INVALID_REQUEST, PARSE_ERROR, classify, recover_id};
use libfuzzer_sys::fuzz_target;
use rmcp::RoleServer;
use rmcp::transport::Transport;
use tokio::io::AsyncReadExt;

/// Small, so the oversized path (skip to the newline, id from the start) is reached often.
const MAX_FRAME: usize = 256;

fuzz_target!(|data: &[u8]| {
    let _ = classify(data);
    let _ = recover_id(data);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let (messages, written) = runtime.block_on(async {
        let (write, mut answers) = tokio::io::duplex(64 * 1024);
        // Read concurrently: the transport stops reading when its answers are not read.
        let reader = tokio::spawn(async move {
            let mut all = Vec::new();
            let _ = answers.read_to_end(&mut all).await;
            all
        });
        let mut transport =
            FrameTransport::new(std::io::Cursor::new(data.to_vec()), write)
                .with_max_frame_bytes(MAX_FRAME);
        let mut messages = 0usize;
        while Transport::<RoleServer>::receive(&mut transport).await.is_some() {
            messages += 1;
        }
        Transport::<RoleServer>::close(&mut transport)
            .await
            .expect("the writer finishes");
        drop(transport);
        (messages, reader.await.expect("the reader finishes"))
    });
    let frames = data.iter().filter(|&&b| b == b'\n').count() + 1;
    let answers: Vec<&[u8]> = written.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert!(messages + answers.len() <= frames, "{messages} + {} > {frames}", answers.len());
    for line in answers {
        let v: serde_json::Value = serde_json::from_slice(line).expect("an answer is JSON");
        assert_eq!(v["jsonrpc"], "2.0");
        let code = v["error"]["code"].as_i64();
        assert!(code == Some(PARSE_ERROR) || code == Some(INVALID_REQUEST), "{v}");
        assert!(v["id"].is_null() || v["id"].is_string() || v["id"].is_number(), "{v}");
    }
});
