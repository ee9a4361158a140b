//! Merge operators: read-modify-write without a read on the write path.
//!
//! [`crate::Db::merge`] stores an *operand* for a key instead of a value. A
//! read folds the key's operands, oldest first, onto the newest value below
//! them (its *base*: a put, or nothing when the key was deleted, expired or
//! never written) with the Db's [`MergeOperator`]. Compaction folds them
//! ahead of the reads (see `levels/compaction.rs`).
//!
//! The operator's [`MergeOperator::name`] is recorded in the manifest: a Db
//! opened with an operator of another name is refused at open
//! ([`Error::MergeOperatorMismatch`]), and one opened without an operator
//! reads every other key but answers [`Error::MergeOperatorMissing`] for a
//! key that holds operands (compaction then keeps them as they are).
//!
//! A folded value carries its base's user meta and expiry (none without a
//! put under the operands) and the newest operand's version. When the base
//! expires, the key reads as its operands folded onto nothing: operands
//! carry no TTL of their own.
//!
//! A read folds every operand written since the last compaction that reached
//! the key: a key merged into many times between compactions (all of them
//! still in a memtable, say) costs a read of each of its operands. Writes
//! cost what a put of the operand costs.

use crate::error::{Error, Result};
use std::sync::Arc;

/// A user-supplied merge: how operands combine with a key's value.
///
/// # The associativity contract
///
/// [`MergeOperator::partial_merge`] over a run of operands must return an
/// operand that means the same as the run: for every base `b` and every
/// split of the operands into runs `r1 ++ r2`,
/// `merge(key, b, r1 ++ r2) == merge(key, Some(&merge(key, b, r1)?), r2)` and
/// `merge(key, b, r1 ++ r2) == merge(key, b, [partial_merge(key, r1 ++ r2)?])`.
/// Compaction relies on it to fold a run of operands whose base lies in a
/// level it does not read, and a batch or transaction to combine two
/// merges of one key. A merge that is not associative gives answers that
/// depend on when compactions ran.
///
/// `merge(key, None, ..)` is the value over no base (the key was deleted,
/// expired or never written); `partial_merge` is a run over a base not at
/// hand. They are one function when values and operands share a form (the
/// built-ins: the default `partial_merge` calls `merge(key, None, ..)`); an
/// operator whose operands differ from its values (a tagged increment over a
/// decimal string, say) gives `partial_merge` of its own.
///
/// An error (a malformed operand, say) fails the read that met it, naming
/// the key ([`Error::MergeFailed`]); compaction keeps the operands unfolded,
/// so that nothing is lost and a later fix of the data (a put over the key)
/// makes it readable again.
pub trait MergeOperator: Send + Sync {
    /// The operator's stable name, recorded in the manifest. Two operators
    /// with the same name must compute the same merges.
    fn name(&self) -> &str;

    /// Folds `operands` (oldest first, at least one) onto `existing`, the
    /// value below them (`None`: the key has no value there). Returns the
    /// new value; with `existing` `None` it must also be a valid operand
    /// (see the associativity contract). `Err` says why it could not.
    fn merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String>;

    /// Combines `operands` (oldest first, at least one) into one operand
    /// that means the same over any base (see the associativity contract).
    /// The default is `merge(key, None, operands)`.
    fn partial_merge(
        &self,
        key: &[u8],
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        self.merge(key, None, operands)
    }
}

impl std::fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MergeOperator({:?})", self.name())
    }
}

/// What [`crate::Db::merge_and_read`] saw around the merge it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRead {
    /// The version the merge committed at.
    pub version: u64,
    /// The key just below that version: every write ordered before the
    /// merge and none after (`None`: the key had no value).
    pub before: Option<crate::Item>,
    /// The key at that version: `before` with this merge folded on.
    pub after: Option<crate::Item>,
}

/// Runs `op` and turns its refusal into [`Error::MergeFailed`] naming `key`.
pub(crate) fn fold(
    op: &dyn MergeOperator,
    key: &[u8],
    existing: Option<&[u8]>,
    operands: &[&[u8]],
) -> Result<Vec<u8>> {
    op.merge(key, existing, operands)
        .map_err(|reason| Error::MergeFailed {
            key: key.to_vec(),
            reason,
        })
}

/// Runs `op.partial_merge` and turns its refusal into
/// [`Error::MergeFailed`] naming `key`.
pub(crate) fn combine(op: &dyn MergeOperator, key: &[u8], operands: &[&[u8]]) -> Result<Vec<u8>> {
    op.partial_merge(key, operands)
        .map_err(|reason| Error::MergeFailed {
            key: key.to_vec(),
            reason,
        })
}

/// Folds `newest_first` (a key's operands as a read meets them) onto
/// `base` with `operator`; without one, [`Error::MergeOperatorMissing`].
pub(crate) fn resolve(
    operator: Option<&dyn MergeOperator>,
    key: &[u8],
    base: Option<&[u8]>,
    mut newest_first: Vec<&[u8]>,
) -> Result<Vec<u8>> {
    let Some(op) = operator else {
        return Err(Error::MergeOperatorMissing { key: key.to_vec() });
    };
    newest_first.reverse();
    fold(op, key, base, &newest_first)
}

/// Counters: operands and values are unsigned 64-bit integers, 8 bytes
/// little-endian; a merge adds them, wrapping around at 2^64 (as a counter
/// in a fixed-width register does: no increment is ever refused). An operand
/// or value of another length is refused.
#[derive(Debug, Clone, Copy, Default)]
pub struct U64Add;

/// The name [`U64Add`] records.
pub const U64_ADD: &str = "sett.u64_add";

fn u64_of(what: &str, b: &[u8]) -> std::result::Result<u64, String> {
    let arr: [u8; 8] = b.try_into().map_err(|_| {
        format!(
            "{what} of {} bytes is not a u64 (8 bytes little-endian)",
            b.len()
        )
    })?;
    Ok(u64::from_le_bytes(arr))
}

impl MergeOperator for U64Add {
    fn name(&self) -> &str {
        U64_ADD
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let mut sum = match existing {
            Some(b) => u64_of("existing value", b)?,
            None => 0,
        };
        for op in operands {
            sum = sum.wrapping_add(u64_of("operand", op)?);
        }
        Ok(sum.to_le_bytes().to_vec())
    }
}

/// Appends: a merge concatenates the value and its operands, in order.
#[derive(Debug, Clone, Copy, Default)]
pub struct Append;

/// The name [`Append`] records.
pub const APPEND: &str = "sett.append";

impl MergeOperator for Append {
    fn name(&self) -> &str {
        APPEND
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let len = existing.map_or(0, <[u8]>::len) + operands.iter().map(|o| o.len()).sum::<usize>();
        let mut out = Vec::with_capacity(len);
        out.extend_from_slice(existing.unwrap_or_default());
        for op in operands {
            out.extend_from_slice(op);
        }
        Ok(out)
    }
}

/// Maximum: a merge keeps the bytewise (lexicographic) largest of the value
/// and its operands.
#[derive(Debug, Clone, Copy, Default)]
pub struct Max;

/// The name [`Max`] records.
pub const MAX: &str = "sett.max";

impl MergeOperator for Max {
    fn name(&self) -> &str {
        MAX
    }

    fn merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let best = existing
            .into_iter()
            .chain(operands.iter().copied())
            .max()
            .unwrap_or_default();
        Ok(best.to_vec())
    }
}

/// The built-in operator named `name`, if there is one: for bindings that
/// choose an operator by name.
pub fn builtin(name: &str) -> Option<Arc<dyn MergeOperator>> {
    match name {
        U64_ADD => Some(Arc::new(U64Add)),
        APPEND => Some(Arc::new(Append)),
        MAX => Some(Arc::new(Max)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: u64) -> Vec<u8> {
        v.to_le_bytes().to_vec()
    }

    /// Folding in one go, in two runs, or through a base-less run first
    /// gives the same value (the associativity contract).
    fn check_associative(op: &dyn MergeOperator, base: Option<&[u8]>, ops: &[&[u8]]) {
        let whole = op.merge(b"k", base, ops).unwrap();
        for split in 1..ops.len() {
            let (r1, r2) = ops.split_at(split);
            let first = op.merge(b"k", base, r1).unwrap();
            assert_eq!(op.merge(b"k", Some(&first), r2).unwrap(), whole);
            let run = op.partial_merge(b"k", r2).unwrap();
            let mut two: Vec<&[u8]> = r1.to_vec();
            two.push(&run);
            assert_eq!(op.merge(b"k", base, &two).unwrap(), whole);
        }
    }

    #[test]
    fn u64_add_sums_and_wraps() {
        let (a, b, c) = (n(5), n(7), n(u64::MAX));
        assert_eq!(U64Add.merge(b"k", None, &[&a, &b]).unwrap(), n(12));
        assert_eq!(U64Add.merge(b"k", Some(&n(1)), &[&a]).unwrap(), n(6));
        assert_eq!(U64Add.merge(b"k", Some(&n(2)), &[&c]).unwrap(), n(1));
        check_associative(&U64Add, Some(&n(100)), &[&a, &b, &c]);
        check_associative(&U64Add, None, &[&a, &b, &c]);
    }

    #[test]
    fn u64_add_refuses_an_operand_or_value_of_the_wrong_length() {
        let err = U64Add.merge(b"k", None, &[b"abc"]).unwrap_err();
        assert!(err.contains("operand of 3 bytes"), "{err}");
        let err = U64Add.merge(b"k", Some(b"x"), &[&n(1)]).unwrap_err();
        assert!(err.contains("existing value of 1 bytes"), "{err}");
        let e = fold(&U64Add, b"key9", None, &[b"abc"]).unwrap_err();
        assert!(
            matches!(&e, Error::MergeFailed { key, .. } if key == b"key9"),
            "{e}"
        );
    }

    #[test]
    fn append_concatenates_oldest_first() {
        let got = Append.merge(b"k", Some(b"a"), &[b"b", b"cd"]).unwrap();
        assert_eq!(got, b"abcd");
        check_associative(&Append, Some(b"x"), &[b"1", b"22", b"333"]);
        check_associative(&Append, None, &[b"1", b"22", b"333"]);
    }

    #[test]
    fn max_keeps_the_bytewise_largest() {
        assert_eq!(
            Max.merge(b"k", Some(b"b"), &[b"a", b"c", b"bb"]).unwrap(),
            b"c"
        );
        assert_eq!(Max.merge(b"k", None, &[b"a"]).unwrap(), b"a");
        check_associative(&Max, Some(b"m"), &[b"a", b"z", b"q"]);
    }

    #[test]
    fn builtins_are_found_by_their_names() {
        for name in [U64_ADD, APPEND, MAX] {
            assert_eq!(
                builtin(name).map(|o| o.name().to_string()),
                Some(name.into())
            );
        }
        assert!(builtin("sett.nope").is_none());
    }
}
