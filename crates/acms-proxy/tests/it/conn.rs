//! Issue 37 items 5 and 9: redirects are not followed (credentials go to the configured
//! upstream only), the upstream's userinfo is not printed, slow clients cannot hold the
//! proxy (header-read timeout, connection cap answered 503).

use std::time::{Duration, Instant};

use acms_core::Tokenizer;
use acms_proxy::ServeLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{config, parse_response, proxy, proxy_with, raw, recorder};

const TOK: Tokenizer = Tokenizer::O200kBase;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_redirects_reach_the_client_and_credentials_stay_home() {
    let elsewhere = recorder(None).await;
    let up = recorder(Some(format!("http://{}", elsewhere.addr))).await;
    let (addr, stop) = proxy(TOK, 2_000, format!("http://{}/v1", up.addr)).await;
    let chat = br#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    for (method, path, body) in [
        ("GET", "/v1/models", &b""[..]),
        ("POST", "/v1/chat/completions", &chat[..]),
    ] {
        let r = raw(
            addr,
            method,
            path,
            &[
                ("authorization", "Bearer sk-secret"),
                ("content-type", "application/json"),
            ],
            body,
        )
        .await;
        assert_eq!(r.status, 307, "{method} {path}: {}", r.body);
        let location = r.header("location").unwrap_or_default();
        assert!(
            location.starts_with(&format!("http://{}", elsewhere.addr)),
            "{location}"
        );
    }
    assert_eq!(up.requests().len(), 2);
    assert!(up.requests().iter().all(|r| {
        r.headers
            .contains(&("authorization".into(), "Bearer sk-secret".into()))
    }));
    assert!(elsewhere.requests().is_empty(), "followed a redirect");
    let _ = stop.send(());
}

#[test]
fn upstream_userinfo_is_not_printed() {
    let mut c = config(
        TOK,
        2_000,
        "https://user:sk-secret@api.example.com/v1".into(),
    );
    assert_eq!(c.upstream_for_display(), "https://***@api.example.com/v1");
    assert!(!format!("{c:?}").contains("sk-secret"), "{c:?}");
    let state = acms_proxy::ProxyState::new(&c).unwrap();
    assert!(!format!("{state:?}").contains("sk-secret"));
    c.upstream = "https://api.example.com/v1".into();
    assert_eq!(c.upstream_for_display(), c.upstream);
}

/// Opens a connection and sends half a request head.
async fn partial(addr: std::net::SocketAddr) -> tokio::net::TcpStream {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-")
        .await
        .unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_header_is_cut_off() {
    let up = recorder(None).await;
    let limits = ServeLimits {
        header_read_timeout: Duration::from_millis(300),
        ..ServeLimits::default()
    };
    let (addr, stop) = proxy_with(TOK, 2_000, format!("http://{}/v1", up.addr), limits).await;
    let mut s = partial(addr).await;
    let start = Instant::now();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection was still open after 5 s");
    assert!(start.elapsed() < Duration::from_secs(3));
    let _ = stop.send(());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_get_503_and_slow_ones_free_their_slot() {
    let up = recorder(None).await;
    let limits = ServeLimits {
        header_read_timeout: Duration::from_millis(500),
        max_connections: 8,
    };
    let (addr, stop) = proxy_with(TOK, 2_000, format!("http://{}/v1", up.addr), limits).await;
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(partial(addr).await);
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The ninth is answered at once, with a reason.
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /v1/models HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut out))
        .await
        .expect("an answer, not a stall")
        .unwrap();
    let r = parse_response(&out);
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("too many open connections"), "{}", r.body);
    // The slow ones are cut off by the header timeout; then requests are served again.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    let r = tokio::time::timeout(
        Duration::from_secs(5),
        raw(addr, "GET", "/v1/models", &[], b""),
    )
    .await
    .expect("served once the slow clients are gone");
    assert_eq!(r.status, 200, "{}", r.body);
    drop(held);
    let _ = stop.send(());
}
