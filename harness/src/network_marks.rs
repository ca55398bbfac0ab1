//! Boundaries read from the network, for agents that mark none: the proxy between a trial's
//! browsers and its site notes each sign-in it answered and each effect request it received
//! and answered ([`Mark`]), one byte appended to a file of the trial's per mark; a worker's
//! endpoints read the notes at the agent's commands and strike the armed boundary at the first
//! command once its mark is there.
//!
//! Files, not a channel: a `kill`-mode worker is a process of its own, and the proxy lives in
//! the trial's. A note is written before the proxy passes the request on or the answer back,
//! so a command the agent makes after its browser had the answer always sees it. A worker
//! counts the notes made since it started: a trial runs the workers that reach these
//! boundaries one after another (two at once only in `concurrent_profile`, whose second is
//! refused before its scenario), so the notes after a worker's start are its own browser's.

use std::io::Write;
use std::path::{Path, PathBuf};

/// What the proxy saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mark {
    /// The site answered a sign-in request ([`Site::is_sign_in_request`]) with a status
    /// below 400: `after_login`.
    ///
    /// [`Site::is_sign_in_request`]: crate::site::Site::is_sign_in_request
    SignInAnswered,
    /// An effect request ([`Site::is_effect_request`], never a sign-in) reached the proxy:
    /// `after_click`.
    ///
    /// [`Site::is_effect_request`]: crate::site::Site::is_effect_request
    EffectSent,
    /// The site's answer to an effect request, with a status below 400, went to the
    /// browser: `after_remote_effect`.
    EffectAnswered,
}

impl Mark {
    const ALL: [Mark; 3] = [Mark::SignInAnswered, Mark::EffectSent, Mark::EffectAnswered];

    fn file(self) -> &'static str {
        match self {
            Mark::SignInAnswered => "sign_in_answered",
            Mark::EffectSent => "effect_sent",
            Mark::EffectAnswered => "effect_answered",
        }
    }

    fn index(self) -> usize {
        match self {
            Mark::SignInAnswered => 0,
            Mark::EffectSent => 1,
            Mark::EffectAnswered => 2,
        }
    }
}

/// Notes `mark` in `dir`. A note that cannot be written is lost, and the boundary it stands
/// for is then not read from the network (the trial says its fault did not strike).
pub(crate) fn note(dir: &Path, mark: Mark) {
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(mark.file()))
        .and_then(|mut f| f.write_all(b"."));
}

/// A worker's view of the notes: how many of each there were when it started.
#[derive(Debug)]
pub(crate) struct Marks {
    dir: PathBuf,
    base: [u64; 3],
}

impl Marks {
    /// The notes in `dir` as they stand now: only later ones are this worker's.
    pub(crate) fn from_now(dir: PathBuf) -> Marks {
        let mut base = [0; 3];
        for mark in Mark::ALL {
            base[mark.index()] = count(&dir, mark);
        }
        Marks { dir, base }
    }

    /// Whether `mark` was noted since this worker started.
    pub(crate) fn seen(&self, mark: Mark) -> bool {
        count(&self.dir, mark) > self.base[mark.index()]
    }
}

fn count(dir: &Path, mark: Mark) -> u64 {
    std::fs::metadata(dir.join(mark.file())).map_or(0, |m| m.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_sees_only_the_notes_made_after_it_started() {
        let dir = tempfile::tempdir().unwrap();
        note(dir.path(), Mark::SignInAnswered);
        let marks = Marks::from_now(dir.path().to_owned());
        assert!(!marks.seen(Mark::SignInAnswered));
        assert!(!marks.seen(Mark::EffectAnswered));
        note(dir.path(), Mark::EffectSent);
        assert!(marks.seen(Mark::EffectSent));
        assert!(!marks.seen(Mark::SignInAnswered));
        note(dir.path(), Mark::SignInAnswered);
        assert!(marks.seen(Mark::SignInAnswered));
        assert!(!marks.seen(Mark::EffectAnswered));
    }
}
