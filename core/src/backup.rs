//! Backup and restore: a portable, checksummed stream of entries.
//!
//! The stream is the 16-byte file header (magic `SETTBKUP`, version 1), then
//! records framed as in the WAL (`crc32 | len | payload`): first a header record,
//! then entry chunks, then an end record that counts the entries, so that a cut
//! stream is detected. See `core/FORMAT.md`.

use crate::coding::{put_varint, Reader};
use crate::db::{Db, DbInner};
use crate::error::{Error, Result};
use crate::iter::{MergeIter, Source};
use crate::key;
use crate::sync::lock;
use crate::value::{self, Stored};
use crate::wal;
use crate::WriteBatch;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"SETTBKUP";
const VERSION: u32 = 1;
const REC_HEADER: u8 = 1;
const REC_ENTRIES: u8 = 2;
const REC_END: u8 = 3;
/// Range deletes of an incremental backup, applied before its entries.
const REC_RANGE_DELS: u8 = 4;
const KIND_DELETE: u8 = 0;
const KIND_PUT: u8 = 1;
/// A merge operand: only in incremental backups (a full one folds each key
/// to its value), applied with the restoring Db's merge operator.
const KIND_MERGE: u8 = 2;
/// Entry chunks are cut past this many bytes.
const CHUNK: usize = 1 << 20;
/// A record longer than this is damage, not data.
const MAX_RECORD: usize = 1 << 31;

/// An entry read back: key, value (`None` for a delete), user meta, expiry,
/// and whether the value is a merge operand.
type Restored = (Vec<u8>, Option<Vec<u8>>, u8, u64, bool);

/// Adds a restored entry to `batch`.
fn restore_into(batch: &mut WriteBatch, (k, v, m, x, operand): Restored) {
    match (v, operand) {
        (Some(v), true) => batch.push_merge(&k, &v, crate::batch::Space::Storage),
        (v, _) => batch.put_raw(&k, v.as_deref(), m, x),
    }
}

fn stream_name() -> PathBuf {
    PathBuf::from("<backup stream>")
}

struct Chunk {
    buf: Vec<u8>,
    count: u32,
}

impl Chunk {
    fn new() -> Chunk {
        Chunk {
            buf: vec![REC_ENTRIES, 0, 0, 0, 0],
            count: 0,
        }
    }
}

fn emit(w: &mut dyn Write, payload: &[u8]) -> Result<()> {
    let mut framed = Vec::with_capacity(payload.len() + 8);
    wal::frame(&mut framed, payload);
    w.write_all(&framed)
        .map_err(|e| Error::io("writing the backup stream", e))
}

fn flush_chunk(w: &mut dyn Write, c: &mut Chunk) -> Result<()> {
    if c.count > 0 {
        let n = c.count.to_le_bytes();
        c.buf[1..5].copy_from_slice(&n);
        emit(w, &c.buf)?;
    }
    *c = Chunk::new();
    Ok(())
}

impl Db {
    /// Streams a backup to `w`: live entries if `since == 0`, else every version
    /// written after `since`. Returns the `since` for the next incremental backup.
    pub fn backup(&self, w: &mut dyn std::io::Write, since: u64) -> Result<u64> {
        backup(&self.inner, w, since)
    }

    /// Restores a backup stream (a full one into an empty Db). Returns the number
    /// of entries applied. A damaged or cut stream (a backup a crash
    /// interrupted) fails with [`Error::Corruption`]; the stream is applied in
    /// chunks of about 1 MiB as it is read, so the entries before the damage
    /// may be in the Db by then (with their right values): empty it
    /// ([`Db::drop_all`]) before restoring a whole backup again.
    pub fn load(&self, r: &mut dyn std::io::Read) -> Result<u64> {
        let loaded = load(&self.inner, r);
        // The stream may have brought keyspaces with codecs of their own
        // (also when it failed part way: what it applied stays).
        let codecs = self.inner.catalog.load_codecs(&self.inner);
        let n = loaded?;
        codecs?;
        Ok(n)
    }
}

/// Streams the Db to `w`. With `since == 0`: the live value of every key.
/// With `since > 0`: every version written after `since`, deletes included
/// (an incremental backup). Returns the version to pass as `since` next time.
pub(crate) fn backup(db: &Arc<DbInner>, w: &mut dyn Write, since: u64) -> Result<u64> {
    db.check_open()?;
    // State first, then the sequence: see DbInner::iter.
    let st = db.read_state();
    let read_ts = db.commit.visible();
    let _snap = db.snapshot_at(read_ts);
    let now = db.now();
    let dels = st.range_dels.clone();
    // Range deletes after `since`: the ones still live are carried; one
    // already retired cannot be, and the backup is refused.
    let mut carried = Vec::new();
    if since > 0 {
        let retired = lock(&db.manifest)
            .as_ref()
            .map_or(0, |m| m.state().range_dels_retired);
        if retired > since {
            return Err(Error::InvalidArgument(format!(
                "an incremental backup since version {since} cannot carry the range \
                     delete of version {retired}: compaction already dropped it; take a full \
                     backup (since 0)"
            )));
        }
        carried.extend(
            dels.iter()
                .filter(|t| t.seq > since && t.seq <= read_ts)
                .cloned(),
        );
        carried.sort_by_key(|t| t.seq);
    }
    w.write_all(&wal::file_header(MAGIC, VERSION))
        .map_err(|e| Error::io("writing the backup stream", e))?;
    let mut head = vec![REC_HEADER];
    head.extend_from_slice(&since.to_le_bytes());
    head.extend_from_slice(&read_ts.to_le_bytes());
    emit(w, &head)?;
    if !carried.is_empty() {
        let mut rec = vec![REC_RANGE_DELS];
        rec.extend_from_slice(&(carried.len() as u32).to_le_bytes());
        for t in &carried {
            put_varint(&mut rec, t.start.len() as u64);
            rec.extend_from_slice(&t.start);
            put_varint(&mut rec, t.end.len() as u64);
            rec.extend_from_slice(&t.end);
            rec.extend_from_slice(&t.seq.to_le_bytes());
        }
        emit(w, &rec)?;
    }

    let mut merge = MergeIter::new(st.sources(false, None, None), false);
    merge.rewind()?;
    let mut chunk = Chunk::new();
    let mut total = 0u64;
    // An incremental backup's key and the version below which its next
    // version counts: versions a folded operand stands for are passed over.
    let mut covered: (Vec<u8>, u64) = (Vec::new(), u64::MAX);
    while merge.valid() {
        let (uk, seq) = key::split(merge.key());
        // Full backups take the newest version at or below read_ts of each key;
        // incremental ones every version in (since, read_ts].
        if seq > read_ts || (since > 0 && seq <= since) {
            merge.next()?;
            continue;
        }
        let uk = uk.to_vec();
        let rec = value::decode(merge.value()).ok_or_else(|| {
            Error::corruption(&db.dir, 0, "undecodable value record met during backup")
        })?;
        let expired = rec.expired(now);
        // A version a range delete hides is not sent: a full backup holds
        // what reads see, an incremental one applies its range deletes
        // first and then only versions newer than them.
        let hidden = dels.hides(&uk, seq, read_ts);
        if since > 0 && rec.stored.is_merge() && !hidden {
            if covered.0 != uk {
                covered = (uk.clone(), u64::MAX);
            }
            if seq >= covered.1 {
                merge.next()?;
                continue;
            }
            let floor = rec.merge_floor();
            if floor > 0 && floor <= since {
                return Err(Error::InvalidArgument(format!(
                    "compaction folded merge operands of key {uk:?} from before and after version {since} into one; take a full backup"
                )));
            }
            covered.1 = value::next_below(seq, merge.value());
        }
        let keep = !hidden && (since > 0 || (rec.stored != Stored::Delete && !expired));
        // A full backup holds a merged key's value, folded as a read at
        // read_ts folds it; an incremental one its operands as they are.
        let folded = match rec.stored {
            Stored::Merge(_) if keep && since == 0 => db.get_in(&st, &uk, read_ts)?,
            _ => None,
        };
        let (user_meta, expires_at) = match &folded {
            Some(item) => (item.user_meta, item.expires_at),
            None => (rec.user_meta, rec.expires_at),
        };
        let operand = folded.is_none() && rec.stored.is_merge();
        if keep {
            let value = match rec.stored {
                _ if folded.is_some() => folded.map(|item| item.value),
                Stored::Merge(op) => Some(op.to_vec()),
                Stored::Delete => None,
                Stored::Inline(v) => Some(v.to_vec()),
                Stored::Pointer(p) if st.vlogs.get(p.file).is_none() => {
                    Some(db.vlogs_for(&st.vlogs).read(p, &db.dir)?)
                }
                Stored::Pointer(p) => Some(st.vlogs.read(p, &db.dir)?),
            };
            put_varint(&mut chunk.buf, uk.len() as u64);
            chunk.buf.extend_from_slice(&uk);
            chunk.buf.extend_from_slice(&seq.to_le_bytes());
            chunk.buf.push(match value {
                Some(_) if operand => KIND_MERGE,
                Some(_) => KIND_PUT,
                None => KIND_DELETE,
            });
            chunk.buf.push(user_meta);
            put_varint(&mut chunk.buf, expires_at);
            let v = value.unwrap_or_default();
            put_varint(&mut chunk.buf, v.len() as u64);
            chunk.buf.extend_from_slice(&v);
            chunk.count += 1;
            total += 1;
            if chunk.buf.len() >= CHUNK {
                flush_chunk(w, &mut chunk)?;
            }
        }
        merge.next()?;
        if since == 0 {
            while merge.valid() && key::user_key(merge.key()) == uk.as_slice() {
                merge.next()?;
            }
        }
    }
    flush_chunk(w, &mut chunk)?;
    let mut end = vec![REC_END];
    end.extend_from_slice(&total.to_le_bytes());
    emit(w, &end)?;
    w.flush()
        .map_err(|e| Error::io("flushing the backup stream", e))?;
    Ok(read_ts)
}

/// Restores a backup stream. A full backup needs an empty Db; an incremental
/// one applies on top of what is there. Returns the number of entries applied.
pub(crate) fn load(db: &Arc<DbInner>, r: &mut dyn Read) -> Result<u64> {
    db.check_writable()?;
    let mut offset = 0u64;
    let mut header = [0u8; wal::HEADER_LEN];
    read_exact(r, &mut header, offset)?;
    wal::check_header(&stream_name(), &header, MAGIC, VERSION)?;
    offset += header.len() as u64;
    let first = read_record(r, &mut offset)?.ok_or_else(|| {
        Error::corruption(stream_name(), offset, "backup stream has no header record")
    })?;
    let mut hr = Reader::new(&first);
    let (Some(REC_HEADER), Some(since), Some(_read_ts)) = (hr.u8(), hr.u64(), hr.u64()) else {
        return Err(Error::corruption(
            stream_name(),
            offset,
            "bad backup header record",
        ));
    };
    if since == 0 && !is_empty(db)? {
        return Err(Error::InvalidArgument(
            "restoring a full backup needs an empty database".into(),
        ));
    }
    let mut applied = 0u64;
    // Versions of one key arrive newest first; they are applied oldest first.
    let mut group: Vec<Restored> = Vec::new();
    let mut batch = WriteBatch::new();
    loop {
        let at = offset;
        let rec = read_record(r, &mut offset)?.ok_or_else(|| {
            Error::corruption(
                stream_name(),
                offset,
                "backup stream ends without its end record",
            )
        })?;
        let mut rr = Reader::new(&rec);
        match rr.u8() {
            Some(REC_RANGE_DELS) if since > 0 => {
                let bad = || Error::corruption(stream_name(), at, "bad range-delete record");
                let n = rr.u32().ok_or_else(bad)?;
                let mut deletes = WriteBatch::new();
                for _ in 0..n {
                    let start = rr.len_prefixed().ok_or_else(bad)?.to_vec();
                    let end = rr.len_prefixed().ok_or_else(bad)?.to_vec();
                    let _seq = rr.u64().ok_or_else(bad)?;
                    db.check_range(&start, &end)?;
                    deletes.delete_range_raw(&start, &end);
                }
                if rr.remaining() != 0 {
                    return Err(bad());
                }
                db.write(crate::db::WriterKind::Batch(deletes), None)?;
            }
            Some(REC_ENTRIES) => {
                let n = rr
                    .u32()
                    .ok_or_else(|| Error::corruption(stream_name(), at, "bad entry chunk"))?;
                for _ in 0..n {
                    let e = (|| {
                        let k = rr.len_prefixed()?.to_vec();
                        let _version = rr.u64()?;
                        let kind = rr.u8()?;
                        let meta = rr.u8()?;
                        let expires = rr.varint()?;
                        let v = rr.len_prefixed()?.to_vec();
                        let value = matches!(kind, KIND_PUT | KIND_MERGE).then_some(v);
                        Some((k, value, meta, expires, kind == KIND_MERGE))
                    })()
                    .ok_or_else(|| {
                        Error::corruption(stream_name(), at, "bad entry in backup chunk")
                    })?;
                    if group.first().is_some_and(|g| g.0 != e.0) {
                        applied += group.len() as u64;
                        for e in group.drain(..).rev() {
                            restore_into(&mut batch, e);
                        }
                        if batch.size_bytes() >= CHUNK {
                            db.write(
                                crate::db::WriterKind::Batch(std::mem::take(&mut batch)),
                                None,
                            )?;
                        }
                    }
                    group.push(e);
                }
            }
            Some(REC_END) => {
                let total = rr
                    .u64()
                    .ok_or_else(|| Error::corruption(stream_name(), at, "bad end record"))?;
                applied += group.len() as u64;
                for e in group.drain(..).rev() {
                    restore_into(&mut batch, e);
                }
                if total != applied {
                    return Err(Error::corruption(
                        stream_name(),
                        at,
                        format!("end record counts {total} entries, the stream held {applied}"),
                    ));
                }
                db.write(crate::db::WriterKind::Batch(batch), None)?;
                return Ok(applied);
            }
            _ => {
                return Err(Error::corruption(
                    stream_name(),
                    at,
                    "unknown backup record",
                ))
            }
        }
    }
}

/// True if no key is visible and no table exists.
pub(crate) fn is_empty(db: &Arc<DbInner>) -> Result<bool> {
    let st = db.read_state();
    if st.version.levels.iter().any(|l| !l.is_empty()) {
        return Ok(false);
    }
    let mut it = db.iter(
        crate::IterOptions {
            keys_only: true,
            prefetch: 1,
            ..Default::default()
        },
        None,
        None,
        crate::keyspace::Region::All,
    )?;
    Ok(it.next().is_none())
}
fn read_exact(r: &mut dyn Read, buf: &mut [u8], offset: u64) -> Result<()> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Error::corruption(stream_name(), offset, "backup stream is cut short")
        } else {
            Error::io("reading the backup stream", e)
        }
    })
}

/// Reads one framed record; `None` at a clean end of stream.
fn read_record(r: &mut dyn Read, offset: &mut u64) -> Result<Option<Vec<u8>>> {
    let mut head = [0u8; wal::RECORD_HEADER_LEN];
    let mut got = 0;
    while got < head.len() {
        match r.read(&mut head[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(Error::corruption(
                    stream_name(),
                    *offset,
                    "backup stream is cut short",
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("reading the backup stream", e)),
        }
    }
    let crc = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
    let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
    if len == 0 || len > MAX_RECORD {
        return Err(Error::corruption(
            stream_name(),
            *offset,
            "bad backup record length",
        ));
    }
    let mut payload = vec![0u8; len];
    read_exact(r, &mut payload, *offset)?;
    let mut h = crc32fast::Hasher::new();
    h.update(&head[4..8]);
    h.update(&payload);
    if h.finalize() != crc {
        return Err(Error::corruption(
            stream_name(),
            *offset,
            "backup record checksum mismatch",
        ));
    }
    *offset += (head.len() + len) as u64;
    Ok(Some(payload))
}
