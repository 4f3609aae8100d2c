//! The `host:port` of a `redis://` URL: read, and replaced to reach another node with the same
//! user and password.

/// Where the `host:port` part of a `redis://[user:password@]host:port[/db]` URL is.
pub(crate) fn address_range(url: &str) -> std::ops::Range<usize> {
    let start = url.find("://").map_or(0, |i| i + 3);
    let start = url[start..].rfind('@').map_or(start, |i| start + i + 1);
    let end = url[start..].find('/').map_or(url.len(), |i| start + i);
    start..end
}

/// The `host:port` part of a URL.
pub(crate) fn address(url: &str) -> &str {
    &url[address_range(url)]
}

/// `url` with its `host:port` replaced by `addr`.
pub(crate) fn with_address(url: &str, addr: &str) -> String {
    let mut url = url.to_string();
    url.replace_range(address_range(&url), addr);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_address_is_read_and_replaced() {
        let url = "redis://app:p@ss@127.0.0.1:7001/0";
        assert_eq!(address(url), "127.0.0.1:7001");
        assert_eq!(
            with_address(url, "127.0.0.1:7002"),
            "redis://app:p@ss@127.0.0.1:7002/0"
        );
        assert_eq!(with_address("redis://h:1", "k:2"), "redis://k:2");
    }
}
