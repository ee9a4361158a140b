//! Bulk load of sorted data (what Badger's StreamWriter does): keys given in
//! increasing order go straight into tables of the last level, and large values
//! into a value-log file of their own, with no WAL, memtable or compaction.
//! The Db must be empty; other writes fail with `InvalidArgument` until the
//! load finishes or is dropped.

use crate::db::Db;
use crate::db::{DbInner, ReadState};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::sync_dir;
use crate::key;
use crate::manifest::{Edit, TableRecord};
use crate::sync::lock;
use crate::table::{self, Table, TableBuilder};
use crate::value::{self, Stored};
use crate::vlog::{VlogFile, VlogWriter};
use crate::PutOptions;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Loads sorted entries into an empty Db; see the module docs.
pub struct BulkLoader {
    db: Arc<DbInner>,
    seq: u64,
    vlog: VlogWriter,
    builder: Option<(u64, TableBuilder)>,
    tables: Vec<(u64, table::TableMeta)>,
    last_key: Option<Vec<u8>>,
    count: u64,
    finished: bool,
}

impl BulkLoader {
    /// Starts a bulk load into `db`, which must be empty.
    pub(crate) fn start(db: &Arc<DbInner>) -> Result<BulkLoader> {
        db.check_writable()?;
        let guard = lock(&db.log);
        if db.bulk_active.load(Ordering::Acquire) {
            return Err(Error::InvalidArgument(
                "a bulk load is already in progress".into(),
            ));
        }
        if !crate::backup::is_empty(db)? {
            return Err(Error::InvalidArgument(
                "bulk load needs an empty database (drop_all first)".into(),
            ));
        }
        db.bulk_active.store(true, Ordering::Release);
        drop(guard);
        let seq = db.commit.reserve();
        let id = {
            let mut m = lock(&db.manifest);
            let m = m.as_mut().ok_or(Error::Closed)?;
            // Recorded before any table is written: after a crash mid-load, its
            // tables are leftovers the manifest knows the version of, which
            // recovery may delete (see recovery::check_orphan_tables).
            m.log(&[Edit::LastSeq(seq)])?;
            m.next_file_id()
        };
        let vid = u32::try_from(id).map_err(|_| {
            Error::InvalidArgument("file ids exhausted the value-log id space".into())
        })?;
        let vlog = VlogWriter::create(&db.opts.fs, &db.dir, vid)?;
        Ok(BulkLoader {
            db: db.clone(),
            seq,
            vlog,
            builder: None,
            tables: Vec::new(),
            last_key: None,
            count: 0,
            finished: false,
        })
    }
}

impl BulkLoader {
    /// Adds the next entry; keys must be strictly increasing. An I/O error
    /// poisons the Db, as on every write path.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.add_with(key, value, PutOptions::default())
    }

    /// Adds the next entry with a user-meta byte and a time to live (counted
    /// from now, by the Db's clock, rounded up to whole seconds, as a put's).
    pub fn add_with(&mut self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
        self.add_entry(key, value, opts)
            .inspect_err(|e| poison_on_io(&self.db, e))
    }

    fn add_entry(&mut self, key: &[u8], value: &[u8], opts: PutOptions) -> Result<()> {
        let db = &self.db;
        let expires_at = opts.ttl.map_or(0, |t| {
            db.now() + t.as_secs() + u64::from(t.subsec_nanos() > 0)
        });
        db.check_user_key(key)?;
        if value.len() > db.opts.max_value_size {
            return Err(Error::TooBig {
                what: "value",
                len: value.len(),
                max: db.opts.max_value_size,
            });
        }
        if self.last_key.as_deref().is_some_and(|last| key <= last) {
            return Err(Error::InvalidArgument(
                "bulk load keys must be strictly increasing".into(),
            ));
        }
        let mut rec = Vec::with_capacity(value.len().min(db.opts.value_threshold) + 20);
        if db.opts.in_value_log(value.len()) {
            let p = self.vlog.append(key, value);
            value::encode(&mut rec, &Stored::Pointer(p), opts.user_meta, expires_at);
            if self.count.is_multiple_of(256) {
                self.vlog.flush()?;
            }
        } else {
            value::encode(&mut rec, &Stored::Inline(value), opts.user_meta, expires_at);
        }
        if let Some((_, b)) = &self.builder {
            if b.estimated_size() >= db.opts.table_size {
                if let Some((id, b)) = self.builder.take() {
                    self.tables.push((id, b.finish()?));
                }
            }
        }
        if self.builder.is_none() {
            let id = lock(&db.manifest)
                .as_mut()
                .ok_or(Error::Closed)?
                .next_file_id();
            let path = filename::table(&db.dir, id);
            self.builder = Some((
                id,
                TableBuilder::create(
                    &db.opts.fs,
                    &path,
                    db.opts.block_size,
                    db.opts.bloom_bits_per_key,
                    db.opts.codec(db.opts.num_levels - 1),
                )?,
            ));
        }
        if let Some((_, b)) = self.builder.as_mut() {
            b.add(&key::encode(key, self.seq), &rec)?;
        }
        self.last_key = Some(key.to_vec());
        self.count += 1;
        Ok(())
    }

    /// Makes everything durable and visible; returns the number of entries
    /// loaded. An I/O error poisons the Db.
    pub fn finish(mut self) -> Result<u64> {
        let db = self.db.clone();
        self.finish_load().inspect_err(|e| poison_on_io(&db, e))
    }

    fn finish_load(&mut self) -> Result<u64> {
        let db = self.db.clone();
        if let Some((id, b)) = self.builder.take() {
            self.tables.push((id, b.finish()?));
        }
        self.vlog.sync()?;
        sync_dir(&db.opts.fs, &db.dir)?;
        let vid = self.vlog.id();
        let vfile = Arc::new(VlogFile::open_sealed(
            &db.opts.fs,
            &filename::vlog(&db.dir, vid),
            vid,
        )?);
        let last = (db.opts.num_levels - 1) as u8;
        let mut edits = vec![Edit::AddVlog(vid), Edit::LastSeq(self.seq)];
        let mut added = Vec::new();
        for (id, meta) in &self.tables {
            added.push((
                last as usize,
                Arc::new(Table::open(
                    &db.opts.fs,
                    &filename::table(&db.dir, *id),
                    *id,
                    &db.cache,
                )?),
            ));
            edits.push(Edit::AddTable {
                level: last,
                table: TableRecord::built(*id, meta),
            });
        }
        lock(&db.manifest)
            .as_mut()
            .ok_or(Error::Closed)?
            .log(&edits)?;
        db.update_state(|st| ReadState {
            mem: st.mem.clone(),
            imm: st.imm.clone(),
            version: Arc::new(st.version.apply(&HashSet::new(), &added)),
            vlogs: Arc::new(st.vlogs.with(vfile)),
            range_dels: st.range_dels.clone(),
        });
        db.commit.publish(self.seq);
        // Not delivered entry by entry: change-feed subscribers are told to rescan.
        db.feed.interrupt(self.seq - 1);
        self.finished = true;
        // Writers waiting for the load to end wait on the queue.
        db.bulk_active.store(false, Ordering::Release);
        db.commit.publish_and_wake(self.seq);
        Ok(self.count)
    }
}

impl Drop for BulkLoader {
    fn drop(&mut self) {
        if !self.finished {
            // The reserved sequence carries nothing; let readers waiting for it go on.
            self.db.commit.publish_and_wake(self.seq);
            // Abandoned: its files were never recorded; remove them now (open would too).
            let (fs, dir) = (&self.db.opts.fs, &self.db.dir);
            let _ = fs.remove(&filename::vlog(dir, self.vlog.id()));
            for (id, _) in &self.tables {
                let _ = fs.remove(&filename::table(dir, *id));
            }
            if let Some((id, _)) = &self.builder {
                let _ = fs.remove(&filename::table(dir, *id));
            }
            self.db.bulk_active.store(false, Ordering::Release);
        }
    }
}

/// After a failed write, fsync or rename the files may hold anything: the Db
/// refuses further writes rather than build on them.
fn poison_on_io(db: &DbInner, e: &Error) {
    if matches!(e, Error::Io { .. }) {
        db.poison_with(e);
    }
}

impl Db {
    /// Loads sorted data straight into bottom-level tables; the Db must be empty,
    /// and other writes fail until the loader finishes or is dropped.
    pub fn bulk_load(&self) -> Result<BulkLoader> {
        BulkLoader::start(&self.inner)
    }
}
