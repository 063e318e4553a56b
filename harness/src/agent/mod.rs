//! The reference daemon: the default agent under test, honouring the agent contract of
//! DESIGN.md. The 4.12 and 4.16 paths sit side by side (`ocp_4_12`, `ocp_4_16`) over what they
//! share (`common`), with one dispatch point on the profile.
//!
//! # Layout
//! - `common`: MachineConfig diffs, post-config actions, atomic writes.

pub mod common;
