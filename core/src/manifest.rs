//! The manifest: the durable list of live tables (per level) and value-log files,
//! plus the counters recovery needs. It is a log of edit records (framed as in
//! `wal.rs`); each record is applied whole or not at all. On open it is rewritten
//! as one snapshot record, through a temporary file renamed over the old one.

use crate::coding::{put_varint, Reader};
use crate::error::{Error, Result};
use crate::filename;
use crate::fs::{sync_dir, Fs};
use crate::range_del::RangeTombstone;
use crate::table::{Table, TableMeta};
use crate::wal::{self, LogWriter};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub(crate) const MAGIC: &[u8; 8] = b"SETTMANI";
pub(crate) const VERSION: u32 = 1;
/// The manifest is rewritten as a snapshot once it grows past this.
const REWRITE_AT: u64 = 4 << 20;

const TAG_ADD_TABLE: u8 = 1;
const TAG_DELETE_TABLE: u8 = 2;
const TAG_NEXT_FILE_ID: u8 = 3;
const TAG_LOG_NUMBER: u8 = 4;
const TAG_LAST_SEQ: u8 = 5;
const TAG_ADD_VLOG: u8 = 6;
const TAG_DELETE_VLOG: u8 = 7;
const TAG_VLOG_DISCARD: u8 = 8;
const TAG_ADD_RANGE_DEL: u8 = 9;
const TAG_DELETE_RANGE_DEL: u8 = 10;
const TAG_MERGE_OPERATOR: u8 = 11;

/// What the manifest knows about one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TableRecord {
    pub id: u64,
    pub size: u64,
    pub max_seq: u64,
    pub smallest: Vec<u8>,
    pub largest: Vec<u8>,
}

impl TableRecord {
    /// The record of table `id` as its builder described it (flush, compaction, bulk load).
    pub(crate) fn built(id: u64, meta: &TableMeta) -> TableRecord {
        TableRecord {
            id,
            size: meta.size,
            max_seq: meta.max_seq,
            smallest: meta.smallest.clone(),
            largest: meta.largest.clone(),
        }
    }

    /// The record of an open table (a trivial move keeps the file as it is).
    pub(crate) fn of(t: &Table) -> TableRecord {
        TableRecord {
            id: t.id(),
            size: t.size(),
            max_seq: t.max_seq(),
            smallest: t.smallest().to_vec(),
            largest: t.largest().to_vec(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Edit {
    AddTable {
        level: u8,
        table: TableRecord,
    },
    DeleteTable {
        level: u8,
        id: u64,
    },
    NextFileId(u64),
    /// WAL files numbered below this are flushed and may be deleted.
    LogNumber(u64),
    LastSeq(u64),
    AddVlog(u32),
    DeleteVlog(u32),
    /// Bytes of a value-log file found to be garbage by a compaction (added up).
    VlogDiscard {
        id: u32,
        bytes: u64,
    },
    /// A range tombstone whose memtable was flushed.
    AddRangeDel(RangeTombstone),
    /// A range tombstone retired: no table holds a version it hides.
    DeleteRangeDel(RangeTombstone),
    /// The name of the merge operator the Db is opened with (see
    /// `crate::merge`): written when it changes from none.
    MergeOperator(String),
}

/// The state the edits build up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ManifestState {
    pub levels: Vec<BTreeMap<u64, TableRecord>>,
    pub next_file_id: u64,
    pub log_number: u64,
    pub last_seq: u64,
    pub vlogs: BTreeSet<u32>,
    /// Garbage bytes per live value-log file.
    pub discard: BTreeMap<u32, u64>,
    /// Range tombstones of flushed memtables, not yet retired.
    pub range_dels: BTreeSet<RangeTombstone>,
    /// The newest sequence of a retired range tombstone: an incremental
    /// backup since an older version cannot carry it any more.
    pub range_dels_retired: u64,
    /// The merge operator's name, once a Db was opened with one.
    pub merge_operator: Option<String>,
}

impl ManifestState {
    pub(crate) fn new(num_levels: usize) -> ManifestState {
        ManifestState {
            levels: vec![BTreeMap::new(); num_levels],
            next_file_id: 1,
            ..Default::default()
        }
    }

    /// Applies one edit; the error says why it cannot apply.
    fn apply(&mut self, e: &Edit) -> std::result::Result<(), String> {
        match e {
            Edit::AddTable { level, table } => {
                let lvl = self.levels.get_mut(*level as usize).ok_or_else(|| {
                    format!(
                        "table {} is at level {level}, beyond the configured levels",
                        table.id
                    )
                })?;
                lvl.insert(table.id, table.clone());
                self.next_file_id = self.next_file_id.max(table.id + 1);
            }
            Edit::DeleteTable { level, id } => {
                let removed = self
                    .levels
                    .get_mut(*level as usize)
                    .and_then(|l| l.remove(id));
                if removed.is_none() {
                    return Err(format!(
                        "deletes table {id} at level {level}, which is not there"
                    ));
                }
            }
            Edit::NextFileId(n) => self.next_file_id = self.next_file_id.max(*n),
            Edit::LogNumber(n) => self.log_number = self.log_number.max(*n),
            Edit::LastSeq(s) => self.last_seq = self.last_seq.max(*s),
            Edit::AddVlog(id) => {
                self.vlogs.insert(*id);
                self.next_file_id = self.next_file_id.max(u64::from(*id) + 1);
            }
            Edit::DeleteVlog(id) => {
                self.vlogs.remove(id);
                self.discard.remove(id);
            }
            Edit::VlogDiscard { id, bytes } => {
                if self.vlogs.contains(id) {
                    *self.discard.entry(*id).or_insert(0) += bytes;
                }
            }
            Edit::AddRangeDel(t) => {
                self.range_dels.insert(t.clone());
            }
            Edit::DeleteRangeDel(t) => {
                self.range_dels.remove(t);
                self.range_dels_retired = self.range_dels_retired.max(t.seq);
            }
            Edit::MergeOperator(name) => self.merge_operator = Some(name.clone()),
        }
        Ok(())
    }

    /// Edits that rebuild this state from nothing.
    fn snapshot(&self) -> Vec<Edit> {
        let mut edits = vec![
            Edit::NextFileId(self.next_file_id),
            Edit::LogNumber(self.log_number),
            Edit::LastSeq(self.last_seq),
        ];
        for (level, tables) in self.levels.iter().enumerate() {
            for t in tables.values() {
                edits.push(Edit::AddTable {
                    level: level as u8,
                    table: t.clone(),
                });
            }
        }
        edits.extend(self.vlogs.iter().map(|&id| Edit::AddVlog(id)));
        edits.extend(
            self.discard
                .iter()
                .map(|(&id, &bytes)| Edit::VlogDiscard { id, bytes }),
        );
        edits.extend(self.range_dels.iter().cloned().map(Edit::AddRangeDel));
        if self.range_dels_retired > 0 {
            // Retiring a tombstone that is not there only raises the mark.
            edits.push(Edit::DeleteRangeDel(RangeTombstone {
                start: Vec::new(),
                end: Vec::new(),
                seq: self.range_dels_retired,
            }));
        }
        edits.extend(self.merge_operator.iter().cloned().map(Edit::MergeOperator));
        edits
    }
}

pub(crate) fn encode_edits(edits: &[Edit]) -> Vec<u8> {
    let mut b = Vec::new();
    for e in edits {
        match e {
            Edit::AddTable { level, table } => {
                b.push(TAG_ADD_TABLE);
                b.push(*level);
                b.extend_from_slice(&table.id.to_le_bytes());
                b.extend_from_slice(&table.size.to_le_bytes());
                b.extend_from_slice(&table.max_seq.to_le_bytes());
                put_varint(&mut b, table.smallest.len() as u64);
                b.extend_from_slice(&table.smallest);
                put_varint(&mut b, table.largest.len() as u64);
                b.extend_from_slice(&table.largest);
            }
            Edit::DeleteTable { level, id } => {
                b.push(TAG_DELETE_TABLE);
                b.push(*level);
                b.extend_from_slice(&id.to_le_bytes());
            }
            Edit::NextFileId(n) => {
                b.push(TAG_NEXT_FILE_ID);
                b.extend_from_slice(&n.to_le_bytes());
            }
            Edit::LogNumber(n) => {
                b.push(TAG_LOG_NUMBER);
                b.extend_from_slice(&n.to_le_bytes());
            }
            Edit::LastSeq(n) => {
                b.push(TAG_LAST_SEQ);
                b.extend_from_slice(&n.to_le_bytes());
            }
            Edit::AddVlog(id) => {
                b.push(TAG_ADD_VLOG);
                b.extend_from_slice(&id.to_le_bytes());
            }
            Edit::DeleteVlog(id) => {
                b.push(TAG_DELETE_VLOG);
                b.extend_from_slice(&id.to_le_bytes());
            }
            Edit::VlogDiscard { id, bytes } => {
                b.push(TAG_VLOG_DISCARD);
                b.extend_from_slice(&id.to_le_bytes());
                b.extend_from_slice(&bytes.to_le_bytes());
            }
            Edit::AddRangeDel(t) | Edit::DeleteRangeDel(t) => {
                b.push(if matches!(e, Edit::AddRangeDel(_)) {
                    TAG_ADD_RANGE_DEL
                } else {
                    TAG_DELETE_RANGE_DEL
                });
                b.extend_from_slice(&t.seq.to_le_bytes());
                put_varint(&mut b, t.start.len() as u64);
                b.extend_from_slice(&t.start);
                put_varint(&mut b, t.end.len() as u64);
                b.extend_from_slice(&t.end);
            }
            Edit::MergeOperator(name) => {
                b.push(TAG_MERGE_OPERATOR);
                put_varint(&mut b, name.len() as u64);
                b.extend_from_slice(name.as_bytes());
            }
        }
    }
    b
}

pub(crate) fn decode_edits(payload: &[u8]) -> Option<Vec<Edit>> {
    let mut r = Reader::new(payload);
    let mut edits = Vec::new();
    while r.remaining() > 0 {
        let e = match r.u8()? {
            TAG_ADD_TABLE => Edit::AddTable {
                level: r.u8()?,
                table: TableRecord {
                    id: r.u64()?,
                    size: r.u64()?,
                    max_seq: r.u64()?,
                    smallest: r.len_prefixed()?.to_vec(),
                    largest: r.len_prefixed()?.to_vec(),
                },
            },
            TAG_DELETE_TABLE => Edit::DeleteTable {
                level: r.u8()?,
                id: r.u64()?,
            },
            TAG_NEXT_FILE_ID => Edit::NextFileId(r.u64()?),
            TAG_LOG_NUMBER => Edit::LogNumber(r.u64()?),
            TAG_LAST_SEQ => Edit::LastSeq(r.u64()?),
            TAG_ADD_VLOG => Edit::AddVlog(r.u32()?),
            TAG_DELETE_VLOG => Edit::DeleteVlog(r.u32()?),
            TAG_VLOG_DISCARD => Edit::VlogDiscard {
                id: r.u32()?,
                bytes: r.u64()?,
            },
            tag @ (TAG_ADD_RANGE_DEL | TAG_DELETE_RANGE_DEL) => {
                let t = RangeTombstone {
                    seq: r.u64()?,
                    start: r.len_prefixed()?.to_vec(),
                    end: r.len_prefixed()?.to_vec(),
                };
                if tag == TAG_ADD_RANGE_DEL {
                    Edit::AddRangeDel(t)
                } else {
                    Edit::DeleteRangeDel(t)
                }
            }
            TAG_MERGE_OPERATOR => {
                Edit::MergeOperator(String::from_utf8(r.len_prefixed()?.to_vec()).ok()?)
            }
            _ => return None,
        };
        edits.push(e);
    }
    Some(edits)
}

/// True if the record at `data[tail..]` holds a sector that reads back as
/// zeros: what a power cut leaves of a write that had not been synced (the
/// file's length reached the disk, some of its sectors did not). Bit rot in
/// a synced record flips bits; it does not zero an aligned run. A run shorter
/// than 4 bytes counts only at the record's start (its checksum).
fn has_torn_sector(data: &[u8], tail: usize) -> bool {
    const SECTOR: usize = 512;
    let mut start = tail;
    while start < data.len() {
        let end = (start / SECTOR + 1) * SECTOR;
        let window = &data[start..end.min(data.len())];
        if (window.len() >= 4 || start == tail) && window.iter().all(|&b| b == 0) {
            return true;
        }
        start = end;
    }
    false
}

/// Reads the manifest of `dir`, if there is one. A torn last record is ignored
/// (it was never acknowledged); any other damage is corruption.
pub(crate) fn load(fs: &Fs, dir: &Path, num_levels: usize) -> Result<Option<ManifestState>> {
    let path = dir.join(filename::MANIFEST);
    if !path.exists() {
        return Ok(None);
    }
    let data = wal::read_file(fs, &path, MAGIC, VERSION)?;
    let scan = wal::scan(&path, &data)?;
    // The first record is the snapshot written before the rename: it is never torn.
    if scan
        .records
        .first()
        .is_none_or(|(off, _)| *off != wal::HEADER_LEN as u64)
    {
        return Err(Error::corruption(
            &path,
            wal::HEADER_LEN as u64,
            "damaged manifest snapshot record",
        ));
    }
    // Each record is fsynced before anything acts on it, so a torn tail is a
    // record cut short, or cut at its whole length with sectors that never
    // reached the disk (zeros). Any other whole-length last record with a bad
    // checksum is damage: dropping it would silently revert the state.
    let tail = scan.valid_len as usize;
    if tail < data.len() {
        let declared = crate::coding::u32_at(&data, tail + 4)
            .map(|n| tail + wal::RECORD_HEADER_LEN + n as usize);
        // A flipped length byte: the rest of the file is still one whole record
        // whose checksum matches its true length.
        let rest = &data[tail..];
        let whole_with_bad_length = rest.len() >= wal::RECORD_HEADER_LEN && {
            let mut h = crc32fast::Hasher::new();
            h.update(&((rest.len() - wal::RECORD_HEADER_LEN) as u32).to_le_bytes());
            h.update(&rest[wal::RECORD_HEADER_LEN..]);
            crate::coding::u32_at(rest, 0) == Some(h.finalize())
        };
        if (declared == Some(data.len()) || whole_with_bad_length) && !has_torn_sector(&data, tail)
        {
            return Err(Error::corruption(
                &path,
                tail as u64,
                "last manifest record fails its checksum",
            ));
        }
    }
    let mut state = ManifestState::new(num_levels);
    for (offset, range) in scan.records {
        let edits = decode_edits(&data[range])
            .ok_or_else(|| Error::corruption(&path, offset, "undecodable manifest record"))?;
        for e in &edits {
            state.apply(e).map_err(|what| {
                if what.contains("beyond the configured levels") {
                    Error::InvalidOption {
                        name: "num_levels",
                        reason: format!("the database was created with more levels: {what}"),
                    }
                } else {
                    Error::corruption(&path, offset, what)
                }
            })?;
        }
    }
    Ok(Some(state))
}

/// The open manifest of a writable Db.
pub(crate) struct Manifest {
    fs: Fs,
    dir: PathBuf,
    writer: LogWriter,
    state: ManifestState,
    /// An append or sync failed: the file may end in part of a record, and
    /// a record appended after it would make the log unreadable (a damaged
    /// record followed by a valid one is corruption, not a torn tail). The
    /// next `log` writes a fresh manifest instead.
    damaged: bool,
}

impl Manifest {
    /// Writes `state` as a fresh manifest (atomically replacing any old one).
    pub(crate) fn create(fs: &Fs, dir: &Path, state: ManifestState) -> Result<Manifest> {
        let tmp = dir.join(filename::MANIFEST_TMP);
        let _ = fs.remove(&tmp);
        let mut writer = LogWriter::create(fs, &tmp, MAGIC, VERSION)?;
        let mut framed = Vec::new();
        wal::frame(&mut framed, &encode_edits(&state.snapshot()));
        writer.append(&framed)?;
        writer.sync()?;
        let path = dir.join(filename::MANIFEST);
        fs.rename(&tmp, &path).map_err(|e| {
            Error::io(
                format!("renaming {} to {}", tmp.display(), path.display()),
                e,
            )
        })?;
        writer.renamed(&path);
        sync_dir(fs, dir)?;
        Ok(Manifest {
            fs: fs.clone(),
            dir: dir.to_path_buf(),
            writer,
            state,
            damaged: false,
        })
    }

    pub(crate) fn state(&self) -> &ManifestState {
        &self.state
    }

    /// Appends `edits` as one record and syncs it; the state changes only on success.
    pub(crate) fn log(&mut self, edits: &[Edit]) -> Result<()> {
        let mut next = self.state.clone();
        for e in edits {
            next.apply(e)
                .map_err(|what| Error::InvalidArgument(format!("bad manifest edit: {what}")))?;
        }
        if self.damaged {
            // Written whole through a new file and a rename, the state with
            // these edits replaces the damaged log in one step.
            *self = Manifest::create(&self.fs, &self.dir, next)?;
            return Ok(());
        }
        let mut framed = Vec::new();
        wal::frame(&mut framed, &encode_edits(edits));
        if let Err(e) = self.writer.append(&framed).and_then(|_| self.writer.sync()) {
            self.damaged = true;
            return Err(e);
        }
        self.state = next;
        if self.writer.len() > REWRITE_AT {
            *self = Manifest::create(&self.fs, &self.dir, self.state.clone())?;
        }
        Ok(())
    }

    /// Allocates a file id, recorded durably with the next edit.
    pub(crate) fn next_file_id(&mut self) -> u64 {
        let id = self.state.next_file_id;
        self.state.next_file_id += 1;
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(id: u64) -> TableRecord {
        TableRecord {
            id,
            size: 100 + id,
            max_seq: 7,
            smallest: b"a-key-suffix8".to_vec(),
            largest: b"z-key-suffix8".to_vec(),
        }
    }

    #[test]
    fn every_edit_round_trips() {
        let edits = vec![
            Edit::AddTable {
                level: 2,
                table: table(5),
            },
            Edit::DeleteTable { level: 1, id: 9 },
            Edit::NextFileId(10),
            Edit::LogNumber(4),
            Edit::LastSeq(99),
            Edit::AddVlog(3),
            Edit::DeleteVlog(2),
            Edit::VlogDiscard {
                id: 3,
                bytes: 1 << 33,
            },
            Edit::AddRangeDel(RangeTombstone {
                start: b"a".to_vec(),
                end: Vec::new(),
                seq: 7,
            }),
            Edit::DeleteRangeDel(RangeTombstone {
                start: Vec::new(),
                end: b"zz".to_vec(),
                seq: 8,
            }),
            Edit::MergeOperator("sett.u64_add".into()),
        ];
        assert_eq!(decode_edits(&encode_edits(&edits)).unwrap(), edits);
        let enc = encode_edits(&edits);
        for cut in 0..enc.len() {
            let _ = decode_edits(&enc[..cut]);
        }
        assert!(decode_edits(&[42]).is_none());
    }

    #[test]
    fn reopened_manifest_holds_logged_edits() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::create(&Fs::real(), dir.path(), ManifestState::new(3)).unwrap();
        m.log(&[
            Edit::AddTable {
                level: 0,
                table: table(1),
            },
            Edit::AddVlog(2),
        ])
        .unwrap();
        m.log(&[
            Edit::DeleteTable { level: 0, id: 1 },
            Edit::AddTable {
                level: 1,
                table: table(3),
            },
        ])
        .unwrap();
        let s = load(&Fs::real(), dir.path(), 3).unwrap().unwrap();
        assert_eq!(&s, m.state());
        assert!(s.levels[0].is_empty());
        assert_eq!(s.levels[1].len(), 1);
        assert_eq!(s.next_file_id, 4);
    }

    #[test]
    fn a_short_write_is_followed_by_a_fresh_manifest_not_by_a_record_after_the_torn_one() {
        use crate::fs::{Fault, OpKind, SimFs};
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("db");
        std::fs::create_dir(&dir).unwrap();
        let sim = std::sync::Arc::new(SimFs::new(tmp.path().join("trash"), 5));
        let fs = Fs::new(sim.clone());
        let mut m = Manifest::create(&fs, &dir, ManifestState::new(3)).unwrap();
        m.log(&[Edit::AddVlog(1)]).unwrap();
        sim.fail(Some(OpKind::Append), 1, Fault::ShortWrite);
        let err = m.log(&[Edit::AddVlog(2)]).unwrap_err();
        assert!(err.to_string().contains("MANIFEST"), "{err}");
        assert_eq!(
            m.state().vlogs,
            BTreeSet::from([1]),
            "a failed edit is not applied"
        );
        m.log(&[Edit::AddVlog(3)]).unwrap();
        let s = load(&Fs::real(), &dir, 3).unwrap().unwrap();
        assert_eq!(&s, m.state());
        assert_eq!(s.vlogs, BTreeSet::from([1, 3]));
    }

    #[test]
    fn a_cut_last_record_is_torn_but_a_damaged_whole_one_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::create(&Fs::real(), dir.path(), ManifestState::new(3)).unwrap();
        m.log(&[Edit::AddTable {
            level: 0,
            table: table(1),
        }])
        .unwrap();
        drop(m);
        let path = dir.path().join(filename::MANIFEST);
        let good = std::fs::read(&path).unwrap();
        let last = good.len()
            - (encode_edits(&[Edit::AddTable {
                level: 0,
                table: table(1),
            }])
            .len()
                + 8);
        // Cut short: a write that never completed; the state before it loads.
        std::fs::write(&path, &good[..good.len() - 5]).unwrap();
        assert!(load(&Fs::real(), dir.path(), 3).unwrap().unwrap().levels[0].is_empty());
        // Whole record, one byte flipped anywhere in it (length field included): corruption.
        for off in last..good.len() {
            let mut bad = good.clone();
            bad[off] ^= 0x21;
            std::fs::write(&path, &bad).unwrap();
            assert!(
                load(&Fs::real(), dir.path(), 3)
                    .unwrap_err()
                    .is_corruption(),
                "flip at {off} taken as a torn tail"
            );
        }
    }

    #[test]
    fn a_whole_length_last_record_with_a_zeroed_sector_is_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        zeroed_sector_is_a_torn_tail(dir.path(), &Fs::real());
    }

    #[test]
    fn an_encrypted_manifest_with_a_zeroed_sector_in_its_last_record_is_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        zeroed_sector_is_a_torn_tail(dir.path(), &crate::crypt::test_fs(dir.path()));
    }

    fn zeroed_sector_is_a_torn_tail(dir: &Path, fs: &Fs) {
        let path = dir.join(filename::MANIFEST);
        let mut m = Manifest::create(fs, dir, ManifestState::new(3)).unwrap();
        // Log until the last record crosses a sector boundary.
        let mut id = 1;
        let (last, boundary) = loop {
            let before = std::fs::metadata(&path).unwrap().len() as usize;
            m.log(&[Edit::AddTable {
                level: 0,
                table: table(id),
            }])
            .unwrap();
            let after = std::fs::metadata(&path).unwrap().len() as usize;
            let boundary = (before / 512 + 1) * 512;
            if boundary < after {
                break (before, boundary);
            }
            id += 1;
        };
        drop(m);
        let good = std::fs::read(&path).unwrap();
        // The power went before the record's fsync: its second sector is zeros.
        let mut torn = good.clone();
        torn[boundary..].fill(0);
        std::fs::write(&path, &torn).unwrap();
        let s = load(fs, dir, 3).unwrap().unwrap();
        assert_eq!(
            s.levels[0].len() as u64,
            id - 1,
            "the torn record is dropped"
        );
        // The same record with a flipped byte instead is damage, not a tear.
        let mut bad = good.clone();
        bad[last + 9] ^= 0x21;
        std::fs::write(&path, &bad).unwrap();
        assert!(load(fs, dir, 3).unwrap_err().is_corruption());
    }

    #[test]
    fn deleting_an_unknown_table_is_refused_and_state_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Manifest::create(&Fs::real(), dir.path(), ManifestState::new(3)).unwrap();
        assert!(m.log(&[Edit::DeleteTable { level: 0, id: 77 }]).is_err());
        assert_eq!(m.state(), &ManifestState::new(3));
    }
}
