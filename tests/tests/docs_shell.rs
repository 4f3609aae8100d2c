//! Every shell example of README.md and docs/ runs here, as a reader would type it.
//!
//! - A ```sh block runs line by line; every command must succeed.
//! - A ```console block runs its `$ ` lines, and what each prints (stdout and stderr, as a
//!   terminal shows them) must be the lines the page shows under it. Replies that depend on the
//!   clock (`*.NEXT` of the module, `DATESEQ.CURRENT`) match with digits and hex masked.
//! - A block the line `<!-- not run: REASON -->` comes right before is skipped, and must say why.
//!
//! Each block runs in network, PID and mount namespaces of its own (`unshare`), so the ports
//! the pages name (6379, 7001, ...) are free, /tmp is empty, and every process the block left
//! behind dies with it. A block that starts no redis-server gets a fresh one on 6379 with the
//! module, configured as the pages say (worker-id 3, datacenter-id 1). Commands run in a scratch
//! directory that links to the checkout's top-level folders (not its files: a state file a
//! server left there must not be shared), so `target/release/...` and
//! `ops/...` resolve and files a block writes land outside the checkout. `target/release` is on
//! PATH, and redis-cli prints as it does on a terminal (`--no-raw`); in a sh block, an error
//! reply fails the block.
//!
//! `cargo build --release -p ...` is not run (cargo test holds the build lock, and make test
//! has built those packages); the packages it names must exist in the workspace.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use idgen_tests::docs::{depends_on_the_clock, masked, pages};
use idgen_tests::{data_dir, module_path, workspace_root};

/// A block that has not finished in this long has hung (a server started without `&`).
const BLOCK_TIMEOUT: Duration = Duration::from_secs(60);
const SKIP_MARK: &str = "<!-- not run: ";
/// The line the script prints before each command's output.
const MARK: &str = "@@docs-shell-command ";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Sh,
    Console,
}

/// One command of a block (continuation lines joined with their newlines), and for a console
/// block the lines shown under it.
#[derive(Debug)]
struct Step {
    command: String,
    shown: Vec<String>,
}

#[derive(Debug)]
struct Block {
    page: PathBuf,
    line: usize,
    kind: Kind,
    skip: Option<String>,
    steps: Vec<Step>,
}

impl Block {
    fn name(&self) -> String {
        let page = self
            .page
            .strip_prefix(workspace_root())
            .unwrap_or(&self.page);
        format!("{}:{}", page.display(), self.line)
    }
}

/// The shell blocks of a page.
fn blocks(page: &Path, text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    let mut previous = "";
    for (index, line) in text.lines().enumerate() {
        if let Some(block) = &mut open {
            if line == "```" {
                out.extend(open.take());
            } else {
                add_line(block, line);
            }
            continue;
        }
        let kind = match line {
            "```sh" => Some(Kind::Sh),
            "```console" => Some(Kind::Console),
            _ => None,
        };
        if let Some(kind) = kind {
            let skip = previous
                .strip_prefix(SKIP_MARK)
                .and_then(|rest| rest.strip_suffix(" -->"))
                .map(str::to_string);
            open = Some(Block {
                page: page.to_path_buf(),
                line: index + 1,
                kind,
                skip,
                steps: Vec::new(),
            });
        }
        previous = line;
    }
    assert!(open.is_none(), "{}: a block is not closed", page.display());
    out
}

fn add_line(block: &mut Block, line: &str) {
    let continued = block
        .steps
        .last()
        .is_some_and(|s| s.command.ends_with('\\') && s.shown.is_empty());
    if continued {
        let step = block.steps.last_mut().expect("a step");
        step.command.push('\n');
        step.command.push_str(line);
        return;
    }
    let command = match block.kind {
        Kind::Console => line.strip_prefix("$ "),
        Kind::Sh => Some(line).filter(|l| !l.trim().is_empty() && !l.starts_with('#')),
    };
    match (command, block.steps.last_mut()) {
        (Some(command), _) => block.steps.push(Step {
            command: command.to_string(),
            shown: Vec::new(),
        }),
        (None, Some(step)) if block.kind == Kind::Console => step.shown.push(line.to_string()),
        (None, None) if block.kind == Kind::Console => {
            panic!("{}: output before the first `$ ` line", block.name())
        }
        (None, _) => {}
    }
}

/// A command without its trailing comment: the text before the first ` #`.
fn uncommented(command: &str) -> String {
    command
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The command without its final `&`, when it runs in the background.
fn background(command: &str) -> Option<String> {
    let bare = uncommented(command);
    let body = bare.strip_suffix('&')?;
    Some(body.to_string()).filter(|b| !b.ends_with('&'))
}

/// The bash script that runs a block inside its namespaces. The checkout is seen at /mnt, where
/// an empty /tmp cannot hide it (a clone under /tmp).
fn script(block: &Block, root: &Path, module: &Path) -> String {
    let module = match module.strip_prefix(root) {
        Ok(inside) => Path::new("/mnt").join(inside),
        Err(_) => module.to_path_buf(),
    };
    let mut s = format!(
        "set -eo pipefail\nexec 2>&1\nmount --bind '{}' /mnt\n",
        root.display()
    );
    s.push_str(
        r#"ip link set lo up
mount -t tmpfs tmpfs /tmp
mkdir /tmp/work && cd /tmp/work
for dir in /mnt/*/; do ln -s "${dir%/}" .; done
export PATH=/mnt/target/release:$PATH
cargo() {
  [[ "$1 $2" == "build --release" ]] || { echo "docs test: only 'cargo build --release -p ...' stands in"; return 1; }
  shift 2
  while [ $# -gt 0 ]; do
    [ "$1" = -p ] && { grep -qx "name = \"$2\"" /mnt/*/Cargo.toml /mnt/*/*/Cargo.toml || { echo "no package $2"; return 1; }; shift; }
    shift
  done
}
ready() {
  for _ in $(seq 100); do
    kill -0 "$1" 2>/dev/null || { echo "the background command exited:"; cat /tmp/background.log; exit 1; }
    ss -ltnpH | grep -q "pid=$1," && { sleep 0.2; return 0; }
    sleep 0.1
  done
  echo "the background command listens on no port after 10 s:"; cat /tmp/background.log; exit 1
}
"#,
    );
    s.push_str(match block.kind {
        // A console block shows its error replies; in a sh block one is a failure (redis-cli
        // exits 0 on an error reply).
        Kind::Console => "redis-cli() { command redis-cli --no-raw \"$@\"; }\n",
        Kind::Sh => {
            "redis-cli() {\n  local out\n  out=$(command redis-cli --no-raw \"$@\") || { echo \"$out\"; return 1; }\n  echo \"$out\"\n  ! grep -q '(error)' <<<\"$out\"\n}\n"
        }
    });
    if !block
        .steps
        .iter()
        .any(|s| s.command.contains("redis-server"))
    {
        s.push_str(&format!(
            "command redis-server --port 6379 --save '' --loadmodule {} worker-id 3 datacenter-id 1 >>/tmp/background.log &\nready $!\n",
            module.display()
        ));
    }
    for (index, step) in block.steps.iter().enumerate() {
        s.push_str(&format!("echo '{MARK}{index}'\n"));
        match background(&step.command) {
            Some(body) => s.push_str(&format!("{body} >>/tmp/background.log 2>&1 &\nready $!\n")),
            None => s.push_str(&format!("{}\n", uncommented(&step.command))),
        }
    }
    s.push_str(
        "for pid in $(jobs -p); do kill -0 \"$pid\" || { echo 'a background command exited:'; cat /tmp/background.log; exit 1; }; done\n",
    );
    s
}

/// What each command printed, by step, or why the block failed.
fn run(block: &Block, root: &Path, module: &Path) -> Result<Vec<Vec<String>>, String> {
    let dir = data_dir("docs-shell");
    let out_path = dir.join("out");
    let out = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new("unshare")
        .args(["--net", "--pid", "--fork", "--mount-proc", "--kill-child"])
        .args(["bash", "-c", &script(block, root, module)])
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .expect(
            "unshare (util-linux) runs each block in namespaces of its own; this test needs root",
        );
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > BLOCK_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let mut printed: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        if line.starts_with(MARK) {
            printed.push(Vec::new());
        } else if let Some(last) = printed.last_mut() {
            last.push(line.to_string());
        }
    }
    let at = printed
        .len()
        .checked_sub(1)
        .map(|i| format!("at `{}`", block.steps[i].command))
        .unwrap_or_else(|| "before its first command".to_string());
    match status {
        Some(s) if s.success() => Ok(printed),
        Some(s) => Err(format!("failed ({s}) {at}:\n{text}")),
        None => Err(format!(
            "still running after {BLOCK_TIMEOUT:?} {at}:\n{text}"
        )),
    }
}

/// Why a block's run does not match its page, if it does not.
fn check(block: &Block, root: &Path, module: &Path) -> Option<String> {
    let printed = match run(block, root, module) {
        Ok(printed) => printed,
        Err(why) => return Some(why),
    };
    if block.kind == Kind::Sh {
        return None;
    }
    let mut wrong = Vec::new();
    for (step, got) in block.steps.iter().zip(&printed) {
        let same = if depends_on_the_clock(&step.command) {
            masked(got) == masked(&step.shown)
        } else {
            *got == step.shown
        };
        if !same {
            wrong.push(format!(
                "`{}`\n  shown: {:?}\n  got:   {:?}",
                step.command, step.shown, got
            ));
        }
    }
    Some(wrong.join("\n")).filter(|w| !w.is_empty())
}

#[test]
fn every_shell_example_in_the_docs_runs_as_shown() {
    let root = workspace_root();
    let module = module_path();
    let all: Vec<Block> = pages(root)
        .iter()
        .flat_map(|page| blocks(page, &std::fs::read_to_string(page).unwrap()))
        .collect();
    let (skipped, runnable): (Vec<&Block>, Vec<&Block>) =
        all.iter().partition(|b| b.skip.is_some());
    for block in &skipped {
        let why = block.skip.as_deref().unwrap_or("");
        assert!(why.len() > 10, "{}: say why it is not run", block.name());
        eprintln!("not run: {}: {why}", block.name());
    }
    // Blocks are independent (namespaces of their own): run them side by side.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = runnable
            .iter()
            .map(|block| scope.spawn(|| check(block, root, &module).map(|w| (block.name(), w))))
            .collect();
        runs.into_iter()
            .filter_map(|run| run.join().expect("a block's thread"))
            .map(|(name, why)| format!("{name}: {why}"))
            .collect()
    });
    assert!(
        runnable.len() >= 7,
        "only {} runnable shell blocks found",
        runnable.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_changed_reply_fails_the_block() {
    let root = workspace_root();
    let page = root.join("README.md");
    let text = "```console\n$ redis-cli PING\nPONG\n$ redis-cli ECHO hello\n\"hi\"\n```\n";
    let block = &blocks(&page, text)[0];
    let why = check(block, root, &module_path()).expect("hello is not hi");
    assert!(why.contains("hello"), "{why}");
    let failing = "```sh\nredis-cli PING\nfalse\necho never\n```\n";
    let why = check(&blocks(&page, failing)[0], root, &module_path()).expect("false fails");
    assert!(why.contains("at `false`"), "{why}");
}
