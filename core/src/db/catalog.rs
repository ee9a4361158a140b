//! The keyspace catalog: which keyspaces exist, their ids and options, and
//! the handles this Db has open.
//!
//! The records live in the Db under id 0 (`FF FF FF FF 00 00 00 00 | name`,
//! and the empty name for the id counter; core/FORMAT.md, "Keyspaces"), so
//! the catalog reads and writes them like any key. [`Catalog`] owns what is
//! kept in memory beside them: the open handles, the floor below which no id
//! is given again, and the codec of every keyspace for table builds. It
//! reaches the Db only through [`CatalogEnv`]: a point read, a scan of the
//! catalog's prefix, and an atomic write. The unit tests below run it over a
//! fake environment (a map).

use crate::batch::WriteBatch;
use crate::error::{Error, Result};
use crate::keyspace::{prefix, region_end, KeyspaceOptions, Shared, PREFIX_LEN};
use crate::sync::lock;
use crate::table::codec::KeyspaceCodecs;
use crate::table::Compression;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The catalog's prefix (id 0).
pub(crate) const CATALOG: [u8; PREFIX_LEN] = [0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0];
/// Format of the id counter record and of keyspace records without a
/// codec; the first byte of each.
const RECORD_FORMAT: u8 = 1;
/// Format of keyspace records with a codec (format 1 and a codec byte).
const RECORD_FORMAT_CODEC: u8 = 2;

/// What the catalog needs from the Db. The catalog calls these holding its
/// own lock, which comes first in the Db's lock order.
pub(crate) trait CatalogEnv {
    /// The value at storage key `key`, at the newest version.
    /// Requires: no Db lock held (takes `state` for reading).
    fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>>;

    /// Every (storage key, value) under `prefix`, in key order.
    /// Requires: no Db lock held.
    fn scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>>;

    /// Commits `batch` atomically, as any write.
    /// Requires: no Db lock held (queues as a writer).
    fn write(&self, batch: WriteBatch) -> Result<()>;

    /// An error unless the Db takes writes (open, not read-only, not poisoned).
    /// Requires: nothing.
    fn check_writable(&self) -> Result<()>;

    /// The database directory, named in corruption errors.
    fn dir(&self) -> &Path;
}

/// What the catalog's lock guards.
#[derive(Default)]
struct Open {
    /// The handles' shared state, by name.
    handles: HashMap<String, Arc<Shared>>,
    /// No id below this is given again, whatever the stored counter says
    /// (after `drop_all` emptied it).
    next_floor: u32,
}

/// The Db's keyspaces in memory: open handles, the id floor, the codecs.
#[derive(Default)]
pub(crate) struct Catalog {
    /// Orders creates, drops and `drop_all` against each other.
    open: Mutex<Open>,
    /// Keyspace id → codec, for table builds. Innermost: nothing is taken
    /// while it is held.
    codecs: Mutex<KeyspaceCodecs>,
}

impl Catalog {
    /// Opens keyspace `name` (checked by the caller), creating it with
    /// `opts` if it does not exist. Options given for an existing keyspace
    /// replace its recorded ones unless they are the default, which keeps
    /// them. Requires: no Db lock held.
    pub(crate) fn open<E: CatalogEnv>(
        &self,
        env: &E,
        name: &str,
        opts: KeyspaceOptions,
    ) -> Result<Arc<Shared>> {
        let mut open = lock(&self.open);
        let ckey = catalog_key(name);
        let Some(rec) = env.get(&ckey)? else {
            return self.create(env, &mut open, name, opts);
        };
        let (id, recorded) = decode_record(&rec, name, env.dir())?;
        let effective = if opts == KeyspaceOptions::default() || opts == recorded {
            recorded
        } else {
            env.check_writable()?;
            let mut b = WriteBatch::new();
            b.put_raw(&ckey, Some(&encode_record(&opts, id)), 0, 0);
            env.write(b)?;
            opts
        };
        self.set_codec(id, effective.compression);
        Ok(match open.handles.get(name) {
            Some(s) if s.id == id => {
                *lock(&s.opts) = effective;
                s.clone()
            }
            _ => {
                let s = Arc::new(Shared::new(id, name, effective));
                open.handles.insert(name.to_string(), s.clone());
                s
            }
        })
    }

    /// Creates keyspace `name` with the next id: its record and the new
    /// counter in one batch. Requires: the catalog's lock (`open`).
    fn create<E: CatalogEnv>(
        &self,
        env: &E,
        open: &mut Open,
        name: &str,
        opts: KeyspaceOptions,
    ) -> Result<Arc<Shared>> {
        env.check_writable()?;
        let stored = match env.get(&CATALOG)? {
            Some(rec) => decode_counter(&rec, env.dir())?,
            None => 1,
        };
        let id = stored.max(open.next_floor).max(1);
        let next = id.checked_add(1).ok_or_else(|| {
            Error::InvalidArgument("keyspace ids are exhausted (2^32 - 1 created)".into())
        })?;
        let mut b = WriteBatch::new();
        b.put_raw(&catalog_key(name), Some(&encode_record(&opts, id)), 0, 0);
        let mut counter = vec![RECORD_FORMAT];
        counter.extend_from_slice(&next.to_le_bytes());
        b.put_raw(&CATALOG, Some(&counter), 0, 0);
        env.write(b)?;
        self.set_codec(id, opts.compression);
        open.next_floor = next;
        let s = Arc::new(Shared::new(id, name, opts));
        open.handles.insert(name.to_string(), s.clone());
        Ok(s)
    }

    /// Drops keyspace `name`: one batch that deletes its record and
    /// range-deletes its keys; its handles are marked dropped when the batch
    /// gets its version. Requires: no Db lock held.
    pub(crate) fn drop<E: CatalogEnv>(&self, env: &E, name: &str) -> Result<()> {
        let mut open = lock(&self.open);
        let ckey = catalog_key(name);
        let Some(rec) = env.get(&ckey)? else {
            return Err(Error::NotFound(format!("no keyspace named {name:?}")));
        };
        let (id, _) = decode_record(&rec, name, env.dir())?;
        let mut b = WriteBatch::new();
        b.delete_raw(&ckey);
        b.delete_range_raw(&prefix(id), &region_end(id));
        let handle = open.handles.get(name).cloned();
        if let Some(s) = &handle {
            b.drops.push(s.clone());
        }
        env.write(b)?;
        if handle.is_some() {
            open.handles.remove(name);
        }
        self.set_codec(id, None);
        Ok(())
    }

    /// The keyspaces' names, in byte order. Requires: no Db lock held.
    pub(crate) fn names<E: CatalogEnv>(&self, env: &E) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for (k, _) in env.scan(&CATALOG)? {
            let name = &k[PREFIX_LEN..];
            if name.is_empty() {
                continue; // the id counter
            }
            let name = String::from_utf8(name.to_vec()).map_err(|_| {
                Error::corruption(
                    env.dir(),
                    0,
                    format!("catalog key {k:?} holds a name that is not UTF-8"),
                )
            })?;
            names.push(name);
        }
        Ok(names)
    }

    /// Runs `empty`, which deletes every key of the Db, with creates and
    /// drops held off; then every open handle is marked dropped and the
    /// codecs forgotten. Requires: no Db lock held.
    pub(crate) fn drop_all(&self, empty: impl FnOnce() -> Result<()>) -> Result<()> {
        let mut open = lock(&self.open);
        empty()?;
        for s in open.handles.values() {
            s.mark_dropped();
        }
        open.handles.clear();
        *lock(&self.codecs) = Default::default();
        Ok(())
    }

    /// The keyspace codecs as they are now (table builds take them at start;
    /// a keyspace created during a build gets the level's codec in it).
    pub(crate) fn codecs(&self) -> KeyspaceCodecs {
        lock(&self.codecs).clone()
    }

    /// Reads every record's codec (at open, and after a restore). A record
    /// that does not decode is skipped (its keyspace's blocks get the
    /// level's codec): opening that keyspace reports it, and the rest of the
    /// Db stays usable. Requires: no Db lock held.
    pub(crate) fn load_codecs<E: CatalogEnv>(&self, env: &E) -> Result<()> {
        let mut map = HashMap::new();
        for (k, v) in env.scan(&CATALOG)? {
            let name = String::from_utf8_lossy(&k[PREFIX_LEN..]);
            if name.is_empty() {
                continue; // the id counter
            }
            if let Ok((id, opts)) = decode_record(&v, &name, env.dir()) {
                if let Some(c) = opts.compression {
                    map.insert(id, c);
                }
            }
        }
        *lock(&self.codecs) = Arc::new(map);
        Ok(())
    }

    /// Records keyspace `id`'s codec (`None`: the Db's) for later builds.
    fn set_codec(&self, id: u32, codec: Option<Compression>) {
        let mut map = lock(&self.codecs);
        if map.get(&id).copied() != codec {
            let m = Arc::make_mut(&mut map);
            match codec {
                Some(c) => m.insert(id, c),
                None => m.remove(&id),
            };
        }
    }
}

fn catalog_key(name: &str) -> Vec<u8> {
    [&CATALOG[..], name.as_bytes()].concat()
}

/// A keyspace record's codec byte: 0 for the Db's, else the block type byte
/// plus one.
fn codec_byte(c: Option<Compression>) -> u8 {
    c.map_or(0, |c| c.type_byte() + 1)
}

fn codec_of_byte(b: u8) -> Option<Option<Compression>> {
    match b {
        0 => Some(None),
        b => [Compression::None, Compression::Lz4, Compression::Zstd]
            .into_iter()
            .find(|c| c.type_byte() + 1 == b)
            .map(Some),
    }
}

/// The catalog record: `format u8 | id u32 LE | value_threshold u32
/// LE (0: the Db's) | default_ttl seconds u32 LE (0: none)`, then in
/// format 2 `codec u8` (0: the Db's, else the block type byte + 1).
/// Format 1 (no codec byte) when the codec is the Db's, so that a
/// database without keyspace codecs still opens in older builds.
fn encode_record(opts: &KeyspaceOptions, id: u32) -> Vec<u8> {
    let format = match opts.compression {
        None => RECORD_FORMAT,
        Some(_) => RECORD_FORMAT_CODEC,
    };
    let mut rec = vec![format];
    rec.extend_from_slice(&id.to_le_bytes());
    let t = opts.value_threshold.unwrap_or(0) as u32;
    rec.extend_from_slice(&t.to_le_bytes());
    let ttl = opts.default_ttl.map_or(0, |d| d.as_secs() as u32);
    rec.extend_from_slice(&ttl.to_le_bytes());
    if opts.compression.is_some() {
        rec.push(codec_byte(opts.compression));
    }
    rec
}

fn decode_record(rec: &[u8], name: &str, dir: &Path) -> Result<(u32, KeyspaceOptions)> {
    let bad = |what: String| {
        Error::corruption(
            dir,
            0,
            format!("catalog record of keyspace {name:?}: {what}"),
        )
    };
    let want = match rec.first() {
        Some(&RECORD_FORMAT) => 13,
        Some(&RECORD_FORMAT_CODEC) => 14,
        Some(f) => return Err(bad(format!("unknown format {f}"))),
        None => return Err(bad("empty".into())),
    };
    if rec.len() != want {
        return Err(bad(format!("{} bytes, not {want}", rec.len())));
    }
    let compression = match rec.get(13) {
        None => None,
        Some(&b) => codec_of_byte(b).ok_or_else(|| bad(format!("unknown codec byte {b}")))?,
    };
    let u32_at = |i: usize| crate::coding::u32_at(rec, i).unwrap_or(0);
    let id = u32_at(1);
    if id == 0 {
        return Err(bad("id 0".into()));
    }
    let opts = KeyspaceOptions {
        value_threshold: Some(u32_at(5) as usize).filter(|&t| t != 0),
        default_ttl: Some(u64::from(u32_at(9)))
            .filter(|&s| s != 0)
            .map(Duration::from_secs),
        compression,
    };
    Ok((id, opts))
}

fn decode_counter(rec: &[u8], dir: &Path) -> Result<u32> {
    match (rec.first(), crate::coding::u32_at(rec, 1)) {
        (Some(&RECORD_FORMAT), Some(n)) if rec.len() == 5 => Ok(n),
        _ => Err(Error::corruption(
            dir,
            0,
            format!("the keyspace id counter record {rec:?} is not format 1"),
        )),
    }
}

#[cfg(test)]
mod tests {
    //! The catalog over a fake environment: a sorted map that applies
    //! batches, can refuse writes, and can be read-only.
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct Fake {
        map: Mutex<BTreeMap<Vec<u8>, Vec<u8>>>,
        read_only: AtomicBool,
        fail_writes: AtomicBool,
        dir: PathBuf,
    }

    impl Fake {
        fn new() -> Fake {
            Fake {
                map: Mutex::default(),
                read_only: AtomicBool::new(false),
                fail_writes: AtomicBool::new(false),
                dir: PathBuf::from("/fake/db"),
            }
        }

        fn put(&self, key: &[u8], value: &[u8]) {
            lock(&self.map).insert(key.to_vec(), value.to_vec());
        }

        fn has(&self, key: &[u8]) -> bool {
            lock(&self.map).contains_key(key)
        }
    }

    impl CatalogEnv for Fake {
        fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
            Ok(lock(&self.map).get(key).cloned())
        }

        fn scan(&self, prefix: &[u8]) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
            let map = lock(&self.map);
            let found = map
                .range(prefix.to_vec()..)
                .take_while(|(k, _)| k.starts_with(prefix));
            Ok(found.map(|(k, v)| (k.clone(), v.clone())).collect())
        }

        fn write(&self, batch: WriteBatch) -> Result<()> {
            if self.fail_writes.load(Ordering::Acquire) {
                return Err(Error::Poisoned("injected: the write failed".into()));
            }
            let mut map = lock(&self.map);
            for op in &batch.ops {
                let key = batch.key(op).to_vec();
                if let Some(end) = batch.range_end(op) {
                    let end = end.to_vec();
                    map.retain(|k, _| *k < key || (!end.is_empty() && *k >= end));
                } else if let Some(v) = batch.value(op) {
                    map.insert(key, v.to_vec());
                } else {
                    map.remove(&key);
                }
            }
            for ks in &batch.drops {
                ks.mark_dropped();
            }
            Ok(())
        }

        fn check_writable(&self) -> Result<()> {
            if self.read_only.load(Ordering::Acquire) {
                return Err(Error::InvalidArgument("the Db is read-only".into()));
            }
            Ok(())
        }

        fn dir(&self) -> &Path {
            &self.dir
        }
    }

    fn with_threshold(t: usize) -> KeyspaceOptions {
        KeyspaceOptions {
            value_threshold: Some(t),
            ..KeyspaceOptions::default()
        }
    }

    #[test]
    fn keyspaces_get_ids_from_one_and_a_new_catalog_over_the_same_records_finds_them() {
        let env = Fake::new();
        let cat = Catalog::default();
        let a = cat.open(&env, "a", with_threshold(100)).expect("create a");
        let b = cat
            .open(&env, "b", KeyspaceOptions::default())
            .expect("create b");
        assert_eq!((a.id, b.id), (1, 2));
        assert_eq!(cat.names(&env).expect("names"), ["a", "b"]);
        // A reopened Db: nothing in memory, the records are the truth.
        let reopened = Catalog::default();
        let a2 = reopened
            .open(&env, "a", KeyspaceOptions::default())
            .expect("open a");
        assert_eq!((a2.id, a2.options()), (1, with_threshold(100)));
        let c = reopened
            .open(&env, "c", KeyspaceOptions::default())
            .expect("create c");
        assert_eq!(c.id, 3);
    }

    #[test]
    fn a_dropped_keyspace_loses_its_keys_and_handles_and_its_id_is_not_given_again() {
        let env = Fake::new();
        let cat = Catalog::default();
        cat.open(&env, "a", KeyspaceOptions::default())
            .expect("create a");
        let b = cat
            .open(&env, "b", KeyspaceOptions::default())
            .expect("create b");
        env.put(&b.storage_key(b"k"), b"v");
        env.put(&b"default key"[..], b"v");
        cat.drop(&env, "b").expect("drop b");
        assert!(
            b.check_live().is_err(),
            "a handle of a dropped keyspace still works"
        );
        assert!(
            !env.has(&b.storage_key(b"k")),
            "the keyspace's keys survived its drop"
        );
        assert!(
            env.has(b"default key"),
            "the drop's range delete reached past its region"
        );
        assert_eq!(cat.names(&env).expect("names"), ["a"]);
        let c = cat
            .open(&env, "c", KeyspaceOptions::default())
            .expect("create c");
        assert_eq!(c.id, 3);
        let again = cat
            .open(&env, "b", KeyspaceOptions::default())
            .expect("create b again");
        assert_eq!(again.id, 4);
        let err = cat.drop(&env, "nope").expect_err("no such keyspace");
        assert!(matches!(err, Error::NotFound(_)), "{err}");
    }

    #[test]
    fn after_drop_all_handles_fail_and_ids_go_on_above_the_ones_given() {
        let env = Fake::new();
        let cat = Catalog::default();
        let a = cat
            .open(&env, "a", KeyspaceOptions::default())
            .expect("create a");
        cat.open(&env, "b", KeyspaceOptions::default())
            .expect("create b");
        cat.drop_all(|| {
            lock(&env.map).clear();
            Ok(())
        })
        .expect("drop all");
        assert!(a.check_live().is_err());
        assert!(cat.names(&env).expect("names").is_empty());
        // The counter record went with everything else; the floor did not.
        let x = cat
            .open(&env, "x", KeyspaceOptions::default())
            .expect("create x");
        assert_eq!(x.id, 3);
    }

    #[test]
    fn options_given_for_an_existing_keyspace_replace_the_recorded_ones_unless_default() {
        let env = Fake::new();
        let cat = Catalog::default();
        let a = cat.open(&env, "a", with_threshold(100)).expect("create a");
        cat.open(&env, "a", KeyspaceOptions::default())
            .expect("open a");
        assert_eq!(a.options(), with_threshold(100));
        cat.open(&env, "a", with_threshold(200))
            .expect("open a with new options");
        assert_eq!(
            a.options(),
            with_threshold(200),
            "the open handle kept old options"
        );
        let reopened = Catalog::default();
        let a2 = reopened
            .open(&env, "a", KeyspaceOptions::default())
            .expect("open a");
        assert_eq!(
            a2.options(),
            with_threshold(200),
            "the new options were not recorded"
        );
    }

    #[test]
    fn codecs_follow_creates_option_changes_and_drops_and_load_from_the_records() {
        let env = Fake::new();
        let cat = Catalog::default();
        let lz4 = KeyspaceOptions {
            compression: Some(Compression::Lz4),
            ..KeyspaceOptions::default()
        };
        let a = cat.open(&env, "a", lz4).expect("create a");
        let b = cat
            .open(&env, "b", KeyspaceOptions::default())
            .expect("create b");
        assert_eq!(cat.codecs().get(&a.id), Some(&Compression::Lz4));
        assert_eq!(cat.codecs().get(&b.id), None);
        let zstd = KeyspaceOptions {
            compression: Some(Compression::Zstd),
            ..KeyspaceOptions::default()
        };
        cat.open(&env, "b", zstd).expect("give b a codec");
        let reopened = Catalog::default();
        reopened.load_codecs(&env).expect("load codecs");
        assert_eq!(reopened.codecs(), cat.codecs());
        assert_eq!(reopened.codecs().len(), 2);
        cat.drop(&env, "a").expect("drop a");
        assert_eq!(cat.codecs().get(&a.id), None);
    }

    #[test]
    fn a_refused_write_creates_nothing_and_uses_no_id() {
        let env = Fake::new();
        let cat = Catalog::default();
        env.fail_writes.store(true, Ordering::Release);
        let err = cat
            .open(&env, "a", KeyspaceOptions::default())
            .expect_err("the write fails");
        assert!(err.to_string().contains("injected"), "{err}");
        assert!(cat.names(&env).expect("names").is_empty());
        env.fail_writes.store(false, Ordering::Release);
        let a = cat
            .open(&env, "a", KeyspaceOptions::default())
            .expect("create a");
        assert_eq!(a.id, 1);
        env.fail_writes.store(true, Ordering::Release);
        cat.drop(&env, "a").expect_err("the drop's write fails");
        assert!(
            a.check_live().is_ok(),
            "a failed drop marked the handle dropped"
        );
        assert_eq!(cat.names(&env).expect("names"), ["a"]);
    }

    #[test]
    fn a_read_only_db_opens_existing_keyspaces_and_refuses_to_create_or_change_one() {
        let env = Fake::new();
        Catalog::default()
            .open(&env, "a", with_threshold(100))
            .expect("create a");
        env.read_only.store(true, Ordering::Release);
        let cat = Catalog::default();
        let a = cat
            .open(&env, "a", KeyspaceOptions::default())
            .expect("open a");
        assert_eq!(a.id, 1);
        let err = cat
            .open(&env, "b", KeyspaceOptions::default())
            .expect_err("create b");
        assert!(err.to_string().contains("read-only"), "{err}");
        cat.open(&env, "a", with_threshold(200))
            .expect_err("change a's options");
        assert_eq!(cat.names(&env).expect("names"), ["a"]);
    }

    #[test]
    fn damaged_records_are_errors_naming_what_and_the_other_keyspaces_stay_usable() {
        let env = Fake::new();
        let cat = Catalog::default();
        cat.open(&env, "a", KeyspaceOptions::default())
            .expect("create a");
        cat.open(&env, "b", with_threshold(100)).expect("create b");
        env.put(&catalog_key("a"), &[9, 1, 0]);
        let err = Catalog::default()
            .open(&env, "a", KeyspaceOptions::default())
            .expect_err("a's record is damaged");
        let msg = err.to_string();
        assert!(
            msg.contains("\"a\"") && msg.contains("unknown format 9"),
            "{msg}"
        );
        assert!(msg.contains("/fake/db"), "{msg}");
        let b = Catalog::default()
            .open(&env, "b", KeyspaceOptions::default())
            .expect("b opens");
        assert_eq!(b.options(), with_threshold(100));
        Catalog::default()
            .load_codecs(&env)
            .expect("codecs load past a damaged record");
        env.put(&CATALOG, &[7]);
        let err = cat
            .open(&env, "c", KeyspaceOptions::default())
            .expect_err("the id counter is damaged");
        assert!(err.to_string().contains("id counter"), "{err}");
        assert_eq!(cat.names(&env).expect("names"), ["a", "b"]);
    }

    #[test]
    fn creating_past_the_last_id_is_refused_and_writes_nothing() {
        let env = Fake::new();
        let mut counter = vec![RECORD_FORMAT];
        counter.extend_from_slice(&u32::MAX.to_le_bytes());
        env.put(&CATALOG, &counter);
        let err = Catalog::default()
            .open(&env, "a", KeyspaceOptions::default())
            .expect_err("ids are exhausted");
        assert!(err.to_string().contains("exhausted"), "{err}");
        assert!(!env.has(&catalog_key("a")));
    }

    #[test]
    fn records_round_trip_in_both_formats_and_the_codec_free_one_stays_format_1() {
        let plain = with_threshold(4096);
        let rec = encode_record(&plain, 7);
        assert_eq!((rec[0], rec.len()), (RECORD_FORMAT, 13));
        let coded = KeyspaceOptions {
            compression: Some(Compression::Zstd),
            default_ttl: Some(Duration::from_secs(60)),
            ..plain
        };
        let rec2 = encode_record(&coded, 8);
        assert_eq!((rec2[0], rec2.len()), (RECORD_FORMAT_CODEC, 14));
        let dir = Path::new("/d");
        assert_eq!(decode_record(&rec, "x", dir).expect("decode"), (7, plain));
        assert_eq!(decode_record(&rec2, "y", dir).expect("decode"), (8, coded));
        let mut bad = rec2.clone();
        bad[13] = 99;
        let err = decode_record(&bad, "y", dir).expect_err("unknown codec");
        assert!(err.to_string().contains("unknown codec byte 99"), "{err}");
    }
}
