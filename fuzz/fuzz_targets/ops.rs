//! Random operation sequences (puts, deletes, batches, transactions, reads,
//! iteration, flush, flatten, value-log GC, reopen) against a model map: any
//! difference panics.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    sett::internals::fuzz_ops(data);
});
