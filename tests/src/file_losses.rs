//! The ways a state file is lost between two runs of its server, and how the server ends
//! before: shared by the Snowflake state file's and the ticket store's witness matrices.

/// What a state file is turned into between two runs, given its text before the burst (an
/// older copy).
pub struct FileLoss {
    pub name: &'static str,
    pub lose: fn(&std::path::Path, &str),
}

/// The ways a state file is lost between runs, shared by the Snowflake and ticket sections.
pub fn file_losses() -> Vec<FileLoss> {
    vec![
        FileLoss {
            name: "deleted",
            lose: |f, _| std::fs::remove_file(f).unwrap(),
        },
        FileLoss {
            name: "emptied",
            lose: |f, _| std::fs::write(f, "").unwrap(),
        },
        FileLoss {
            name: "an older copy",
            lose: |f, older| std::fs::write(f, older).unwrap(),
        },
        FileLoss {
            name: "renamed away",
            lose: |f, _| std::fs::rename(f, f.with_extension("moved")).unwrap(),
        },
        FileLoss {
            name: "swapped with another file",
            lose: |f, _| {
                let other = f.with_extension("other");
                std::fs::write(&other, "ticket-sequence v1 offset=1 increment=1 bound=1\n")
                    .unwrap();
                std::fs::rename(&other, f).unwrap();
            },
        },
        FileLoss {
            name: "garbage",
            lose: |f, _| std::fs::write(f, "\u{fffd}not ours\n").unwrap(),
        },
        FileLoss {
            name: "not text",
            lose: |f, _| std::fs::write(f, [0xff, 0xfe, 0x00]).unwrap(),
        },
        FileLoss {
            name: "a directory in its place",
            lose: |f, _| {
                std::fs::remove_file(f).unwrap();
                std::fs::create_dir(f).unwrap();
            },
        },
        FileLoss {
            name: "a dangling link in its place",
            lose: |f, _| {
                std::fs::remove_file(f).unwrap();
                std::os::unix::fs::symlink(f.with_extension("nowhere"), f).unwrap();
            },
        },
    ]
}

/// How a server ends before its state is lost.
#[derive(Clone, Copy, Debug)]
pub enum End {
    Kill9,
    Clean,
}
