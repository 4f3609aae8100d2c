//! `benches/forms.sh` measures every form of every command against its plain form: each
//! command of the module's `COMMANDS` table has a row there, or a "not measured" line saying
//! why, so that a new command cannot be left out of the table unseen.

use idgen_tests::workspace_root;

/// The names in the module's command table.
fn commands() -> Vec<String> {
    let lib =
        std::fs::read_to_string(workspace_root().join("modules/redis-idgen/src/lib.rs")).unwrap();
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

#[test]
fn every_command_has_a_row_in_the_forms_table_or_a_reason() {
    let script = std::fs::read_to_string(workspace_root().join("benches/forms.sh")).unwrap();
    // A row: "PLAIN|FORM|PER"; the form's first word is its command.
    let measured: Vec<&str> = script
        .lines()
        .filter_map(|line| line.trim().strip_prefix('"'))
        .filter_map(|row| row.split('|').nth(1))
        .filter_map(|form| form.split_whitespace().next())
        .collect();
    let excused: Vec<&str> = script
        .lines()
        .filter_map(|line| line.strip_prefix("# not measured: "))
        .filter_map(|rest| rest.split(':').next())
        .collect();
    let missing: Vec<String> = commands()
        .into_iter()
        .filter(|name| !measured.contains(&name.as_str()) && !excused.contains(&name.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "benches/forms.sh has no row for {missing:?}: add one (or a \"# not measured: NAME: why\" line)"
    );
    for name in &excused {
        assert!(
            !measured.contains(name),
            "{name} is both measured and excused in benches/forms.sh"
        );
    }
}
