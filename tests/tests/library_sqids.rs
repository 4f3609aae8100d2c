//! The Functions library's SQIDS replies against the module's Sqids: what the library makes
//! decodes with the module's `IDGEN.DECODE`, which takes only the string its own encoder makes.

use idgen_core::layout::Layout;
use idgen_tests::backend::Backend;
use idgen_tests::{cmd, Connection, Options, Server};

/// A module server with these load arguments and a library server, each with a connection.
struct Pair {
    _servers: [Server; 2],
    cons: [Connection; 2],
}

impl Pair {
    fn start(module_args: &[&str]) -> Pair {
        let servers = Backend::BOTH.map(|b| {
            b.start(
                30_000,
                Options {
                    module_args: module_args.iter().map(|s| s.to_string()).collect(),
                    ..Options::default()
                },
            )
        });
        let cons = [servers[0].connection(), servers[1].connection()];
        Pair {
            _servers: servers,
            cons,
        }
    }
}

/// The library's SQIDS replies are the module's Sqids of its IDs and values: each decodes with
/// the module's `IDGEN.DECODE` (which takes only the string its own encoder makes, blocklist
/// variant and padding included) to an ID of the state key's pair, or to a value of today's
/// sequence; under the default alphabet, and under another alphabet and minimum length given
/// to both (the library's written in by its installer).
#[test]
fn the_librarys_sqids_decode_with_the_modules_idgen_decode() {
    let lowercase = "abcdefghijklmnopqrstuvwxyz";
    for (alphabet, min_length) in [(idgen_core::sqid::DEFAULT_ALPHABET, 0u8), (lowercase, 14)] {
        let length = min_length.to_string();
        let mut pair = Pair::start(&["sqids-alphabet", alphabet, "sqids-min-length", &length]);
        let settings = idgen_functions::Settings {
            sqids_alphabet: alphabet.to_string(),
            sqids_min_length: min_length,
            ..Default::default()
        };
        idgen_tests::library::install_with(&mut pair.cons[1], &settings);
        let _: () = cmd(&["HSET", "sf", "datacenter", "17", "worker", "29"])
            .query(&mut pair.cons[1])
            .unwrap();
        let decoded = |pair: &mut Pair, sqid: &str| -> u64 {
            assert!(sqid.len() >= usize::from(min_length), "{sqid}");
            let numbers: Vec<u64> = cmd(&["IDGEN.DECODE", sqid])
                .query(&mut pair.cons[0])
                .unwrap_or_else(|e| panic!("{alphabet}: the module does not take {sqid}: {e}"));
            assert_eq!(numbers.len(), 1, "{sqid}");
            numbers[0]
        };
        let sqids: Vec<String> = idgen_tests::when_caught_up(
            &mut pair.cons[1],
            &cmd(&[
                "FCALL",
                "snowflake_next",
                "1",
                "sf",
                "COUNT",
                "1000",
                "SQIDS",
            ]),
        );
        let one: String = cmd(&["FCALL", "snowflake_next", "1", "sf", "SQIDS"])
            .query(&mut pair.cons[1])
            .unwrap();
        let ids: Vec<u64> = sqids
            .iter()
            .chain([&one])
            .map(|s| decoded(&mut pair, s))
            .collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "{alphabet}: {ids:?}");
        for id in &ids {
            let d = Layout::twitter().decode(*id);
            assert_eq!((d.datacenter, d.worker), (17, 29), "{id}");
        }
        let values: Vec<String> =
            cmd(&["FCALL", "dateseq_next", "1", "d", "COUNT", "1000", "SQIDS"])
                .query(&mut pair.cons[1])
                .unwrap();
        // Which Sqids are a later variant (the first held a blocked word): the first letter
        // is the alphabet's at (code of its letter at value % n, plus 1), plus the variant.
        let shuffled = idgen_core::SqidCodec::new(alphabet, min_length)
            .unwrap()
            .parts()
            .shuffled;
        let n = shuffled.len() as u64;
        let later = |sqid: &str, value: u64| {
            let first = (u64::from(shuffled[(value % n) as usize]) + 1) % n;
            sqid.as_bytes()[0] != shuffled[first as usize]
        };
        let skipped = sqids
            .iter()
            .zip(&ids)
            .filter(|(s, id)| later(s, **id))
            .count()
            + values
                .iter()
                .filter(|s| later(s, decoded(&mut pair, s)))
                .count();
        if alphabet == lowercase {
            // 26 letters spell many blocked words: a blocklist the library ignored or got
            // wrong would give the first variant where the module gives a later one.
            assert!(
                skipped > 0,
                "no Sqid of 2,000 needed another variant: the test is weak"
            );
        }
        let values: Vec<u64> = values.iter().map(|s| decoded(&mut pair, s)).collect();
        assert!(
            values.windows(2).all(|w| w[1] == w[0] + 1),
            "{alphabet}: {values:?}"
        );
        let current: String = cmd(&["FCALL_RO", "dateseq_current", "1", "d", "SQIDS"])
            .query(&mut pair.cons[1])
            .unwrap();
        assert_eq!(decoded(&mut pair, &current), values[999]);
        let plain: u64 = cmd(&["FCALL_RO", "dateseq_current", "1", "d"])
            .query(&mut pair.cons[1])
            .unwrap();
        assert_eq!(plain, values[999], "{alphabet}");
        // Ten-digit values pass 2^53: the library splits them as it does IDs.
        let long: String = cmd(&["FCALL", "dateseq_next", "1", "e", "DIGITS", "10", "SQIDS"])
            .query(&mut pair.cons[1])
            .unwrap();
        let long_value: String = cmd(&[
            "FCALL_RO",
            "dateseq_current",
            "1",
            "e",
            "DIGITS",
            "10",
            "STRING",
        ])
        .query(&mut pair.cons[1])
        .unwrap();
        assert_eq!(decoded(&mut pair, &long).to_string(), long_value);
    }
}
