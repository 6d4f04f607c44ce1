//! The gateway's state key: what seals the provider state it hands to clients in call ids
//! ([`crate::seal`]). From the config ([`super::ServerConfig::state_key`], which
//! `toolwire serve` fills from `TOOLWIRE_STATE_KEY`); else a key kept beside the state file
//! (`<state file>.key`, made on first start with 32 random bytes, owner-only); else random per
//! process (a restart then refuses the ids of conversations in flight). Instances behind one
//! load balancer must share one key.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::seal::Seal;

/// The key file kept beside a state file.
pub(crate) fn key_path(state: &Path) -> PathBuf {
    let mut name = state.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// The seal of this server: from `given`, else the key file beside `state`, else random.
pub(crate) fn resolve(given: Option<&str>, state: Option<&Path>) -> Result<Seal> {
    if let Some(key) = given {
        return Seal::new(key.trim().as_bytes());
    }
    match state {
        Some(state) => from_file(&key_path(state)),
        None => Seal::new(random()?),
    }
}

fn random() -> Result<[u8; 32]> {
    let mut key = [0_u8; 32];
    getrandom::fill(&mut key)
        .map_err(|e| Error::input("state_key", format!("no random bytes from the OS: {e}")))?;
    Ok(key)
}

/// The key in `path`, made (32 random bytes as hex, owner-only) when the file is missing.
fn from_file(path: &Path) -> Result<Seal> {
    let at = || path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => Seal::new(text.trim().as_bytes())
            .map_err(|e| Error::input(at(), format!("the state key file: {e}"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let key: String = random()?.iter().map(|b| format!("{b:02x}")).collect();
            write_new(path, &key)
                .map_err(|e| Error::input(at(), format!("cannot write the state key file: {e}")))?;
            // Another process may have made it first: take what is there.
            let text = std::fs::read_to_string(path)
                .map_err(|e| Error::input(at(), format!("cannot read: {e}")))?;
            Seal::new(text.trim().as_bytes())
        }
        Err(e) => Err(Error::input(at(), format!("cannot read: {e}"))),
    }
}

fn write_new(path: &Path, key: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(path) {
        Ok(mut file) => {
            file.write_all(key.as_bytes())?;
            file.write_all(b"\n")
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_made_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("tw-state-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let state = dir.join("state.db");
        let key = key_path(&state);
        let _ = std::fs::remove_file(&key);
        resolve(None, Some(&state)).unwrap();
        let first = std::fs::read_to_string(&key).unwrap();
        assert_eq!(first.trim().len(), 64, "{first}");
        resolve(None, Some(&state)).unwrap();
        assert_eq!(std::fs::read_to_string(&key).unwrap(), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&key).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        std::fs::write(&key, "short\n").unwrap();
        let err = resolve(None, Some(&state)).unwrap_err().to_string();
        assert!(err.contains("state.db.key"), "{err}");
        assert!(resolve(Some("tiny"), None).is_err());
        assert!(resolve(Some("0123456789abcdef0123"), None).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
