//! What the documentation tests share: the pages they read, which replies depend on the clock,
//! and the mask they are compared through.

use std::path::{Path, PathBuf};

/// README.md and every page of docs/, in a stable order.
pub fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let path = entry.expect("a docs/ entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    pages.sort();
    pages
}

/// Digits and hex letters masked: the shape of a reply that depends on the clock.
pub fn masked(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .map(|l| {
            l.chars()
                .map(|c| if c.is_ascii_hexdigit() { '#' } else { c })
                .collect()
        })
        .collect()
}

/// Whether `command` (a redis-cli command, or a shell line running one) calls a module command
/// whose reply depends on the clock.
pub fn depends_on_the_clock(command: &str) -> bool {
    const CLOCKED: [&str; 5] = [
        "SNOWFLAKE.NEXT",
        "UUID7.NEXT",
        "ULID.NEXT",
        "DATESEQ.NEXT",
        "DATESEQ.CURRENT",
    ];
    command
        .split_whitespace()
        .any(|word| CLOCKED.iter().any(|c| word.eq_ignore_ascii_case(c)))
}
