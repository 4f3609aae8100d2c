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
            partition.insert(&[("--sport", from), ("--dport", to)], "DROP")?;
        }
        Ok(partition)
    }

    /// Drops every packet to and from `server`'s port but those of its clients named `keep`
    /// (`CLIENT SETNAME`): the server is cut off from its replicas, its Sentinels and every new
    /// connection, while the named clients go on talking to it, as clients on the primary's
    /// side of a partition would.
    ///
    /// # Errors
    /// As [`Partition::between`], or when CLIENT LIST cannot be read.
    pub fn isolate(server: &Server, keep: &str) -> Result<Partition, String> {
        let list: String = cmd(&["CLIENT", "LIST"])
            .query(&mut server.connection())
            .map_err(|e| e.to_string())?;
        let named = format!("name={keep}");
        let kept: Vec<u16> = list
            .lines()
            .filter(|client| client.split_whitespace().any(|field| field == named))
            .filter_map(|client| {
                let addr = client
                    .split_whitespace()
                    .find_map(|field| field.strip_prefix("addr="))?;
                addr.rsplit(':').next()?.parse().ok()
            })
            .collect();
        let mut partition = Partition { rules: Vec::new() };
        // Inserted at the top: the drops first, so the exceptions end up above them.
        for side in ["--dport", "--sport"] {
            partition.insert(&[(side, server.port)], "DROP")?;
        }
        for client in kept {
            partition.insert(&[("--sport", client), ("--dport", server.port)], "ACCEPT")?;
            partition.insert(&[("--sport", server.port), ("--dport", client)], "ACCEPT")?;
        }
        Ok(partition)
    }

    /// Inserts `-A INPUT -i lo -p tcp <matches> -j <target>` at the top of INPUT.
    fn insert(&mut self, matches: &[(&str, u16)], target: &str) -> Result<(), String> {
        let mut rule: Vec<String> = ["INPUT", "-i", "lo", "-p", "tcp"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for (option, port) in matches {
            rule.extend([option.to_string(), port.to_string()]);
        }
        rule.extend(["-j".to_string(), target.to_string()]);
        iptables("-I", &rule)?;
        self.rules.push(rule);
        Ok(())
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
