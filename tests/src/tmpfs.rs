//! A small file system of its own (a tmpfs), for tests of a disk that fills or turns read-only.
//! Mounting needs root, as `make test` runs here; the test fails saying so otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{data_dir, TempDir};

/// A tmpfs mounted on a fresh directory; unmounted on drop, before the directory is removed.
pub struct Tmpfs {
    // Dropped after the mount (fields drop in order): the directory outlives it.
    mount: PathBuf,
    _dir: TempDir,
}

impl Tmpfs {
    /// A tmpfs of `size` (as mount takes it: `64k`, `1m`) on a directory named after `name`.
    ///
    /// # Panics
    /// When it cannot be mounted (not root).
    pub fn mount(name: &str, size: &str) -> Tmpfs {
        let dir = data_dir(name);
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.as_os_str())
            .status()
            .map(|s| s.success());
        assert!(
            matches!(mounted, Ok(true)),
            "this test mounts a tmpfs and needs root"
        );
        Tmpfs {
            mount: dir.to_path_buf(),
            _dir: dir,
        }
    }

    /// Fills every free byte with a file named `filler`; returns its path.
    pub fn fill(&self) -> PathBuf {
        use std::io::Write;
        let filler = self.mount.join("filler");
        let mut file = std::fs::File::create(&filler).expect("create the filler");
        while file.write_all(&[0u8; 4096]).is_ok() {}
        while file.write_all(&[0u8]).is_ok() {}
        let _ = file.sync_all();
        filler
    }

    /// Remounts it read-only (`false`) or read-write (`true`).
    pub fn set_writable(&self, writable: bool) {
        let option = if writable { "remount,rw" } else { "remount,ro" };
        let ok = Command::new("mount")
            .args(["-o", option])
            .arg(&self.mount)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mount -o {option} {}", self.mount.display());
    }
}

impl std::ops::Deref for Tmpfs {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.mount
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}
