//! The journal: the durable store of runs, browser-session records, side effects and their
//! checkpoint history, profile leases and cleanup claims.
//!
//! One embedded SQLite file per run root, in WAL mode with `synchronous = FULL`: a call that
//! returned `Ok` survives a SIGKILL of the writer (and a power cut, as far as the disk honours
//! fsync). Several processes share one file (the test parent and its worker children); each
//! opens its own [`Journal`]. A file that is not a browser-fault journal, or is corrupt, is
//! refused and left untouched.
//!
//! ```
//! use browser_fault::journal::{Checkpoint, Journal, NewRun, RequestKey, args_hash};
//! let dir = tempfile::tempdir()?;
//! let journal = Journal::open(&dir.path().join("journal.sqlite"))?;
//! journal.create_run(&NewRun::new("run-1", "send_message", "send_message::after_click"))?;
//! let intent = journal.record_intent("run-1", "send-hello", &args_hash("{}"), 1)?;
//! assert_eq!(intent.request_key, RequestKey::derive("run-1", "send-hello"));
//! journal.transition(&intent.request_key, Checkpoint::IntentRecorded, Checkpoint::TargetVerified, 1)?;
//! assert_eq!(journal.history("run-1")?.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod checkpoint;
mod effects;
mod schema;
mod sessions;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OpenFlags};

pub use checkpoint::{Checkpoint, InvalidRequestKey, RequestKey, TransitionError, args_hash};
pub use effects::{CheckpointTransition, SideEffectRecord};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};
pub use sessions::{BrowserSessionRecord, NewRun, RemoteSession, RunRecord};

/// How long a writer waits for another process's write transaction before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open journal file. Cheap to clone: clones share one SQLite connection.
///
/// Open one per process with [`Journal::open`]; every method is a short transaction.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    conn: Mutex<Connection>,
    /// This file's entry in [`OPEN_IN_PROCESS`].
    key: PathBuf,
}

/// Journal files this process has SQLite connections to, with their counts.
///
/// SQLite's locks are POSIX advisory locks, which belong to the process: closing ANY file
/// descriptor of the database file drops all of them, whichever connection took them. So
/// once this process has a connection to a journal, nothing else in it may open and close
/// that file by hand — the header inspection of [`Journal::open`] included. (An `abort`-mode
/// trial has the trial's and the worker's connections in one process.)
static OPEN_IN_PROCESS: std::sync::LazyLock<Mutex<std::collections::HashMap<PathBuf, usize>>> =
    std::sync::LazyLock::new(Default::default);

fn open_key(path: &Path) -> PathBuf {
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_owned());
    match path.file_name() {
        Some(name) => parent.join(name),
        None => parent,
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Close the connection first, then let this process inspect the file by hand again.
        if let Ok(placeholder) = Connection::open_in_memory() {
            let conn = self.conn.get_mut().unwrap_or_else(|p| p.into_inner());
            drop(std::mem::replace(conn, placeholder));
        }
        let mut open = OPEN_IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// Opens the journal at `path`, creating it when missing (or empty).
    ///
    /// An existing file is identified from its header before SQLite writes anything: a file
    /// that is not an SQLite database, or is truncated or fails `PRAGMA quick_check`, is
    /// refused with [`JournalErrorKind::Corrupt`]; an SQLite database that is not ours
    /// (`PRAGMA application_id` ≠ [`APPLICATION_ID`]) with [`JournalErrorKind::NotOurs`];
    /// a newer schema with [`JournalErrorKind::UnsupportedVersion`]. A refused file is never
    /// modified, overwritten or deleted.
    pub fn open(path: &Path) -> Result<Journal, JournalError> {
        let key = open_key(path);
        // Held through the whole open: no thread of this process inspects the file by hand
        // while another holds a connection to it.
        let mut open = OPEN_IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
        if !open.contains_key(&key) {
            // Already open in this process: it was inspected then, and a hand-made open and
            // close now would drop the live connections' locks.
            schema::inspect(path)?;
        }
        let sql = |e| JournalError::from_sqlite(path, e);
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(sql)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        conn.pragma_update(None, "foreign_keys", true)
            .map_err(sql)?;
        // The schema and the application id are written in rollback-journal mode, so the
        // main file's header identifies the journal from the first commit on.
        schema::init(&mut conn, path)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(sql)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(JournalError::new(
                path,
                JournalErrorKind::Corrupt {
                    detail: format!("cannot switch to WAL mode (got {mode})"),
                },
            ));
        }
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(sql)?;
        *open.entry(key.clone()).or_insert(0) += 1;
        Ok(Journal {
            inner: Arc::new(Inner {
                path: path.to_owned(),
                conn: Mutex::new(conn),
                key,
            }),
        })
    }

    /// The journal file's path, as given to [`Journal::open`].
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Runs `f` on the connection. A panic in another thread leaves no open transaction
    /// behind (an uncommitted rusqlite transaction rolls back on drop), so poison is ignored.
    pub(crate) fn with_conn<T, E>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, E>,
    ) -> Result<T, E> {
        let mut conn = self
            .inner
            .conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        f(&mut conn)
    }

    /// An error of `kind` about this journal.
    pub(crate) fn error(&self, kind: JournalErrorKind) -> JournalError {
        JournalError::new(self.path(), kind)
    }

    /// Maps an SQLite error on this journal.
    pub(crate) fn sql(&self, e: rusqlite::Error) -> JournalError {
        JournalError::from_sqlite(self.path(), e)
    }
}

/// Milliseconds since the Unix epoch, saturating.
pub(crate) fn now_unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A failure of the journal. Branch on [`JournalError::kind`].
#[derive(Debug, thiserror::Error)]
#[error("failed to {kind} (journal {})", path.display())]
pub struct JournalError {
    path: PathBuf,
    kind: Box<JournalErrorKind>,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
}

impl JournalError {
    pub(crate) fn new(path: &Path, kind: JournalErrorKind) -> JournalError {
        JournalError {
            path: path.to_owned(),
            kind: Box::new(kind),
            source: None,
        }
    }

    /// The error of a write by a worker whose armed step struck.
    pub(crate) fn halted() -> JournalError {
        JournalError::new(Path::new(""), JournalErrorKind::Halted)
    }

    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> JournalError {
        self.source = Some(Box::new(source));
        self
    }

    pub(crate) fn from_sqlite(path: &Path, e: rusqlite::Error) -> JournalError {
        let kind = match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
                JournalErrorKind::Corrupt {
                    detail: "sqlite reports a malformed database".into(),
                }
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => JournalErrorKind::Busy,
            _ => JournalErrorKind::Sqlite,
        };
        JournalError::new(path, kind).with_source(e)
    }

    /// What went wrong.
    pub fn kind(&self) -> &JournalErrorKind {
        &self.kind
    }

    /// The journal file concerned.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The cause of a [`JournalError`]. Messages read after "failed to …".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalErrorKind {
    /// The file exists but is not a browser-fault journal; it was left untouched.
    #[error("open journal: the file is not a browser-fault journal ({detail})")]
    NotOurs {
        /// What identified it as foreign.
        detail: String,
    },
    /// The file is not a database, is truncated, or fails the integrity check; left untouched.
    #[error("open journal: the file is corrupt ({detail})")]
    Corrupt {
        /// What the check found.
        detail: String,
    },
    /// The journal was written by a newer (or unknown) schema version.
    #[error("open journal: unsupported schema version {found} (this build reads 1..={max})", max = SCHEMA_VERSION)]
    UnsupportedVersion {
        /// `PRAGMA user_version` of the file.
        found: u32,
    },
    /// Another process held the database longer than the busy timeout.
    #[error("access journal: the database stayed busy past the timeout")]
    Busy,
    /// An SQLite error (see the source).
    #[error("access journal")]
    Sqlite,
    /// A file-system error (see the source).
    #[error("read journal file")]
    Io,
    /// `create_run` for a run id that exists.
    #[error("create run {run_id}: it already exists")]
    RunExists {
        /// The run id.
        run_id: String,
    },
    /// A run id that the journal does not know.
    #[error("find run {run_id}")]
    UnknownRun {
        /// The run id.
        run_id: String,
    },
    /// `record_browser_session` for a session id that exists.
    #[error("record browser session {browser_session_id}: it already exists")]
    SessionExists {
        /// The session id.
        browser_session_id: String,
    },
    /// The worker's armed step struck: it is being crashed and writes nothing more.
    #[error("write journal: this worker is being crashed at its armed step")]
    Halted,
    /// A browser-session id that the journal does not know.
    #[error("find browser session {browser_session_id}")]
    UnknownSession {
        /// The session id.
        browser_session_id: String,
    },
    /// A request key that the journal does not know.
    #[error("find side effect with request key {request_key}")]
    UnknownRequestKey {
        /// The key.
        request_key: RequestKey,
    },
    /// `record_intent` with arguments that differ from the recorded ones.
    #[error(
        "record intent {effect} of run {run_id}: the arguments changed (recorded hash {recorded}, given {given})"
    )]
    ArgumentsChanged {
        /// The run id.
        run_id: String,
        /// The effect name.
        effect: String,
        /// The recorded args hash.
        recorded: String,
        /// The args hash given now.
        given: String,
    },
    /// `record_intent_with_key` for an effect already recorded under another key.
    #[error(
        "record intent {effect} of run {run_id}: it is recorded under another request key ({recorded})"
    )]
    KeyChanged {
        /// The run id.
        run_id: String,
        /// The effect name.
        effect: String,
        /// The key the journal holds for it.
        recorded: RequestKey,
    },
    /// `record_intent_with_key` with a key another side effect already has.
    #[error("record intent {effect} of run {run_id}: its request key is another side effect's")]
    KeyTaken {
        /// The run id.
        run_id: String,
        /// The effect name.
        effect: String,
    },
    /// A stored value that this build cannot decode.
    #[error("decode journal row: {detail}")]
    InvalidRow {
        /// What was wrong.
        detail: String,
    },
}
