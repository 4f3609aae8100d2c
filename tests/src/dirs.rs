//! Directories the tests write in, removed when their guard drops.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Names the directories of [`process_dir`]: the prefix, then the process id.
const PROCESS_DIR_PREFIX: &str = "idgen-process-";

/// A fresh, empty directory named after `name`, for data that must outlive one server; removed
/// when the guard drops, so also when the test fails.
pub fn data_dir(name: &str) -> TempDir {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("idgen-{name}-{}-{n}", std::process::id()));
    TempDir::make(dir)
}

/// A directory removed, with everything in it, when the guard drops: at the end of the test
/// that made it, whether it passed or panicked.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Makes `path` an empty directory, removing what was there.
    fn make(path: PathBuf) -> TempDir {
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create a temporary directory");
        TempDir(path)
    }

    /// Removes the directory and everything in it now, as a lost disk would (tests of what a
    /// server does when its data vanishes); the guard stays and removes whatever is there later.
    pub fn lose(&self, sub: &str) {
        let _ = std::fs::remove_dir_all(self.0.join(sub));
    }
}

impl std::ops::Deref for TempDir {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty directory under the system temp dir, removed by [`Server`]'s drop.
pub(crate) fn scratch_dir() -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("idgen-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// This test process's directory for what it builds once and keeps to its end (the C libraries
/// it compiles, the module copy the clock shim is patched into). A test process has no exit
/// hook, so each one removes the directories of processes that are gone when it makes its own:
/// at most one run's worth is left behind.
pub(crate) fn process_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let tmp = std::env::temp_dir();
        for entry in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let pid = name
                .to_str()
                .and_then(|n| n.strip_prefix(PROCESS_DIR_PREFIX));
            if pid.is_some_and(|pid| !Path::new("/proc").join(pid).exists()) {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = tmp.join(format!("{PROCESS_DIR_PREFIX}{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the process's directory");
        dir
    })
}
