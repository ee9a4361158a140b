//! A backup stream restored into an empty database: a clear error or a restore,
//! never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sett::Db::open(sett::Options::new(dir.path())).expect("open");
    let _ = db.load(&mut &data[..]);
});
