//! Which build this is: the release's semver, as `MODULE LIST` shows it, and the git revision
//! it was built from, as `INFO idgen` shows them.

/// The release, as in Cargo.toml.
pub const SEMVER: &str = env!("CARGO_PKG_VERSION");

/// The release as Redis modules encode it for `MODULE LIST` (RedisJSON's 2.6.4 is 20604):
/// major × 10,000 + minor × 100 + patch; 0.1.0 is 100.
pub const ENCODED: i32 = encode(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// The git revision of the checkout built (build.rs: `git rev-parse HEAD`, with "-modified"
/// when the module's or idgen-core's files differed from it), or `IDGEN_GIT_REVISION` when set
/// at build time (an image built without `.git`), or "unknown" (no git checkout).
pub const GIT_REVISION: &str = env!("IDGEN_GIT_REVISION");

const fn encode(major: &str, minor: &str, patch: &str) -> i32 {
    let (minor, patch) = (number(minor), number(patch));
    // Two decimal digits each, or the encoding is ambiguous: a compile error, not a wrong number.
    assert!(
        minor < 100 && patch < 100,
        "minor and patch must be below 100"
    );
    number(major) * 10_000 + minor * 100 + patch
}

const fn number(digits: &str) -> i32 {
    let bytes = digits.as_bytes();
    let mut value = 0;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version part is not a number");
        value = value * 10 + (bytes[i] - b'0') as i32;
        i += 1;
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_encode_as_redis_modules_do() {
        assert_eq!(encode("0", "1", "0"), 100);
        assert_eq!(encode("2", "6", "4"), 20_604);
        assert_eq!(encode("1", "99", "99"), 19_999);
        let parts: Vec<i32> = SEMVER
            .split(['.', '-', '+'])
            .take(3)
            .map(|p| p.parse().unwrap())
            .collect();
        assert_eq!(ENCODED, parts[0] * 10_000 + parts[1] * 100 + parts[2]);
    }
}
