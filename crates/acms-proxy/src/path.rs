//! One normalisation of the request path, used both to route and to forward: percent
//! escapes decoded, `\` read as `/`, empty and `.` segments dropped, `..` resolved. Every
//! spelling of a path is therefore routed as the upstream will read it.

/// Why a path is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    #[error("the request path climbs above the root (`..` past the first segment)")]
    AboveRoot,
    #[error("the request path is not valid percent-encoded UTF-8")]
    Encoding,
    #[error(
        "the request path has a `;` parameter or a control character, which acms does not route"
    )]
    Unsupported,
}

/// What a normalised path asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `.../chat/completions`.
    Chat,
    /// `.../completions` (legacy, a `prompt`).
    Legacy,
    /// `.../responses` (OpenAI Responses API).
    Responses,
    /// `.../messages` (Anthropic).
    Messages,
    /// Anything else: passed through.
    Other,
}

/// `raw` normalised: `/`-separated segments without empty, `.` or `..` ones, starting with
/// `/`. Escapes are decoded before dot segments are read, so `%2e%2e` is `..` and `%2f` a
/// separator.
pub fn normalize(raw: &str) -> Result<String, PathError> {
    let decoded = percent_decode(raw)?;
    if decoded.chars().any(|c| c.is_control() || c == ';') {
        return Err(PathError::Unsupported);
    }
    let mut segments: Vec<&str> = Vec::new();
    for s in decoded.split(['/', '\\']) {
        match s {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(PathError::AboveRoot);
                }
            }
            s => segments.push(s),
        }
    }
    let mut out = String::with_capacity(decoded.len() + 1);
    for s in &segments {
        out.push('/');
        encode_segment(s, &mut out);
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(out)
}

/// A decoded segment written back as a URI path segment: unreserved characters, sub-delims,
/// `:` and `@` as they are, every other byte percent-encoded (`%`, `?`, `#`, a space,
/// non-ASCII). The forwarded path then means what was routed (a decoded `?` cannot start a
/// query upstream), and normalising it again changes nothing.
fn encode_segment(segment: &str, out: &mut String) {
    for &b in segment.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,=:@".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

fn percent_decode(raw: &str) -> Result<String, PathError> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                .ok_or(PathError::Encoding)?;
            // Two ASCII hex digits: valid UTF-8 and a valid byte.
            let hex = std::str::from_utf8(hex).map_err(|_| PathError::Encoding)?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| PathError::Encoding)?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| PathError::Encoding)
}

/// The endpoint a normalised path names, by its last segments, case-insensitively (so a
/// deployment prefix or odd casing cannot route a completion around the bound).
pub fn endpoint(normalized: &str) -> Endpoint {
    let lower = normalized.to_ascii_lowercase();
    let mut rev = lower.rsplit('/');
    match (rev.next(), rev.next()) {
        (Some("completions"), Some("chat")) => Endpoint::Chat,
        (Some("completions"), _) => Endpoint::Legacy,
        (Some("responses"), _) => Endpoint::Responses,
        (Some("messages"), _) => Endpoint::Messages,
        _ => Endpoint::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_normalise_to_one_path() {
        for raw in [
            "/v1/chat/completions",
            "/v1/./chat/completions",
            "/v1/%2e/chat/completions",
            "/v1/x/../chat/completions",
            "/v1/chat/%2E%2E/chat/completions",
            "//v1//chat///completions/",
            "/v1/chat%2Fcompletions",
            "/v1/%63hat/completions",
            "/v1\\chat\\completions",
        ] {
            assert_eq!(
                normalize(raw).as_deref(),
                Ok("/v1/chat/completions"),
                "{raw}"
            );
        }
        assert_eq!(
            normalize("/chat/./completions").as_deref(),
            Ok("/chat/completions")
        );
    }

    #[test]
    fn climbing_and_bad_escapes_are_refused() {
        for raw in [
            "/v1/../../../x",
            "/..",
            "/v1/%2e%2e/%2e%2e/x",
            "/v1/..%2f..%2fx",
        ] {
            assert_eq!(normalize(raw), Err(PathError::AboveRoot), "{raw}");
        }
        for raw in ["/v1/%", "/v1/%zz", "/v1/%+f", "/v1/%ff", "/v1/%e2%82"] {
            assert_eq!(normalize(raw), Err(PathError::Encoding), "{raw}");
        }
        assert_eq!(
            normalize("/v1/chat/completions;x=1"),
            Err(PathError::Unsupported)
        );
        assert_eq!(normalize("/v1/a%00b"), Err(PathError::Unsupported));
    }

    /// Found by the proptest: `%25` normalised to `/%`, which is no path at all; a decoded
    /// `?` or `#` would have started a query or fragment upstream.
    #[test]
    fn decoded_bytes_that_are_not_path_characters_are_encoded_again() {
        for (raw, want) in [
            ("%25", "/%25"),
            ("/v1/a%3Fb", "/v1/a%3Fb"),
            ("/v1/a%23b", "/v1/a%23b"),
            ("/v1/a%20b", "/v1/a%20b"),
            ("/v1/%e2%82%ac", "/v1/%E2%82%AC"),
            ("/v1/a:b@c", "/v1/a:b@c"),
            ("/", "/"),
        ] {
            let once = normalize(raw).unwrap();
            assert_eq!(once, want, "{raw}");
            assert_eq!(normalize(&once).as_deref(), Ok(want), "{raw} twice");
        }
    }

    #[test]
    fn endpoints_by_their_last_segments() {
        assert_eq!(endpoint("/v1/chat/completions"), Endpoint::Chat);
        assert_eq!(endpoint("/V1/Chat/Completions"), Endpoint::Chat);
        assert_eq!(
            endpoint("/v1/deployments/gpt/chat/completions"),
            Endpoint::Chat
        );
        assert_eq!(endpoint("/v1/completions"), Endpoint::Legacy);
        assert_eq!(endpoint("/v1/responses"), Endpoint::Responses);
        assert_eq!(endpoint("/v1/messages"), Endpoint::Messages);
        assert_eq!(endpoint("/v1/models"), Endpoint::Other);
        assert_eq!(endpoint("/"), Endpoint::Other);
    }
}
