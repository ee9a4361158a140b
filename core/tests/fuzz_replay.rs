//! Replays the fuzz corpus (fuzz/corpus) and seeded mutations of valid inputs
//! through every decoder on stable Rust: none may panic. `cargo +nightly fuzz
//! run decode` explores further (see fuzz/Cargo.toml).

mod common;

use common::Rng;
use sett::internals::{fuzz_decode, fuzz_ops, FuzzTarget};
use sett::{Db, Options};
use std::path::Path;

/// The corpus of fuzz target `name`; a missing or empty folder leaves a skip
/// mark (the seeded mutations still run, the corpus part of the test does not).
fn corpus(name: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(name);
    let mut out = Vec::new();
    match std::fs::read_dir(&dir) {
        Ok(rd) => {
            for e in rd {
                out.push(std::fs::read(e.unwrap().path()).unwrap());
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("reading {}: {e}", dir.display()),
    }
    if out.is_empty() {
        sett_test_skip::skip(
            &format!("core-fuzz_replay-{name}-no_corpus"),
            &format!("{} is missing or empty", dir.display()),
        );
    }
    out
}

/// Valid encodings to mutate: a backup stream and a database's own files.
fn valid_samples() -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Options::new(dir.path());
    o.value_threshold = 32;
    o.memtable_size = 4096;
    let db = Db::open(o).unwrap();
    for i in 0..200u32 {
        db.put(
            format!("key{i}").as_bytes(),
            &vec![i as u8; (i % 80) as usize],
        )
        .unwrap();
    }
    db.close().unwrap();
    let mut samples: Vec<Vec<u8>> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| std::fs::read(e.path()).unwrap())
        .filter(|d| !d.is_empty())
        .collect();
    let db = Db::open(Options::new(dir.path())).unwrap();
    let mut backup = Vec::new();
    db.backup(&mut backup, 0).unwrap();
    samples.push(backup);
    samples
}

fn mutate(rng: &mut Rng, base: &[u8]) -> Vec<u8> {
    let mut d = base.to_vec();
    match rng.below(4) {
        0 if !d.is_empty() => {
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(d.len() as u64) as usize;
                d[i] ^= 1 << rng.below(8);
            }
        }
        1 => d.truncate(rng.below(d.len() as u64 + 1) as usize),
        2 => {
            let at = rng.below(d.len() as u64 + 1) as usize;
            let n = 1 + rng.below(16) as usize;
            let junk = rng.bytes(n);
            d.splice(at..at, junk);
        }
        _ => {
            let n = rng.below(300) as usize;
            d = rng.bytes(n);
        }
    }
    d
}

#[test]
fn every_decoder_survives_the_corpus_and_seeded_mutations() {
    let mut rng = Rng::new(0xF022);
    let samples = valid_samples();
    let mut runs = 0u64;
    for input in corpus("decode") {
        if let Some((&pick, rest)) = input.split_first() {
            fuzz_decode(FuzzTarget::ALL[pick as usize % FuzzTarget::ALL.len()], rest);
            runs += 1;
        }
    }
    for target in FuzzTarget::ALL {
        for s in &samples {
            // The raw file, and windows into it that start at record and block boundaries.
            for start in [0usize, 16, 24].into_iter().filter(|&x| x <= s.len()) {
                fuzz_decode(target, &s[start..]);
                for _ in 0..40 {
                    fuzz_decode(target, &mutate(&mut rng, &s[start..]));
                    runs += 1;
                }
            }
        }
    }
    eprintln!("decoders: {runs} inputs, no panic");
}

#[test]
fn damaged_backup_streams_are_refused_not_panicked_on() {
    let mut rng = Rng::new(0xBAC0);
    let samples = valid_samples();
    let backup = samples.last().unwrap().clone();
    let mut inputs = corpus("backup_stream");
    for _ in 0..150 {
        inputs.push(mutate(&mut rng, &backup));
    }
    let (mut ok, mut refused) = (0, 0);
    for input in inputs {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(Options::new(dir.path())).unwrap();
        match db.load(&mut input.as_slice()) {
            Ok(_) => ok += 1,
            Err(_) => refused += 1,
        }
    }
    eprintln!("backup streams: {ok} restored, {refused} refused");
    assert!(refused > 0);
}

#[test]
fn random_operation_sequences_match_the_model() {
    let mut rng = Rng::new(0x0905);
    let mut inputs = corpus("ops");
    // Seeded sequences of a few hundred operations each, on top of the corpus.
    for _ in 0..12 {
        let n = 200 + rng.below(600) as usize;
        inputs.push(rng.bytes(n));
    }
    let checked: u64 = inputs.iter().map(|input| fuzz_ops(input)).sum();
    eprintln!(
        "operation sequences: {} replayed, {checked} reads and scanned items compared with the model",
        inputs.len()
    );
    // The seeded sequences alone read and scan far more than this: a replay
    // that stopped comparing (an early return, a broken decoder of the input)
    // shows here.
    assert!(
        checked > 10 * inputs.len() as u64,
        "only {checked} comparisons"
    );
}
