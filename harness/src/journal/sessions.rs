//! Runs and browser-session records.

use std::path::PathBuf;

use rusqlite::{OptionalExtension, Row, params};
use serde::{Deserialize, Serialize};

use super::{Checkpoint, Journal, JournalError, JournalErrorKind, now_unix_ms};
use crate::liveness;

/// A run to create: one execution of a scenario across its workers.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewRun {
    /// The run's unique id.
    pub run_id: String,
    /// The scenario's name.
    pub scenario: String,
    /// The trial's stable name (`scenario::boundary[::variant]`).
    pub trial: String,
}

impl NewRun {
    /// A run with these ids.
    pub fn new(
        run_id: impl Into<String>,
        scenario: impl Into<String>,
        trial: impl Into<String>,
    ) -> NewRun {
        NewRun {
            run_id: run_id.into(),
            scenario: scenario.into(),
            trial: trial.into(),
        }
    }
}

/// A run as stored, with the process that owns it (for the orphan sweep's "dead run").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunRecord {
    /// The run's unique id.
    pub run_id: String,
    /// The scenario's name.
    pub scenario: String,
    /// The trial's stable name.
    pub trial: String,
    /// The pid of the process that created the run.
    pub owner_pid: u32,
    /// That process's start time in clock ticks, to tell a reused pid apart.
    pub owner_start_ticks: Option<u64>,
    /// The host the owner runs on.
    pub owner_host: String,
    /// When the run was created.
    pub started_unix_ms: u64,
    /// When [`Journal::finish_run`] was called, if it was.
    pub finished_unix_ms: Option<u64>,
}

impl RunRecord {
    /// Whether the run's owner process is gone: it ran on this host and its pid is dead
    /// (or now belongs to another process). A run on another host is never called dead.
    pub fn owner_dead(&self) -> bool {
        self.owner_host == liveness::host_name()
            && !liveness::owner_alive(self.owner_pid, self.owner_start_ticks)
    }
}

/// Identity of a browser session, written before the browser launches. Identity is never
/// inferred from a directory name: a recovery worker compares the live browser with this.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BrowserSessionRecord {
    /// The run the session belongs to.
    pub run_id: String,
    /// The session's unique id.
    pub browser_session_id: String,
    /// The profile (user-data-dir) the browser uses.
    pub profile_path: PathBuf,
    /// The origin the session must be on.
    pub expected_origin: String,
    /// What identifies the expected account on the page.
    pub expected_account_marker: String,
    /// The profile's owner-marker generation when the session was recorded.
    pub profile_generation: u64,
    /// The last checkpoint this session reached, if any.
    pub last_checkpoint: Option<Checkpoint>,
    /// The worker incarnation that owns the session.
    pub incarnation: u32,
    /// The session as a remote WebDriver endpoint (a grid) knows it, once it was created
    /// there: on a grid the browser outlives a killed worker, and this is how it is found.
    pub remote: Option<RemoteSession>,
}

/// A WebDriver session on a remote endpoint, as journaled once the endpoint created it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RemoteSession {
    /// The endpoint's URL (a grid's hub).
    pub endpoint: String,
    /// The WebDriver session id the endpoint gave.
    pub session_id: String,
}

impl BrowserSessionRecord {
    /// A record with no checkpoint reached yet.
    pub fn new(
        run_id: impl Into<String>,
        browser_session_id: impl Into<String>,
        profile_path: impl Into<PathBuf>,
        expected_origin: impl Into<String>,
        expected_account_marker: impl Into<String>,
        profile_generation: u64,
        incarnation: u32,
    ) -> BrowserSessionRecord {
        BrowserSessionRecord {
            run_id: run_id.into(),
            browser_session_id: browser_session_id.into(),
            profile_path: profile_path.into(),
            expected_origin: expected_origin.into(),
            expected_account_marker: expected_account_marker.into(),
            profile_generation,
            last_checkpoint: None,
            incarnation,
            remote: None,
        }
    }
}

impl Journal {
    /// Creates a run owned by this process (pid, start time and host are recorded).
    pub fn create_run(&self, run: &NewRun) -> Result<(), JournalError> {
        let pid = std::process::id();
        let ticks = liveness::process_start_ticks(pid);
        let host = liveness::host_name();
        self.with_conn(|conn| {
            let inserted = conn
                .execute(
                    "INSERT INTO runs (run_id, scenario, trial, owner_pid, owner_start_ticks,
                        owner_host, started_unix_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
                     ON CONFLICT (run_id) DO NOTHING",
                    params![
                        run.run_id,
                        run.scenario,
                        run.trial,
                        pid,
                        ticks,
                        host,
                        now_unix_ms()
                    ],
                )
                .map_err(|e| self.sql(e))?;
            if inserted == 0 {
                return Err(self.error(JournalErrorKind::RunExists {
                    run_id: run.run_id.clone(),
                }));
            }
            Ok(())
        })
    }

    /// The run with this id, if any.
    pub fn run(&self, run_id: &str) -> Result<Option<RunRecord>, JournalError> {
        self.with_conn(|conn| {
            conn.query_row(
                "SELECT run_id, scenario, trial, owner_pid, owner_start_ticks, owner_host,
                    started_unix_ms, finished_unix_ms FROM runs WHERE run_id = ?1",
                [run_id],
                |r| {
                    Ok(RunRecord {
                        run_id: r.get(0)?,
                        scenario: r.get(1)?,
                        trial: r.get(2)?,
                        owner_pid: r.get(3)?,
                        owner_start_ticks: r.get(4)?,
                        owner_host: r.get(5)?,
                        started_unix_ms: r.get(6)?,
                        finished_unix_ms: r.get(7)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sql(e))
        })
    }

    /// Marks the run finished (idempotent: the first finish time is kept).
    pub fn finish_run(&self, run_id: &str) -> Result<(), JournalError> {
        self.with_conn(|conn| {
            let n = conn
                .execute(
                    "UPDATE runs SET finished_unix_ms = coalesce(finished_unix_ms, ?2)
                     WHERE run_id = ?1",
                    params![run_id, now_unix_ms()],
                )
                .map_err(|e| self.sql(e))?;
            if n == 0 {
                return Err(self.error(JournalErrorKind::UnknownRun {
                    run_id: run_id.to_owned(),
                }));
            }
            Ok(())
        })
    }

    /// Records a browser session. Call it before the browser launches; the run must exist
    /// and the session id must be new.
    pub fn record_browser_session(&self, rec: &BrowserSessionRecord) -> Result<(), JournalError> {
        let path = rec.profile_path.to_str().ok_or_else(|| {
            self.error(JournalErrorKind::InvalidRow {
                detail: format!("profile path {} is not UTF-8", rec.profile_path.display()),
            })
        })?;
        self.with_conn(|conn| {
            let tx = conn.transaction().map_err(|e| self.sql(e))?;
            let run_known = tx
                .query_row(
                    "SELECT 1 FROM runs WHERE run_id = ?1",
                    [&rec.run_id],
                    |_| Ok(()),
                )
                .optional()
                .map_err(|e| self.sql(e))?;
            if run_known.is_none() {
                return Err(self.error(JournalErrorKind::UnknownRun {
                    run_id: rec.run_id.clone(),
                }));
            }
            let inserted = tx
                .execute(
                    "INSERT INTO browser_sessions (browser_session_id, run_id, profile_path,
                        expected_origin, expected_account_marker, profile_generation,
                        last_checkpoint, incarnation, recorded_unix_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT (browser_session_id) DO NOTHING",
                    params![
                        rec.browser_session_id,
                        rec.run_id,
                        path,
                        rec.expected_origin,
                        rec.expected_account_marker,
                        rec.profile_generation,
                        rec.last_checkpoint.map(Checkpoint::as_str),
                        rec.incarnation,
                        now_unix_ms()
                    ],
                )
                .map_err(|e| self.sql(e))?;
            if inserted == 0 {
                return Err(self.error(JournalErrorKind::SessionExists {
                    browser_session_id: rec.browser_session_id.clone(),
                }));
            }
            tx.commit().map_err(|e| self.sql(e))
        })
    }

    /// The run's browser sessions, in the order they were recorded.
    pub fn browser_sessions(
        &self,
        run_id: &str,
    ) -> Result<Vec<BrowserSessionRecord>, JournalError> {
        self.with_conn(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT run_id, browser_session_id, profile_path, expected_origin,
                        expected_account_marker, profile_generation, last_checkpoint, incarnation,
                        webdriver_url, webdriver_session_id
                     FROM browser_sessions WHERE run_id = ?1 ORDER BY rowid",
                )
                .map_err(|e| self.sql(e))?;
            let rows = stmt
                .query_map([run_id], session_row)
                .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
                .map_err(|e| self.sql(e))?;
            rows.into_iter()
                .map(|(rec, state)| self.with_checkpoint(rec, state))
                .collect()
        })
    }

    /// Records the WebDriver session a remote endpoint created for a recorded browser
    /// session, durably, before the worker drives it.
    pub fn set_remote_session(
        &self,
        browser_session_id: &str,
        endpoint: &str,
        webdriver_session_id: &str,
    ) -> Result<(), JournalError> {
        self.with_conn(|conn| {
            let n = conn
                .execute(
                    "UPDATE browser_sessions SET webdriver_url = ?2, webdriver_session_id = ?3
                     WHERE browser_session_id = ?1",
                    params![browser_session_id, endpoint, webdriver_session_id],
                )
                .map_err(|e| self.sql(e))?;
            if n == 0 {
                return Err(self.error(JournalErrorKind::UnknownSession {
                    browser_session_id: browser_session_id.to_owned(),
                }));
            }
            Ok(())
        })
    }

    /// Records the last checkpoint a browser session reached.
    pub fn set_session_checkpoint(
        &self,
        browser_session_id: &str,
        checkpoint: Checkpoint,
    ) -> Result<(), JournalError> {
        self.with_conn(|conn| {
            let n = conn
                .execute(
                    "UPDATE browser_sessions SET last_checkpoint = ?2 WHERE browser_session_id = ?1",
                    params![browser_session_id, checkpoint.as_str()],
                )
                .map_err(|e| self.sql(e))?;
            if n == 0 {
                return Err(self.error(JournalErrorKind::UnknownSession {
                    browser_session_id: browser_session_id.to_owned(),
                }));
            }
            Ok(())
        })
    }

    fn with_checkpoint(
        &self,
        mut rec: BrowserSessionRecord,
        state: Option<String>,
    ) -> Result<BrowserSessionRecord, JournalError> {
        rec.last_checkpoint = state.map(|s| self.decode_checkpoint(&s)).transpose()?;
        Ok(rec)
    }

    /// Decodes a stored checkpoint name.
    pub(crate) fn decode_checkpoint(&self, name: &str) -> Result<Checkpoint, JournalError> {
        Checkpoint::from_name(name).ok_or_else(|| {
            self.error(JournalErrorKind::InvalidRow {
                detail: format!("unknown checkpoint {name:?}"),
            })
        })
    }
}

fn session_row(r: &Row<'_>) -> rusqlite::Result<(BrowserSessionRecord, Option<String>)> {
    Ok((
        BrowserSessionRecord {
            run_id: r.get(0)?,
            browser_session_id: r.get(1)?,
            profile_path: PathBuf::from(r.get::<_, String>(2)?),
            expected_origin: r.get(3)?,
            expected_account_marker: r.get(4)?,
            profile_generation: r.get(5)?,
            last_checkpoint: None,
            incarnation: r.get(7)?,
            remote: match (
                r.get::<_, Option<String>>(8)?,
                r.get::<_, Option<String>>(9)?,
            ) {
                (Some(endpoint), Some(session_id)) => Some(RemoteSession {
                    endpoint,
                    session_id,
                }),
                _ => None,
            },
        },
        r.get(6)?,
    ))
}
