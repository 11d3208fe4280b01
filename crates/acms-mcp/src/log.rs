//! The server's log messages (`notifications/message`): each step of opening the workspace,
//! at the level the client asked for (`logging/setLevel`, `info` by default).
//!
//! MCP logging is deprecated by the 2026-07-28 draft (SEP-2577), but the hosts that speak
//! 2025-11-25 and earlier show these lines, and a log message is the only way to say that
//! indexing has started before any tool call carries a progress token.
#![expect(
    deprecated,
    reason = "MCP logging is deprecated by the 2026-07-28 draft; hosts on 2025-11-25 still read it"
)]

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ServerCapabilities};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

/// Severities, least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
}

impl Level {
    fn of(level: &LoggingLevel) -> Level {
        match level {
            LoggingLevel::Debug => Level::Debug,
            LoggingLevel::Info => Level::Info,
            LoggingLevel::Notice => Level::Notice,
            LoggingLevel::Warning => Level::Warning,
            _ => Level::Error,
        }
    }

    fn wire(self) -> LoggingLevel {
        match self {
            Level::Debug => LoggingLevel::Debug,
            Level::Info => LoggingLevel::Info,
            Level::Notice => LoggingLevel::Notice,
            Level::Warning => LoggingLevel::Warning,
            Level::Error => LoggingLevel::Error,
        }
    }

    pub(crate) fn rank(self) -> u8 {
        self as u8
    }
}

/// The level a `logging/setLevel` request asks for.
pub(crate) fn requested(request: &rmcp::model::SetLevelRequestParams) -> Level {
    Level::of(&request.level)
}

/// The server's capabilities: tools, and log messages.
pub(crate) fn capabilities() -> ServerCapabilities {
    ServerCapabilities::builder()
        .enable_tools()
        .enable_logging()
        .build()
}

/// Sends one log line (a lost line is not worth failing anything for).
pub(crate) async fn send(peer: &Peer<RoleServer>, level: Level, message: String) {
    let param = LoggingMessageNotificationParam::new(level.wire(), Value::String(message))
        .with_logger("acms");
    let _ = peer.notify_logging_message(param).await;
}
