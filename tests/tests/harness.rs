//! The harness itself: it refuses to test a binary older than its sources.

use std::time::{Duration, SystemTime};

use idgen_tests::{data_dir, newer_source};

#[test]
fn a_source_newer_than_the_binary_is_found() {
    let dir = data_dir("stale");
    std::fs::create_dir_all(dir.join("src/inner")).unwrap();
    std::fs::write(dir.join("README.md"), "prose does not rebuild anything").unwrap();
    std::fs::write(dir.join("src/inner/lib.rs"), "fn main() {}").unwrap();
    let edited = SystemTime::now();
    let dirs = [dir.clone()];
    assert_eq!(
        newer_source(edited + Duration::from_secs(60), &dirs),
        None,
        "built after the edit"
    );
    assert_eq!(
        newer_source(edited - Duration::from_secs(60), &dirs),
        Some(dir.join("src/inner/lib.rs")),
        "built before the edit"
    );
    std::fs::remove_file(dir.join("src/inner/lib.rs")).unwrap();
    assert_eq!(
        newer_source(edited - Duration::from_secs(60), &dirs),
        None,
        "only .rs and Cargo.toml count"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
