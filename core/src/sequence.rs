//! `Sequence`: monotonic integers leased from the Db in blocks (Badger's
//! `GetSequence`). The lease end is stored under the sequence's key, so after a
//! restart numbers resume past everything that was handed out (some of a lease
//! may be skipped if it was not released).

use crate::db::Db;
use crate::db::DbInner;
use crate::error::{Error, Result};
use crate::sync::lock;
use std::sync::{Arc, Mutex};

/// Hands out increasing `u64`s, persisting a lease of `bandwidth` numbers at a time.
pub struct Sequence {
    db: Arc<DbInner>,
    key: Vec<u8>,
    bandwidth: u64,
    /// (next number to hand out, end of the lease).
    state: Mutex<(u64, u64)>,
}

fn decode(v: &[u8]) -> Result<u64> {
    let b: [u8; 8] = v.try_into().map_err(|_| {
        Error::InvalidArgument(format!("sequence key holds {} bytes, not a u64", v.len()))
    })?;
    Ok(u64::from_be_bytes(b))
}

impl Sequence {
    pub(crate) fn new(db: Arc<DbInner>, key: &[u8], bandwidth: u64) -> Result<Sequence> {
        if bandwidth == 0 {
            return Err(Error::InvalidArgument(
                "sequence bandwidth must be at least 1".into(),
            ));
        }
        let s = Sequence {
            db,
            key: key.to_vec(),
            bandwidth,
            state: Mutex::new((0, 0)),
        };
        let mut st = lock(&s.state);
        *st = s.lease()?;
        drop(st);
        Ok(s)
    }

    /// Leases the next block: (start, end).
    fn lease(&self) -> Result<(u64, u64)> {
        for _ in 0..crate::txn::UPDATE_RETRIES {
            let mut txn = crate::txn::Txn::begin(&self.db, true)?;
            let start = match txn.get(&self.key)? {
                Some(v) => decode(&v)?,
                None => 0,
            };
            let end = start
                .checked_add(self.bandwidth)
                .ok_or_else(|| Error::InvalidArgument("sequence exhausted u64".into()))?;
            txn.set(&self.key, &end.to_be_bytes())?;
            match txn.commit() {
                Ok(()) => return Ok((start, end)),
                Err(Error::Conflict) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict)
    }

    /// The next number.
    pub fn next(&self) -> Result<u64> {
        let mut st = lock(&self.state);
        if st.0 >= st.1 {
            *st = self.lease()?;
        }
        let n = st.0;
        st.0 += 1;
        Ok(n)
    }

    /// Gives back the unused rest of the lease, so that the next `Sequence` on
    /// this key continues right after the last number handed out.
    pub fn release(&self) -> Result<()> {
        let mut st = lock(&self.state);
        let mut txn = crate::txn::Txn::begin(&self.db, true)?;
        let stored = match txn.get(&self.key)? {
            Some(v) => decode(&v)?,
            None => 0,
        };
        if stored == st.1 {
            txn.set(&self.key, &st.0.to_be_bytes())?;
            txn.commit()?;
            st.1 = st.0;
        }
        Ok(())
    }
}

impl Db {
    /// A persisted sequence of integers under `key`, leased `bandwidth` at a time.
    pub fn sequence(&self, key: &[u8], bandwidth: u64) -> Result<Sequence> {
        Sequence::new(self.inner.clone(), key, bandwidth)
    }
}
