//! Peers a user built: other Redis modules and in-Redis Lua generators, which are other
//! people's code and never live in this repository. `IDGEN_PEERS=<file>` names them, in TOML:
//!
//! ```toml
//! # A C module: loaded into its own redis-server with these arguments, called unpipelined and
//! # pipelined like SNOWFLAKE.NEXT.
//! [peer.c-snowflake]
//! module = "/home/me/build/snowflake.so"
//! load = ["1", "1"]
//! command = ["SNOWFLAKE.GETID"]
//! reply = "id"
//!
//! # A Lua script: SCRIPT LOADed, then EVALSHA sha <args>; its reply is the ID's parts.
//! [peer.lua-flake]
//! script = "/home/me/lua/flake.lua"
//! args = ["0"]
//! reply = "parts 41 10 12"
//! ```
//!
//! `reply` is `id` (an integer, or a bulk string of digits), `first` (the first element of an
//! array), `parts W1 W2 ...` (an array of fields, most significant first, joined with those
//! bit widths) or `uuid` / `ulid`. Each peer runs on a plain redis-server with the flags our
//! rows get, through the same client loop and the same checks (repeats, order, errors).

use std::collections::BTreeMap;
use std::path::PathBuf;

/// How to read an ID from a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReplyShape {
    /// An integer, a bulk string of digits, or an array of such (one ID each).
    Ids,
    /// `[first, last]` of consecutive IDs (DATESEQ.NEXT COUNT).
    Range,
    /// The first element of an array.
    First,
    /// An array of fields, most significant first, joined with these bit widths.
    Parts(Vec<u32>),
    /// A UUID or a ULID in text, or an array of them (128-bit IDs).
    Text128,
}

impl ReplyShape {
    /// Joins `parts` (most significant first) with the widths; `None` when the count differs or
    /// a field does not fit its width.
    pub fn join(widths: &[u32], parts: &[u64]) -> Option<u64> {
        if widths.len() != parts.len() || widths.iter().sum::<u32>() > 64 {
            return None;
        }
        let mut id = 0u64;
        for (&width, &part) in widths.iter().zip(parts) {
            if width < 64 && part >> width != 0 {
                return None;
            }
            id = id.checked_shl(width).unwrap_or(0) | part;
        }
        Some(id)
    }
}

/// How a peer is loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerKind {
    /// A module: its path and load arguments.
    Module { path: PathBuf, load: Vec<String> },
    /// A Lua script: its path.
    Script { path: PathBuf },
}

/// One peer from the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub name: String,
    pub kind: PeerKind,
    /// The command and its arguments (for a script: the EVALSHA arguments after the SHA).
    pub command: Vec<String>,
    pub reply: ReplyShape,
}

/// The file, as TOML: a table of peers by name.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    peer: BTreeMap<String, Entry>,
}

/// One `[peer.<name>]` table.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    module: Option<PathBuf>,
    script: Option<PathBuf>,
    #[serde(default)]
    load: Vec<String>,
    #[serde(default)]
    command: Vec<String>,
    #[serde(default)]
    args: Vec<String>,
    reply: Option<String>,
}

/// Reads a peers file, in name order.
///
/// # Errors
/// What is not understood (TOML's message, with its line), or a peer missing a field, in words
/// for the report.
pub fn parse(text: &str) -> Result<Vec<Peer>, String> {
    let file: File = toml::from_str(text).map_err(|e| e.to_string())?;
    file.peer
        .into_iter()
        .map(|(name, entry)| peer(name, entry))
        .collect()
}

fn peer(name: String, entry: Entry) -> Result<Peer, String> {
    let words: Vec<&str> = entry
        .reply
        .as_deref()
        .map(|r| r.split_whitespace().collect())
        .unwrap_or_default();
    let reply = match words.as_slice() {
        [] | ["id"] => ReplyShape::Ids,
        ["first"] => ReplyShape::First,
        ["uuid"] | ["ulid"] => ReplyShape::Text128,
        ["parts", widths @ ..] if !widths.is_empty() => ReplyShape::Parts(
            widths
                .iter()
                .map(|w| {
                    w.parse::<u32>()
                        .map_err(|_| format!("peer {name}: bad width {w}"))
                })
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(format!("peer {name}: unknown reply {}", other.join(" "))),
    };
    let (kind, command) = match (entry.module, entry.script) {
        (Some(_), None) if entry.command.is_empty() => {
            return Err(format!("peer {name}: a module peer needs command = [...]"))
        }
        (Some(path), None) => (
            PeerKind::Module {
                path,
                load: entry.load,
            },
            entry.command,
        ),
        (None, Some(path)) => (PeerKind::Script { path }, entry.args),
        _ => {
            return Err(format!(
                "peer {name}: give exactly one of module = or script ="
            ))
        }
    };
    Ok(Peer {
        name,
        kind,
        command,
        reply,
    })
}

/// A peer's server and the full command that asks it for an ID.
pub type Started = (idgen_tests::Server, Vec<String>);

/// Each peer of the file with its server, or why it did not start.
pub type Listed = Vec<(Peer, Result<Started, String>)>;

/// A peer's redis-server, started with the flags our rows get (the module loaded with its
/// arguments, or the script loaded), and the full command that asks it for an ID.
///
/// # Errors
/// Why the peer could not be started, in words for the report.
pub fn start(peer: &Peer) -> Result<Started, String> {
    let mut options = idgen_tests::Options {
        no_module: true,
        ..Default::default()
    };
    if let PeerKind::Module { path, load } = &peer.kind {
        options.server_args = vec!["--loadmodule".into(), path.display().to_string()];
        options.server_args.extend(load.iter().cloned());
    }
    let server = idgen_tests::Server::try_start(options).map_err(|log| {
        let last = log
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        format!("redis-server did not start with the peer: {last}")
    })?;
    let command = match &peer.kind {
        PeerKind::Module { .. } => peer.command.clone(),
        PeerKind::Script { path } => {
            let script = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(script)
                .query(&mut server.connection())
                .map_err(|e| format!("SCRIPT LOAD: {e}"))?;
            let mut command = vec!["EVALSHA".to_string(), sha];
            command.extend(peer.command.iter().cloned());
            command
        }
    };
    Ok((server, command))
}

/// The peers named by `IDGEN_PEERS`, or why none are run.
///
/// # Errors
/// The variable is unset, or its file cannot be read or parsed.
pub fn from_env() -> Result<Vec<Peer>, String> {
    let file = std::env::var_os("IDGEN_PEERS").ok_or(
        "IDGEN_PEERS is not set: no peer modules or Lua generators were run (docs/benchmarks.md: Peers)",
    )?;
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("IDGEN_PEERS={}: {e}", file.to_string_lossy()))?;
    parse(&text).map_err(|e| format!("IDGEN_PEERS={}: {e}", file.to_string_lossy()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_modules_and_scripts() {
        let peers = parse(
            "# peers\n[peer.c]\nmodule = \"/m.so\"\nload = [\"1\", \"1\"]\n\
             command = [\"X.GETID\"]\nreply = \"id\"\n\n\
             [peer.lua]\nscript = \"/f.lua\"  # mine\nargs = [\"0\"]\nreply = \"parts 41 10 12\"\n",
        )
        .unwrap();
        assert_eq!(peers.len(), 2);
        assert_eq!(
            peers[0].kind,
            PeerKind::Module {
                path: "/m.so".into(),
                load: vec!["1".into(), "1".into()]
            }
        );
        assert_eq!(peers[0].command, vec!["X.GETID"]);
        assert_eq!(
            peers[1].kind,
            PeerKind::Script {
                path: "/f.lua".into()
            }
        );
        assert_eq!(peers[1].reply, ReplyShape::Parts(vec![41, 10, 12]));
    }

    #[test]
    fn the_readmes_example_reads() {
        let readme = include_str!("../../../docs/benchmarks.md");
        let start = readme
            .find("```toml\n# A module")
            .expect("the peers example of docs/benchmarks.md");
        let block = &readme[start + "```toml\n".len()..];
        let block = &block[..block.find("```").unwrap()];
        let peers = parse(block).unwrap();
        let names: Vec<&str> = peers.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["c-snowflake", "lua-flake"]);
        assert_eq!(peers[1].reply, ReplyShape::Parts(vec![41, 5, 5, 12]));
    }

    #[test]
    fn a_peer_file_that_is_not_understood_says_why() {
        for (text, says) in [
            ("module = \"/m.so\"", "unknown field"),
            ("[peer.x]\nreply = \"id\"\n", "exactly one of"),
            ("[peer.x]\nmodule = \"/m.so\"\n", "needs command"),
            (
                "[peer.x]\nscript = \"/f.lua\"\nreply = \"parts x\"\n",
                "bad width x",
            ),
            (
                "[peer.x]\nscript = \"/f.lua\"\nreply = \"sideways\"\n",
                "unknown reply",
            ),
            (
                "[peer.x]\nscript = \"/f.lua\"\nbogus = 1\n",
                "unknown field",
            ),
            ("[peer \"x\"]\nscript = \"/f.lua\"\n", "line 1"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.contains(says), "{text:?}: {err}");
        }
    }

    #[test]
    fn joins_parts_most_significant_first() {
        assert_eq!(
            ReplyShape::join(&[41, 10, 12], &[5, 3, 7]),
            Some((5 << 22) | (3 << 12) | 7)
        );
        assert_eq!(
            ReplyShape::join(&[4, 4], &[16, 0]),
            None,
            "a field wider than its width"
        );
        assert_eq!(ReplyShape::join(&[4, 4], &[1]), None);
    }
}
