//! A small ext4 file system of its own (an image on a loop device, `errors=remount-ro`), for
//! tests of a disk that turns read-only under a running server, as ext4 does on an I/O error.
//! Mounting needs root, as `make test` runs here; the test fails saying so otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{data_dir, TempDir};

/// An ext4 image mounted on a fresh directory; unmounted on drop, before the directory (which
/// holds the image beside the mount point) is removed.
pub struct Ext4 {
    // Dropped after the mount (fields drop in order): the directory outlives it.
    mount: PathBuf,
    image: PathBuf,
    _dir: TempDir,
}

impl Ext4 {
    /// An ext4 file system of `mib` MiB on a directory named after `name`.
    ///
    /// # Panics
    /// When it cannot be made or mounted (mkfs.ext4 missing, not root).
    pub fn mount(name: &str, mib: u64) -> Ext4 {
        let dir = data_dir(name);
        let image = dir.join("ext4.img");
        let mount = dir.join("mnt");
        std::fs::create_dir(&mount).expect("create the mount point");
        std::fs::File::create(&image)
            .and_then(|f| f.set_len(mib << 20))
            .expect("create the image");
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image));
        let disk = Ext4 {
            mount,
            image,
            _dir: dir,
        };
        disk.mount_image();
        disk
    }

    fn mount_image(&self) {
        run(Command::new("mount")
            .args(["-o", "loop,errors=remount-ro"])
            .arg(&self.image)
            .arg(&self.mount));
    }

    /// Makes the kernel see an error on it (`trigger_fs_error`), so that ext4 turns it
    /// read-only under whatever has files open there: every write from now on fails with EROFS.
    pub fn turn_read_only(&self) {
        let source = String::from_utf8(
            Command::new("findmnt")
                .args(["-n", "-o", "SOURCE"])
                .arg(&self.mount)
                .output()
                .expect("run findmnt")
                .stdout,
        )
        .expect("findmnt's output");
        let device = source.trim().trim_start_matches("/dev/");
        let trigger = format!("/sys/fs/ext4/{device}/trigger_fs_error");
        std::fs::write(&trigger, "1").unwrap_or_else(|e| panic!("write {trigger}: {e}"));
    }

    /// Unmounts it, repairs it as an operator would (`e2fsck -fy`), and mounts it again,
    /// writable.
    pub fn repair(&self) {
        run(Command::new("umount").arg(&self.mount));
        // e2fsck exits 1 when it corrected something: only 4 and above are failures.
        let status = Command::new("e2fsck")
            .args(["-f", "-y"])
            .arg(&self.image)
            .output()
            .expect("run e2fsck");
        assert!(
            status.status.code().is_some_and(|code| code < 4),
            "e2fsck failed: {}",
            String::from_utf8_lossy(&status.stdout)
        );
        self.mount_image();
    }
}

/// Runs `command`, panicking with its output unless it succeeds.
fn run(command: &mut Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed (this test needs root): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl std::ops::Deref for Ext4 {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.mount
    }
}

impl Drop for Ext4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
    }
}
