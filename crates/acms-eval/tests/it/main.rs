//! Integration tests of acms-eval, one binary: text rules (checked against the Python
//! generator's outputs), TypeScript task generation and stripping, scoring, report splicing,
//! and the smoke evaluation on the smoke corpus.

mod report;
mod score;
mod smoke;
mod tasks;
mod text;
