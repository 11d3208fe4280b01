//! Integration tests of `acms-keyword`: one binary, one module per concern.

mod fixture;
mod incremental;
mod persistence;
mod queries;
mod search;
