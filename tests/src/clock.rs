//! Moving a server's wall clock: `tests/clockshift/clockshift.c`, an LD_PRELOAD shim compiled
//! here, adds an offset read from a file to the server's CLOCK_REALTIME, gettimeofday and time.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A clock offset that servers started with [`ClockShift::env`] follow, changed at any time.
pub struct ClockShift {
    file: PathBuf,
}

impl ClockShift {
    /// An offset of 0 ms, in a file of its own under `dir`.
    pub fn new(dir: &Path) -> ClockShift {
        let file = dir.join("clock-offset");
        std::fs::write(&file, 0i64.to_le_bytes()).expect("write the clock offset file");
        ClockShift { file }
    }

    /// Moves the clock to `ms` from the real time (negative: behind), at once.
    pub fn set_ms(&self, ms: i64) {
        // In place: the shim maps the file, and a truncated file would fault it.
        let file = OpenOptions::new()
            .write(true)
            .open(&self.file)
            .expect("open offset file");
        file.write_all_at(&ms.to_le_bytes(), 0)
            .expect("write offset");
    }

    /// The environment that makes a process follow this offset.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), shim().display().to_string()),
            ("CLOCKSHIFT_FILE".into(), self.file.display().to_string()),
        ]
    }
}

/// The compiled shim, built once per test process from this checkout's source.
fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| crate::compiled("tests/clockshift/clockshift.c"))
}
