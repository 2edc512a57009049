//! Integration tests of the block profiler against a synthetic node: real pprof-rs
//! sampling, the real JSON-RPC server on 127.0.0.1, real files. One test binary, so the
//! tests take turns on pprof-rs's single global profiler (see `common::serial`).

mod auth;
mod common;
mod download_merge;
mod end_to_end;
mod render_failure;
mod validation;
