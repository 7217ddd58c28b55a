//! Helpers shared by apps' integration tests.
#![allow(dead_code)]

pub mod netns;
pub mod pattern;
pub mod tonic_wire;
