//! Scenarios inside modules, one named like its module, one with a raw identifier, one
//! whose `#[cfg]` follows the attribute (the generated items come and go with it).

use browser_fault::worker::{Outcome, TaskResult, Worker};

mod messages {
    use super::*;
    use browser_fault::browser_fault;

    #[browser_fault(at = "after_click")]
    pub(crate) async fn send_message(_w: &mut Worker) -> TaskResult {
        Ok(Outcome::Completed)
    }

    pub(crate) mod send {
        use super::*;

        // `pub` as a user writes it, in a module that is not: the macro keeps it as it is.
        #[allow(unreachable_pub)]
        #[browser_fault(at = "browser_crash")]
        pub async fn send(_w: &mut Worker) -> TaskResult {
            Ok(Outcome::Completed)
        }

        #[browser_fault(at = "after_login")]
        async fn r#type(_w: &mut Worker) -> TaskResult {
            Ok(Outcome::Completed)
        }

        #[browser_fault(at = "after_login")]
        #[cfg(any())]
        async fn compiled_out(_w: &mut Worker) -> TaskResult {
            Ok(Outcome::Completed)
        }
    }
}

fn the_macro_registers_what_it_was_given() {
    let all: Vec<(&str, &str)> = browser_fault::trial::scenarios()
        .iter()
        // The path after the crate's name (the test target names the crate).
        .map(|s| {
            (
                s.name,
                s.module_path.split_once("::").map_or("", |(_, m)| m),
            )
        })
        .collect();
    assert_eq!(
        all,
        [
            ("send", "messages::send"),
            ("send_message", "messages"),
            ("type", "messages::send"),
        ]
    );
}

mod support;

fn main() {
    support::run(the_macro_registers_what_it_was_given)
}
