//! Run with: cargo test -p example-readme --doc
//!
//! README.md's Rust examples, compiled as doc tests of this crate so the front page keeps up with
//! the API. It has no code of its own.
#![doc = include_str!("../../../README.md")]
