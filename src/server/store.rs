//! The `--state` store: the registrations in SQLite (compiled in through rusqlite), one row per
//! registration and role, each change one transaction.
//!
//! Why SQLite: a change writes only the rows it touches, so its cost does not grow with the
//! registry (the JSON file this replaces was rewritten and flushed whole on every change);
//! transactions in write-ahead-log mode with `synchronous = FULL` make a change durable before
//! it is acknowledged and leave the old state or the new one after a crash, never a torn one,
//! with no temporary files; and the file stays readable with the `sqlite3` tool.
//!
//! A JSON state file from an earlier version found at the path is imported once: the rows are
//! written to `<path>.importing` and committed, the JSON file is renamed `<path>.json-imported`,
//! and the new database is renamed into place. A crash between the two renames is finished on
//! the next start. Temporary files the JSON writer left (`<path>.tmp-<pid>`) are removed.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use rusqlite::{Connection, params};

use super::ledger::{self, Entry, Ledger, Op, RoleTools};
use crate::error::{Error, Result};

/// The first bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// The schema version this code writes (`PRAGMA user_version`).
const SCHEMA_VERSION: i64 = 1;

/// The open store.
pub(crate) struct Store {
    conn: Mutex<Connection>,
    path: PathBuf,
}

/// What opening found.
pub(crate) struct Opened {
    pub store: Store,
    pub ledger: Ledger,
    /// Where the imported JSON state file was kept, when one was imported now.
    pub imported: Option<PathBuf>,
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

fn input(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::input(path.display().to_string(), message.to_string())
}

/// Opens (or creates) the store at `path` for `roles`, importing a JSON state file found there.
pub(crate) fn open(path: &Path, roles: &[String]) -> Result<Opened> {
    remove_stale_temporaries(path);
    let importing = sibling(path, ".importing");
    let kept = sibling(path, ".json-imported");
    if !path.exists() && importing.exists() && kept.exists() {
        // The import committed and the JSON file was renamed: finish the last step.
        std::fs::rename(&importing, path)
            .map_err(|e| input(path, format!("cannot finish importing the state file: {e}")))?;
    }
    let _ = std::fs::remove_file(&importing);
    let mut imported = None;
    let json = is_json_file(path)?;
    if !json {
        // Nothing is written to a database that is not ours, damaged or of another version.
        check_existing(path)?;
    }
    if json {
        let old = ledger::load(path, roles)?;
        {
            let conn = connect(&importing, false)?;
            let mut rows = Vec::new();
            for r in &old.roles {
                rows.extend(r.entries.iter().map(|e| (r.role.clone(), e.clone())));
            }
            for orphan in &old.orphans {
                let mut fields = orphan.clone();
                let role = fields
                    .as_object_mut()
                    .and_then(|o| o.remove("role"))
                    .and_then(|r| r.as_str().map(str::to_owned))
                    .unwrap_or_default();
                if let Ok(entry) = serde_json::from_value::<Entry>(fields) {
                    rows.push((role, entry));
                }
            }
            insert_all(&conn, &rows).map_err(|e| input(path, e))?;
            conn.close()
                .map_err(|(_, e)| input(path, format!("cannot close the import: {e}")))?;
        }
        std::fs::rename(path, &kept)
            .map_err(|e| input(path, format!("cannot keep the JSON state file: {e}")))?;
        std::fs::rename(&importing, path)
            .map_err(|e| input(path, format!("cannot put the imported state in place: {e}")))?;
        imported = Some(kept);
    }
    let conn = connect(path, true)?;
    let ledger = read(&conn, roles).map_err(|e| input(path, e))?;
    Ok(Opened {
        store: Store {
            conn: Mutex::new(conn),
            path: path.to_owned(),
        },
        ledger,
        imported,
    })
}

/// Checks, read-only, a SQLite database already at `path` before anything is written to it:
/// one that cannot be read is reported damaged; one holding other tables and not ours, or of
/// another schema version, is refused, and stays as it was (no table added, no WAL switch).
fn check_existing(path: &Path) -> Result<()> {
    use rusqlite::OpenFlags;
    match std::fs::metadata(path) {
        Ok(m) if m.len() > 0 => {}
        _ => return Ok(()),
    }
    let damaged = |e: rusqlite::Error| {
        input(
            path,
            format!(
                "the state database is damaged or unreadable ({e}); move it away or restore a copy"
            ),
        )
    };
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(damaged)?;
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(damaged)?;
    if check != "ok" {
        return Err(input(
            path,
            format!("the state database is damaged ({check}); move it away or restore a copy"),
        ));
    }
    let mut tables = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .map_err(damaged)?;
    let names: Vec<String> = tables
        .query_map([], |r| r.get(0))
        .map_err(damaged)?
        .collect::<std::result::Result<_, _>>()
        .map_err(damaged)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(damaged)?;
    let ours = names.iter().all(|n| n == "registration");
    if !ours || !(version == 0 || version == SCHEMA_VERSION) {
        return Err(input(
            path,
            format!(
                "this SQLite database is not a toolwire state file (tables: {}; version {version}): \
                 left unchanged; give --state a new path",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
        ));
    }
    Ok(())
}

/// Whether `path` holds a JSON state file of an earlier version. Missing and empty files and
/// SQLite databases are not; anything else that does not start as a JSON object is refused.
fn is_json_file(path: &Path) -> Result<bool> {
    use std::io::Read;
    let mut file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(input(path, format!("cannot read the state file: {e}"))),
    };
    let mut head = Vec::with_capacity(SQLITE_MAGIC.len());
    file.by_ref()
        .take(SQLITE_MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| input(path, format!("cannot read the state file: {e}")))?;
    if head.is_empty() || head == SQLITE_MAGIC {
        return Ok(false);
    }
    if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return Ok(true);
    }
    Err(input(
        path,
        "not a toolwire state file: neither a SQLite database nor a JSON state file; left \
         unchanged",
    ))
}

/// Removes `<name>.tmp-<pid>` files beside `path` that the JSON writer of earlier versions left
/// when it was killed mid-write.
fn remove_stale_temporaries(path: &Path) {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let Ok(list) = std::fs::read_dir(&dir) else {
        return;
    };
    let prefix = format!("{name}.tmp-");
    for item in list.flatten() {
        let file = item.file_name();
        if let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix))
            && !rest.is_empty()
            && rest.bytes().all(|b| b.is_ascii_digit())
        {
            let _ = std::fs::remove_file(item.path());
        }
    }
}

/// Opens the database and creates the table; `wal` for the live store.
fn connect(path: &Path, wal: bool) -> Result<Connection> {
    let fail = |e: rusqlite::Error| input(path, format!("cannot open the state database: {e}"));
    let conn = Connection::open(path).map_err(fail)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(fail)?;
    if wal {
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(input(
                path,
                format!("the database refused WAL mode ({mode})"),
            ));
        }
    }
    conn.execute_batch(
        "PRAGMA synchronous = FULL;
         CREATE TABLE IF NOT EXISTS registration (
             role TEXT NOT NULL,
             name TEXT NOT NULL,
             seq INTEGER NOT NULL,
             source TEXT NOT NULL,
             entry TEXT NOT NULL,
             PRIMARY KEY (role, name)
         );
         CREATE INDEX IF NOT EXISTS registration_source ON registration (role, source);
         CREATE INDEX IF NOT EXISTS registration_seq ON registration (seq);",
    )
    .map_err(fail)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(fail)?;
    match version {
        0 => conn
            .execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))
            .map_err(fail)?,
        SCHEMA_VERSION => {}
        other => {
            return Err(input(
                path,
                format!(
                    "the state database has version {other}; this toolwire reads version {SCHEMA_VERSION}"
                ),
            ));
        }
    }
    Ok(conn)
}

fn insert_all(conn: &Connection, rows: &[(String, Entry)]) -> std::result::Result<(), String> {
    let tx = conn.unchecked_transaction().map_err(|e| e.to_string())?;
    {
        let mut insert = tx
            .prepare(
                "INSERT INTO registration (role, name, seq, source, entry) VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (role, name) DO UPDATE SET source = excluded.source, entry = excluded.entry",
            )
            .map_err(|e| e.to_string())?;
        for (i, (role, entry)) in rows.iter().enumerate() {
            let text = serde_json::to_string(entry).map_err(|e| e.to_string())?;
            insert
                .execute(params![role, entry.name, i as i64, entry.source, text])
                .map_err(|e| e.to_string())?;
        }
    }
    tx.commit().map_err(|e| e.to_string())
}

/// The registrations of `roles`, in the order they came (rows of other roles stay in the
/// table untouched).
fn read(conn: &Connection, roles: &[String]) -> std::result::Result<Ledger, String> {
    let mut ledger = Ledger::new(roles);
    let mut select = conn
        .prepare("SELECT role, name, entry FROM registration ORDER BY seq")
        .map_err(|e| e.to_string())?;
    let rows = select
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })
        .map_err(|e| e.to_string())?;
    for row in rows {
        let (role, name, text) = row.map_err(|e| e.to_string())?;
        let Some(slot) = ledger.roles.iter_mut().find(|r| r.role == role) else {
            continue;
        };
        let entry: Entry = serde_json::from_str(&text)
            .map_err(|e| format!("registration {name:?} of role {role:?}: {e}"))?;
        entry.check().map_err(|e| match e {
            Error::Input { path, message } => {
                format!("registration {name:?} of role {role:?}: {path}: {message}")
            }
            other => format!("registration {name:?} of role {role:?}: {other}"),
        })?;
        push(slot, entry);
    }
    Ok(ledger)
}

fn push(slot: &mut RoleTools, entry: Entry) {
    match slot.entries.iter_mut().find(|e| e.name == entry.name) {
        Some(old) => *old = entry,
        None => slot.entries.push(entry),
    }
}

impl Store {
    /// Writes `op` for the roles `targets` in one transaction; nothing is changed on error.
    pub(super) fn apply(&self, op: &Op, targets: &[String]) -> Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        let fail = |e: rusqlite::Error| {
            input(
                &self.path,
                format!("the state database could not be written ({e}); nothing was changed"),
            )
        };
        // Immediate: the write lock is taken first (waiting for another writer up to the busy
        // timeout), so the transaction never fails halfway on an upgrade.
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(fail)?;
        match op {
            Op::Register(entry) => {
                let text = serde_json::to_string(entry)
                    .map_err(|e| input(&self.path, format!("cannot write the entry: {e}")))?;
                let next: i64 = tx
                    .query_row(
                        "SELECT COALESCE(MAX(seq), 0) + 1 FROM registration",
                        [],
                        |r| r.get(0),
                    )
                    .map_err(fail)?;
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO registration (role, name, seq, source, entry)
                         VALUES (?1, ?2, ?3, ?4, ?5)
                         ON CONFLICT (role, name) DO UPDATE
                         SET source = excluded.source, entry = excluded.entry",
                    )
                    .map_err(fail)?;
                for role in targets {
                    insert
                        .execute(params![role, entry.name, next, entry.source, text])
                        .map_err(fail)?;
                }
            }
            Op::Unregister { name, .. } => {
                let mut delete = tx
                    .prepare_cached("DELETE FROM registration WHERE role = ?1 AND name = ?2")
                    .map_err(fail)?;
                for role in targets {
                    delete.execute(params![role, name]).map_err(fail)?;
                }
            }
            Op::Clear { source, .. } => {
                let mut delete = tx
                    .prepare_cached("DELETE FROM registration WHERE role = ?1 AND source = ?2")
                    .map_err(fail)?;
                for role in targets {
                    delete.execute(params![role, source]).map_err(fail)?;
                }
            }
        }
        tx.commit().map_err(fail)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("tw-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir.join("state.db")
    }

    fn message(e: Error) -> String {
        e.to_string()
    }

    #[test]
    fn an_unrelated_sqlite_database_is_refused_and_left_unchanged() {
        let path = scratch("unrelated");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (1);",
            )
            .unwrap();
        }
        let before = std::fs::read(&path).unwrap();
        let err = message(open(&path, &["r".to_owned()]).err().unwrap());
        assert!(
            err.contains("not a toolwire state file") && err.contains("invoices"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before, "the file changed");
        assert!(!sibling(&path, "-wal").exists());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_damaged_database_is_reported_damaged_and_a_foreign_file_refused() {
        let path = scratch("damaged");
        // Our own store, then its pages overwritten past the header.
        drop(open(&path, &["r".to_owned()]).map(|o| o.store).unwrap());
        let mut bytes = std::fs::read(&path).unwrap();
        for b in bytes.iter_mut().skip(100) {
            *b = 0xA5;
        }
        std::fs::write(&path, &bytes).unwrap();
        let _ = std::fs::remove_file(sibling(&path, "-wal"));
        let _ = std::fs::remove_file(sibling(&path, "-shm"));
        let err = message(open(&path, &["r".to_owned()]).err().unwrap());
        assert!(err.contains("damaged"), "{err}");
        assert!(!err.contains("JSON"), "{err}");
        // Neither SQLite nor JSON: refused, not read as the old JSON format, unchanged.
        std::fs::write(&path, b"PNG\x00 certainly not ours").unwrap();
        let err = message(open(&path, &["r".to_owned()]).err().unwrap());
        assert!(
            err.contains("neither a SQLite database nor a JSON"),
            "{err}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"PNG\x00 certainly not ours");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
