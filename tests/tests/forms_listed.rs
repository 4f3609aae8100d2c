//! `benches/forms.sh` measures every form of every command against its plain form. So that a
//! new command or a new option cannot be left out of its table unseen:
//! - each command of the module's `COMMANDS` table has a row there, or a "not measured" line
//!   saying why;
//! - each option a command takes, found by asking real servers (the module's and the ticket
//!   server's) to take every option word their command layers know, on every command with a
//!   row, has a row of that command with that word, or a "not measured" line.

use std::path::Path;

use idgen_tests::redis::Value;
use idgen_tests::ticket::TicketServer;
use idgen_tests::{cmd, data_dir, workspace_root, Server};

/// forms.sh's rows (their forms, the words of each) and its "not measured" names.
struct Forms {
    rows: Vec<Vec<String>>,
    excused: Vec<String>,
}

fn forms() -> Forms {
    let script = std::fs::read_to_string(workspace_root().join("benches/forms.sh")).unwrap();
    // A row: "PLAIN|FORM|PER[|BAR]"; the form's first word is its command.
    let rows = script
        .lines()
        .filter_map(|line| line.trim().strip_prefix('"'))
        .filter_map(|row| row.split('|').nth(1))
        .map(|form| form.split_whitespace().map(str::to_string).collect())
        .collect();
    let excused = script
        .lines()
        .filter_map(|line| line.strip_prefix("# not measured: "))
        .filter_map(|rest| rest.split(':').next())
        .map(str::to_string)
        .collect();
    Forms { rows, excused }
}

/// The names in the module's command table.
fn commands() -> Vec<String> {
    let lib =
        std::fs::read_to_string(workspace_root().join("server/redis-idgen/src/lib.rs")).unwrap();
    let names: Vec<String> = lib
        .lines()
        .filter_map(|line| line.trim().strip_prefix("Command { name: \""))
        .map(|rest| rest.split('"').next().unwrap().to_string())
        .collect();
    assert!(
        names.len() > 20,
        "the command table was not found: {names:?}"
    );
    names
}

/// Every option word a command layer compares an argument with (`eq_ignore_ascii_case(b"..")`)
/// in the files under `dir` (or the file `dir`).
fn option_words(dir: &Path, words: &mut Vec<String>) {
    let paths: Vec<_> = if dir.is_dir() {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect()
    } else {
        vec![dir.to_path_buf()]
    };
    for path in paths {
        if path.is_dir() {
            option_words(&path, words);
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for piece in text.split("eq_ignore_ascii_case(b\"").skip(1) {
            let word = piece.split('"').next().unwrap().to_string();
            if !words.contains(&word) {
                words.push(word);
            }
        }
    }
}

/// Whether `words` is taken: a reply that is not an error.
fn takes(con: &mut dyn idgen_tests::redis::ConnectionLike, words: &[&str]) -> bool {
    cmd(words).query::<Value>(con).is_ok()
}

/// The options each command with a row takes, as "COMMAND WORD": the word alone, or with one
/// of a few values after it, after the arguments of each form of the command in the table.
fn options_taken(
    con: &mut dyn idgen_tests::redis::ConnectionLike,
    forms: &Forms,
    command_names: &[&str],
) -> Vec<String> {
    let root = workspace_root();
    let mut words = Vec::new();
    option_words(&root.join("server/redis-idgen/src/cmd"), &mut words);
    option_words(&root.join("server/redis-idgen/src/args.rs"), &mut words);
    option_words(
        &root.join("ticket-server/src/cmd/ticket_next.rs"),
        &mut words,
    );
    for expected in [
        "COUNT", "SQIDS", "SEALED", "STRING", "PERIOD", "DIGITS", "MAX",
    ] {
        assert!(
            words.iter().any(|w| w == expected),
            "{expected} not found among {words:?}"
        );
    }
    let mut taken = Vec::new();
    for name in command_names {
        // The forms of the command with their options cut off: the arguments options follow.
        let mut bases: Vec<Vec<&str>> = forms
            .rows
            .iter()
            // A row that names the reply of an earlier step ({1}) cannot be sent as it stands.
            .filter(|row| row[0] == *name && !row.iter().any(|w| w.contains('{')))
            .map(|row| {
                row.iter()
                    .map(String::as_str)
                    .take_while(|w| !words.iter().any(|o| o.eq_ignore_ascii_case(w)))
                    .collect()
            })
            .collect();
        bases.sort();
        bases.dedup();
        for base in &bases {
            for word in &words {
                // Taken alone or with a value, where a word that is no option is not (a
                // place that takes any word, a counter's name, tells nothing).
                let took = [None, Some("2"), Some("8"), Some("month")]
                    .into_iter()
                    .any(|value| {
                        let mut call = |option: &str| {
                            let mut call = base.clone();
                            call.push(option);
                            call.extend(value);
                            takes(con, &call)
                        };
                        call(word) && !call("NOTANOPTION")
                    });
                let option = format!("{name} {word}");
                if took && !taken.contains(&option) {
                    taken.push(option);
                }
            }
        }
    }
    taken
}

/// The options taken that no row of their command names and no "not measured" line excuses.
fn unmeasured(taken: &[String], forms: &Forms) -> Vec<String> {
    taken
        .iter()
        .filter(|option| {
            let (name, word) = option.split_once(' ').unwrap();
            let measured = forms
                .rows
                .iter()
                .any(|row| row[0] == name && row[1..].iter().any(|w| w.eq_ignore_ascii_case(word)));
            !measured && !forms.excused.iter().any(|e| e == word)
        })
        .cloned()
        .collect()
}

#[test]
fn every_command_has_a_row_in_the_forms_table_or_a_reason() {
    let forms = forms();
    let measured: Vec<&str> = forms.rows.iter().map(|row| row[0].as_str()).collect();
    let missing: Vec<String> = commands()
        .into_iter()
        .filter(|name| !measured.contains(&name.as_str()) && !forms.excused.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "benches/forms.sh has no row for {missing:?}: add one (or a \"# not measured: NAME: why\" line)"
    );
    for name in &forms.excused {
        assert!(
            !measured.contains(&name.as_str()),
            "{name} is both measured and excused in benches/forms.sh"
        );
    }
}

#[test]
fn every_option_a_command_takes_has_a_row_in_the_forms_table_or_a_reason() {
    let forms = forms();
    let dir = data_dir("forms-options");
    let key = dir.join("seal.key");
    std::fs::write(&key, format!("{}\n", "ab".repeat(32))).unwrap();
    let key = key.display().to_string();
    let server = Server::start(&["dateseq-digits", "10", "seal-key-file", &key]);
    let names = commands();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut taken = options_taken(&mut server.connection(), &forms, &names);
    let tickets = TicketServer::start(1, 2, &dir.join("tickets"), &["--seal-key-file", &key]);
    taken.extend(options_taken(
        &mut tickets.connection(),
        &forms,
        &["TICKET.NEXT", "TICKET.RANGE", "TICKET.CURRENT"],
    ));
    // The probe finds what is known to be there.
    for known in [
        "SNOWFLAKE.NEXT SQIDS",
        "DATESEQ.NEXT PERIOD",
        "UUID7.FROMTIME MAX",
        "TICKET.NEXT COUNT",
    ] {
        assert!(taken.iter().any(|t| t == known), "{known} not in {taken:?}");
    }
    let missing = unmeasured(&taken, &forms);
    assert!(
        missing.is_empty(),
        "benches/forms.sh has no row for the options {missing:?}: add one (or a \
         \"# not measured: OPTION: why\" line)"
    );
}
