//! The `#[browser_fault]` attribute's compile errors (`ui/*.rs` with their `.stderr`) and the
//! forms it accepts (`ui/pass/*.rs`). Regenerate the `.stderr` files with
//! `TRYBUILD=overwrite cargo test -p browser-fault --test compiletest`, then read every diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
