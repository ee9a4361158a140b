//! The GC against a fake environment, no Db: real value-log files written
//! in a temporary directory, a memtable whose pointers say which of their
//! entries are live, and a record of every verb the GC called.

use super::*;
use crate::levels::Version;
use crate::memtable::Memtable;
use crate::range_del::RangeDels;
use crate::vlog::{VlogSet, VlogWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// A round's pace with no rate limit and no writes running.
const UNPACED: Pace = Pace {
    rate: 0,
    writing: false,
};

/// What the GC asked of the fake, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Call {
    /// `switch_memtable` (the GC's flush starts with one).
    Switch,
    /// `write_moves` of this many moves.
    Moves(usize),
    /// `seal_head`.
    Seal,
    Sync,
    LogDeleted(Vec<u32>),
    Deleted(Vec<u32>),
}

/// A move as the write pipeline was handed it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Moved {
    key: Vec<u8>,
    value: Vec<u8>,
    version: u64,
    user_meta: u8,
    expires_at: u64,
    old: ValuePointer,
    walked_at: Option<u64>,
}

/// The clock of every fake: entries expiring before it have expired.
const NOW: u64 = 1_000;
/// The fake's head value-log file: past every file a test writes.
const HEAD: u32 = 1_000;
/// The sequence visible to reads.
const SEQ: u64 = 500;

type Hook = Box<dyn FnOnce(&Fake) + Send>;

struct Fake {
    dir: tempfile::TempDir,
    opts: Options,
    state: Mutex<Arc<ReadState>>,
    discard: Mutex<BTreeMap<u32, u64>>,
    calls: Mutex<Vec<Call>>,
    moved: Mutex<Vec<Moved>>,
    /// `write_moves` fails while set.
    fail_moves: AtomicBool,
    /// Run by the next memtable switch: a writer at work while the GC flushes.
    on_switch: Mutex<Option<Hook>>,
}

impl Fake {
    fn new() -> Fake {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = Options::new(dir.path());
        opts.vlog_gc_ratio = 0.5;
        opts.vlog_gc_idle_ratio = 0.1;
        let state = ReadState {
            mem: Arc::new(Memtable::new(u64::from(HEAD) + 1)),
            imm: Vec::new(),
            version: Arc::new(Version::new(opts.num_levels)),
            vlogs: Arc::new(VlogSet::default()),
            range_dels: Arc::new(RangeDels::new(Vec::new())),
        };
        Fake {
            dir,
            opts,
            state: Mutex::new(Arc::new(state)),
            discard: Mutex::new(BTreeMap::new()),
            calls: Mutex::new(Vec::new()),
            moved: Mutex::new(Vec::new()),
            fail_moves: AtomicBool::new(false),
            on_switch: Mutex::new(None),
        }
    }

    fn path(&self, id: u32) -> PathBuf {
        crate::filename::vlog(self.dir.path(), id)
    }

    /// [`Fake::write_file`] of `keys[i]` → `values[i]`.
    fn write_pairs(
        &self,
        id: u32,
        keys: &[impl AsRef<[u8]>],
        values: &[impl AsRef<[u8]>],
        damage: Option<usize>,
    ) -> Vec<ValuePointer> {
        let entries: Vec<(&[u8], &[u8])> = keys
            .iter()
            .zip(values)
            .map(|(k, v)| (k.as_ref(), v.as_ref()))
            .collect();
        self.write_file(id, &entries, damage)
    }

    /// Writes sealed value-log file `id` holding `entries` (key, value) in
    /// order, with a byte in the middle of entry `damage` flipped before the
    /// file is opened, and returns their pointers. The file is counted all garbage, so that
    /// a round picks it whatever its sample would say.
    fn write_file(
        &self,
        id: u32,
        entries: &[(&[u8], &[u8])],
        damage: Option<usize>,
    ) -> Vec<ValuePointer> {
        let mut w = VlogWriter::create(&self.opts.fs, self.dir.path(), id).unwrap();
        let ptrs: Vec<ValuePointer> = entries.iter().map(|(k, v)| w.append(k, v)).collect();
        w.sync().unwrap();
        drop(w);
        if let Some(victim) = damage {
            let at = ptrs[victim].offset + u64::from(ptrs[victim].len) / 2;
            let mut data = std::fs::read(self.path(id)).unwrap();
            data[at as usize] ^= 0xff;
            std::fs::write(self.path(id), data).unwrap();
        }
        let f =
            Arc::new(VlogFile::open_sealed(&crate::fs::Fs::real(), &self.path(id), id).unwrap());
        lock(&self.discard).insert(id, f.len().unwrap());
        self.swap(|s| ReadState {
            vlogs: Arc::new(s.vlogs.with(f.clone())),
            ..clone_state(s)
        });
        ptrs
    }

    /// `key` at `version` with `stored` (with user meta and expiry) becomes
    /// the newest version the tree holds.
    fn put(&self, key: &[u8], version: u64, stored: Stored<'_>, user_meta: u8, expires_at: u64) {
        let mut rec = Vec::new();
        value::encode(&mut rec, &stored, user_meta, expires_at);
        lock(&self.state).mem.insert(key, version, &rec);
    }

    fn point(&self, key: &[u8], version: u64, ptr: ValuePointer) {
        self.put(key, version, Stored::Pointer(ptr), 0, 0);
    }

    fn swap(&self, f: impl FnOnce(&ReadState) -> ReadState) {
        let mut st = lock(&self.state);
        *st = Arc::new(f(&st));
    }

    fn calls(&self) -> Vec<Call> {
        lock(&self.calls).clone()
    }

    fn moved(&self) -> Vec<Moved> {
        lock(&self.moved).clone()
    }

    fn has_file(&self, id: u32) -> bool {
        lock(&self.state).vlogs.get(id).is_some() && self.path(id).exists()
    }
}

fn clone_state(s: &ReadState) -> ReadState {
    ReadState {
        mem: s.mem.clone(),
        imm: s.imm.clone(),
        version: s.version.clone(),
        vlogs: s.vlogs.clone(),
        range_dels: s.range_dels.clone(),
    }
}

impl GcEnv for Fake {
    fn opts(&self) -> &Options {
        &self.opts
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn now(&self) -> u64 {
        NOW
    }

    fn read_state(&self) -> Arc<ReadState> {
        lock(&self.state).clone()
    }

    fn visible_seq(&self) -> u64 {
        SEQ
    }

    fn head_vlog(&self) -> u32 {
        HEAD
    }

    fn discard(&self) -> BTreeMap<u32, u64> {
        lock(&self.discard).clone()
    }

    fn vlog_appended(&self) -> u64 {
        0
    }

    fn batches(&self) -> u64 {
        0
    }

    fn check_open(&self) -> Result<()> {
        Ok(())
    }

    fn check_writable(&self) -> Result<()> {
        Ok(())
    }

    fn look_idle(&self) -> bool {
        false
    }

    fn idle(&self) -> bool {
        false
    }

    fn wait_for_work(&self, _: Duration) -> bool {
        false
    }

    fn seal_head(&self, _: u32, _: bool) -> Result<Option<u32>> {
        lock(&self.calls).push(Call::Seal);
        Ok(Some(HEAD))
    }

    fn switch_memtable(&self, _: &mut Trace) -> Result<Option<u64>> {
        lock(&self.calls).push(Call::Switch);
        let hook = lock(&self.on_switch).take();
        if let Some(hook) = hook {
            hook(self);
        }
        Ok(None)
    }

    fn wait_flushed_through(&self, _: u64) -> Result<()> {
        Ok(())
    }

    fn write_moves(&self, moves: Vec<Move>) -> Result<()> {
        if self.fail_moves.load(Ordering::Relaxed) {
            return Err(Error::io(
                "writing moves",
                std::io::Error::other("disk full"),
            ));
        }
        lock(&self.calls).push(Call::Moves(moves.len()));
        lock(&self.moved).extend(moves.into_iter().map(|m| Moved {
            key: m.key,
            value: m.value,
            version: m.version,
            user_meta: m.user_meta,
            expires_at: m.expires_at,
            old: m.old,
            walked_at: m.walked_at,
        }));
        Ok(())
    }

    fn sync_for_delete(&self) -> Result<()> {
        lock(&self.calls).push(Call::Sync);
        Ok(())
    }

    fn log_vlogs_deleted(&self, ids: &[u32]) -> Result<()> {
        lock(&self.calls).push(Call::LogDeleted(ids.to_vec()));
        Ok(())
    }

    fn delete_vlogs(&self, files: &[Arc<VlogFile>]) -> Result<()> {
        let ids: Vec<u32> = files.iter().map(|f| f.id()).collect();
        lock(&self.calls).push(Call::Deleted(ids.clone()));
        self.swap(|s| {
            let mut vlogs = (*s.vlogs).clone();
            for &id in &ids {
                vlogs = vlogs.without(id);
            }
            ReadState {
                vlogs: Arc::new(vlogs),
                ..clone_state(s)
            }
        });
        for f in files {
            std::fs::remove_file(f.path()).map_err(|e| Error::io("removing", e))?;
        }
        Ok(())
    }
}

fn value_of(key: &[u8]) -> Vec<u8> {
    let mut v = key.to_vec();
    v.resize(300, b'.');
    v
}

/// Six entries a..f of 300 bytes in file 1; the tree holds a, c and f
/// there (c with user meta and expiring at `c_expires`), b overwritten
/// inline, d deleted, e not at all. Returns the fake and the pointers.
fn six_entries_three_live_at(c_expires: u64) -> (Fake, Vec<ValuePointer>) {
    let fake = Fake::new();
    let keys: [&[u8]; 6] = [b"a", b"b", b"c", b"d", b"e", b"f"];
    let values: Vec<Vec<u8>> = keys.iter().map(|k| value_of(k)).collect();
    let entries: Vec<(&[u8], &[u8])> = keys
        .iter()
        .copied()
        .zip(values.iter().map(|v| &v[..]))
        .collect();
    let p = fake.write_file(1, &entries, None);
    fake.point(b"a", 10, p[0]);
    fake.point(b"b", 11, p[1]);
    fake.put(b"b", 20, Stored::Inline(b"new b"), 0, 0);
    fake.put(b"c", 12, Stored::Pointer(p[2]), 3, c_expires);
    fake.point(b"d", 13, p[3]);
    fake.put(b"d", 21, Stored::Delete, 0, 0);
    fake.point(b"f", 15, p[5]);
    (fake, p)
}

fn six_entries_three_live() -> (Fake, Vec<ValuePointer>) {
    six_entries_three_live_at(NOW + 100)
}

fn moved(key: &[u8], version: u64, old: ValuePointer) -> Moved {
    Moved {
        key: key.to_vec(),
        value: value_of(key),
        version,
        user_meta: 0,
        expires_at: 0,
        old,
        walked_at: None,
    }
}

fn entry_bytes(ptrs: &[ValuePointer]) -> u64 {
    ptrs.iter().map(|p| u64::from(p.len)).sum()
}

#[test]
fn collecting_a_file_moves_exactly_its_live_entries_in_file_order_then_deletes_it() {
    let (fake, p) = six_entries_three_live();
    let size = fake.read_state().vlogs.get(1).unwrap().len().unwrap();
    let gc = GcState::new(&fake.opts);
    let outcome = gc.collect_one(&fake, 0.5, 0).unwrap();
    let moved_bytes = entry_bytes(&[p[0], p[2], p[5]]);
    assert_eq!(
        outcome,
        GcOutcome::Rewritten {
            file: 1,
            moved_values: 3,
            moved_bytes,
            freed_bytes: size - moved_bytes,
        }
    );
    let mut c = moved(b"c", 12, p[2]);
    (c.user_meta, c.expires_at) = (3, NOW + 100);
    assert_eq!(
        fake.moved(),
        vec![moved(b"a", 10, p[0]), c, moved(b"f", 15, p[5])]
    );
    // The flush before the moves, the sync after them, then the manifest,
    // then the file: a crash between any two loses no live value.
    assert_eq!(
        fake.calls(),
        vec![
            Call::Switch,
            Call::Moves(3),
            Call::Sync,
            Call::LogDeleted(vec![1]),
            Call::Deleted(vec![1]),
        ]
    );
    assert!(!fake.has_file(1));
    let counts = gc.counts();
    assert_eq!((counts.files_rewritten, counts.files_deleted), (1, 0));
    assert_eq!(counts.bytes_reclaimed, size - moved_bytes);
}

#[test]
fn entries_overwritten_while_the_gc_flushes_are_not_moved_and_the_file_goes_unrewritten() {
    let (fake, _) = six_entries_three_live();
    *lock(&fake.on_switch) = Some(Box::new(|fake: &Fake| {
        for key in [b"a", b"c", b"f"] {
            fake.put(key, 30, Stored::Inline(b"newer"), 0, 0);
        }
    }));
    let size = fake.read_state().vlogs.get(1).unwrap().len().unwrap();
    let gc = GcState::new(&fake.opts);
    let outcome = gc.collect_one(&fake, 0.5, 0).unwrap();
    assert_eq!(
        outcome,
        GcOutcome::Deleted {
            file: 1,
            freed_bytes: size
        }
    );
    assert_eq!(fake.moved(), vec![], "nothing stale moved");
    assert_eq!(
        fake.calls(),
        vec![
            Call::Switch,
            Call::Sync,
            Call::LogDeleted(vec![1]),
            Call::Deleted(vec![1]),
        ]
    );
    assert!(!fake.has_file(1));
}

#[test]
fn an_expired_live_entry_is_not_moved() {
    let (fake, p) = six_entries_three_live_at(NOW);
    let gc = GcState::new(&fake.opts);
    gc.collect_one(&fake, 0.5, 0).unwrap();
    assert_eq!(
        fake.moved(),
        vec![moved(b"a", 10, p[0]), moved(b"f", 15, p[5])]
    );
    assert!(!fake.has_file(1));
}

/// A file of entries k0..k7 in which `dead` were overwritten; a byte in the
/// middle of entry `victim` (in its value) is flipped.
fn damaged_file(dead: &[usize], victim: usize) -> (Fake, Vec<ValuePointer>) {
    let fake = Fake::new();
    let keys: Vec<Vec<u8>> = (0..8).map(|i| format!("k{i}").into_bytes()).collect();
    let values: Vec<Vec<u8>> = keys.iter().map(|k| value_of(k)).collect();
    let p = fake.write_pairs(1, &keys, &values, Some(victim));
    for (i, k) in keys.iter().enumerate() {
        fake.point(k, 10 + i as u64, p[i]);
        if dead.contains(&i) {
            fake.put(k, 100 + i as u64, Stored::Inline(b"newer"), 0, 0);
        }
    }
    (fake, p)
}

#[test]
fn a_flipped_byte_in_a_dead_entry_costs_no_live_entry_and_the_file_is_collected() {
    let (fake, p) = damaged_file(&[1, 2], 2);
    let gc = GcState::new(&fake.opts);
    let outcome = gc.collect_one(&fake, 0.5, 0).unwrap();
    assert!(
        matches!(
            outcome,
            GcOutcome::Rewritten {
                file: 1,
                moved_values: 6,
                ..
            }
        ),
        "{outcome:?}"
    );
    // Before the damage by the walk in file order; past it by the tree's
    // pointers, read one by one.
    let keys: Vec<(Vec<u8>, u64, ValuePointer, bool)> = fake
        .moved()
        .into_iter()
        .map(|m| (m.key, m.version, m.old, m.walked_at.is_some()))
        .collect();
    let want: Vec<(Vec<u8>, u64, ValuePointer, bool)> = [0, 3, 4, 5, 6, 7]
        .into_iter()
        .map(|i| (format!("k{i}").into_bytes(), 10 + i as u64, p[i], i > 2))
        .collect();
    assert_eq!(keys, want);
    for m in fake.moved() {
        assert_eq!(m.value, value_of(&m.key), "moved intact");
    }
    assert!(!fake.has_file(1));
    assert_eq!(gc.damaged_files(), 0);
}

#[test]
fn a_flipped_byte_in_a_live_entry_is_a_corruption_error_naming_it_and_the_file_stays() {
    let (fake, p) = damaged_file(&[1], 3);
    let gc = GcState::new(&fake.opts);
    match gc.collect_one(&fake, 0.5, 0) {
        Err(Error::Corruption { file, offset, .. }) => {
            assert_eq!(file, fake.path(1));
            assert_eq!(offset, p[3].offset);
        }
        other => panic!("not the damaged entry's corruption error: {other:?}"),
    }
    assert!(fake.has_file(1), "the file stays");
    let calls = fake.calls();
    assert!(
        !calls
            .iter()
            .any(|c| matches!(c, Call::Sync | Call::LogDeleted(_) | Call::Deleted(_))),
        "{calls:?}"
    );
    // The tree still points into it: every live value reads from the file.
    let st = fake.read_state();
    let f = st.vlogs.get(1).unwrap();
    for i in [0, 2, 4, 5, 6, 7] {
        assert_eq!(f.read(p[i]).unwrap(), value_of(format!("k{i}").as_bytes()));
    }
    assert_eq!(gc.damaged_files(), 1);
    assert_eq!(
        gc.collect_one(&fake, 0.5, 0).unwrap(),
        GcOutcome::NothingToCollect,
        "a damaged file is left out of later rounds"
    );
}

#[test]
fn a_background_round_collects_the_other_files_when_one_has_a_damaged_live_entry() {
    let (fake, _) = damaged_file(&[1], 3);
    let value = value_of(b"z");
    let p = fake.write_file(2, &[(b"z", &value)], None);
    fake.point(b"z", 50, p[0]);
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    let outcomes = gc.collect(&fake, 0.5, pace, true, ROUND_BYTES).unwrap();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(matches!(outcomes[0], GcOutcome::Rewritten { file: 2, .. }));
    assert!(fake.has_file(1));
    assert!(!fake.has_file(2));
    assert_eq!(gc.damaged_files(), 1);
}

#[test]
fn a_failed_write_of_moves_leaves_the_file_in_place_for_a_later_round() {
    let (fake, p) = six_entries_three_live();
    fake.fail_moves.store(true, Ordering::Relaxed);
    let gc = GcState::new(&fake.opts);
    let err = gc.collect_one(&fake, 0.5, 0).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err:?}");
    assert!(fake.has_file(1));
    assert_eq!(fake.calls(), vec![Call::Switch]);
    assert_eq!(gc.damaged_files(), 0, "not damage: tried again");
    fake.fail_moves.store(false, Ordering::Relaxed);
    gc.collect_one(&fake, 0.5, 0).unwrap();
    assert_eq!(fake.moved().len(), 3);
    assert_eq!(fake.moved()[0], moved(b"a", 10, p[0]));
    assert!(!fake.has_file(1));
}

#[test]
fn the_idle_tier_moves_the_live_entries_its_walk_found() {
    let (fake, p) = six_entries_three_live();
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    // Below `vlog_gc_ratio` in the background: the idle tier, by walks.
    let outcomes = gc.collect(&fake, 0.1, pace, true, ROUND_BYTES).unwrap();
    assert_eq!(outcomes.len(), 1);
    let found: Vec<(Vec<u8>, u64, ValuePointer, Option<u64>)> = fake
        .moved()
        .into_iter()
        .map(|m| (m.key, m.version, m.old, m.walked_at))
        .collect();
    assert_eq!(
        found,
        vec![
            (b"a".to_vec(), 10, p[0], Some(SEQ)),
            (b"c".to_vec(), 12, p[2], Some(SEQ)),
            (b"f".to_vec(), 15, p[5], Some(SEQ)),
        ]
    );
    assert_eq!(gc.counts().walks, 1);
    assert!(!fake.has_file(1));
}

/// Two files whose live keys interleave, each written in descending key
/// order, with a dead entry between: the idle tier moves the round's live
/// entries in ascending key order across both files. Returns the fake and
/// both files' pointers.
fn two_files_keys_interleaved() -> (Fake, Vec<ValuePointer>, Vec<ValuePointer>) {
    let fake = Fake::new();
    let values: Vec<Vec<u8>> = (b'a'..=b'h').map(|k| value_of(&[k])).collect();
    let v = |k: u8| &values[usize::from(k - b'a')][..];
    let p1 = fake.write_file(
        1,
        &[
            (b"g", v(b'g')),
            (b"e", v(b'e')),
            (b"c", v(b'c')),
            (b"a", v(b'a')),
        ],
        None,
    );
    let p2 = fake.write_file(
        2,
        &[
            (b"h", v(b'h')),
            (b"f", v(b'f')),
            (b"d", v(b'd')),
            (b"b", v(b'b')),
        ],
        None,
    );
    for (i, k) in [b"g", b"e", b"c", b"a"].iter().enumerate() {
        fake.point(*k, 10 + i as u64, p1[i]);
    }
    for (i, k) in [b"h", b"f", b"d", b"b"].iter().enumerate() {
        fake.point(*k, 20 + i as u64, p2[i]);
    }
    fake.put(b"e", 30, Stored::Delete, 0, 0);
    (fake, p1, p2)
}

#[test]
fn the_idle_tier_moves_a_rounds_live_entries_in_key_order_across_its_files() {
    let (fake, _, _) = two_files_keys_interleaved();
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    let outcomes = gc.collect(&fake, 0.1, pace, true, ROUND_BYTES).unwrap();
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    let keys: Vec<Vec<u8>> = fake.moved().into_iter().map(|m| m.key).collect();
    let want: Vec<Vec<u8>> = [b"a", b"b", b"c", b"d", b"f", b"g", b"h"]
        .iter()
        .map(|k| k.to_vec())
        .collect();
    assert_eq!(keys, want, "in key order, e (deleted) left behind");
    for m in fake.moved() {
        assert_eq!(m.value, value_of(&m.key), "each value read whole");
        assert_eq!(m.walked_at, Some(SEQ));
    }
    assert!(!fake.has_file(1) && !fake.has_file(2));
}

#[test]
fn a_damaged_live_entry_met_in_key_order_keeps_its_file_and_the_other_file_is_collected() {
    let fake = Fake::new();
    let values: Vec<Vec<u8>> = (b'a'..=b'd').map(|k| value_of(&[k])).collect();
    let p1 = fake.write_file(1, &[(b"c", &values[2]), (b"a", &values[0])], Some(1));
    let p2 = fake.write_file(2, &[(b"d", &values[3]), (b"b", &values[1])], None);
    fake.point(b"c", 10, p1[0]);
    fake.point(b"a", 11, p1[1]);
    fake.point(b"d", 12, p2[0]);
    fake.point(b"b", 13, p2[1]);
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    let outcomes = gc.collect(&fake, 0.1, pace, true, ROUND_BYTES).unwrap();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(matches!(
        outcomes[0],
        GcOutcome::Rewritten {
            file: 2,
            moved_values: 2,
            ..
        }
    ));
    // a (damaged, first in key order) stops file 1's moves: c stays too.
    let keys: Vec<Vec<u8>> = fake.moved().into_iter().map(|m| m.key).collect();
    assert_eq!(keys, vec![b"b".to_vec(), b"d".to_vec()]);
    assert!(fake.has_file(1), "the damaged file stays");
    assert!(!fake.has_file(2));
    assert_eq!(gc.damaged_files(), 1);
    let st = fake.read_state();
    let f = st.vlogs.get(1).unwrap();
    assert_eq!(f.read(p1[0]).unwrap(), values[2], "c still reads from it");
    assert!(f.read(p1[1]).unwrap_err().is_corruption());
}

#[test]
fn one_walk_records_the_scattered_files_of_the_idle_tiers_next_rounds() {
    // Three garbage-free files, each holding every third key of a..r in
    // descending key order: each is scattered (six runs of one entry), so
    // the idle tier puts them in key order, one file a round here.
    let fake = Fake::new();
    let keys: Vec<[u8; 1]> = (b'a'..=b'r').map(|k| [k]).collect();
    let mut version = 10;
    for id in 1..=3u32 {
        let mine: Vec<&[u8; 1]> = keys.iter().skip(id as usize - 1).step_by(3).rev().collect();
        let values: Vec<Vec<u8>> = mine.iter().map(|k| value_of(&k[..])).collect();
        let ptrs = fake.write_pairs(id, &mine, &values, None);
        lock(&fake.discard).insert(id, 0);
        for (k, p) in mine.iter().zip(ptrs) {
            fake.point(&k[..], version, p);
            version += 1;
        }
    }
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    for round in 1..=3u32 {
        let outcomes = gc.collect(&fake, 0.1, pace, true, 1).unwrap();
        assert_eq!(outcomes.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            !fake.has_file(round),
            "round {round} put file {round} in order"
        );
    }
    // The first walk measures the files (none is known scattered before
    // it); the second, for the first scattered round, records all three.
    assert_eq!(gc.counts().walks, 2);
    let moved: Vec<Vec<u8>> = fake.moved().into_iter().map(|m| m.key).collect();
    let want: Vec<Vec<u8>> = (1..=3usize)
        .flat_map(|id| keys.iter().skip(id - 1).step_by(3).map(|k| k.to_vec()))
        .collect();
    assert_eq!(moved, want, "each round's keys in ascending order");
}

#[test]
fn a_file_holding_two_rounds_key_ordered_outputs_is_not_put_in_order_again() {
    // A head written by two key-order rounds: a, c, .. w, then b, d, .. x.
    // In key order its offsets go back at every other entry, yet a forward
    // scan reads it in two streams: not scattered, nothing to rewrite.
    let fake = Fake::new();
    let round = |first: u8| (first..=b'x').step_by(2).map(|k| [k]).collect::<Vec<_>>();
    let keys: Vec<[u8; 1]> = round(b'a').into_iter().chain(round(b'b')).collect();
    let values: Vec<Vec<u8>> = keys.iter().map(|k| value_of(&k[..])).collect();
    let ptrs = fake.write_pairs(1, &keys, &values, None);
    lock(&fake.discard).insert(1, 0);
    for (i, (k, p)) in keys.iter().zip(ptrs).enumerate() {
        fake.point(&k[..], 10 + i as u64, p);
    }
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    let outcomes = gc.collect(&fake, 0.1, pace, true, ROUND_BYTES).unwrap();
    assert!(outcomes.is_empty(), "{outcomes:?}");
    assert!(gc.scattered().is_empty());
    assert!(fake.has_file(1));
    assert!(fake.moved().is_empty());
    assert_eq!(gc.counts().walks, 1, "the file was measured");
}

#[test]
fn a_key_order_round_that_moved_much_seals_the_head_after_its_moves() {
    // 40 entries of 300 KiB, every other one live: the idle tier moves
    // 6 MB in key order, then seals the head, so that the next round's
    // output does not interleave with this one's in a file.
    let fake = Fake::new();
    let keys: Vec<[u8; 2]> = (0..40u8).map(|i| [b'k', i]).collect();
    let values: Vec<Vec<u8>> = (0..40u8).map(|i| vec![i; 300 << 10]).collect();
    let ptrs = fake.write_pairs(1, &keys, &values, None);
    for (i, (k, p)) in keys.iter().zip(ptrs).enumerate().step_by(2) {
        fake.point(&k[..], 10 + i as u64, p);
    }
    let gc = GcState::new(&fake.opts);
    let pace = UNPACED;
    let outcomes = gc.collect(&fake, 0.1, pace, true, ROUND_BYTES).unwrap();
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    let calls = fake.calls();
    let moves = calls.iter().position(|c| matches!(c, Call::Moves(_)));
    let seal = calls.iter().position(|c| *c == Call::Seal);
    assert!(moves.is_some() && seal > moves, "{calls:?}");
    assert_eq!(fake.moved().len(), 20);
}
