//! `acms proxy --listen 127.0.0.1:PORT --upstream URL --limit N`: an OpenAI-compatible
//! chat-completions endpoint that bounds every request with the provider seam before
//! forwarding it to URL (see `acms-proxy`). Point an agent's base URL at
//! `http://127.0.0.1:PORT/v1`. A request that cannot be bounded is answered with the
//! provider-style `context_length_exceeded` error and never forwarded.
//!
//! Prints one line when it listens (`acms proxy: listening on http://ADDR/v1 ...`, with the
//! port actually bound when PORT is 0), then one line per request (`--log-format`), and
//! runs until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use acms::compact::{ArtifactStore, AssemblyPolicy, CompactionProfile};

use crate::compact::{TokenizerArg, UnitArg, meter};

/// Serve an OpenAI-compatible proxy that bounds every request.
#[derive(clap::Args, Debug)]
pub struct ProxyArgs {
    /// Address to listen on (loopback unless --allow-remote).
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Upstream base URL that replaces the proxy's `/v1` (e.g. https://api.openai.com/v1).
    #[arg(long)]
    pub upstream: String,
    /// Hard limit of every forwarded request, in --unit.
    #[arg(long = "limit", visible_alias = "hard-limit")]
    pub limit: usize,
    /// Reduction starts above `limit - trigger-margin` and aims at or under it
    /// (default: 5% of the limit).
    #[arg(long)]
    pub trigger_margin: Option<usize>,
    /// Reducer proposals per request before the preservation-only fallback.
    #[arg(long, default_value_t = 3)]
    pub max_attempts: usize,
    /// What the limit counts.
    #[arg(long, value_enum, default_value_t = UnitArg::Tokens)]
    pub unit: UnitArg,
    /// Tokenizer for --unit tokens.
    #[arg(long, value_enum, default_value_t = TokenizerArg::O200k)]
    pub tokenizer: TokenizerArg,
    /// Offload large old tool results to this content-addressed artifact directory.
    #[arg(long)]
    pub artifacts: Option<PathBuf>,
    /// Allow listening on a non-loopback address (the proxy forwards API keys).
    #[arg(long)]
    pub allow_remote: bool,
    /// Seconds a client has to send a request's headers before its connection is closed.
    #[arg(long, default_value_t = acms_proxy::DEFAULT_HEADER_READ_TIMEOUT.as_secs())]
    pub header_timeout: u64,
    /// Open connections at most; one more is answered 503 (`too_many_connections`).
    #[arg(long, default_value_t = acms_proxy::DEFAULT_MAX_CONNECTIONS)]
    pub max_connections: usize,
    /// One line per request on stderr (method, path, outcome, sizes, attempts, ms and the
    /// assembly events; never content): `text`, `json` (one object per line) or `off`.
    #[arg(long, value_enum, default_value_t = LogFormatArg::Text)]
    pub log_format: LogFormatArg,
}

/// How the proxy logs requests.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum LogFormatArg {
    Text,
    Json,
    Off,
}

pub fn run(args: &ProxyArgs) -> anyhow::Result<ExitCode> {
    let mut policy = AssemblyPolicy::new(args.limit);
    if let Some(m) = args.trigger_margin {
        policy.trigger_margin = m;
    }
    policy.max_attempts = args.max_attempts;
    let meter = meter(args.unit, args.tokenizer);
    let mut profile = CompactionProfile::tiered(policy, meter)?;
    if let Some(dir) = &args.artifacts {
        profile = profile.with_artifacts(Arc::new(ArtifactStore::new(dir)));
    }
    let config = acms_proxy::ProxyConfig {
        listen: args.listen,
        upstream: args.upstream.clone(),
        profile,
        allow_remote: args.allow_remote,
    };
    if args.header_timeout == 0 || args.max_connections == 0 {
        anyhow::bail!("--header-timeout and --max-connections must be positive");
    }
    let limits = acms_proxy::ServeLimits {
        header_read_timeout: std::time::Duration::from_secs(args.header_timeout),
        max_connections: args.max_connections,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = acms_proxy::bind(&config).await?;
        let format = match args.log_format {
            LogFormatArg::Text => acms_proxy::LogFormat::Text,
            LogFormatArg::Json => acms_proxy::LogFormat::Json,
            LogFormatArg::Off => acms_proxy::LogFormat::Off,
        };
        let state =
            acms_proxy::ProxyState::with_log(&config, acms_proxy::RequestLog::stderr(format))?;
        let addr = listener.local_addr()?;
        // Which tokenizer counts is said up front: `query` and `compact` default to cl100k,
        // the proxy to o200k (today's OpenAI models); `--tokenizer` sets each the same way.
        let counted_with = config
            .profile
            .meter
            .tokenizer()
            .map(|t| format!(", counted with {t}"))
            .unwrap_or_default();
        eprintln!(
            "acms proxy: listening on http://{addr}/v1, forwarding to {} with a hard limit of {} {}{counted_with} (trigger {})",
            config.upstream_for_display(),
            policy.hard_limit,
            config.profile.meter.unit(),
            policy.trigger_threshold()
        );
        acms_proxy::serve_with(listener, state, limits, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
