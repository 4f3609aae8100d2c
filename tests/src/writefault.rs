//! Failing a server's writes to chosen files: `tests/writefault/writefault.c`, an LD_PRELOAD
//! shim compiled here, faults the files whose path ends with a suffix as a control file says,
//! changed while the server runs: a write that stops halfway, EIO, or an fsync that fails.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::server::Options;

/// How the chosen files' writes fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// They do not.
    None,
    /// Each write stops halfway, then fails with ENOSPC: a cut line is left behind.
    Halfway,
    /// Each write fails with EIO.
    Eio,
    /// Writes succeed; fsync and fdatasync fail with EIO.
    FsyncEio,
}

/// The control file of the servers started with [`WriteFaults::options`].
pub struct WriteFaults {
    file: PathBuf,
}

impl WriteFaults {
    /// No fault yet, the control file under `dir`.
    pub fn new(dir: &Path) -> WriteFaults {
        let file = dir.join("write-fault");
        std::fs::write(&file, b"0").expect("write the fault file");
        WriteFaults { file }
    }

    /// Faults the chosen files so from now on.
    pub fn set(&self, fault: Fault) {
        let byte = match fault {
            Fault::None => b'0',
            Fault::Halfway => b'1',
            Fault::Eio => b'2',
            Fault::FsyncEio => b'3',
        };
        // In place: the shim maps the file.
        let file = OpenOptions::new().write(true).open(&self.file).unwrap();
        file.write_all_at(&[byte], 0).unwrap();
    }

    /// `options` for a server whose writes to files ending with `suffix` follow this fault.
    pub fn options(&self, suffix: &str, mut options: Options) -> Options {
        options.env.extend(self.env(suffix));
        options.module = Some(faulted_module().to_path_buf());
        options
    }

    /// The environment of a process (a ticket server, say) whose writes to files ending with
    /// `suffix` follow this fault.
    pub fn env(&self, suffix: &str) -> Vec<(String, String)> {
        vec![
            ("LD_PRELOAD".into(), shim().display().to_string()),
            ("WRITEFAULT_FILE".into(), self.file.display().to_string()),
            ("WRITEFAULT_SUFFIX".into(), suffix.to_string()),
        ]
    }
}

fn faulted_module() -> &'static Path {
    static MODULE: OnceLock<PathBuf> = OnceLock::new();
    MODULE.get_or_init(|| crate::checkout::module_needing(shim(), "writefault"))
}

fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| crate::compiled("tests/writefault/writefault.c"))
}
