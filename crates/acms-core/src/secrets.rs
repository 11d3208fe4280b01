//! Secrets: the values acms never hands to a model provider and never writes to its own
//! stores. Two rules, both applied wherever text enters acms from a repository or a
//! conversation:
//!
//! - **By path** ([`DEFAULT_DENY`]): files whose name says they hold credentials (`.env`,
//!   `*.pem`, `id_rsa`, `credentials.json`, …) are held back whole. The list is gitignore
//!   syntax; users extend it (`context.file.deny`, a repository's `.acmsignore`), nobody
//!   shrinks it.
//! - **By content** ([`redact`]): high-confidence secret shapes — private-key blocks, cloud and
//!   SaaS tokens with a fixed prefix, AWS secret keys next to their name, passwords inside
//!   database connection strings — are replaced by a marker naming the kind, keeping every
//!   line break, so line numbers and everything else in the file stay as they were.
//!
//! "High confidence" is the point: a shape that also matches ordinary code (a URL with
//! `user:pass@` in an HTTP library's tests, a `password = ...` in a fixture) is not a rule
//! here, because redacting it would cost agents the code they came for. This module is pure:
//! no I/O.

use std::sync::OnceLock;

use regex::{Regex, RegexSet};

/// Path patterns (gitignore syntax, matched against repository-relative paths) held back
/// from every index by default, whatever a repository's own files say.
pub const DEFAULT_DENY: &[&str] = &[
    // Environment files: `.env`, `.env.local`, `prod.env`, direnv's `.envrc`.
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    // Keys and key stores.
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    // Credential files by name.
    "credentials",
    "credentials.*",
    "*credentials.json",
    "secrets.*",
    "*.secret",
    "*.secrets",
    ".netrc",
    "_netrc",
    ".pgpass",
    ".htpasswd",
    ".npmrc",
    ".pypirc",
    // Infrastructure state and variables, which hold provider credentials in clear.
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
];

/// A kind of secret [`redact`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecretKind {
    PrivateKey,
    AwsAccessKeyId,
    AwsSecretAccessKey,
    GitHubToken,
    GitLabToken,
    SlackToken,
    SlackWebhook,
    OpenAiKey,
    AnthropicKey,
    StripeKey,
    GoogleApiKey,
    NpmToken,
    HuggingFaceToken,
    ConnectionPassword,
}

impl SecretKind {
    /// The name used in markers and warnings.
    pub fn name(self) -> &'static str {
        match self {
            SecretKind::PrivateKey => "private-key",
            SecretKind::AwsAccessKeyId => "aws-access-key-id",
            SecretKind::AwsSecretAccessKey => "aws-secret-access-key",
            SecretKind::GitHubToken => "github-token",
            SecretKind::GitLabToken => "gitlab-token",
            SecretKind::SlackToken => "slack-token",
            SecretKind::SlackWebhook => "slack-webhook",
            SecretKind::OpenAiKey => "openai-key",
            SecretKind::AnthropicKey => "anthropic-key",
            SecretKind::StripeKey => "stripe-key",
            SecretKind::GoogleApiKey => "google-api-key",
            SecretKind::NpmToken => "npm-token",
            SecretKind::HuggingFaceToken => "huggingface-token",
            SecretKind::ConnectionPassword => "connection-password",
        }
    }
}

impl std::fmt::Display for SecretKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One rule: a pattern whose capture group 1 (or whole match, without a group) is the value.
struct Rule {
    kind: SecretKind,
    pattern: &'static str,
}

/// The content rules. A private key's body must hold a long base64 run (checked in
/// [`find`]), so code that merely spells the PEM header and footer is not a key. Word
/// boundaries are ASCII (`(?-u:\b)`; every value is ASCII): a Unicode `\b` makes the fast
/// engines give up on any text with a non-ASCII character, and the slow one was an eighth
/// of an index run.
const RULES: &[Rule] = &[
    Rule {
        kind: SecretKind::PrivateKey,
        // Header, then base64 lines, quotes, escaped or real line breaks (a key inside a
        // string literal or JSON) and `Name: value` PEM headers, then the footer.
        pattern: r#"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----((?:[A-Za-z0-9+/=\s"',]|\\[nr]|[A-Za-z-]+: [^\n]*)*?)-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"#,
    },
    Rule {
        kind: SecretKind::AwsAccessKeyId,
        pattern: r"(?-u:\b)((?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16})(?-u:\b)",
    },
    Rule {
        kind: SecretKind::AwsSecretAccessKey,
        pattern: r#"(?i)secret_?access_?key["']?\s*[:=]\s*["']?([A-Za-z0-9/+=]{40})(?:[^A-Za-z0-9/+=]|$)"#,
    },
    Rule {
        kind: SecretKind::GitHubToken,
        pattern: r"(?-u:\b)((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?-u:\b)",
    },
    Rule {
        kind: SecretKind::GitLabToken,
        pattern: r"(?-u:\b)(glpat-[A-Za-z0-9_-]{20,})",
    },
    Rule {
        kind: SecretKind::SlackToken,
        pattern: r"(?-u:\b)(xox[abposr]-[A-Za-z0-9-]{10,})",
    },
    Rule {
        kind: SecretKind::SlackWebhook,
        pattern: r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/([A-Za-z0-9_]{8,})",
    },
    Rule {
        kind: SecretKind::AnthropicKey,
        pattern: r"(?-u:\b)(sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{20,})",
    },
    Rule {
        kind: SecretKind::OpenAiKey,
        pattern: r"(?-u:\b)(sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{32,})",
    },
    Rule {
        kind: SecretKind::StripeKey,
        pattern: r"(?-u:\b)((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,})",
    },
    Rule {
        kind: SecretKind::GoogleApiKey,
        pattern: r"(?-u:\b)(AIza[0-9A-Za-z_-]{35})",
    },
    Rule {
        kind: SecretKind::NpmToken,
        pattern: r"(?-u:\b)(npm_[A-Za-z0-9]{36})(?-u:\b)",
    },
    Rule {
        kind: SecretKind::HuggingFaceToken,
        pattern: r"(?-u:\b)(hf_[A-Za-z]{34})(?-u:\b)",
    },
    Rule {
        kind: SecretKind::ConnectionPassword,
        // Database and broker URLs only: `user:pass@` in an HTTP URL is what HTTP libraries'
        // tests are made of. A placeholder (`${PW}`, `{pw}`, `<password>`, `%s`, `***`) is
        // not a password.
        pattern: r"(?i)(?-u:\b)(?:jdbc:)?(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|cockroachdb|clickhouse|couchdb|neo4j(?:\+s)?|ldaps?|smtps?)(?:\+[a-z0-9]+)?://[^\s:/@'`<>{}$]+:([^\s@/'`<>{}$%*]{3,})@[A-Za-z0-9._\[\]-]+",
    },
];

struct Compiled {
    set: RegexSet,
    rules: Vec<(SecretKind, Regex)>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| Compiled {
        // The patterns are constants, tested below: a failure here is a bug in this file.
        set: RegexSet::new(RULES.iter().map(|r| r.pattern)).expect("secret patterns compile"),
        rules: RULES
            .iter()
            .map(|r| {
                (
                    r.kind,
                    Regex::new(r.pattern).expect("secret patterns compile"),
                )
            })
            .collect(),
    })
}

/// One secret value found in a text: its kind and the byte range of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub kind: SecretKind,
    pub range: std::ops::Range<usize>,
}

/// True when a private key's body holds what a real key holds: a run of 40 base64 characters.
fn looks_like_key_body(body: &str) -> bool {
    let mut run = 0;
    for b in body.bytes() {
        if b.is_ascii_alphanumeric() || b == b'+' || b == b'/' {
            run += 1;
            if run >= 40 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// The secret values in `text`, in order, without overlaps (the earlier match wins).
pub fn find(text: &str) -> Vec<Secret> {
    let c = compiled();
    let hits = c.set.matches(text);
    if !hits.matched_any() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for i in hits.iter() {
        let (kind, re) = &c.rules[i];
        for caps in re.captures_iter(text) {
            let Some(value) = caps.get(1).or_else(|| caps.get(0)) else {
                continue;
            };
            if *kind == SecretKind::PrivateKey && !looks_like_key_body(value.as_str()) {
                continue;
            }
            found.push(Secret {
                kind: *kind,
                range: value.range(),
            });
        }
    }
    found.sort_by_key(|s| (s.range.start, std::cmp::Reverse(s.range.end)));
    let mut out: Vec<Secret> = Vec::with_capacity(found.len());
    for s in found {
        if out
            .last()
            .is_none_or(|last| s.range.start >= last.range.end)
        {
            out.push(s);
        }
    }
    out
}

/// The marker a value of `kind` is replaced with.
pub fn marker(kind: SecretKind) -> String {
    format!("[redacted {kind}]")
}

/// `text` with every secret value replaced by its [`marker`] — plus the line breaks the value
/// held, so every line keeps its number — and the kinds replaced; `None` when there are none.
pub fn redact(text: &str) -> Option<(String, Vec<SecretKind>)> {
    let found = find(text);
    if found.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut kinds = Vec::with_capacity(found.len());
    let mut at = 0;
    for s in &found {
        out.push_str(&text[at..s.range.start]);
        out.push_str(&marker(s.kind));
        for _ in text[s.range.clone()].matches('\n') {
            out.push('\n');
        }
        at = s.range.end;
        kinds.push(s.kind);
    }
    out.push_str(&text[at..]);
    Some((out, kinds))
}

/// A short summary of redacted kinds for a warning: `2 secret values redacted (aws-access-key-id,
/// private-key)`. Never holds a value.
pub fn summary(kinds: &[SecretKind]) -> String {
    let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    names.sort_unstable();
    names.dedup();
    let n = kinds.len();
    format!(
        "{n} secret value{} redacted ({})",
        if n == 1 { "" } else { "s" },
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Test values are assembled at run time so that this source file itself holds no
    /// secret-shaped string a scanner (acms's own, or a host's) would flag.
    fn join(parts: &[&str]) -> String {
        parts.concat()
    }

    fn check(text: &str, kinds: &[SecretKind], secret: &str) {
        let (out, found) = redact(text).unwrap_or_else(|| panic!("nothing found in {text:?}"));
        assert_eq!(found, kinds, "in {text:?}");
        assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
        assert_eq!(
            out.matches('\n').count(),
            text.matches('\n').count(),
            "line count changed"
        );
    }

    fn key_body() -> String {
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0".into()
    }

    #[test]
    fn private_key_blocks_are_redacted_with_their_lines() {
        let key = key_body();
        let pem = join(&[
            "x = 1\n-----BEGIN RSA ",
            "PRIVATE KEY-----\n",
            &key,
            "\n",
            &key,
            "\n-----END RSA ",
            "PRIVATE KEY-----\ny = 2\n",
        ]);
        check(&pem, &[SecretKind::PrivateKey], &key);
        let (out, _) = redact(&pem).unwrap();
        assert!(
            out.starts_with("x = 1\n") && out.ends_with("y = 2\n"),
            "{out}"
        );

        // Inside a JSON string (a cloud service account), with escaped line breaks.
        let json = join(&[
            r#"{"private_key": "-----BEGIN "#,
            "PRIVATE KEY-----\\n",
            &key,
            "\\n-----END ",
            r#"PRIVATE KEY-----\n", "client_email": "a@b.c"}"#,
        ]);
        check(&json, &[SecretKind::PrivateKey], &key);

        // Code that only spells the header and footer is not a key.
        let code = join(&[
            "HEADER = \"-----BEGIN RSA ",
            "PRIVATE KEY-----\"\nFOOTER = \"-----END RSA ",
            "PRIVATE KEY-----\"\n",
        ]);
        assert_eq!(redact(&code), None);
    }

    #[test]
    fn token_shapes_are_redacted() {
        let cases = [
            (
                join(&["AKIA", "IOSFODNN7EXAMPLE"]),
                SecretKind::AwsAccessKeyId,
            ),
            (
                join(&["ghp_", "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"]),
                SecretKind::GitHubToken,
            ),
            (
                join(&["xoxb-", "1234567890-abcdefghij"]),
                SecretKind::SlackToken,
            ),
            (
                join(&["sk-proj-", "abcdefghijklmnopqrstuvwxyz012345"]),
                SecretKind::OpenAiKey,
            ),
            (
                join(&["sk-ant-api03-", "abcdefghijklmnopqrstuvwxyz"]),
                SecretKind::AnthropicKey,
            ),
            (
                join(&["sk_live_", "abcdefghijklmnopqrstuvwx"]),
                SecretKind::StripeKey,
            ),
            (
                join(&["AIza", "SyA1234567890abcdefghijklmnopqrstuv"]),
                SecretKind::GoogleApiKey,
            ),
        ];
        for (token, kind) in cases {
            check(&format!("token = \"{token}\"\n"), &[kind], &token);
        }
    }

    #[test]
    fn an_aws_secret_key_is_found_by_its_name() {
        let secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        let text = format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {secret}\n",
            join(&["AKIA", "IOSFODNN7EXAMPLE"])
        );
        check(
            &text,
            &[SecretKind::AwsAccessKeyId, SecretKind::AwsSecretAccessKey],
            secret,
        );
        let json = format!(r#"{{"SecretAccessKey": "{secret}"}}"#);
        check(&json, &[SecretKind::AwsSecretAccessKey], secret);
    }

    #[test]
    fn database_urls_lose_their_password_only() {
        let text = "DATABASE_URL = \"postgresql://app:s3cr3t-Pw@db.internal:5432/prod\"\n";
        let (out, kinds) = redact(text).unwrap();
        assert_eq!(kinds, [SecretKind::ConnectionPassword]);
        assert_eq!(
            out,
            "DATABASE_URL = \"postgresql://app:[redacted connection-password]@db.internal:5432/prod\"\n"
        );
        // Placeholders and HTTP URLs are left alone.
        for text in [
            "url = f\"postgresql://{user}:{password}@{host}/db\"",
            "url = \"postgres://user:${PASSWORD}@localhost/db\"",
            "url = \"mysql://root:***@localhost\"",
            "assert parse('http://user:pass@example.com').password == 'pass'",
        ] {
            assert_eq!(redact(text), None, "{text}");
        }
    }

    /// Word boundaries are ASCII: text around a value may be any language, and a letter
    /// outside ASCII next to a value no longer hides it.
    #[test]
    fn values_next_to_non_ascii_text_are_found() {
        let text =
            "# clé d'accès — ne pas publier\nclé=AKIAIOSFODNN7EXAMPLE; ÉAKIAIOSFODNN7EXAMPLF\n";
        let found = find(text);
        let values: Vec<&str> = found.iter().map(|s| &text[s.range.clone()]).collect();
        assert_eq!(values, ["AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLF"]);
        assert!(
            find("AKIAIOSFODNN7EXAMPLEX").is_empty(),
            "a longer word is not a key"
        );
    }

    #[test]
    fn ordinary_code_has_no_secrets() {
        let code = "def task_key(sk, name):\n    return f'sk-{name}'\n\nMAX = 'AKIA'\n";
        assert_eq!(redact(code), None);
        assert_eq!(find(""), Vec::new());
    }

    #[test]
    fn summaries_name_kinds_never_values() {
        assert_eq!(
            summary(&[SecretKind::PrivateKey, SecretKind::AwsAccessKeyId]),
            "2 secret values redacted (aws-access-key-id, private-key)"
        );
        assert_eq!(
            summary(&[SecretKind::GitHubToken]),
            "1 secret value redacted (github-token)"
        );
    }
}
