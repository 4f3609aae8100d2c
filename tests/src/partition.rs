//! A network partition on loopback: iptables DROP rules for the packets between two TCP ports,
//! removed again on drop (and by a test's panic unwinding through it).

use std::process::Command;

use crate::{cmd, Server};

/// Packets between two loopback ports, both ways, dropped while this lives.
pub struct Partition {
    rules: Vec<Vec<String>>,
}

impl Partition {
    /// Drops every packet between 127.0.0.1:`a` and 127.0.0.1:`b`, both directions: one TCP
    /// connection's link is cut, every other connection to either port keeps working.
    ///
    /// # Errors
    /// When iptables is missing or refuses (it needs root): the message says which.
    pub fn between(a: u16, b: u16) -> Result<Partition, String> {
        let mut partition = Partition { rules: Vec::new() };
        for (from, to) in [(a, b), (b, a)] {
            let rule: Vec<String> = ["INPUT", "-i", "lo", "-p", "tcp", "--sport"]
                .iter()
                .map(|s| s.to_string())
                .chain([from.to_string(), "--dport".into(), to.to_string()])
                .chain(["-j".into(), "DROP".into()])
                .collect();
            iptables("-I", &rule)?;
            partition.rules.push(rule);
        }
        Ok(partition)
    }
}

impl Partition {
    /// Cuts the replication link of `primary`'s only replica; both keep serving clients.
    ///
    /// # Errors
    /// As [`Partition::between`].
    pub fn replication_link(primary: &Server) -> Result<Partition, String> {
        let list: String = cmd(&["CLIENT", "LIST", "TYPE", "replica"])
            .query(&mut primary.connection())
            .map_err(|e| e.to_string())?;
        // `addr=127.0.0.1:<port>`: the replica's end of the link, as the primary sees it.
        let port = list
            .split_whitespace()
            .find_map(|field| field.strip_prefix("addr="))
            .and_then(|addr| addr.rsplit(':').next()?.parse().ok())
            .ok_or_else(|| format!("no replica in CLIENT LIST: {list}"))?;
        Partition::between(primary.port, port)
    }
}

impl Drop for Partition {
    fn drop(&mut self) {
        for rule in &self.rules {
            if let Err(e) = iptables("-D", rule) {
                eprintln!("could not remove an iptables rule ({e}): iptables -D {rule:?}");
            }
        }
    }
}

/// Runs `iptables -w <op> <rule>`; `-w` waits for the table lock other tests may hold.
fn iptables(op: &str, rule: &[String]) -> Result<(), String> {
    let out = Command::new("iptables")
        .arg("-w")
        .arg(op)
        .args(rule)
        .output()
        .map_err(|e| format!("cannot run iptables (apt-get install iptables; needs root): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "iptables {op} failed (it needs root): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}
