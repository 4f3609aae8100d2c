//! The one way every state file of the project is written and read: the Snowflake reservation,
//! the ticket store's marker and sequence files, and whatever else records how far IDs went.
//!
//! A write replaces the file whole, so that a crash at any point leaves the old contents or the
//! new ones, never neither and never a part: a temporary file beside it (the name with `.tmp`
//! appended), its data fsynced, renamed over the old file, and the directory fsynced so the
//! rename itself survives a power loss. A disk that fills or turns read-only fails the write
//! with the error and leaves the old file as it was.
//!
//! A read tells a file that is not there from one that cannot be trusted: a directory, a link
//! to nothing or a file that is not text are errors that name the path, never "no state yet".
//! A caller that took a dangling link for a missing file would start its IDs from nothing.

use std::ffi::OsString;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The points between the steps of [`replace`], where a crash may stop it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The temporary file exists, empty.
    Created,
    /// The new contents are in the temporary file, perhaps not on the disk yet.
    Written,
    /// The temporary file is on the disk.
    Synced,
    /// The temporary file has the final name; the directory entry may not be on the disk yet.
    Renamed,
}

/// Replaces `path` with `contents`, durably: see the module's documentation.
///
/// # Errors
/// The first step that fails; `path` then holds what it held before.
pub fn replace(path: &Path, contents: &[u8]) -> io::Result<()> {
    replace_stopping(path, contents, |_| Ok(()))
}

/// [`replace`], calling `between` after each [`Step`]; an error from it stops the write there,
/// as a crash would (tests use it to stop the write between any two steps).
///
/// # Errors
/// As [`replace`], or `between`'s error.
pub fn replace_stopping(
    path: &Path,
    contents: &[u8],
    mut between: impl FnMut(Step) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temporary(path);
    let mut file = File::create(&tmp)?;
    between(Step::Created)?;
    file.write_all(contents)?;
    between(Step::Written)?;
    file.sync_all()?;
    between(Step::Synced)?;
    fs::rename(&tmp, path)?;
    between(Step::Renamed)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

/// The temporary file [`replace`] writes first: the whole name with `.tmp` appended (so no
/// choice of name, `..seq` included, makes it the file itself).
pub fn temporary(path: &Path) -> PathBuf {
    beside(path, ".tmp")
}

/// `path` with `suffix` appended to its whole name (`a.state` -> `a.state.lock`).
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    name.into()
}

/// `path` with its symbolic links resolved, the file's own too when it exists: two servers
/// that reach one file by different paths (a link to it, a linked directory) take one lock.
fn resolved(path: &Path) -> PathBuf {
    if let Ok(real) = fs::canonicalize(path) {
        return real;
    }
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return path.to_path_buf();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    fs::canonicalize(dir).map_or_else(|_| path.to_path_buf(), |dir| dir.join(name))
}

/// Locks the state file `path` for this process, through `<path>.lock` (never truncated, and
/// never replaced, as the state file itself is): held while the returned file is open.
///
/// # Errors
/// When the lock file cannot be opened, or another process holds the lock: then `clash` says
/// what two processes on one file would do.
pub fn lock(path: &Path, clash: &str) -> Result<File, String> {
    let lock_path = beside(&resolved(path), ".lock");
    let file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
    file.try_lock().map_err(|_| {
        format!(
            "{} is locked by another running server: {clash}",
            lock_path.display()
        )
    })?;
    Ok(file)
}

/// Why a state file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// Something other than a file is in its place (a directory, a socket, ...).
    NotAFile(PathBuf),
    /// A symbolic link to nothing.
    DanglingLink(PathBuf),
    /// The bytes are not UTF-8 text.
    NotText(PathBuf),
    /// The file system refused.
    Io(PathBuf, io::Error),
}

impl ReadError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::NotAFile(p)
            | ReadError::DanglingLink(p)
            | ReadError::NotText(p)
            | ReadError::Io(p, _) => p,
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotAFile(p) => write!(f, "{} is not a regular file", p.display()),
            ReadError::DanglingLink(p) => {
                write!(f, "{} is a symbolic link to nothing", p.display())
            }
            ReadError::NotText(p) => write!(f, "{} is not text", p.display()),
            ReadError::Io(p, e) => write!(f, "cannot read {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for ReadError {}

/// The text of the state file `path`; `None` when nothing at all is there.
///
/// # Errors
/// [`ReadError`] for anything else that is not a readable text file (a link to a file is read).
pub fn read(path: &Path) -> Result<Option<String>, ReadError> {
    let io = |e| ReadError::Io(path.to_path_buf(), e);
    match fs::symlink_metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
        Ok(_) => {}
    }
    let meta = match fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(ReadError::DanglingLink(path.to_path_buf()))
        }
        other => other.map_err(io)?,
    };
    if !meta.is_file() {
        return Err(ReadError::NotAFile(path.to_path_buf()));
    }
    let bytes = fs::read(path).map_err(io)?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| ReadError::NotText(path.to_path_buf()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory of its own, removed when the test ends (also when it fails).
    fn scratch() -> tempfile::TempDir {
        tempfile::tempdir().unwrap()
    }

    #[test]
    fn one_process_at_a_time_holds_a_state_files_lock() {
        let scratch = scratch();
        let dir = scratch.path();
        let path = dir.join("..state");
        let held = lock(&path, "they would clash").unwrap();
        assert!(
            dir.join("..state.lock").exists(),
            "the whole name, with .lock"
        );
        let err = lock(&path, "they would clash").unwrap_err();
        assert!(
            err.contains("locked by another running server: they would clash"),
            "{err}"
        );
        drop(held);
        assert!(
            lock(&path, "they would clash").is_ok(),
            "let go when closed"
        );
        assert_eq!(temporary(&path), dir.join("..state.tmp"));
    }

    #[test]
    fn a_write_stopped_between_any_two_steps_leaves_the_old_file_or_the_new_one() {
        let scratch = scratch();
        let d = scratch.path();
        let path = d.join("a.state");
        for stop in [Step::Created, Step::Written, Step::Synced, Step::Renamed] {
            replace(&path, b"old\n").unwrap();
            let crash = replace_stopping(&path, b"new\n", |step| {
                if step == stop {
                    Err(io::Error::other("crash"))
                } else {
                    Ok(())
                }
            });
            assert!(crash.is_err());
            let found = read(&path).unwrap().unwrap();
            let want = if stop == Step::Renamed {
                "new\n"
            } else {
                "old\n"
            };
            assert_eq!(found, want, "stopped after {stop:?}");
            // The next write goes through, over whatever the crash left.
            replace(&path, b"next\n").unwrap();
            assert_eq!(read(&path).unwrap().as_deref(), Some("next\n"));
            assert!(!temporary(&path).exists(), "after {stop:?}");
        }
    }

    #[test]
    fn nothing_there_is_none_and_anything_untrustworthy_is_an_error_naming_the_path() {
        let scratch = scratch();
        let d = scratch.path();
        assert!(read(&d.join("absent")).unwrap().is_none());
        let link = d.join("dangling");
        std::os::unix::fs::symlink(d.join("nowhere"), &link).unwrap();
        let not_text = d.join("binary");
        fs::write(&not_text, [0xff, 0xfe, 0]).unwrap();
        for (path, kind) in [
            (d.to_path_buf(), "not a regular file"),
            (link, "link to nothing"),
            (not_text, "not text"),
        ] {
            let err = read(&path).unwrap_err();
            let text = err.to_string();
            assert!(text.contains(kind), "{text}");
            assert!(text.contains(&path.display().to_string()), "{text}");
            assert_eq!(err.path(), path);
        }
        let target = d.join("target");
        fs::write(&target, "7\n").unwrap();
        let good_link = d.join("link");
        std::os::unix::fs::symlink(&target, &good_link).unwrap();
        assert_eq!(read(&good_link).unwrap().as_deref(), Some("7\n"));
    }

    #[test]
    fn a_directory_in_the_place_of_the_file_fails_the_write() {
        let scratch = scratch();
        let d = scratch.path();
        let path = d.join("a.state");
        fs::create_dir(&path).unwrap();
        assert!(replace(&path, b"1\n").is_err());
        assert!(path.is_dir());
    }
}
