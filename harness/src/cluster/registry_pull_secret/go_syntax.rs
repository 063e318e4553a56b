//! Go's well-formedness check, which `json.Unmarshal` runs over the whole input before it
//! decodes anything (clarketm/json v1.17.1 `checkValid`, a copy of `encoding/json`'s scanner):
//! a syntax error anywhere fails the input whole. The scanner is the fake API server's model of
//! Go's (`fake_apiserver::go_json_syntax_error`, held to Go's own answers); decoding
//! what passes is `go_json.rs`'s.
//!
//! Where serde_json differs: bytes of 0x80 and above are any bytes inside a string here (Go
//! reads invalid UTF-8 as U+FFFD later), and nesting may go 10000 deep, Go's `maxNestingDepth` (serde_json stops
//! at 128). Numbers are only checked for their grammar, never their range.

use super::go_json::GoJsonError;

/// Go's `checkValid`: the whole input is one JSON value with optional white space around it.
pub fn check_valid(data: &[u8]) -> Result<(), GoJsonError> {
    match fake_apiserver::go_json_syntax_error(data) {
        None => Ok(()),
        Some(message) => Err(GoJsonError::Syntax(message)),
    }
}
