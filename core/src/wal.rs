//! The log record format shared by the WAL and the manifest, and the 16-byte file
//! header shared by every log-structured file (WAL, value log, manifest).
//!
//! A record is `crc32 (u32 LE) | len (u32 LE) | payload`, the CRC covering the
//! length field and the payload. A record that fails its check is a torn tail
//! when no valid record follows it (the log is cut there), and corruption when
//! one does (acknowledged data after it would otherwise be lost silently),
//! unless the log says how far it was synced (WAL version 2): damage past every
//! later record's synced offset was never synced, and is a torn tail however
//! the page cache wrote it back.

use crate::error::{Error, Result};
use crate::fs::Fs;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Magic of a write-ahead log file.
pub(crate) const WAL_MAGIC: &[u8; 8] = b"SETTWAL\0";
/// Version 2 adds the synced offset to each record (FORMAT.md); version 3
/// allows zeros after the last record (space allocated ahead for appends
/// through a mapping: they end the log, they are no torn tail); version 4
/// starts with a link record naming the previous WAL and its length (a WAL is
/// no longer synced when the next one starts); version 5 adds records whose
/// entries carry their own versions (`batch::OWN_VERSIONS`: a value-log GC's
/// moves). Versions 1 to 4 are still read.
pub(crate) const WAL_VERSION: u32 = 5;
/// Bytes of a version-4 link record's payload: synced offset, previous WAL id,
/// previous WAL length (u64 LE each).
pub(crate) const LINK_LEN: usize = 24;

/// The link that starts a version-4 WAL: the WAL written before it (`prev`:
/// its id, 0 for none, and its length when this one started). Recovery
/// compares the length with what survived of that WAL, which a power cut may
/// have cut anywhere, since nothing syncs a WAL at the switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link {
    pub prev_id: u64,
    pub prev_len: u64,
}

impl Link {
    /// The link of a WAL with no predecessor to check: every WAL before it
    /// is flushed (a new Db, or the first WAL after recovery).
    pub(crate) const NONE: Link = Link {
        prev_id: 0,
        prev_len: 0,
    };

    /// The framed record. Its synced offset is the header's length: the link
    /// is written before the file's first sync, which makes it durable.
    pub(crate) fn framed(&self) -> Vec<u8> {
        let mut payload = Vec::with_capacity(LINK_LEN);
        payload.extend_from_slice(&(HEADER_LEN as u64).to_le_bytes());
        payload.extend_from_slice(&self.prev_id.to_le_bytes());
        payload.extend_from_slice(&self.prev_len.to_le_bytes());
        let mut out = Vec::with_capacity(RECORD_HEADER_LEN + LINK_LEN);
        frame(&mut out, &payload);
        out
    }

    /// Reads a link record's payload.
    pub(crate) fn decode(payload: &[u8]) -> Option<Link> {
        if payload.len() != LINK_LEN {
            return None;
        }
        Some(Link {
            prev_id: crate::coding::u64_at(payload, 8)?,
            prev_len: crate::coding::u64_at(payload, 16)?,
        })
    }
}
/// Bytes of the file header: magic (8) | format version (u32 LE) | crc32 of both (u32 LE).
pub(crate) const HEADER_LEN: usize = 16;
/// Bytes of a record header.
pub(crate) const RECORD_HEADER_LEN: usize = 8;
/// Records larger than this are refused on write and taken as damage on read.
pub(crate) const MAX_RECORD_LEN: usize = u32::MAX as usize - 1;

/// Builds a file header.
pub(crate) fn file_header(magic: &[u8; 8], version: u32) -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(magic);
    h[8..12].copy_from_slice(&version.to_le_bytes());
    let crc = crc32fast::hash(&h[..12]);
    h[12..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// Checks a file header: magic, checksum, then version.
pub(crate) fn check_header(path: &Path, bytes: &[u8], magic: &[u8; 8], version: u32) -> Result<()> {
    if bytes.len() < HEADER_LEN {
        return Err(Error::corruption(
            path,
            0,
            "file shorter than its 16-byte header",
        ));
    }
    if &bytes[..8] != magic {
        return Err(Error::corruption(
            path,
            0,
            format!("bad magic, expected {:?}", String::from_utf8_lossy(magic)),
        ));
    }
    let crc = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if crc != crc32fast::hash(&bytes[..12]) {
        return Err(Error::corruption(path, 12, "file header checksum mismatch"));
    }
    let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if found != version {
        return Err(Error::UnsupportedVersion {
            file: path.to_path_buf(),
            found,
            supported: version,
        });
    }
    Ok(())
}

/// Appends one framed record holding `payload` to `buf`.
pub(crate) fn frame(buf: &mut Vec<u8>, payload: &[u8]) {
    let len = (payload.len() as u32).to_le_bytes();
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(payload);
    buf.extend_from_slice(&h.finalize().to_le_bytes());
    buf.extend_from_slice(&len);
    buf.extend_from_slice(payload);
}

/// Appends one framed record to `buf` whose payload `payload` writes in
/// place (no payload buffer of its own), as [`frame`] would frame it.
pub(crate) fn frame_with(buf: &mut Vec<u8>, payload: impl FnOnce(&mut Vec<u8>)) {
    let at = buf.len();
    buf.extend_from_slice(&[0; RECORD_HEADER_LEN]);
    payload(buf);
    let len = ((buf.len() - at - RECORD_HEADER_LEN) as u32).to_le_bytes();
    buf[at + 4..at + 8].copy_from_slice(&len);
    let crc = crc32fast::hash(&buf[at + 4..]);
    buf[at..at + 4].copy_from_slice(&crc.to_le_bytes());
}

/// The valid record starting at `pos`, as the payload range, if there is one.
fn record_at(data: &[u8], pos: usize) -> Option<std::ops::Range<usize>> {
    let crc = crate::coding::u32_at(data, pos)?;
    let len = crate::coding::u32_at(data, pos + 4)? as usize;
    if len == 0 || len > MAX_RECORD_LEN {
        return None;
    }
    let start = pos + RECORD_HEADER_LEN;
    let payload = data.get(start..start.checked_add(len)?)?;
    let mut h = crc32fast::Hasher::new();
    h.update(&data[pos + 4..pos + 8]);
    h.update(payload);
    (h.finalize() == crc).then_some(start..start + len)
}

/// Whether a log file's bytes after its header hold nothing but, at most,
/// a link record: the bytes of a WAL whose creation a crash cut short.
pub(crate) fn holds_no_record_past_link(data: &[u8]) -> bool {
    if data.len() > HEADER_LEN + RECORD_HEADER_LEN + LINK_LEN {
        return false;
    }
    match record_at(data, HEADER_LEN) {
        Some(r) => Link::decode(&data[r]).is_some(),
        None => true,
    }
}

/// What a scan of a log file found.
#[derive(Debug)]
pub(crate) struct Scan {
    /// Payload ranges of the valid records, in order, with the record's offset.
    pub records: Vec<(u64, std::ops::Range<usize>)>,
    /// Length of the valid prefix of the file; past it is a torn tail (if shorter than the file).
    pub valid_len: u64,
}

/// Scans the records of a log file held in `data` (header included). A damaged
/// record followed by a valid one is corruption; a damaged tail is reported
/// through `valid_len`.
pub(crate) fn scan(path: &Path, data: &[u8]) -> Result<Scan> {
    scan_synced(path, data, |_| None)
}

/// Reads the version of a log file's header, checking magic and checksum.
pub(crate) fn header_version(path: &Path, bytes: &[u8], magic: &[u8; 8]) -> Result<u32> {
    if bytes.len() >= HEADER_LEN {
        let found = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
        check_header(path, bytes, magic, found)?;
        return Ok(found);
    }
    check_header(path, bytes, magic, 0).map(|_| 0)
}

/// [`scan`], where `synced_of` reads from a payload the file offset up to which
/// the log had been synced when that record was written. A damaged record
/// followed by valid ones is then a torn tail if none of them says the damage
/// had been synced (a power cut wrote back unsynced pages out of order), and
/// corruption if one does.
pub(crate) fn scan_synced(
    path: &Path,
    data: &[u8],
    synced_of: impl Fn(&[u8]) -> Option<u64>,
) -> Result<Scan> {
    let mut records = Vec::new();
    let mut pos = HEADER_LEN;
    while pos < data.len() {
        match record_at(data, pos) {
            Some(r) => {
                records.push((pos as u64, r.clone()));
                pos = r.end;
            }
            None => {
                // An all-zero rest (space allocated ahead) holds no record: no search.
                if data[pos..].iter().all(|&b| b == 0) {
                    break;
                }
                if let Some(later) = (pos + 1..data.len()).find(|&p| record_at(data, p).is_some()) {
                    // The chain of valid records from there: did any of them
                    // know the damaged bytes as synced?
                    let mut at = later;
                    let mut synced_past = None;
                    let mut known = true;
                    while let Some(r) = record_at(data, at) {
                        match synced_of(&data[r.clone()]) {
                            Some(s) if s > pos as u64 => synced_past = Some(s),
                            Some(_) => {}
                            None => known = false,
                        }
                        at = r.end;
                    }
                    if !known || synced_past.is_some() {
                        return Err(Error::corruption(
                            path,
                            pos as u64,
                            format!("damaged log record followed by a valid one at offset {later}"),
                        ));
                    }
                }
                break;
            }
        }
    }
    Ok(Scan {
        records,
        valid_len: pos.min(data.len()) as u64,
    })
}

/// Reads a whole log file, checking its header.
pub(crate) fn read_file(fs: &Fs, path: &Path, magic: &[u8; 8], version: u32) -> Result<Vec<u8>> {
    let data = crate::crypt::read_whole(fs, path)?;
    check_header(path, &data, magic, version)?;
    Ok(data)
}

/// An append-only log file (WAL or manifest). Nothing asks the kernel to
/// write a WAL out ahead of a sync (RocksDB's `wal_bytes_per_sync` is 0 too):
/// a WAL whose memtable is flushed is deleted, most often before the kernel
/// wrote its pages, which then never reach the device.
pub(crate) struct LogWriter {
    fs: Fs,
    file: File,
    path: PathBuf,
    len: u64,
    /// Bytes known durable: up to the end of the last successful sync.
    synced: u64,
    /// Appends through a shared mapping of the file (see `create_mapped`).
    mapped: Option<Mapped>,
}

/// Appends smaller than this are copied into the mapping; larger ones are
/// written by `pwrite` (one call for many pages beats a fault per page).
const MAPPED_COPY_MAX: usize = 32 << 10;
/// The file is extended (zeros written ahead) this much at a time.
const MAPPED_ALLOC_STEP: u64 = 1 << 20;
/// What extends the file: written again and again, never changed.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// A log file mapped shared for appends (WAL format 3). Records are copied
/// into the mapping, that is into the kernel's page cache: once copied they
/// survive the process being killed, as a `write` would, without a system
/// call. The file is extended ahead by writing zeros (`pwrite`), so the file
/// holds zeros after the last record (a zero record header ends the log), a
/// copy never meets a missing block (the file system reserved the space when
/// the zeros were written: no SIGBUS for a full disk), and the pages are
/// already in the page cache, which makes the copy's page faults cheap (with
/// `posix_fallocate` instead, a put cost 30% more CPU: each fault read in and
/// zeroed a page of an unwritten extent).
struct Mapped {
    /// A read-write handle of the file (the mapping and `pwrite` use it).
    file: File,
    map: memmap2::MmapMut,
    /// The file's length: every byte below it exists (written or allocated).
    allocated: u64,
    /// Allocating ahead failed (no space, a file size limit): from then on
    /// every append is written by a call, which fails only if its own bytes
    /// do not fit.
    no_alloc: bool,
}

impl Mapped {
    /// Maps the first `reserve` bytes of `path` (whose length is `len`) for appends.
    fn new(path: &Path, len: u64, reserve: usize) -> std::io::Result<Mapped> {
        let file = File::options().read(true).write(true).open(path)?;
        // SAFETY: the file is this log's own, created by this process under the
        // directory lock; nothing else truncates it while it is mapped, and only
        // bytes below `allocated` (within the file) are ever touched.
        let map = unsafe { memmap2::MmapOptions::new().len(reserve).map_mut(&file)? };
        Ok(Mapped {
            file,
            map,
            allocated: len,
            no_alloc: false,
        })
    }

    /// Writes `data` at file offset `at` (the log's end).
    fn write_at(&mut self, at: u64, data: &[u8]) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let end = at + data.len() as u64;
        let mut by_call = data.len() >= MAPPED_COPY_MAX || end > self.map.len() as u64;
        if !by_call && end > self.allocated {
            let to = end
                .div_ceil(MAPPED_ALLOC_STEP)
                .saturating_mul(MAPPED_ALLOC_STEP)
                .min(self.map.len() as u64);
            by_call = self.no_alloc || self.allocate(to).is_err();
            self.no_alloc = by_call;
        }
        if by_call {
            let mut at = at;
            for chunk in data.chunks(crate::fs::WRITE_CHUNK) {
                self.file.write_all_at(chunk, at)?;
                at += chunk.len() as u64;
            }
            self.allocated = self.allocated.max(end);
            return Ok(());
        }
        // In bounds: end <= allocated <= map.len().
        self.map[at as usize..end as usize].copy_from_slice(data);
        Ok(())
    }

    /// Extends the file with zeros up to `to` bytes. On an error the file
    /// may have grown part of the way (zeros past the log's end, as allowed).
    fn allocate(&mut self, to: u64) -> std::io::Result<()> {
        use std::os::unix::fs::FileExt;
        let mut at = self.allocated;
        while at < to {
            let n = (to - at).min(ZEROS.len() as u64) as usize;
            self.file.write_all_at(&ZEROS[..n], at)?;
            at += n as u64;
        }
        self.allocated = to;
        Ok(())
    }
}

impl LogWriter {
    /// [`LogWriter::create_with`], then, if the file system allows it, maps
    /// the first `reserve` bytes of the file for appends (WALs of format 3 and
    /// later; see `Mapped`). Appends past them, or when the mapping cannot be
    /// made, are written as usual.
    pub(crate) fn create_mapped(
        fs: &Fs,
        path: &Path,
        magic: &[u8; 8],
        version: u32,
        first: &[u8],
        reserve: usize,
    ) -> Result<LogWriter> {
        let mut w = LogWriter::create_with(fs, path, magic, version, first)?;
        if fs.maps_appends() && reserve > 0 {
            // A file system that cannot map (or a failed mapping) writes by calls.
            w.mapped = Mapped::new(path, w.len, reserve).ok();
        }
        Ok(w)
    }

    /// Creates `path` with a header and syncs it.
    pub(crate) fn create(fs: &Fs, path: &Path, magic: &[u8; 8], version: u32) -> Result<LogWriter> {
        LogWriter::create_with(fs, path, magic, version, &[])
    }

    /// Creates `path` with a header followed by `first` (framed records, may
    /// be empty), and syncs both.
    pub(crate) fn create_with(
        fs: &Fs,
        path: &Path,
        magic: &[u8; 8],
        version: u32,
        first: &[u8],
    ) -> Result<LogWriter> {
        let ctx = || format!("creating {}", path.display());
        let mut file = fs.create_new(path).map_err(|e| Error::io(ctx(), e))?;
        let mut start = file_header(magic, version).to_vec();
        start.extend_from_slice(first);
        fs.append(&mut file, path, &start)
            .and_then(|_| fs.sync(&file, path))
            .map_err(|e| Error::io(ctx(), e))?;
        let len = start.len() as u64;
        Ok(LogWriter {
            fs: fs.clone(),
            file,
            path: path.to_path_buf(),
            len,
            synced: len,
            mapped: None,
        })
    }

    /// Appends bytes already framed with [`frame`].
    pub(crate) fn append(&mut self, framed: &[u8]) -> Result<()> {
        crate::fault::check(crate::fault::Op::Write)
            .and_then(|_| match &mut self.mapped {
                Some(m) => m.write_at(self.len, framed),
                None => self.fs.append(&mut self.file, &self.path, framed),
            })
            .map_err(|e| Error::io(format!("appending to {}", self.path.display()), e))?;
        self.len += framed.len() as u64;
        Ok(())
    }

    pub(crate) fn sync(&mut self) -> Result<()> {
        crate::fault::check(crate::fault::Op::Sync)
            .and_then(|_| self.fs.sync(&self.file, &self.path))
            .map_err(|e| Error::io(format!("syncing {}", self.path.display()), e))?;
        self.synced = self.len;
        Ok(())
    }

    /// Bytes of the file made durable by the last successful sync.
    pub(crate) fn synced(&self) -> u64 {
        self.synced
    }

    /// Records that the file was renamed to `to` (errors then name it, and the
    /// file system is told the right file).
    pub(crate) fn renamed(&mut self, to: &Path) {
        self.path = to.to_path_buf();
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_with(records: &[&[u8]]) -> Vec<u8> {
        let mut data = file_header(b"TESTLOG\0", 1).to_vec();
        for r in records {
            frame(&mut data, r);
        }
        data
    }

    #[test]
    fn records_round_trip() {
        let data = log_with(&[b"one", b"two", b"three"]);
        let s = scan(Path::new("t"), &data).unwrap();
        let got: Vec<&[u8]> = s.records.iter().map(|(_, r)| &data[r.clone()]).collect();
        assert_eq!(got, vec![&b"one"[..], b"two", b"three"]);
        assert_eq!(s.valid_len, data.len() as u64);
    }

    #[test]
    fn a_record_framed_in_place_has_the_bytes_of_one_framed_from_its_payload() {
        for payload in [&b"x"[..], b"a longer payload", &[7u8; 5000]] {
            let (mut a, mut b) = (b"before".to_vec(), b"before".to_vec());
            frame(&mut a, payload);
            frame_with(&mut b, |buf| buf.extend_from_slice(payload));
            assert_eq!(a, b);
        }
    }

    #[test]
    fn truncation_at_every_length_yields_a_prefix() {
        let data = log_with(&[b"aaaa", b"bbbbbbbb", b"cc"]);
        for cut in HEADER_LEN..data.len() {
            let s = scan(Path::new("t"), &data[..cut]).unwrap();
            assert!(s.records.len() <= 3);
            assert!(s.valid_len as usize <= cut);
        }
    }

    #[test]
    fn flipped_byte_in_middle_record_is_corruption_naming_offset() {
        let mut data = log_with(&[b"first-record", b"second-record", b"third-record"]);
        let second = HEADER_LEN + RECORD_HEADER_LEN + 12;
        data[second + RECORD_HEADER_LEN + 2] ^= 0x40;
        match scan(Path::new("wal-file"), &data) {
            Err(Error::Corruption { file, offset, .. }) => {
                assert_eq!(file, Path::new("wal-file"));
                assert_eq!(offset, second as u64);
            }
            other => panic!(
                "expected corruption, got {:?}",
                other.map(|s| s.records.len())
            ),
        }
    }

    #[test]
    fn damage_never_synced_before_valid_records_is_a_torn_tail() {
        // Payloads start with the offset synced when they were written (WAL v2).
        let rec = |synced: u64, body: &[u8]| [&synced.to_le_bytes()[..], body].concat();
        let synced_of = |p: &[u8]| p.first_chunk::<8>().map(|b| u64::from_le_bytes(*b));
        let first = HEADER_LEN as u64;
        let mut data = log_with(&[
            &rec(first, b"one"),
            &rec(first, b"two"),
            &rec(first, b"three"),
        ]);
        let second = HEADER_LEN + RECORD_HEADER_LEN + 11;
        data[second + RECORD_HEADER_LEN + 9] ^= 0x40;
        // Written back out of order by a power cut: nothing after says it was synced.
        let s = scan_synced(Path::new("t"), &data, synced_of).unwrap();
        assert_eq!(s.records.len(), 1);
        assert_eq!(s.valid_len, second as u64);
        // A later record written after a sync that covered the damage: corruption.
        let mut synced_then_damaged = log_with(&[
            &rec(first, b"one"),
            &rec(first, b"two"),
            &rec(second as u64 + 30, b"three"),
        ]);
        synced_then_damaged[second + RECORD_HEADER_LEN + 9] ^= 0x40;
        assert!(scan_synced(Path::new("t"), &synced_then_damaged, synced_of)
            .unwrap_err()
            .is_corruption());
        // Without the offsets (WAL v1, manifest): corruption, as before.
        assert!(scan(Path::new("t"), &data).unwrap_err().is_corruption());
    }

    #[test]
    fn flipped_byte_in_last_record_is_a_torn_tail() {
        let mut data = log_with(&[b"first", b"last"]);
        let n = data.len();
        data[n - 1] ^= 1;
        let s = scan(Path::new("t"), &data).unwrap();
        assert_eq!(s.records.len(), 1);
        assert!((s.valid_len as usize) < n);
    }

    #[test]
    fn header_checks_magic_and_version() {
        let h = file_header(b"TESTLOG\0", 1);
        check_header(Path::new("t"), &h, b"TESTLOG\0", 1).unwrap();
        assert!(matches!(
            check_header(Path::new("t"), &h, b"TESTLOG\0", 2),
            Err(Error::UnsupportedVersion { found: 1, .. })
        ));
        assert!(check_header(Path::new("t"), &h, b"OTHERLOG", 1)
            .unwrap_err()
            .is_corruption());
        let mut bad = h;
        bad[9] ^= 1;
        assert!(check_header(Path::new("t"), &bad, b"TESTLOG\0", 1)
            .unwrap_err()
            .is_corruption());
    }
}
