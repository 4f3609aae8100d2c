//! Every field the Functions library reads from a key (a state key's pair, epoch, drift limit,
//! reservation and issued epoch; a date sequence's counter, in its key or its witness key),
//! written by hand in every shape a person or a script might: the library takes exactly what a
//! reference reading takes (canonical digits, in range), as that number, and refuses the rest
//! naming the key, the field and what it holds, in a bounded message. A lease namespace's
//! fields, which the module reads too, are read alike on both backends: the same number with a
//! sign, a leading zero, a space, a fraction or an exponent is refused by both, in the same words.

use idgen_core::layout::{Layout, TWITTER_EPOCH_MS};
use idgen_tests::redis::{self, Value};
use idgen_tests::{cmd, now_ms};

/// A field, its range, the fields its key needs besides (`"pair"`: a pair of its own), and the
/// call that reads it.
type FieldCase<'a> = (&'a str, i64, i64, Vec<&'a str>, &'a [&'a str]);

/// What a person or a script might write into a field the library reads.
const SHAPES: &[&str] = &[
    "0",
    "1",
    "7",
    "31",
    "32",
    "-1",
    "-0",
    "+1",
    " 1",
    "1 ",
    "01",
    "1e1",
    "1.0",
    "0x1f",
    "",
    "abc",
    "１",
    "1\n",
    "1000",
    "86400000",
    "86400001",
    "1288834974657",
    "9007199254740991",
    "9007199254740993",
    "99999999999999999999",
    "-35184372088832",
    "-35184372088833",
];

/// The reference reading: canonical decimal (no sign but a '-' where negatives are allowed, no
/// leading zero), at most 16 digits, in `low..=high`.
fn reference(text: &str, low: i64, high: i64) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.len() <= 16
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'))
        && !(text.starts_with('-') && (low >= 0 || digits == "0"));
    let n: i64 = text.parse().ok().filter(|_| canonical)?;
    (low..=high).contains(&n).then_some(n)
}

/// Every field the library reads, set by hand to every shape: taken exactly when the reference
/// reading takes it (and then as that number), otherwise refused naming the key and the field,
/// quoting what it holds, in a bounded message.
#[test]
fn every_field_the_library_reads_takes_only_canonical_numbers_in_range() {
    use idgen_core::dateseq::{Calendar, Period};
    let server = idgen_tests::library::plain_server();
    let mut con = server.connection();
    idgen_tests::library::install(&mut con);
    let layout = Layout::twitter();
    let label = Calendar::new("UTC")
        .unwrap()
        .period_of(now_ms(), Period::Day)
        .date;
    let day = format!("day:{label}");
    // field, its range, the fields the key needs besides, the call.
    let sf: &[&str] = &["FCALL", "snowflake_next", "1"];
    let ds: &[&str] = &["FCALL", "dateseq_next", "1"];
    let dsw: &[&str] = &["FCALL", "dateseq_next", "2"];
    let fields: Vec<FieldCase> = vec![
        ("worker", 0, 31, vec!["datacenter", "3"], sf),
        ("datacenter", 0, 31, vec!["worker", "3"], sf),
        ("epoch", -(1 << 45), 1 << 45, vec!["pair"], sf),
        ("max_drift_ms", 0, 86_400_000, vec!["pair"], sf),
        ("reserved", 0, (1 << 53) - 1, vec!["pair"], sf),
        (
            "issued_epoch",
            TWITTER_EPOCH_MS,
            TWITTER_EPOCH_MS,
            vec!["pair"],
            sf,
        ),
        (&day, 0, (1 << 53) - 1, vec![], ds),
        (&day, 0, (1 << 53) - 1, vec![], dsw),
    ];
    let mut n = 0;
    let mut checked = 0;
    for (field, low, high, rest, call) in &fields {
        for shape in SHAPES {
            n += 1;
            let key = format!("f{n}");
            let witness = format!("f{n}:w");
            // The witnessed form's field is set in the witness key; its sequence key is empty.
            let target = if *call == dsw { &witness } else { &key };
            let _: () = cmd(&["HSET", target, field, shape])
                .query(&mut con)
                .unwrap();
            if !rest.is_empty() {
                // A pair of its own for each key that does not test one (one pair per key).
                let (dc, w) = ((4 + n / 32 % 28).to_string(), (n % 32).to_string());
                let pair = ["datacenter", dc.as_str(), "worker", w.as_str()];
                let mut words = vec!["HSET", key.as_str()];
                words.extend(if rest[0] == "pair" {
                    &pair[..]
                } else {
                    &rest[..]
                });
                let _: () = cmd(&words).query(&mut con).unwrap();
            }
            let mut words: Vec<&str> = call.to_vec();
            words.push(&key);
            if *call == dsw {
                words.push(&witness);
            }
            // A reservation far ahead is taken: the IDs then resume above it (refused until the
            // clock is there, as IDs issued ahead of it).
            let fenced =
                |e: &redis::RedisError| e.to_string().contains("the fence this process set");
            let reply = match cmd(&words).query::<Value>(&mut con) {
                Err(e)
                    if e.to_string().contains("behind the last issued ID")
                        && *field == "reserved" =>
                {
                    Ok(Value::Nil)
                }
                Err(e) if fenced(&e) => {
                    idgen_tests::try_when_caught_up::<Value>(&mut con, &cmd(&words))
                }
                other => other,
            };
            let case = format!("{field} = {shape:?} ({})", words.join(" "));
            // issued_epoch against the epoch in force: Twitter's, the only one taken.
            let taken = reference(shape, *low, *high);
            match (taken, reply) {
                (Some(v), Ok(value)) => {
                    if *call == sf && value != Value::Nil {
                        let id: u64 = redis::from_redis_value(value).unwrap();
                        let d = layout.decode(id);
                        match *field {
                            "worker" => assert_eq!(d.worker as i64, v, "{case}"),
                            "datacenter" => assert_eq!(d.datacenter as i64, v, "{case}"),
                            _ => {}
                        }
                    }
                }
                (None, Err(e)) => {
                    let e = idgen_tests::error_text(&e);
                    let named = if *field == "issued_epoch"
                        && reference(shape, -(1 << 45), 1 << 45).is_some()
                    {
                        e.contains("but its IDs were issued under")
                    } else {
                        e.contains(&format!("{field} of '{target}' holds"))
                            || e.contains(&format!("the counter '{field}' of '{target}' holds"))
                    };
                    assert!(named, "{case}: {e}");
                    assert!(e.len() < 400, "{case}: a message of {} bytes", e.len());
                }
                (taken, reply) => {
                    // The epoch's own range: a taken epoch may put the clock outside the time
                    // field (a refusal that says so), which is not a reading of the field.
                    let says =
                        |text: &str| matches!(&reply, Err(e) if e.to_string().contains(text));
                    let outside = *field == "epoch" && says("the Snowflake time field holds");
                    // A counter taken, too high for its DIGITS.
                    let spent =
                        field.starts_with("day:") && (says("is spent") || says("does not fit"));
                    assert!(
                        taken.is_some() && (outside || spent),
                        "{case}: the reference {} it, the library answered {reply:?}",
                        if taken.is_some() { "takes" } else { "refuses" }
                    );
                }
            }
            checked += 1;
        }
    }
    eprintln!("{checked} hand-edited fields checked");
    assert!(checked >= 8 * SHAPES.len());
}

/// A lease namespace's fields, which the module reads too, hand-edited to the same number in
/// another dress (a sign, a leading zero, a space before or after, a fraction, an exponent):
/// both backends refuse every one, in the same words, and read the undressed one.
#[test]
fn namespace_fields_in_another_dress_are_refused_alike_on_both_backends() {
    use idgen_tests::backend::Backend;
    use idgen_tests::Options;
    let fields = ["max", "token", "version", "void_below", "grant_above", "0"];
    let dresses: [fn(&str) -> String; 6] = [
        |v| format!("+{v}"),
        |v| format!("0{v}"),
        |v| format!(" {v}"),
        |v| format!("{v} "),
        |v| format!("{v}.0"),
        |v| format!("{v}e0"),
    ];
    let mut answers: Vec<Vec<String>> = Vec::new();
    for backend in Backend::BOTH {
        let server = backend.start(1_000, Options::default());
        backend.wait_past_lease_fence(&server, 1_000);
        let mut con = server.connection();
        let mut answer = Vec::new();
        for field in fields {
            for (d, dress) in dresses.iter().enumerate() {
                let ns = format!("dressed-{field}-{d}");
                let grant = backend.cmd(&["WORKERID.ACQUIRE", &ns, "TTL", "1000", "MAX", "2"]);
                let _: Vec<i64> = grant.query(&mut con).unwrap();
                let held: Option<String> = cmd(&["HGET", &ns, field]).query(&mut con).unwrap();
                let value = held.unwrap_or_else(|| "1".to_string());
                let list = backend.cmd(&["WORKERID.LIST", &ns]);
                let _: () = cmd(&["HSET", &ns, field, &value]).query(&mut con).unwrap();
                let undressed = list.query::<Value>(&mut con);
                assert!(
                    undressed.is_ok(),
                    "{backend:?} {field} = {value}: {undressed:?}"
                );
                let _: () = cmd(&["HSET", &ns, field, &dress(&value)])
                    .query(&mut con)
                    .unwrap();
                let err = list.query::<Value>(&mut con).unwrap_err();
                let text = idgen_tests::error_text(&err);
                assert!(
                    text.contains("did not write"),
                    "{backend:?} {field}: {text}"
                );
                // The numbers each backend chose (its clock) differ; the words do not.
                answer.push(text.replace(&value, "<v>"));
            }
        }
        answers.push(answer);
    }
    assert_eq!(
        answers[0], answers[1],
        "the module's refusals, then the library's"
    );
    eprintln!(
        "{} dressed namespace fields, refused alike",
        answers[0].len()
    );
}
