//! Encryption at rest (core/FORMAT.md, "Encryption at rest").
//!
//! Every file that holds user data (tables, value-log files, WALs, the
//! manifest) is encrypted with AES-256 in CTR mode under a *data key*, with
//! a random 16-byte IV of its own. A plaintext prefix of [`PREFIX_LEN`]
//! bytes at the start of each such file names the data key and holds the IV;
//! the engine never sees it: its offset 0 is the first byte after the
//! prefix, so every offset it records (value pointers, block handles, torn
//! tail positions) is the same as in a plain file. CTR keeps the length of
//! what is written, and the engine's crc32 per record, block and entry still
//! find damage: a flipped ciphertext bit flips the same plaintext bit.
//!
//! Data keys live in the key registry (`KEYREGISTRY`), each sealed with
//! AES-256-GCM under the master key the user supplies
//! ([`Encryption::new`]). A wrong master key fails the GCM tag of the
//! first data key: [`Error::WrongEncryptionKey`], never garbage reads. A new
//! data key is made when the newest is older than the rotation period, or
//! on demand ([`crate::Db::rotate_encryption_key`]); new files take the
//! newest key, old files keep theirs, and the registry keeps every key.
//!
//! Writes are encrypted by the file-system layer ([`crate::fs::Fs`]), which
//! writes the prefix when it creates a file and encrypts each append at the
//! file's current end. Reads go through [`ReadFile`], which checks the
//! prefix and decrypts positional reads. An encrypted file cannot be read or
//! written through a plain mapping: under encryption the WAL is written by
//! appends, not through its mapping, and tables and value-log files are
//! read by positional reads only.

use crate::error::{Error, Result};
use crate::fs::Fs;
use aes::cipher::{InnerIvInit, KeyInit, StreamCipher, StreamCipherSeek};
use aes_gcm::aead::{Aead, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zeroize::{Zeroize, Zeroizing};

/// The key registry's file name.
pub(crate) const REGISTRY: &str = "KEYREGISTRY";
/// The registry being rewritten; renamed over `KEYREGISTRY` once synced.
const REGISTRY_TMP: &str = "KEYREGISTRY.tmp";
const REGISTRY_MAGIC: &[u8; 8] = b"SETTKEYS";
const REGISTRY_VERSION: u32 = 1;
/// Registry header: magic, version, key count.
const REGISTRY_HEADER: usize = 16;
/// One registry entry: id, creation time (ms), GCM nonce, sealed key + tag.
const ENTRY_LEN: usize = 4 + 8 + 12 + 32 + 16;

/// Bytes of plaintext prefix at the start of every encrypted file: a page,
/// so that the engine's offsets keep their alignment to pages and sectors
/// on disk (torn-sector checks and read-ahead rely on it).
pub(crate) const PREFIX_LEN: u64 = 4096;
const PREFIX_MAGIC: &[u8; 8] = b"SETTENC\0";
const PREFIX_VERSION: u32 = 1;
/// Bytes of the prefix that carry data (the rest is zeros).
const PREFIX_USED: usize = 36;
/// Disk sector size: a sector (or its part) that reads as zeros is kept as zeros.
const SECTOR: usize = 512;

/// Default [`Encryption::rotation`]: 10 days (Badger's default).
pub const DEFAULT_KEY_ROTATION: Duration = Duration::from_secs(10 * 24 * 3600);

/// A 32-byte AES-256 master key. Its `Debug` does not print the key, and
/// its bytes are zeroed when it is dropped (as are the data keys' and the
/// ciphers' key schedules).
#[derive(Clone, PartialEq, Eq)]
pub struct EncryptionKey([u8; 32]);

impl EncryptionKey {
    /// A master key from its 32 bytes.
    pub fn new(bytes: [u8; 32]) -> EncryptionKey {
        EncryptionKey(bytes)
    }

    /// A master key from a slice, which must be 32 bytes long.
    pub fn from_slice(bytes: &[u8]) -> Result<EncryptionKey> {
        <[u8; 32]>::try_from(bytes)
            .map(EncryptionKey)
            .map_err(|_| Error::InvalidOption {
                name: "encryption",
                reason: format!("the master key is {} bytes, not 32", bytes.len()),
            })
    }
}

impl Drop for EncryptionKey {
    fn drop(&mut self) {
        self.0.zeroize();
    }
}

impl std::fmt::Debug for EncryptionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EncryptionKey(..)")
    }
}

/// Encryption at rest for [`crate::Options::encryption`]: the master key and
/// how old the newest data key may get before a new one is made.
#[derive(Debug, Clone)]
pub struct Encryption {
    /// The master key that seals the data keys in `KEYREGISTRY`.
    pub key: EncryptionKey,
    /// A new data key is made when the newest is older than this. Default
    /// [`DEFAULT_KEY_ROTATION`]; `Duration::ZERO` never rotates by age.
    pub rotation: Duration,
}

impl Encryption {
    /// Encryption under `key`, data keys rotated every [`DEFAULT_KEY_ROTATION`].
    pub fn new(key: EncryptionKey) -> Encryption {
        Encryption {
            key,
            rotation: DEFAULT_KEY_ROTATION,
        }
    }

    /// Sets [`Encryption::rotation`].
    pub fn rotation(mut self, every: Duration) -> Encryption {
        self.rotation = every;
        self
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn random<const N: usize>() -> io::Result<[u8; N]> {
    let mut b = [0u8; N];
    getrandom::fill(&mut b).map_err(|e| io::Error::other(format!("no random bytes: {e}")))?;
    Ok(b)
}

/// One data key, usable.
struct DataKey {
    id: u32,
    created_ms: u64,
    aes: aes::Aes256,
}

/// A registry entry as stored: the key sealed under the master key.
#[derive(Clone)]
struct Sealed {
    id: u32,
    created_ms: u64,
    nonce: [u8; 12],
    sealed: Vec<u8>,
}

/// The additional data a sealed key is bound to: its id and creation time.
fn aad(id: u32, created_ms: u64) -> [u8; 12] {
    let mut a = [0u8; 12];
    a[..4].copy_from_slice(&id.to_le_bytes());
    a[4..].copy_from_slice(&created_ms.to_le_bytes());
    a
}

struct Ring {
    keys: BTreeMap<u32, Arc<DataKey>>,
    sealed: Vec<Sealed>,
}

/// The data keys of an encrypted database, loaded from `KEYREGISTRY`.
pub(crate) struct KeyRing {
    dir: PathBuf,
    /// The plain file system: the registry is not itself file-encrypted.
    fs: Fs,
    master: Aes256Gcm,
    rotation: Duration,
    read_only: bool,
    ring: RwLock<Ring>,
}

impl KeyRing {
    /// The key ring of `dir` for `enc` (None: the database is not
    /// encrypted). `has_data`: the directory holds a database already.
    /// Requires: the directory lock is held.
    pub(crate) fn open(
        fs: &Fs,
        dir: &Path,
        enc: Option<&Encryption>,
        has_data: bool,
        read_only: bool,
    ) -> Result<Option<Arc<KeyRing>>> {
        let path = dir.join(REGISTRY);
        let exists = path.exists();
        let enc = match (enc, exists) {
            (None, false) => return Ok(None),
            (None, true) => return Err(Error::EncryptionKeyRequired(dir.to_path_buf())),
            (Some(_), false) if has_data => return Err(Error::NotEncrypted(dir.to_path_buf())),
            (Some(e), _) => e,
        };
        let ring = KeyRing {
            dir: dir.to_path_buf(),
            fs: fs.clone(),
            master: Aes256Gcm::new(&enc.key.0.into()),
            rotation: enc.rotation,
            read_only,
            ring: RwLock::new(Ring {
                keys: BTreeMap::new(),
                sealed: Vec::new(),
            }),
        };
        if exists {
            ring.load(&path)?;
        } else {
            ring.rotate()?;
        }
        Ok(Some(Arc::new(ring)))
    }

    fn load(&self, path: &Path) -> Result<()> {
        let data =
            std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        let corrupt = |off: usize, what: &str| Error::corruption(path, off as u64, what);
        if data.len() < REGISTRY_HEADER + 4 || &data[..8] != REGISTRY_MAGIC {
            return Err(corrupt(0, "not a key registry (bad magic or too short)"));
        }
        let body = data.len() - 4;
        let crc = crate::coding::u32_at(&data, body).unwrap_or(0);
        if crc != crc32fast::hash(&data[..body]) {
            return Err(corrupt(body, "key registry checksum mismatch"));
        }
        let version = crate::coding::u32_at(&data, 8).unwrap_or(0);
        if version != REGISTRY_VERSION {
            return Err(Error::UnsupportedVersion {
                file: path.to_path_buf(),
                found: version,
                supported: REGISTRY_VERSION,
            });
        }
        let count = crate::coding::u32_at(&data, 12).unwrap_or(0) as usize;
        let expected = count
            .checked_mul(ENTRY_LEN)
            .and_then(|n| n.checked_add(REGISTRY_HEADER));
        if expected != Some(body) || count == 0 {
            return Err(corrupt(
                12,
                "key registry length does not match its key count",
            ));
        }
        let mut ring = self.ring.write().unwrap_or_else(|p| p.into_inner());
        for i in 0..count {
            let at = REGISTRY_HEADER + i * ENTRY_LEN;
            let e = &data[at..at + ENTRY_LEN];
            let mut nonce = [0u8; 12];
            nonce.copy_from_slice(&e[12..24]);
            let s = Sealed {
                id: u32::from_le_bytes([e[0], e[1], e[2], e[3]]),
                created_ms: u64::from_le_bytes([e[4], e[5], e[6], e[7], e[8], e[9], e[10], e[11]]),
                nonce,
                sealed: e[24..].to_vec(),
            };
            let key = self
                .master
                .decrypt(
                    &Nonce::from(s.nonce),
                    Payload {
                        msg: &s.sealed,
                        aad: &aad(s.id, s.created_ms),
                    },
                )
                .map(Zeroizing::new)
                .map_err(|_| Error::WrongEncryptionKey(path.to_path_buf()))?;
            let aes = aes::Aes256::new_from_slice(&key)
                .map_err(|_| corrupt(at, "data key of the wrong length"))?;
            ring.keys.insert(
                s.id,
                Arc::new(DataKey {
                    id: s.id,
                    created_ms: s.created_ms,
                    aes,
                }),
            );
            ring.sealed.push(s);
        }
        Ok(())
    }

    /// Makes a new data key, the one new files take from now on, and
    /// writes the registry with it (durably: new files can name it).
    /// Returns its id.
    pub(crate) fn rotate(&self) -> Result<u32> {
        let mut ring = self.ring.write().unwrap_or_else(|p| p.into_inner());
        self.rotate_locked(&mut ring)
    }

    /// Requires: `ring` is the write-locked ring.
    fn rotate_locked(&self, ring: &mut Ring) -> Result<u32> {
        if self.read_only {
            return Err(Error::ReadOnly);
        }
        let path = self.dir.join(REGISTRY);
        let rand_err = |e| Error::io(format!("making a data key for {}", path.display()), e);
        let key: Zeroizing<[u8; 32]> = Zeroizing::new(random().map_err(rand_err)?);
        let nonce: [u8; 12] = random().map_err(rand_err)?;
        let id = ring.keys.keys().next_back().map_or(1, |id| id + 1);
        let created_ms = now_ms();
        let sealed = self
            .master
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: key.as_slice(),
                    aad: &aad(id, created_ms),
                },
            )
            .map_err(|_| Error::InvalidArgument("sealing a data key failed".into()))?;
        let aes = aes::Aes256::new_from_slice(key.as_slice())
            .map_err(|_| Error::InvalidArgument("a data key of the wrong length".into()))?;
        let mut entries = ring.sealed.clone();
        entries.push(Sealed {
            id,
            created_ms,
            nonce,
            sealed,
        });
        self.write(&entries)?;
        ring.sealed = entries;
        ring.keys.insert(
            id,
            Arc::new(DataKey {
                id,
                created_ms,
                aes,
            }),
        );
        Ok(id)
    }

    /// Writes the registry of `entries`: a temporary file, synced, renamed
    /// over `KEYREGISTRY`, the directory synced.
    fn write(&self, entries: &[Sealed]) -> Result<()> {
        let mut data = Vec::with_capacity(REGISTRY_HEADER + entries.len() * ENTRY_LEN + 4);
        data.extend_from_slice(REGISTRY_MAGIC);
        data.extend_from_slice(&REGISTRY_VERSION.to_le_bytes());
        data.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        for e in entries {
            data.extend_from_slice(&e.id.to_le_bytes());
            data.extend_from_slice(&e.created_ms.to_le_bytes());
            data.extend_from_slice(&e.nonce);
            data.extend_from_slice(&e.sealed);
        }
        let crc = crc32fast::hash(&data);
        data.extend_from_slice(&crc.to_le_bytes());
        let tmp = self.dir.join(REGISTRY_TMP);
        let path = self.dir.join(REGISTRY);
        let ctx = || format!("writing {}", tmp.display());
        let _ = self.fs.remove(&tmp);
        let mut file = self.fs.create_new(&tmp).map_err(|e| Error::io(ctx(), e))?;
        self.fs
            .append(&mut file, &tmp, &data)
            .and_then(|()| self.fs.sync(&file, &tmp))
            .map_err(|e| Error::io(ctx(), e))?;
        self.fs.rename(&tmp, &path).map_err(|e| {
            Error::io(
                format!("renaming {} to {}", tmp.display(), path.display()),
                e,
            )
        })?;
        crate::fs::sync_dir(&self.fs, &self.dir)
    }

    /// The key new files take: the newest, or a new one if the newest is
    /// older than the rotation period.
    fn current(&self) -> Result<Arc<DataKey>> {
        {
            let ring = self.ring.read().unwrap_or_else(|p| p.into_inner());
            if let Some(k) = ring.keys.values().next_back() {
                if !self.due(k) {
                    return Ok(k.clone());
                }
            }
        }
        let mut ring = self.ring.write().unwrap_or_else(|p| p.into_inner());
        match ring.keys.values().next_back() {
            Some(k) if !self.due(k) => return Ok(k.clone()),
            _ => {}
        }
        let id = self.rotate_locked(&mut ring)?;
        ring.keys
            .get(&id)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument("a new data key vanished".into()))
    }

    fn due(&self, k: &DataKey) -> bool {
        !self.read_only
            && !self.rotation.is_zero()
            && now_ms().saturating_sub(k.created_ms) >= self.rotation.as_millis() as u64
    }

    fn get(&self, id: u32) -> Option<Arc<DataKey>> {
        let ring = self.ring.read().unwrap_or_else(|p| p.into_inner());
        ring.keys.get(&id).cloned()
    }

    /// The registry's path.
    pub(crate) fn path(&self) -> PathBuf {
        self.dir.join(REGISTRY)
    }
}

/// The cipher of one file: its data key and IV.
#[derive(Clone)]
pub(crate) struct FileCipher {
    key: Arc<DataKey>,
    iv: [u8; 16],
}

type Ctr = ctr::Ctr128BE<aes::Aes256>;
type CtrCore = ctr::CtrCore<aes::Aes256, ctr::flavors::Ctr128BE>;

impl FileCipher {
    /// Encrypts or decrypts `buf`, which lies at engine offset `off`.
    pub(crate) fn apply(&self, buf: &mut [u8], off: u64) {
        // The key schedule is expanded once per data key, cloned per call.
        let core = CtrCore::inner_iv_init(self.key.aes.clone(), &self.iv.into());
        let mut c = Ctr::from_core(core);
        c.seek(off);
        c.apply_keystream(buf);
    }

    fn prefix(&self) -> Vec<u8> {
        let mut p = vec![0u8; PREFIX_LEN as usize];
        p[..8].copy_from_slice(PREFIX_MAGIC);
        p[8..12].copy_from_slice(&PREFIX_VERSION.to_le_bytes());
        p[12..16].copy_from_slice(&self.key.id.to_le_bytes());
        p[16..32].copy_from_slice(&self.iv);
        let crc = crc32fast::hash(&p[..32]);
        p[32..36].copy_from_slice(&crc.to_le_bytes());
        p
    }
}

/// What a prefix says.
enum Prefix {
    /// A file cut before its prefix was whole (all zeros or short): it holds
    /// nothing.
    Torn,
    Cipher(FileCipher),
}

fn parse_prefix(keys: &KeyRing, path: &Path, p: &[u8]) -> Result<Prefix> {
    if p.len() < PREFIX_LEN as usize || p.iter().all(|&b| b == 0) {
        return Ok(Prefix::Torn);
    }
    if &p[..8] != PREFIX_MAGIC {
        return Err(Error::corruption(
            path,
            0,
            "no encryption prefix: the file was not written by this encrypted database",
        ));
    }
    let crc = crate::coding::u32_at(p, 32).unwrap_or(0);
    if crc != crc32fast::hash(&p[..32]) || p[PREFIX_USED..].iter().any(|&b| b != 0) {
        return Err(Error::corruption(
            path,
            0,
            "encryption prefix checksum mismatch",
        ));
    }
    let version = crate::coding::u32_at(p, 8).unwrap_or(0);
    if version != PREFIX_VERSION {
        return Err(Error::UnsupportedVersion {
            file: path.to_path_buf(),
            found: version,
            supported: PREFIX_VERSION,
        });
    }
    let id = crate::coding::u32_at(p, 12).unwrap_or(0);
    let key = keys.get(id).ok_or_else(|| {
        Error::corruption(
            path,
            12,
            format!(
                "encrypted under data key {id}, which {} does not hold",
                keys.path().display()
            ),
        )
    })?;
    let mut iv = [0u8; 16];
    iv.copy_from_slice(&p[16..32]);
    Ok(Prefix::Cipher(FileCipher { key, iv }))
}

/// The write side: the cipher and engine length of each file being written.
pub(crate) struct Writer {
    keys: Arc<KeyRing>,
    /// By path, as `FileSystem` names files. An entry lives until its file
    /// is removed through the `Fs` (a table or sealed value-log file keeps
    /// its entry, about a hundred bytes, while it lives): the file-system
    /// layer is not told when a writer is done with a file.
    files: Mutex<HashMap<PathBuf, (FileCipher, u64)>>,
}

impl Writer {
    pub(crate) fn new(keys: Arc<KeyRing>) -> Writer {
        Writer {
            keys,
            files: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn keys(&self) -> &Arc<KeyRing> {
        &self.keys
    }

    /// A cipher for a new file at `path` and the prefix to write first.
    pub(crate) fn start(&self, path: &Path) -> io::Result<Vec<u8>> {
        let key = self.keys.current().map_err(io::Error::other)?;
        let c = FileCipher { key, iv: random()? };
        let prefix = c.prefix();
        self.lock().insert(path.to_path_buf(), (c, 0));
        Ok(prefix)
    }

    /// Puts `parts`, back to back and encrypted for the end of `path`'s
    /// file, in `out`; `commit` then moves the file's end past them once
    /// they are written.
    pub(crate) fn seal(&self, path: &Path, parts: &[&[u8]], out: &mut Vec<u8>) -> io::Result<()> {
        let (c, off) = {
            let files = self.lock();
            let (c, off) = files.get(path).ok_or_else(|| {
                io::Error::other(format!(
                    "{} is not open for encrypted appends (or an append to it failed)",
                    path.display()
                ))
            })?;
            (c.clone(), *off)
        };
        out.clear();
        for part in parts {
            out.extend_from_slice(part);
        }
        c.apply(out, off);
        Ok(())
    }

    /// After an append of `n` bytes: moves the end on, or, if it failed,
    /// forgets the file (its end is unknown; further appends fail).
    pub(crate) fn commit(&self, path: &Path, n: Option<usize>) {
        let mut files = self.lock();
        match n {
            Some(n) => {
                if let Some((_, off)) = files.get_mut(path) {
                    *off += n as u64;
                }
            }
            None => {
                files.remove(path);
            }
        }
    }

    pub(crate) fn renamed(&self, from: &Path, to: &Path) {
        let mut files = self.lock();
        if let Some(v) = files.remove(from) {
            files.insert(to.to_path_buf(), v);
        }
    }

    pub(crate) fn removed(&self, path: &Path) {
        self.lock().remove(path);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, (FileCipher, u64)>> {
        crate::sync::lock(&self.files)
    }
}

/// A file open for reading: positional reads at engine offsets, decrypted
/// when the database is encrypted.
pub(crate) struct ReadFile {
    file: File,
    cipher: Option<FileCipher>,
    /// Encrypted, but cut before its prefix was whole: reads as empty.
    torn: bool,
}

impl ReadFile {
    /// Opens `path` for reading; under encryption reads and checks its prefix.
    pub(crate) fn open(fs: &Fs, path: &Path) -> Result<ReadFile> {
        let file =
            File::open(path).map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        ReadFile::with(fs, path, file)
    }

    /// [`ReadFile::open`] over a file opened already.
    pub(crate) fn with(fs: &Fs, path: &Path, file: File) -> Result<ReadFile> {
        let Some(keys) = fs.keys() else {
            return Ok(ReadFile {
                file,
                cipher: None,
                torn: false,
            });
        };
        let mut p = vec![0u8; PREFIX_LEN as usize];
        let n = read_full(&file, &mut p, 0)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        p.truncate(n);
        Ok(match parse_prefix(keys, path, &p)? {
            Prefix::Torn => ReadFile {
                file,
                cipher: None,
                torn: true,
            },
            Prefix::Cipher(c) => ReadFile {
                file,
                cipher: Some(c),
                torn: false,
            },
        })
    }

    /// The underlying file (for syncs, advice and, when not encrypted, mappings).
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Whether the bytes are encrypted: a mapping of the file would show
    /// ciphertext (a torn encrypted file counts: it has nothing to map).
    pub(crate) fn encrypted(&self) -> bool {
        self.cipher.is_some() || self.torn
    }

    /// Where engine byte 0 lies in the file (past the prefix of an
    /// encrypted file), or `None` for a torn encrypted file, which holds
    /// nothing.
    pub(crate) fn data_offset(&self) -> Option<u64> {
        (!self.torn).then(|| self.base())
    }

    fn base(&self) -> u64 {
        if self.encrypted() {
            PREFIX_LEN
        } else {
            0
        }
    }

    /// The file's length in engine bytes (without the prefix).
    pub(crate) fn len(&self) -> io::Result<u64> {
        if self.torn {
            return Ok(0);
        }
        Ok(self.file.metadata()?.len().saturating_sub(self.base()))
    }

    /// Starts reading `len` engine bytes at `off` into the page cache
    /// without waiting ([`crate::advice::will_need_fd`]). Best effort.
    pub(crate) fn will_need(&self, off: u64, len: u64) {
        if !self.torn {
            crate::advice::will_need_fd(&self.file, off.saturating_add(self.base()), len);
        }
    }

    /// Reads as many bytes as the file has at `off`, up to `buf.len()`.
    pub(crate) fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        if self.torn {
            return Ok(0);
        }
        let n = read_full(&self.file, buf, off + self.base())?;
        if let Some(c) = &self.cipher {
            decrypt_keeping_zero_sectors(c, &mut buf[..n], off);
        }
        Ok(n)
    }

    /// Reads exactly `buf.len()` bytes at `off` (UnexpectedEof if the file
    /// is shorter).
    pub(crate) fn read_exact_at(&self, buf: &mut [u8], off: u64) -> io::Result<()> {
        if self.read_at(buf, off)? < buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "file shorter than the read",
            ));
        }
        Ok(())
    }
}

/// Decrypts `buf` (at engine offset `off`), leaving as zeros each piece of
/// it within one disk sector that is all zeros and at least
/// [`ZERO_RUN_MIN`] bytes long: a sector that never reached the disk reads
/// as zeros, and the torn-tail checks of the logs look for exactly that (the
/// last, partial sector of a file included). Real ciphertext holds such a
/// run with probability 2^-128.
fn decrypt_keeping_zero_sectors(c: &FileCipher, buf: &mut [u8], off: u64) {
    // Spans between zero runs are decrypted by one call each (a call sets
    // up the cipher: one per sector would cost a third more on a 1 KiB read).
    let mut span = 0usize;
    let mut at = 0usize;
    while at < buf.len() {
        let pos = off + at as u64;
        let sector_end = (pos / SECTOR as u64 + 1) * SECTOR as u64;
        let end = buf.len().min(at + (sector_end - pos) as usize);
        let piece = &buf[at..end];
        if piece.len() >= ZERO_RUN_MIN && piece.iter().all(|&b| b == 0) {
            c.apply(&mut buf[span..at], off + span as u64);
            span = end;
        }
        at = end;
    }
    c.apply(&mut buf[span..], off + span as u64);
}

/// The shortest run of zeros within a sector that reads as zeros.
const ZERO_RUN_MIN: usize = 16;

/// Reads a whole file in engine bytes (for the WAL and the manifest).
pub(crate) fn read_whole(fs: &Fs, path: &Path) -> Result<Vec<u8>> {
    let ctx = || format!("reading {}", path.display());
    if fs.keys().is_none() {
        return std::fs::read(path).map_err(|e| Error::io(ctx(), e));
    }
    let f = ReadFile::open(fs, path)?;
    let len = f.len().map_err(|e| Error::io(ctx(), e))?;
    let mut buf = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
    let n = f.read_at(&mut buf, 0).map_err(|e| Error::io(ctx(), e))?;
    buf.truncate(n);
    Ok(buf)
}

/// Reads as many bytes as `file` has at `off`, up to `buf.len()`: one
/// read as the fault injection (`crate::fault`) counts them.
fn read_full(file: &File, buf: &mut [u8], off: u64) -> io::Result<usize> {
    crate::fault::check(crate::fault::Op::Read)?;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], off + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// A file system that encrypts under a new key registry in `dir`.
#[cfg(test)]
pub(crate) fn test_fs(dir: &Path) -> Fs {
    let enc = Encryption::new(EncryptionKey::new([0x42; 32]));
    let keys = KeyRing::open(&Fs::real(), dir, Some(&enc), false, false)
        .expect("a key registry")
        .expect("encryption asked for");
    Fs::real().encrypted(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    /// The files' keystream is AES-256 in CTR mode with a 128-bit
    /// big-endian counter, NIST SP 800-38A F.5.5: a change of cipher crate
    /// or backend (AES-NI, VAES) that changed it would make every existing
    /// encrypted database unreadable.
    #[test]
    fn the_keystream_is_nist_aes256_ctr_at_every_offset() {
        let key = hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4");
        let key = Arc::new(DataKey {
            id: 1,
            created_ms: 0,
            aes: aes::Aes256::new_from_slice(&key).expect("32 bytes"),
        });
        let mut iv = [0u8; 16];
        iv.copy_from_slice(&hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"));
        let c = FileCipher { key, iv };
        let plain = hex(concat!(
            "6bc1bee22e409f96e93d7e117393172a",
            "ae2d8a571e03ac9c9eb76fac45af8e51",
            "30c81c46a35ce411e5fbc1191a0a52ef",
            "f69f2445df4f9b17ad2b417be66c3710"
        ));
        let cipher = hex(concat!(
            "601ec313775789a5b7a7f504bbf3d228",
            "f443e3ca4d62b59aca84e990cacaf5c5",
            "2b0930daa23de94ce87017ba2d84988d",
            "dfc9c58db67aada613c2dd08457941a6"
        ));
        let mut buf = plain.clone();
        c.apply(&mut buf, 0);
        assert_eq!(buf, cipher);
        for from in [1usize, 16, 33, 63] {
            let mut part = plain[from..].to_vec();
            c.apply(&mut part, from as u64);
            assert_eq!(part, &cipher[from..], "from {from}");
        }
    }

    #[test]
    fn decryption_at_any_offset_matches_encryption_of_the_whole() {
        let key = Arc::new(DataKey {
            id: 1,
            created_ms: 0,
            aes: aes::Aes256::new(&[7u8; 32].into()),
        });
        let c = FileCipher { key, iv: [9u8; 16] };
        let plain: Vec<u8> = (0..5000u32).map(|i| (i * 31) as u8).collect();
        let mut whole = plain.clone();
        c.apply(&mut whole, 0);
        assert_ne!(whole, plain);
        for (from, to) in [(0, 1), (15, 17), (100, 1300), (511, 1025), (4095, 5000)] {
            let mut part = whole[from..to].to_vec();
            decrypt_keeping_zero_sectors(&c, &mut part, from as u64);
            assert_eq!(part, &plain[from..to], "{from}..{to}");
        }
    }

    #[test]
    fn a_zeroed_whole_sector_stays_zeros_and_others_decrypt() {
        let key = Arc::new(DataKey {
            id: 1,
            created_ms: 0,
            aes: aes::Aes256::new(&[1u8; 32].into()),
        });
        let c = FileCipher { key, iv: [2u8; 16] };
        let plain = vec![0xabu8; 2100];
        let mut disk = plain.clone();
        c.apply(&mut disk, 0);
        disk[512..1024].fill(0);
        // A partial last sector of zeros (a file cut within it) too, but
        // not a run too short to tell from ciphertext.
        disk[2048..].fill(0);
        disk[1500..1510].fill(0);
        decrypt_keeping_zero_sectors(&c, &mut disk, 0);
        assert_eq!(&disk[..512], &plain[..512]);
        assert!(disk[512..1024].iter().all(|&b| b == 0));
        assert_eq!(&disk[1024..1500], &plain[1024..1500]);
        assert_ne!(&disk[1500..1510], &plain[1500..1510]);
        assert_eq!(&disk[1510..2048], &plain[1510..2048]);
        assert!(disk[2048..].iter().all(|&b| b == 0));
    }
}
