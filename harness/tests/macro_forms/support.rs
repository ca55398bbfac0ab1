//! What every form's target shares: it is `harness = false` (`cfg(test)` would make its
//! scenarios a `#[test]` that runs their trials), so its check runs as one named
//! libtest-mimic test.

/// Runs `check` as the test `the_macro_registers_what_it_was_given`, and exits.
pub(crate) fn run(check: fn()) -> ! {
    let args = libtest_mimic::Arguments::from_args();
    let test = libtest_mimic::Trial::test("the_macro_registers_what_it_was_given", move || {
        check();
        Ok(())
    });
    libtest_mimic::run(&args, vec![test]).exit()
}
