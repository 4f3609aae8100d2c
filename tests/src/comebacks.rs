//! How a server's data comes back at a restart (an older RDB or AOF, nothing, all of it): shared
//! by the DATESEQ and lease witness matrices.

/// How a DATESEQ server's data comes back at a restart, given the directory and the copies of
/// its RDB (`older.rdb`) and AOF directory (`older-aof/`) taken after the first values.
pub struct Comeback {
    pub name: &'static str,
    /// redis-server arguments for the persistence it runs with.
    pub persistence: &'static [&'static str],
    pub put_back: fn(&std::path::Path),
    /// What of the data the restart finds lost.
    pub loses: Loses,
}

/// What a comeback loses of the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loses {
    /// Nothing.
    Nothing,
    /// What was written after the copies were taken.
    SinceTheCopy,
    /// Every key.
    Everything,
}

/// Waits until the AOF holds every write so far (`aof_buffer_length:0`): under
/// `appendfsync everysec` Redis holds its writes back while a slow fsync runs (a busy disk),
/// and a copy taken then would be older than the case means to put back.
pub fn aof_written(con: &mut dyn redis::ConnectionLike) {
    let written = crate::wait_for(std::time::Duration::from_secs(10), || {
        let info: String = crate::cmd(&["INFO", "persistence"]).query(con).unwrap();
        info.lines()
            .any(|line| line.trim() == "aof_buffer_length:0")
    });
    assert!(written, "the AOF buffer was not written within 10 s");
}

/// Makes `to` a copy of the flat directory `from` (an AOF directory), replacing what was there.
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

pub fn comebacks() -> Vec<Comeback> {
    vec![
        Comeback {
            name: "an older RDB",
            persistence: &[],
            put_back: |dir| {
                std::fs::copy(dir.join("older.rdb"), dir.join("dump.rdb")).unwrap();
            },
            loses: Loses::SinceTheCopy,
        },
        Comeback {
            name: "an older AOF (appendfsync everysec)",
            persistence: &["--appendonly", "yes", "--appendfsync", "everysec"],
            put_back: |dir| copy_dir(&dir.join("older-aof"), &dir.join("appendonlydir")),
            loses: Loses::SinceTheCopy,
        },
        Comeback {
            name: "no data at all (no persistence, or the data lost)",
            persistence: &[],
            put_back: |dir| {
                let _ = std::fs::remove_file(dir.join("dump.rdb"));
            },
            loses: Loses::Everything,
        },
        Comeback {
            name: "the data as it was (nothing lost)",
            persistence: &["--appendonly", "yes", "--appendfsync", "always"],
            put_back: |_| {},
            loses: Loses::Nothing,
        },
    ]
}
