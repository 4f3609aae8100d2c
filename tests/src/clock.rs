//! Moving a server's wall clock: `tests/clockshift/clockshift.c`, an LD_PRELOAD shim compiled
//! here, adds an offset read from a file to the server's CLOCK_REALTIME, gettimeofday and time.
//!
//! A server that loads modules with `RTLD_DEEPBIND` (Valkey 8.1) has the module find libc's
//! clock before a preloaded one, so the module it loads is a copy of the release build that
//! names the shim as its first needed library (patchelf): found first in either server.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::server::Options;

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

    /// `options` for a server whose module follows this offset too (see the module's doc).
    pub fn options(&self, mut options: Options) -> Options {
        options.env.extend(self.env());
        options.module = Some(shifted_module().to_path_buf());
        options
    }

    /// The environment that makes a process follow this offset.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), shim().display().to_string()),
            ("CLOCKSHIFT_FILE".into(), self.file.display().to_string()),
        ]
    }
}

/// The release build of the module, copied once per test process with the shim as its first
/// needed library.
fn shifted_module() -> &'static Path {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE.get_or_init(|| crate::checkout::module_needing(shim(), "clockshift"))
}

/// The compiled shim, built once per test process from this checkout's source.
fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| crate::compiled("tests/clockshift/clockshift.c"))
}
