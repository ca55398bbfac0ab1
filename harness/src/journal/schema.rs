//! The journal's file format: identification, refusal of foreign or corrupt files, and the schema.

use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, TransactionBehavior};

use super::{JournalError, JournalErrorKind};

/// `PRAGMA application_id` of a browser-fault journal: `"bFJ1"`.
pub const APPLICATION_ID: u32 = 0x6246_4a31;
/// `PRAGMA user_version` of the schema this code writes.
pub const SCHEMA_VERSION: u32 = 2;

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

const CHECKPOINTS: &str =
    "('INTENT_RECORDED','TARGET_VERIFIED','ACTION_SUBMITTED','REMOTE_CONFIRMED','UNKNOWN')";

fn ddl() -> String {
    format!(
        "CREATE TABLE runs (
            run_id TEXT PRIMARY KEY NOT NULL,
            scenario TEXT NOT NULL,
            trial TEXT NOT NULL,
            owner_pid INTEGER NOT NULL,
            owner_start_ticks INTEGER,
            owner_host TEXT NOT NULL,
            started_unix_ms INTEGER NOT NULL,
            finished_unix_ms INTEGER
        ) STRICT;
        CREATE TABLE browser_sessions (
            browser_session_id TEXT PRIMARY KEY NOT NULL,
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            profile_path TEXT NOT NULL,
            expected_origin TEXT NOT NULL,
            expected_account_marker TEXT NOT NULL,
            profile_generation INTEGER NOT NULL,
            last_checkpoint TEXT CHECK (last_checkpoint IS NULL OR last_checkpoint IN {CHECKPOINTS}),
            incarnation INTEGER NOT NULL,
            recorded_unix_ms INTEGER NOT NULL,
            webdriver_url TEXT,
            webdriver_session_id TEXT
        ) STRICT;
        CREATE INDEX browser_sessions_by_run ON browser_sessions(run_id);
        CREATE TABLE side_effects (
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            effect TEXT NOT NULL,
            request_key TEXT NOT NULL UNIQUE,
            args_hash TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN {CHECKPOINTS}),
            incarnation INTEGER NOT NULL,
            PRIMARY KEY (run_id, effect)
        ) STRICT;
        CREATE TABLE checkpoint_history (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL REFERENCES runs(run_id),
            request_key TEXT NOT NULL REFERENCES side_effects(request_key),
            effect TEXT NOT NULL,
            from_state TEXT CHECK (from_state IS NULL OR from_state IN {CHECKPOINTS}),
            to_state TEXT NOT NULL CHECK (to_state IN {CHECKPOINTS}),
            incarnation INTEGER NOT NULL,
            at_unix_ms INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX checkpoint_history_by_run ON checkpoint_history(run_id, seq);
        CREATE TRIGGER checkpoint_history_no_update BEFORE UPDATE ON checkpoint_history
            BEGIN SELECT RAISE(ABORT, 'checkpoint history is append-only'); END;
        CREATE TRIGGER checkpoint_history_no_delete BEFORE DELETE ON checkpoint_history
            BEGIN SELECT RAISE(ABORT, 'checkpoint history is append-only'); END;
        CREATE TABLE leases (
            profile_path TEXT PRIMARY KEY NOT NULL,
            run_id TEXT NOT NULL,
            incarnation INTEGER NOT NULL,
            pid INTEGER NOT NULL,
            pid_start_ticks INTEGER,
            host TEXT NOT NULL,
            generation INTEGER NOT NULL CHECK (generation >= 1),
            acquired_unix_ms INTEGER NOT NULL,
            expires_unix_ms INTEGER NOT NULL,
            released INTEGER NOT NULL DEFAULT 0 CHECK (released IN (0, 1))
        ) STRICT;
        CREATE TABLE cleanup_claims (
            profile_path TEXT PRIMARY KEY NOT NULL,
            state TEXT NOT NULL CHECK (state IN
                ('pending','cleaning','cleaned','failed_unsafe','failed_operational')),
            claimant TEXT,
            claimant_pid INTEGER,
            claimant_start_ticks INTEGER,
            reason TEXT,
            updated_unix_ms INTEGER NOT NULL
        ) STRICT;
        PRAGMA application_id = {APPLICATION_ID};
        PRAGMA user_version = {SCHEMA_VERSION};"
    )
}

/// What the bytes on disk say before SQLite touches the file.
pub(super) enum Existing {
    /// No file, or an empty one: the journal is created.
    New,
    /// A file that carries our application id and a supported schema version.
    Ours,
}

/// Identifies the file at `path` from its header alone, without opening it for writing,
/// then (for our files) runs a read-only `PRAGMA quick_check`.
pub(super) fn inspect(path: &Path) -> Result<Existing, JournalError> {
    let err = |kind| JournalError::new(path, kind);
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::New),
        Err(e) => return Err(err(JournalErrorKind::Io).with_source(e)),
    };
    let meta = file
        .metadata()
        .map_err(|e| err(JournalErrorKind::Io).with_source(e))?;
    if !meta.is_file() {
        return Err(err(JournalErrorKind::NotOurs {
            detail: "not a regular file".into(),
        }));
    }
    if meta.len() == 0 {
        return Ok(Existing::New);
    }
    let mut header = [0u8; 100];
    if meta.len() < 100 {
        return Err(err(JournalErrorKind::Corrupt {
            detail: format!("{} bytes, shorter than an SQLite header", meta.len()),
        }));
    }
    file.read_exact(&mut header)
        .map_err(|e| err(JournalErrorKind::Io).with_source(e))?;
    if &header[..16] != SQLITE_MAGIC {
        return Err(err(JournalErrorKind::Corrupt {
            detail: "not an SQLite database".into(),
        }));
    }
    let be32 = |at: usize| {
        u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    let application_id = be32(68);
    if application_id != APPLICATION_ID {
        return Err(err(JournalErrorKind::NotOurs {
            detail: format!(
                "application_id {application_id:#010x}, expected {APPLICATION_ID:#010x}"
            ),
        }));
    }
    let version = be32(60);
    if version == 0 || version > SCHEMA_VERSION {
        return Err(err(JournalErrorKind::UnsupportedVersion { found: version }));
    }
    // The in-header page count is valid when the change counter matches version-valid-for.
    let page_size = match u16::from_be_bytes([header[16], header[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    if be32(24) == be32(92) && meta.len() < page_size * u64::from(be32(28)) {
        return Err(err(JournalErrorKind::Corrupt {
            detail: format!(
                "truncated: the header counts {} pages of {page_size} bytes, the file has {} bytes",
                be32(28),
                meta.len()
            ),
        }));
    }
    drop(file);
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| JournalError::from_sqlite(path, e))?;
    let mut check = conn
        .prepare("PRAGMA quick_check")
        .map_err(|e| JournalError::from_sqlite(path, e))?;
    let problems: Vec<String> = check
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| JournalError::from_sqlite(path, e))?;
    if problems != ["ok"] {
        return Err(err(JournalErrorKind::Corrupt {
            detail: problems.into_iter().take(3).collect::<Vec<_>>().join("; "),
        }));
    }
    Ok(Existing::Ours)
}

/// Creates the schema in an empty database, or checks the identity of an existing one,
/// inside one immediate transaction (several processes may open a new journal at once).
pub(super) fn init(conn: &mut Connection, path: &Path) -> Result<(), JournalError> {
    let sql = |e| JournalError::from_sqlite(path, e);
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let application_id: u32 = tx
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(sql)?;
    if application_id == 0 {
        let objects: u32 = tx
            .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
            .map_err(sql)?;
        if objects != 0 {
            return Err(JournalError::new(
                path,
                JournalErrorKind::NotOurs {
                    detail: "an SQLite database without our application_id".into(),
                },
            ));
        }
        tx.execute_batch(&ddl()).map_err(sql)?;
    } else if application_id != APPLICATION_ID {
        return Err(JournalError::new(
            path,
            JournalErrorKind::NotOurs {
                detail: format!("application_id {application_id:#010x}"),
            },
        ));
    } else {
        let version: u32 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        if version == 0 || version > SCHEMA_VERSION {
            return Err(JournalError::new(
                path,
                JournalErrorKind::UnsupportedVersion { found: version },
            ));
        }
        if version == 1 {
            // Version 2 journals the WebDriver session a remote endpoint gave each browser.
            tx.execute_batch(
                "ALTER TABLE browser_sessions ADD COLUMN webdriver_url TEXT;
                 ALTER TABLE browser_sessions ADD COLUMN webdriver_session_id TEXT;
                 PRAGMA user_version = 2;",
            )
            .map_err(sql)?;
        }
    }
    tx.commit().map_err(sql)
}
