//! Integration tests of acms-proxy: a fake OpenAI-compatible upstream on loopback, the
//! proxy in front of it, and many concurrent long tool-using conversations.

mod conn;
mod e2e;
mod fields;
mod log;
mod paths;
mod prop;
pub mod support;
