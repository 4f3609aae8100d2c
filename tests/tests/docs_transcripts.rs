//! Every redis-cli transcript in README.md and docs/ (a ```text block of `127.0.0.1:6379>`
//! prompts) is run against a fresh redis-server with the module, as documented: worker-id 3,
//! datacenter-id 1, NIST's sample key for sealing. A reply must match what the page shows; the
//! replies of commands that depend on the clock (`*.NEXT`, `DATESEQ.CURRENT`) match with their
//! digits and hex masked. A renamed field, a changed reply or a removed option fails here.

use std::process::Command;

use idgen_tests::docs::{depends_on_the_clock, masked, pages};
use idgen_tests::{data_dir, workspace_root, Server};

const PROMPT: &str = "127.0.0.1:6379> ";
/// The key docs/module.md names for its sealing transcript.
const NIST_KEY: &str = "2b7e151628aed2a6abf7158809cf4f3cef4359d8d580aa4f7f036d6f04fc6a94";

/// One command of a transcript and the reply lines shown under it.
struct Step {
    command: String,
    reply: Vec<String>,
}

/// The transcripts of a page: each ```text block that holds prompts.
fn transcripts(text: &str) -> Vec<Vec<Step>> {
    let mut out = Vec::new();
    let mut block: Option<Vec<Step>> = None;
    for line in text.lines() {
        match (&mut block, line) {
            (None, "```text") => block = Some(Vec::new()),
            (Some(_), "```") => {
                let steps = block.take().unwrap_or_default();
                if !steps.is_empty() {
                    out.push(steps);
                }
            }
            (Some(steps), line) => match line.strip_prefix(PROMPT) {
                Some(command) => steps.push(Step {
                    command: command.to_string(),
                    reply: Vec::new(),
                }),
                None => {
                    if let Some(step) = steps.last_mut() {
                        step.reply.push(line.to_string());
                    }
                }
            },
            _ => {}
        }
    }
    out
}

#[test]
fn every_redis_cli_transcript_in_the_docs_replies_as_shown() {
    let root = workspace_root();
    let pages = pages(root);
    let dir = data_dir("transcripts");
    let key = dir.join("seal.key");
    std::fs::write(&key, format!("{NIST_KEY}\n")).unwrap();
    let key = key.display().to_string();
    let mut run = 0;
    let mut wrong = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for steps in transcripts(&text) {
            let server = Server::start(&[
                "worker-id",
                "3",
                "datacenter-id",
                "1",
                "seal-key-file",
                &key,
            ]);
            for step in steps {
                let out = Command::new("redis-cli")
                    .args(["--no-raw", "-p", &server.port.to_string()])
                    .args(step.command.split_whitespace())
                    .output()
                    .expect("redis-cli");
                let got: Vec<String> = String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .map(str::to_string)
                    .collect();
                run += 1;
                let same = if depends_on_the_clock(&step.command) {
                    masked(&got) == masked(&step.reply)
                } else {
                    got == step.reply
                };
                if !same {
                    wrong.push(format!(
                        "{}: {}\n  shown: {:?}\n  got:   {:?}",
                        page.display(),
                        step.command,
                        step.reply,
                        got
                    ));
                }
            }
        }
    }
    assert!(run >= 16, "only {run} transcript commands found");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
