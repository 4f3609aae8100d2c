//! RESP: reading requests (bounded) and writing replies in RESP2 or RESP3.
//!
//! Requests are arrays of bulk strings, as every Redis client sends them. Limits protect the
//! server from hostile input: a declared length or argument count beyond them is a protocol
//! error, answered with `-ERR Protocol error: ...` and a closed connection, before any memory
//! is set aside for it.

use bytes::{Bytes, BytesMut};

/// Most arguments one request may have.
pub const MAX_ARGS: usize = 1024;
/// Longest argument, in bytes.
pub const MAX_ARG_LEN: usize = 64 * 1024;
/// Longest header line (`*N` or `$N`) before its CRLF.
const MAX_LINE: usize = 32;

/// A request that cannot be parsed; the connection is closed after the error reply.
#[derive(Debug, PartialEq, Eq)]
pub struct ProtocolError(pub &'static str);

/// Parses one request from the front of `buf`, consuming it.
///
/// Returns `Ok(None)` when `buf` holds only part of a request (nothing is consumed then).
///
/// # Errors
/// [`ProtocolError`] for anything that is not an array of bulk strings within the limits.
pub fn parse_request(buf: &mut BytesMut) -> Result<Option<Vec<Bytes>>, ProtocolError> {
    let mut at = 0;
    let Some(count) = header(buf, &mut at, b'*')? else {
        return Ok(None);
    };
    if count > MAX_ARGS {
        return Err(ProtocolError("too many arguments"));
    }
    let mut spans = [(0usize, 0usize); 16];
    let mut more = Vec::new();
    for i in 0..count {
        let Some(len) = header(buf, &mut at, b'$')? else {
            return Ok(None);
        };
        if len > MAX_ARG_LEN {
            return Err(ProtocolError("invalid bulk length"));
        }
        if buf.len() < at + len + 2 {
            return Ok(None);
        }
        if &buf[at + len..at + len + 2] != b"\r\n" {
            return Err(ProtocolError("expected CRLF after bulk string"));
        }
        if i < spans.len() {
            spans[i] = (at, len);
        } else {
            more.push((at, len));
        }
        at += len + 2;
    }
    let frame = buf.split_to(at).freeze();
    let args = spans[..count.min(spans.len())]
        .iter()
        .chain(&more)
        .map(|&(start, len)| frame.slice(start..start + len))
        .collect();
    Ok(Some(args))
}

/// Reads `<kind><digits>\r\n` at `*at`; `None` if incomplete.
fn header(buf: &BytesMut, at: &mut usize, kind: u8) -> Result<Option<usize>, ProtocolError> {
    let Some(&first) = buf.get(*at) else {
        return Ok(None);
    };
    if first != kind {
        return Err(if kind == b'*' {
            ProtocolError("expected '*': requests are arrays of bulk strings")
        } else {
            ProtocolError("expected '$'")
        });
    }
    let rest = &buf[*at + 1..];
    let Some(end) = rest.iter().take(MAX_LINE + 1).position(|&b| b == b'\r') else {
        return if rest.len() > MAX_LINE {
            Err(ProtocolError("header line too long"))
        } else {
            Ok(None)
        };
    };
    if rest.len() < end + 2 {
        return Ok(None);
    }
    if rest[end + 1] != b'\n' || end == 0 || !rest[..end].iter().all(u8::is_ascii_digit) {
        return Err(ProtocolError("invalid length"));
    }
    let n = rest[..end].iter().try_fold(0usize, |n, &d| {
        n.checked_mul(10)?.checked_add((d - b'0') as usize)
    });
    *at += 1 + end + 2;
    n.map(Some).ok_or(ProtocolError("invalid length"))
}

/// Builds replies into a buffer, in the protocol the connection chose with HELLO.
pub struct Reply<'a> {
    pub out: &'a mut BytesMut,
    pub resp3: bool,
}

impl Reply<'_> {
    pub fn simple(&mut self, text: &str) {
        self.line(b'+', text.as_bytes());
    }

    pub fn error(&mut self, text: &str) {
        // An error line must not break the framing.
        let clean: String = text
            .chars()
            .map(|c| if c == '\r' || c == '\n' { ' ' } else { c })
            .collect();
        self.line(b'-', clean.as_bytes());
    }

    pub fn integer(&mut self, n: i64) {
        self.out.extend_from_slice(b":");
        self.number(n);
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn bulk(&mut self, data: &[u8]) {
        self.out.extend_from_slice(b"$");
        self.number(data.len() as i64);
        self.out.extend_from_slice(b"\r\n");
        self.out.extend_from_slice(data);
        self.out.extend_from_slice(b"\r\n");
    }

    pub fn null(&mut self) {
        self.out
            .extend_from_slice(if self.resp3 { b"_\r\n" } else { b"$-1\r\n" });
    }

    pub fn array(&mut self, len: usize) {
        self.out.extend_from_slice(b"*");
        self.number(len as i64);
        self.out.extend_from_slice(b"\r\n");
    }

    /// A map of `len` pairs; a flat array of 2 * `len` items in RESP2.
    pub fn map(&mut self, len: usize) {
        if self.resp3 {
            self.out.extend_from_slice(b"%");
            self.number(len as i64);
            self.out.extend_from_slice(b"\r\n");
        } else {
            self.array(2 * len);
        }
    }

    fn line(&mut self, kind: u8, text: &[u8]) {
        self.out.extend_from_slice(&[kind]);
        self.out.extend_from_slice(text);
        self.out.extend_from_slice(b"\r\n");
    }

    fn number(&mut self, n: i64) {
        self.out
            .extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(input: &[u8]) -> Result<Option<Vec<Bytes>>, ProtocolError> {
        parse_request(&mut BytesMut::from(input))
    }

    #[test]
    fn parses_whole_requests_and_waits_for_partial_ones() {
        let mut buf = BytesMut::from(&b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n*1\r\n$4\r\nPI"[..]);
        let args = parse_request(&mut buf).unwrap().unwrap();
        assert_eq!(args, vec![Bytes::from("ECHO"), Bytes::from("hi")]);
        assert_eq!(parse_request(&mut buf), Ok(None));
        buf.extend_from_slice(b"NG\r\n");
        assert_eq!(
            parse_request(&mut buf).unwrap().unwrap(),
            vec![Bytes::from("PING")]
        );
        assert!(buf.is_empty());
    }

    #[test]
    fn many_arguments_and_empty_ones() {
        let mut input = b"*20\r\n".to_vec();
        for i in 0..20 {
            let arg = if i == 3 { String::new() } else { i.to_string() };
            input.extend_from_slice(format!("${}\r\n{arg}\r\n", arg.len()).as_bytes());
        }
        let args = parse(&input).unwrap().unwrap();
        assert_eq!(args.len(), 20);
        assert_eq!(args[3], Bytes::new());
        assert_eq!(args[19], Bytes::from("19"));
    }

    #[test]
    fn refuses_hostile_or_malformed_input_before_allocating() {
        let cases: &[(&[u8], &str)] = &[
            (b"*99999999999\r\n", "too many arguments"),
            (b"*1\r\n$999999999\r\n", "invalid bulk length"),
            (b"*1\r\n$99999999999999999999999\r\n", "invalid length"),
            (b"*-1\r\n", "invalid length"),
            (b"*x\r\n", "invalid length"),
            (b"*1\r\n$3\r\nabcXY", "expected CRLF after bulk string"),
            (b"*1\r\n:3\r\n", "expected '$'"),
            (
                b"PING\r\n",
                "expected '*': requests are arrays of bulk strings",
            ),
            (
                b"*1111111111111111111111111111111111111111",
                "header line too long",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse(input),
                Err(ProtocolError(want)),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn replies_in_both_protocols() {
        let mut out = BytesMut::new();
        let mut r = Reply {
            out: &mut out,
            resp3: false,
        };
        r.integer(-42);
        r.null();
        r.map(1);
        r.error("ERR bad\r\nthing");
        assert_eq!(&out[..], b":-42\r\n$-1\r\n*2\r\n-ERR bad  thing\r\n");
        let mut out = BytesMut::new();
        let mut r = Reply {
            out: &mut out,
            resp3: true,
        };
        r.null();
        r.map(2);
        assert_eq!(&out[..], b"_\r\n%2\r\n");
    }
}
