//! Integration tests of acms-vector.
