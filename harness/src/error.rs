//! The harness's error conventions: messages are lowercase fragments that read after
//! "failed to …", and a `#[from]` or `#[source]` cause is never printed again by the error
//! that wraps it ([`error_chain`] prints each once; the tests below hold every kind to it).

/// An error and its sources on one line, `outer: inner: innermost`: what a log line or a
/// verdict says of an error.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use std::error::Error;
    use std::path::Path;

    use super::*;
    use crate::journal::{JournalError, JournalErrorKind};
    use crate::site::SiteError;
    use crate::worker::{SafeStop, TaskError};

    /// Each error of `e`'s chain, outermost first, as it prints.
    fn chain(e: &(dyn Error + 'static)) -> Vec<String> {
        let mut messages = vec![e.to_string()];
        let mut source = e.source();
        while let Some(inner) = source {
            messages.push(inner.to_string());
            source = inner.source();
        }
        messages
    }

    /// No error of the chain prints the message of the error below it: thiserror's `#[from]`
    /// and `#[source]` already put the cause in the chain, so a `{0}` or `{source}` in the
    /// message would print it twice in every log line and verdict.
    fn assert_each_cause_prints_once(e: &(dyn Error + 'static)) {
        let messages = chain(e);
        for pair in messages.windows(2) {
            assert!(
                !pair[0].contains(&pair[1]),
                "`{}` prints its cause `{}` again; chain: {messages:?}",
                pair[0],
                pair[1]
            );
        }
        let line = error_chain(e);
        for m in &messages {
            assert_eq!(line.matches(m.as_str()).count(), 1, "{line}");
        }
    }

    #[test]
    fn a_safe_stop_prints_its_reason_once() {
        let e = TaskError::from(SafeStop::WrongAccount);
        assert_each_cause_prints_once(&e);
        assert_eq!(
            error_chain(&e),
            "stopped safely: signed in as another account"
        );
    }

    #[test]
    fn a_journal_error_prints_its_sqlite_cause_once() {
        let sqlite = rusqlite::Error::InvalidQuery;
        let e = JournalError::from_sqlite(Path::new("/t/journal.sqlite"), sqlite);
        assert_each_cause_prints_once(&e);
        let line = error_chain(&e);
        assert!(
            line.starts_with("failed to access journal (journal /t/journal.sqlite): "),
            "{line}"
        );
        let wrapped = TaskError::from(e);
        assert_each_cause_prints_once(&wrapped);
        assert_eq!(error_chain(&wrapped), line, "transparent adds nothing");
    }

    #[test]
    fn a_journal_error_of_a_kind_reads_after_failed_to() {
        let e = JournalError::new(Path::new("/t/j"), JournalErrorKind::Busy);
        assert_eq!(
            e.to_string(),
            "failed to access journal: the database stayed busy past the timeout (journal /t/j)"
        );
    }

    #[test]
    fn a_site_error_prints_its_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let unreachable = SiteError::Unreachable {
            url: "http://127.0.0.1:9/ledger".to_owned(),
            source: Box::new(io),
        };
        assert_each_cause_prints_once(&unreachable);
        assert_eq!(
            error_chain(&unreachable),
            "failed to reach the site at http://127.0.0.1:9/ledger: refused"
        );
        let own = SiteError::adapter(std::io::Error::other("the tracker is down"));
        assert_each_cause_prints_once(&own);
        assert_eq!(
            error_chain(&own),
            "failed in the site adapter: the tracker is down"
        );
    }
}
