//! Every on-disk decoder (block, bloom filter, WAL/manifest log records, batch
//! record, value record, value-log entry, manifest edits): the first byte picks
//! the decoder, the rest is its input. None may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sett::internals::{fuzz_decode, FuzzTarget};

fuzz_target!(|data: &[u8]| {
    if let Some((&pick, rest)) = data.split_first() {
        let all = FuzzTarget::ALL;
        fuzz_decode(all[pick as usize % all.len()], rest);
    }
});
