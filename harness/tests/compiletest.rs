//! The `#[browser_fault]` attribute's compile errors (`ui/*.rs` with their `.stderr`).
//! Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p browser-fault --test compiletest`, then read every diff.
//!
//! The forms it accepts are test targets of their own (`macro_forms/*.rs`, built with the
//! workspace): a pass case here would make trybuild build every dependency rather than check
//! it, and run the compile-fail cases one at a time rather than in one `--keep-going` build.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
