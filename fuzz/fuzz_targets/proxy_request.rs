#![no_main]
//! The proxy's request entry point on arbitrary input: the first line is the request path,
//! the rest the body. Normalising never panics and is idempotent, leaving no dot or empty
//! segment; a completion body is read, counted and bounded without panicking, and whatever
//! would be forwarded is within the hard limit as the proxy counts a whole request.

use std::sync::{Arc, OnceLock};

use acms_compact::{AssemblyPolicy, CompactionProfile, Meter};
use acms_proxy::count::Counter;
use acms_proxy::path::{self, Endpoint};
use acms_proxy::{Prepared, ProxyConfig, ProxyState};
use libfuzzer_sys::fuzz_target;

const LIMIT: usize = 300;

fn state() -> &'static Arc<ProxyState> {
    static S: OnceLock<Arc<ProxyState>> = OnceLock::new();
    S.get_or_init(|| {
        let config = ProxyConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            upstream: "http://127.0.0.1:9/v1".into(),
            profile: CompactionProfile::tiered(AssemblyPolicy::new(LIMIT), Meter::estimated_tokens())
                .unwrap(),
            allow_remote: false,
        };
        ProxyState::new(&config).unwrap()
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (raw_path, body) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(normal) = path::normalize(raw_path) else {
        return;
    };
    assert_eq!(path::normalize(&normal).as_deref(), Ok(normal.as_str()), "{raw_path}");
    assert!(
        normal == "/" || normal[1..].split('/').all(|s| !s.is_empty() && s != "." && s != ".."),
        "{normal}"
    );
    // Every completion endpoint, whatever the path named: the body is what is fuzzed.
    for endpoint in [Endpoint::Chat, Endpoint::Messages, Endpoint::Responses, Endpoint::Legacy] {
        let s = state();
        if let Prepared::Forward { body, .. } = acms_proxy::prepare(s, endpoint, body.as_bytes().to_vec().into()) {
            let v: serde_json::Value = match serde_json::from_slice(&body) {
                Ok(v) => v,
                // A body forwarded byte for byte may hold lone surrogates serde_json refuses.
                Err(_) => continue,
            };
            let n = Counter::new(&Meter::estimated_tokens()).request(&v);
            assert!(n <= LIMIT, "{endpoint:?}: {n} forwarded");
        }
    }
});
